// eliminate-noop-flatten, and a Reshape of a Flatten reading its input.
#include "passes/eliminate/eliminate_test_support.h"

namespace onnxkit::testing {
namespace {

TEST(EliminateNoopFlatten, TwoDimsKeptGo) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[b, 8] x, float[1, 8] r, float[8, 1] c) => (float[b, 8] y, float[1, 8] z, float[8, 1] w, float[1, 8] v) {
  y = Flatten(x)
  z = Flatten <axis = 0> (r)
  w = Flatten <axis = 2> (c)
  v = Flatten <axis = -2> (c)
})");
  auto before = clone(*model);
  // v: [8, 1] at axis 0 is [1, 8], a real change.
  EXPECT_EQ(run_pass("eliminate-noop-flatten", *model, {}), 0u);  // outputs would take input names: declined
  auto with_readers = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[b, 8] x, float[1, 8] r, float[8, 1] c) => (float[b, 8] y, float[1, 8] z, float[8, 1] w, float[1, 8] v) {
  f = Flatten(x)
  y = Relu(f)
  k = Flatten <axis = 0> (r)
  z = Relu(k)
  h = Flatten <axis = 2> (c)
  w = Relu(h)
  i = Flatten <axis = -2> (c)
  v = Relu(i)
})");
  auto reference = clone(*with_readers);
  EXPECT_EQ(run_pass("eliminate-noop-flatten", *with_readers), 3u);
  EXPECT_EQ(count_ops(with_readers->graph(), "Flatten"), 1u);
  expect_same_outputs(*reference, *with_readers);
}

TEST(MergeConsecutiveReshapes, ReadsThroughAFlattenOrUnsqueeze) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[b, 2, 3] x) => (float[b, 3, 2] y, float[b, 6] z) <int64[3] s = {0, 3, 2}, int64[1] zero = {0},
  int64[2] s2 = {-1, 6}> {
  f = Flatten(x)
  y = Reshape(f, s)
  u = Unsqueeze(x, zero)
  z = Reshape(u, s2)
})");
  auto before = clone(*model);
  // y's 0 copies f's dim 0, which only a symbol names and no Reshape target
  // gives: declined. z reads x.
  EXPECT_EQ(run_pass("merge-consecutive-reshapes", *model), 1u);
  const ir::Node* z = model->graph().outputs()[1]->producer();
  EXPECT_EQ(z->input(0)->name(), "x");
  expect_same_outputs(*before, *model);
}

}  // namespace
}  // namespace onnxkit::testing
