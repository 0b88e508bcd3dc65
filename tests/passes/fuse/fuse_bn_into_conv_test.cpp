// fuse-bn-into-conv: Conv/ConvTranspose + inference BatchNormalization.
#include <gtest/gtest.h>

#include "passes/fuse/fuse_test_support.h"

namespace onnxkit::testing {
namespace {

// 2 input channels, 3 output channels, 3x3 kernels.
constexpr const char* kConvBn = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 5, 5] x) => (float[1, 3, 5, 5] y)
  <float[3, 2, 3, 3] w = {1, -2, 3, 0.5, 1, 2, -1, 0, 1, 2, 1, 0, 0.5, -0.5, 1, 1, 2, 3,
                          0, 1, 0, 1, -1, 1, 0, 1, 0, 2, 2, -2, 0.25, 1, 0.75, -1, 1, 0,
                          1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, 0, 0, 0, 3, 2, 1},
   float[3] bias = {0.1, -0.2, 0.3},
   float[3] gamma = {1, 2, 3}, float[3] beta = {0, 0.5, -1}, float[3] mean = {0.5, 0, 1}, float[3] var = {1, 4, 9}>
{
  c = Conv <pads = [1, 1, 1, 1], kernel_shape = [3, 3]> (x, w, bias)
  y = BatchNormalization <epsilon = 1e-5> (c, gamma, beta, mean, var)
})";

TEST(FuseBnIntoConv, FoldsIntoWeightsAndBiasAndKeepsTheOutputName) {
  auto model = model_from_text(kConvBn);
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-bn-into-conv", *model), 1u);
  EXPECT_EQ(count_ops(model->graph(), "BatchNormalization"), 0u);
  EXPECT_EQ(count_ops(model->graph(), "Conv"), 1u);
  // y was a graph output: the Conv now produces it, under its name.
  const ir::Value* y = model->graph().outputs()[0];
  EXPECT_EQ(y->name(), "y");
  ASSERT_NE(y->producer(), nullptr);
  EXPECT_EQ(y->producer()->op_type(), "Conv");
  expect_same_outputs(*before, *model);
}

TEST(FuseBnIntoConv, OneByOneConvMatchesAHandComputedResult) {
  // Epsilon 0 keeps the numbers exact: s = gamma / sqrt(var) = {2, 1, 2}.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 1, 1] x) => (float[1, 3, 1, 1] y)
  <float[3, 2, 1, 1] w = {1, 0, 0, 1, 1, 1},
   float[3] gamma = {2, 2, 6}, float[3] beta = {0.5, -1, 0}, float[3] mean = {0.5, 0, 1}, float[3] var = {1, 4, 9}>
{
  c = Conv (x, w)
  y = BatchNormalization <epsilon = 0.0> (c, gamma, beta, mean, var)
})");
  EXPECT_EQ(run_pass("fuse-bn-into-conv", *model), 1u);
  const ir::Node* conv = first_node(model->graph(), "Conv");
  ASSERT_NE(conv, nullptr);
  // W' = W * s per output channel; B' = (0 - mean) * s + beta.
  EXPECT_EQ(input_floats(*conv, 1), (std::vector<float>{2, 0, 0, 1, 2, 2}));
  EXPECT_EQ(input_floats(*conv, 2), (std::vector<float>{-0.5f, -1, -2}));
  // x = (1, 2): c = (1, 2, 3); y = (c - mean) * s + beta = (1.5, 1, 4).
  runtime::Tensor y = run_on(*model, "x", runtime::Tensor::from<float>({1, 2, 1, 1}, {1, 2}));
  expect_tensor_near(y, runtime::Tensor::from<float>({1, 3, 1, 1}, {1.5f, 1, 4}));
}

TEST(FuseBnIntoConv, ConvTransposeWithGroupsScalesItsOutputChannelAxis) {
  // W is [C_in = 4, C_out / group = 3, 2, 2] with group 2: 6 output channels,
  // and each input channel's row of W feeds its own group's channels.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 4, 3, 3] x) => (float[1, 6, 4, 4] y)
  <float[4, 3, 2, 2] w = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, -1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, -12,
                          0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 5.5, 6, 1, 0, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0},
   float[6] bias = {1, 2, 3, 4, 5, 6},
   float[6] gamma = {1, 2, 3, 4, 5, 6}, float[6] beta = {0, 1, 0, -1, 0, 1},
   float[6] mean = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, float[6] var = {1, 2, 3, 4, 5, 6}>
{
  c = ConvTranspose <group = 2> (x, w, bias)
  y = BatchNormalization (c, gamma, beta, mean, var)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-bn-into-conv", *model), 1u);
  EXPECT_EQ(count_ops(model->graph(), "BatchNormalization"), 0u);
  expect_same_outputs(*before, *model);
}

TEST(FuseBnIntoConv, Float64WeightsFold) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (double[1, 2, 3, 3] x) => (double[1, 2, 3, 3] y)
  <double[2, 2, 1, 1] w = {1, 2, 3, 4}, double[2] gamma = {1, 2}, double[2] beta = {0, 1},
   double[2] mean = {0.5, -0.5}, double[2] var = {1, 2}>
{
  c = Conv (x, w)
  y = BatchNormalization (c, gamma, beta, mean, var)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-bn-into-conv", *model), 1u);
  expect_same_outputs(*before, *model, 1e-12, 1e-12);
}

