// fuse-bn-into-gemm: Gemm + inference BatchNormalization over its N features.
#include <gtest/gtest.h>

#include "passes/fuse/fuse_test_support.h"

namespace onnxkit::testing {
namespace {

TEST(FuseBnIntoGemm, FoldsAlphaBetaTransBAndTheBnIntoBAndC) {
  // B is [N = 3, K = 2] under transB; C is [1, N].
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4, 2] a) => (float[4, 3] y)
  <float[3, 2] b = {1, 2, -1, 0.5, 3, -2}, float[1, 3] c = {0.1, 0.2, 0.3},
   float[3] gamma = {1, 2, 3}, float[3] beta = {0, 0.5, -1}, float[3] mean = {0.5, 0, 1}, float[3] var = {1, 4, 9}>
{
  t = Gemm <alpha = 0.5, beta = 2.0, transB = 1> (a, b, c)
  y = BatchNormalization (t, gamma, beta, mean, var)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-bn-into-gemm", *model), 1u);
  EXPECT_EQ(count_ops(model->graph(), "BatchNormalization"), 0u);
  EXPECT_EQ(count_ops(model->graph(), "Gemm"), 1u);
  const ir::Value* y = model->graph().outputs()[0];
  EXPECT_EQ(y->name(), "y");
  ASSERT_NE(y->producer(), nullptr);
  EXPECT_EQ(y->producer()->op_type(), "Gemm");
  EXPECT_EQ(y->producer()->attribute("alpha"), nullptr);
  expect_same_outputs(*before, *model);
}

TEST(FuseBnIntoGemm, GemmWithoutCGetsOne) {
  // s = gamma / sqrt(var) = {2, 1}: B's columns double and stay; C' = beta - mean * s.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 2] a) => (float[2, 2] y)
  <float[2, 2] b = {1, 2, 3, 4}, float[2] gamma = {2, 2}, float[2] beta = {1, 0}, float[2] mean = {1, 2}, float[2] var = {1, 4}>
{
  t = Gemm (a, b)
  y = BatchNormalization <epsilon = 0.0> (t, gamma, beta, mean, var)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-bn-into-gemm", *model), 1u);
  const ir::Node* gemm = first_node(model->graph(), "Gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(input_floats(*gemm, 1), (std::vector<float>{2, 2, 6, 4}));
  EXPECT_EQ(input_floats(*gemm, 2), (std::vector<float>{-1, -2}));
  expect_same_outputs(*before, *model);
}

TEST(FuseBnIntoGemm, DeclinesAFullMatrixCAndASharedOutput) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 2] a) => (float[2, 2] y, float[2, 2] z, float[2, 2] r)
  <float[2, 2] b = {1, 2, 3, 4}, float[2, 2] c = {1, 2, 3, 4},
   float[2] gamma = {2, 2}, float[2] beta = {1, 0}, float[2] mean = {1, 2}, float[2] var = {1, 4}>
{
  t = Gemm (a, b, c)
  y = BatchNormalization (t, gamma, beta, mean, var)
  u = Gemm (a, b)
  z = BatchNormalization (u, gamma, beta, mean, var)
  r = Relu (u)
})");
  EXPECT_EQ(run_pass("fuse-bn-into-gemm", *model), 0u);
  EXPECT_EQ(count_ops(model->graph(), "BatchNormalization"), 2u);
}

TEST(FuseBnIntoGemm, RewritesInsideIfBranches) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[3, 2] a, bool cond) => (float[3, 2] y)
  <float[2, 2] b = {1, 2, 3, 4}, float[2] gamma = {2, 2}, float[2] beta = {1, 0}, float[2] mean = {1, 2}, float[2] var = {1, 4}>
{
  y = If (cond) <
    then_branch = then_g () => (float[3, 2] p) {
      tp = Gemm <transB = 1> (a, b)
      p = BatchNormalization (tp, gamma, beta, mean, var)
    },
    else_branch = else_g () => (float[3, 2] q) { q = Relu (a) }>
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-bn-into-gemm", *model), 1u);
  EXPECT_EQ(count_ops(model->graph(), "BatchNormalization"), 0u);
  expect_same_outputs(*before, *model);
}

}  // namespace
}  // namespace onnxkit::testing
