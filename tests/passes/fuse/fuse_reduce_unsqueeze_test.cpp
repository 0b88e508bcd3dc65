// fuse-reduce-unsqueeze.
#include "passes/fuse/fuse_test_support.h"

namespace onnxkit::testing {
namespace {

TEST(FuseReduceUnsqueeze, SameAxesKeepDims) {
  // Mean over axis 2 written as -1 then put back at 2; at opset 17
  // ReduceSum's axes are an input, ReduceMax's an attribute; ReduceMin with
  // no axes reduces all of them.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3, 4] x) => (float[2, 3, 1] y, float[1, 3, 1] z, float[2, 1, 4] w, float[1, 1, 1] v)
  <int64[1] last = {-1}, int64[1] two = {2}, int64[2] outer = {0, 2}, int64[3] all = {0, 1, 2}, int64[1] one = {1}> {
  t = ReduceMean <axes = [-1], keepdims = 0> (x)
  y = Unsqueeze(t, two)
  s = ReduceSum <keepdims = 0> (x, outer)
  z = Unsqueeze(s, outer)
  m = ReduceMax <axes = [1], keepdims = 0> (x)
  w = Unsqueeze(m, one)
  n = ReduceMin <keepdims = 0> (x)
  v = Unsqueeze(n, all)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-reduce-unsqueeze", *model), 4u);
  model->graph().cleanup();
  EXPECT_EQ(count_ops(model->graph(), "Unsqueeze"), 0u);
  for (const ir::Node& node : model->graph().nodes()) EXPECT_EQ(node.attr_int("keepdims", -1), 1) << node.describe();
  expect_same_outputs(*before, *model);
}

TEST(FuseReduceUnsqueeze, DeclinesOtherAxesKeptDimsAndSharedResults) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3, 4] x) => (float[2, 1, 4] y, float[2, 3, 1, 1] z, float[2, 1, 4] w, float[2, 4] u)
  <int64[1] one = {1}, int64[1] two = {2}> {
  t = ReduceMean <axes = [2], keepdims = 0> (x)
  y = Unsqueeze(t, one)
  k = ReduceMean <axes = [2]> (x)
  z = Unsqueeze(k, two)
  s = ReduceMean <axes = [1], keepdims = 0> (x)
  w = Unsqueeze(s, one)
  u = Relu(s)
})");
  // y: reduced 2, inserted 1 (a transposition in disguise); k keeps its dims;
  // s has another reader.
  EXPECT_EQ(run_pass("fuse-reduce-unsqueeze", *model), 0u);
}

}  // namespace
}  // namespace onnxkit::testing