TEST(FuseBnIntoConv, DeclinesWhenTheConvOutputHasAnotherReader) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 3, 3] x) => (float[1, 2, 3, 3] y, float[1, 2, 3, 3] r)
  <float[2, 2, 1, 1] w = {1, 2, 3, 4}, float[2] gamma = {1, 2}, float[2] beta = {0, 1},
   float[2] mean = {0.5, -0.5}, float[2] var = {1, 2}>
{
  c = Conv (x, w)
  y = BatchNormalization (c, gamma, beta, mean, var)
  r = Relu (c)
})");
  EXPECT_EQ(run_pass("fuse-bn-into-conv", *model), 0u);
  EXPECT_EQ(count_ops(model->graph(), "BatchNormalization"), 1u);
}

TEST(FuseBnIntoConv, DeclinesOnOddModels) {
  // The conv output is itself a graph output; the mean is a graph input; the
  // weights are a graph input (an initializer default only); the BN is excluded.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 3, 3] x, float[2] mean_in, float[2, 2, 1, 1] w_in) => (float[1, 2, 3, 3] y1, float[1, 2, 3, 3] c1,
                                                                    float[1, 2, 3, 3] y2, float[1, 2, 3, 3] y3, float[1, 2, 3, 3] y4)
  <float[2, 2, 1, 1] w = {1, 2, 3, 4}, float[2, 2, 1, 1] w_in = {1, 2, 3, 4}, float[2] gamma = {1, 2}, float[2] beta = {0, 1},
   float[2] mean = {0.5, -0.5}, float[2] var = {1, 2}>
{
  c1 = Conv (x, w)
  y1 = BatchNormalization (c1, gamma, beta, mean, var)
  c2 = Conv (x, w)
  y2 = BatchNormalization (c2, gamma, beta, mean_in, var)
  c3 = Conv (x, w_in)
  y3 = BatchNormalization (c3, gamma, beta, mean, var)
  c4 = Conv (x, w)
  y4 = BatchNormalization (c4, gamma, beta, mean, var)
})");
  // The text syntax has no node names: name the last BN by hand.
  for (ir::Node& n : model->graph().nodes())
    if (n.output(0)->name() == "y4") n.set_name("keep");
  EXPECT_EQ(run_pass("fuse-bn-into-conv", *model, excluding({"keep"})), 0u);
  EXPECT_EQ(count_ops(model->graph(), "BatchNormalization"), 4u);
}

TEST(FuseBnIntoConv, SharedWeightsAreCopiedNotEdited) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 3, 3] x) => (float[1, 2, 3, 3] y, float[1, 2, 3, 3] z)
  <float[2, 2, 1, 1] w = {1, 2, 3, 4}, float[2] gamma = {1, 2}, float[2] beta = {0, 1},
   float[2] mean = {0.5, -0.5}, float[2] var = {1, 2}>
{
  c = Conv (x, w)
  y = BatchNormalization (c, gamma, beta, mean, var)
  z = Conv (x, w)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-bn-into-conv", *model), 1u);
  EXPECT_EQ(input_floats(*model->graph().outputs()[1]->producer(), 1), (std::vector<float>{1, 2, 3, 4}));
  expect_same_outputs(*before, *model);
}

TEST(FuseBnIntoConv, RewritesInsideIfBranches) {
  // Both branches read the outer x and initializers; each returns its BN's output.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 3, 3] x, bool cond) => (float[1, 2, 3, 3] y)
  <float[2, 2, 1, 1] w = {1, 2, 3, 4}, float[2] gamma = {1, 2}, float[2] beta = {0, 1},
   float[2] mean = {0.5, -0.5}, float[2] var = {1, 2}, float[2] mean2 = {2, 3}>
{
  y = If (cond) <
    then_branch = then_g () => (float[1, 2, 3, 3] a) {
      ca = Conv (x, w)
      a = BatchNormalization (ca, gamma, beta, mean, var)
    },
    else_branch = else_g () => (float[1, 2, 3, 3] b) {
      cb = Conv (x, w)
      b = BatchNormalization (cb, gamma, beta, mean2, var)
    }>
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-bn-into-conv", *model), 2u);
  EXPECT_EQ(count_ops(model->graph(), "BatchNormalization"), 0u);
  const ir::Node& if_node = model->graph().nodes().front();
  for (const ir::Graph* branch : if_node.subgraphs()) {
    ASSERT_EQ(branch->outputs().size(), 1u);
    EXPECT_TRUE(branch->outputs()[0]->name() == "a" || branch->outputs()[0]->name() == "b");
    EXPECT_EQ(branch->outputs()[0]->producer()->op_type(), "Conv");
  }
  expect_same_outputs(*before, *model);
}

TEST(FuseBnIntoConv, ABranchReturningTheBnOutputItselfReturnsTheConvOutput) {
  // The then-branch returns the outer t directly: replace_value rewires that
  // branch's output slot along with t's consumers.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 3, 3] x, bool cond) => (float[1, 2, 3, 3] y)
  <float[2, 2, 1, 1] w = {1, 2, 3, 4}, float[2] gamma = {1, 2}, float[2] beta = {0, 1},
   float[2] mean = {0.5, -0.5}, float[2] var = {1, 2}>
{
  c = Conv (x, w)
  t = BatchNormalization (c, gamma, beta, mean, var)
  y = If (cond) <
    then_branch = then_g () => (float[1, 2, 3, 3] t) { },
    else_branch = else_g () => (float[1, 2, 3, 3] e) { e = Neg (x) }>
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-bn-into-conv", *model), 1u);
  EXPECT_EQ(count_ops(model->graph(), "BatchNormalization"), 0u);
  const ir::Graph* then_branch = model->graph().nodes().back().subgraphs()[0];
  ASSERT_NE(then_branch->outputs()[0]->producer(), nullptr);
  EXPECT_EQ(then_branch->outputs()[0]->producer()->op_type(), "Conv");
  expect_same_outputs(*before, *model);
}

}  // namespace
}  // namespace onnxkit::testing
