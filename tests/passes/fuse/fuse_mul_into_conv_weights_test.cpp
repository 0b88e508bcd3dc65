// fuse-mul-into-conv-weights: Conv + Mul by a per-output-channel constant.
#include <gtest/gtest.h>

#include "passes/fuse/fuse_test_support.h"

namespace onnxkit::testing {
namespace {

TEST(FuseMulIntoConvWeights, ScalesWeightsAndBiasPerOutputChannel) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 3, 3] x) => (float[1, 3, 3, 3] y)
  <float[3, 2, 1, 1] w = {1, 2, 3, 4, 5, 6}, float[3] bias = {1, 2, 3}, float[3, 1, 1] m = {2, -1, 0.5}>
{
  c = Conv (x, w, bias)
  y = Mul (m, c)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-mul-into-conv-weights", *model), 1u);
  EXPECT_EQ(count_ops(model->graph(), "Mul"), 0u);
  const ir::Value* y = model->graph().outputs()[0];
  EXPECT_EQ(y->name(), "y");
  ASSERT_NE(y->producer(), nullptr);
  EXPECT_EQ(input_floats(*y->producer(), 1), (std::vector<float>{2, 4, -3, -4, 2.5f, 3}));
  EXPECT_EQ(input_floats(*y->producer(), 2), (std::vector<float>{2, -2, 1.5f}));
  expect_same_outputs(*before, *model);
}

TEST(FuseMulIntoConvWeights, ScalarFactorAndSharedWeights) {
  // w is read by both convs: the fused one gets a copy; no bias stays no bias.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 4, 4] x) => (float[1, 3, 2, 2] y, float[1, 3, 2, 2] z)
  <float[3, 2, 3, 3] w = {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9,
                          -1, -2, -3, -4, -5, -6, -7, -8, -9, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3},
   float m = {0.5}>
{
  c = Conv (x, w)
  y = Mul (c, m)
  z = Conv (x, w)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-mul-into-conv-weights", *model), 1u);
  const ir::Node* fused = model->graph().outputs()[0]->producer();
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(fused->input(2), nullptr);
  EXPECT_EQ(input_floats(*model->graph().outputs()[1]->producer(), 1)[0], 1.0f);
  expect_same_outputs(*before, *model);
}

TEST(FuseMulIntoConvWeights, DeclinesWhatIsNotPerChannel) {
  // [C] lines up with the width; [1, 3, 3, 3] varies spatially; c3 has a second reader.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 3, 3] x) => (float[1, 3, 3, 3] y1, float[1, 3, 3, 3] y2, float[1, 3, 3, 3] y3, float[1, 3, 3, 3] r)
  <float[3, 2, 1, 1] w = {1, 2, 3, 4, 5, 6}, float[3] m1 = {1, 2, 3},
   float[1, 1, 3, 3] m2 = {1, 2, 3, 4, 5, 6, 7, 8, 9}, float[3, 1, 1] m = {1, 2, 3}>
{
  c1 = Conv (x, w)
  y1 = Mul (c1, m1)
  c2 = Conv (x, w)
  y2 = Mul (c2, m2)
  c3 = Conv (x, w)
  y3 = Mul (c3, m)
  r = Relu (c3)
})");
  EXPECT_EQ(run_pass("fuse-mul-into-conv-weights", *model), 0u);
  EXPECT_EQ(count_ops(model->graph(), "Mul"), 3u);
}

TEST(FuseMulIntoConvWeights, RewritesInsideIfBranches) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 3, 3] x, bool cond) => (float[1, 3, 3, 3] y)
  <float[3, 2, 1, 1] w = {1, 2, 3, 4, 5, 6}, float[3, 1, 1] m = {2, -1, 0.5}>
{
  y = If (cond) <
    then_branch = then_g () => (float[1, 3, 3, 3] a) { ca = Conv (x, w)  a = Mul (ca, m) },
    else_branch = else_g () => (float[1, 3, 3, 3] b) { b = Conv (x, w) }>
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-mul-into-conv-weights", *model), 1u);
  EXPECT_EQ(count_ops(model->graph(), "Mul"), 0u);
  expect_same_outputs(*before, *model);
}

}  // namespace
}  // namespace onnxkit::testing
