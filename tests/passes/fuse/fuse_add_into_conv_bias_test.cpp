// fuse-add-into-conv-bias: Conv + Add of a per-output-channel constant.
#include <gtest/gtest.h>

#include "passes/fuse/fuse_test_support.h"

namespace onnxkit::testing {
namespace {

TEST(FuseAddIntoConvBias, PerChannelConstantOnEitherSideBecomesTheBias) {
  // [C, 1, 1] on the right into an existing bias; [1, C, 1, 1] on the left
  // into a conv without one; then a scalar after the first fold.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 3, 3] x) => (float[1, 3, 3, 3] y, float[1, 3, 3, 3] z)
  <float[3, 2, 1, 1] w = {1, 2, 3, 4, 5, 6}, float[3] bias = {1, 2, 3},
   float[3, 1, 1] k = {10, 20, 30}, float[1, 3, 1, 1] k4 = {-1, -2, -3}, float one = {1}>
{
  c = Conv (x, w, bias)
  s = Add (c, k)
  y = Add (s, one)
  d = Conv (x, w)
  z = Add (k4, d)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-add-into-conv-bias", *model), 3u);
  EXPECT_EQ(count_ops(model->graph(), "Add"), 0u);
  const ir::Graph& g = model->graph();
  EXPECT_EQ(g.outputs()[0]->name(), "y");
  EXPECT_EQ(g.outputs()[1]->name(), "z");
  EXPECT_EQ(input_floats(*g.outputs()[0]->producer(), 2), (std::vector<float>{12, 23, 34}));
  EXPECT_EQ(input_floats(*g.outputs()[1]->producer(), 2), (std::vector<float>{-1, -2, -3}));
  expect_same_outputs(*before, *model);
}

TEST(FuseAddIntoConvBias, DeclinesWhatIsNotPerChannel) {
  // [C] lines up with the width; [2, C, 1, 1] makes the output bigger;
  // [1, 1, 3, 1] varies along height; c4 has a second reader; a non-constant addend.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 3, 3] x, float[3, 1, 1] k_in) => (float[1, 3, 3, 3] y1, float[2, 3, 3, 3] y2, float[1, 3, 3, 3] y3,
                                                 float[1, 3, 3, 3] y4, float[1, 3, 3, 3] r, float[1, 3, 3, 3] y5)
  <float[3, 2, 1, 1] w = {1, 2, 3, 4, 5, 6}, float[3] k1 = {1, 2, 3}, float[2, 3, 1, 1] k2 = {1, 2, 3, 4, 5, 6},
   float[1, 1, 3, 1] k3 = {1, 2, 3}, float[3, 1, 1] k = {1, 2, 3}>
{
  c1 = Conv (x, w)
  y1 = Add (c1, k1)
  c2 = Conv (x, w)
  y2 = Add (c2, k2)
  c3 = Conv (x, w)
  y3 = Add (c3, k3)
  c4 = Conv (x, w)
  y4 = Add (c4, k)
  r = Relu (c4)
  c5 = Conv (x, w)
  y5 = Add (c5, k_in)
})");
  EXPECT_EQ(run_pass("fuse-add-into-conv-bias", *model), 0u);
  EXPECT_EQ(count_ops(model->graph(), "Add"), 5u);
}

TEST(FuseAddIntoConvBias, SharedBiasIsCopiedNotEdited) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 3, 3] x) => (float[1, 3, 3, 3] y, float[1, 3, 3, 3] z)
  <float[3, 2, 1, 1] w = {1, 2, 3, 4, 5, 6}, float[3] bias = {1, 2, 3}, float[3, 1, 1] k = {10, 20, 30}>
{
  c = Conv (x, w, bias)
  y = Add (c, k)
  z = Conv (x, w, bias)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-add-into-conv-bias", *model), 1u);
  EXPECT_EQ(input_floats(*model->graph().outputs()[1]->producer(), 2), (std::vector<float>{1, 2, 3}));
  expect_same_outputs(*before, *model);
}

TEST(FuseAddIntoConvBias, ExcludedAddStays) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 3, 3] x) => (float[1, 3, 3, 3] y)
  <float[3, 2, 1, 1] w = {1, 2, 3, 4, 5, 6}, float[3, 1, 1] k = {10, 20, 30}>
{
  c = Conv (x, w)
  y = Add (c, k)
})");
  model->graph().nodes().back().set_name("bias_add");
  EXPECT_EQ(run_pass("fuse-add-into-conv-bias", *model, excluding({"bias_add"})), 0u);
  EXPECT_EQ(count_ops(model->graph(), "Add"), 1u);
}

TEST(FuseAddIntoConvBias, RewritesInsideIfBranches) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 3, 3] x, bool cond) => (float[1, 3, 3, 3] y)
  <float[3, 2, 1, 1] w = {1, 2, 3, 4, 5, 6}, float[3, 1, 1] k = {10, 20, 30}>
{
  y = If (cond) <
    then_branch = then_g () => (float[1, 3, 3, 3] a) { ca = Conv (x, w)  a = Add (ca, k) },
    else_branch = else_g () => (float[1, 3, 3, 3] b) { cb = Conv (x, w)  b = Add (k, cb) }>
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-add-into-conv-bias", *model), 2u);
  EXPECT_EQ(count_ops(model->graph(), "Add"), 0u);
  expect_same_outputs(*before, *model);
}

}  // namespace
}  // namespace onnxkit::testing
