// fuse-matmul-add-into-gemm: 2-D MatMul + bias Add.
#include <gtest/gtest.h>

#include "passes/fuse/fuse_test_support.h"

namespace onnxkit::testing {
namespace {

TEST(FuseMatMulAddIntoGemm, BiasOnEitherSideBecomesC) {
  // A symbolic batch with a [N] bias on the right; a [1, N] bias on the left;
  // a full [M, N] bias that is a graph input (C need not be constant).
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[batch, 4] x, float[2, 4] x2, float[2, 3] full) => (float[batch, 3] y, float[2, 3] z, float[2, 3] u)
  <float[4, 3] w = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, float[3] b = {0.5, -1, 2}, float[1, 3] b2 = {1, 2, 3}>
{
  p = MatMul (x, w)
  y = Add (p, b)
  q = MatMul (x2, w)
  z = Add (b2, q)
  r = MatMul (x2, w)
  u = Add (r, full)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-matmul-add-into-gemm", *model), 3u);
  EXPECT_EQ(count_ops(model->graph(), "MatMul"), 0u);
  EXPECT_EQ(count_ops(model->graph(), "Add"), 0u);
  EXPECT_EQ(count_ops(model->graph(), "Gemm"), 3u);
  const auto& outputs = model->graph().outputs();
  EXPECT_EQ(outputs[0]->name(), "y");
  EXPECT_EQ(outputs[1]->name(), "z");
  EXPECT_EQ(outputs[2]->name(), "u");
  for (const ir::Value* out : outputs) {
    ASSERT_NE(out->producer(), nullptr);
    EXPECT_EQ(out->producer()->op_type(), "Gemm");
  }
  expect_same_outputs(*before, *model);
}

TEST(FuseMatMulAddIntoGemm, TheFusedProductFeedsItsReaders) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 4] x) => (float[2, 3] y)
  <float[4, 3] w = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, float[3] b = {0.5, -1, 2}>
{
  p = MatMul (x, w)
  s = Add (p, b)
  y = Relu (s)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-matmul-add-into-gemm", *model), 1u);
  const ir::Node* relu = first_node(model->graph(), "Relu");
  ASSERT_NE(relu, nullptr);
  ASSERT_NE(relu->input(0)->producer(), nullptr);
  EXPECT_EQ(relu->input(0)->producer()->op_type(), "Gemm");
  expect_same_outputs(*before, *model);
}

TEST(FuseMatMulAddIntoGemm, DeclinesOtherRanksBroadcastsAndSharedProducts) {
  // Batched A; a [2, 3] bias against a symbolic M; a bias that would make the
  // output bigger; a product with a second reader; an A of unknown rank.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 2, 4] x3, float[m, 4] xm, float[2, 4] x, float x_unknown)
    => (float[2, 2, 3] y1, float[m, 3] y2, float[2, 2, 3] y3, float[2, 3] y4, float[2, 3] r, float y5)
  <float[4, 3] w = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, float[3] b = {0.5, -1, 2}, float[2, 3] b23 = {1, 2, 3, 4, 5, 6},
   float[2, 1, 3] b3 = {1, 2, 3, 4, 5, 6}>
{
  p1 = MatMul (x3, w)
  y1 = Add (p1, b)
  p2 = MatMul (xm, w)
  y2 = Add (p2, b23)
  p3 = MatMul (x, w)
  y3 = Add (p3, b3)
  p4 = MatMul (x, w)
  y4 = Add (p4, b)
  r = Relu (p4)
  p5 = MatMul (x_unknown, w)
  y5 = Add (p5, b)
})");
  // x_unknown's declared type is a scalar: make it say nothing about the shape.
  ir::Value* unknown = model->graph().find_value("x_unknown");
  unknown->mutable_info().mutable_type()->mutable_tensor_type()->clear_shape();
  EXPECT_EQ(run_pass("fuse-matmul-add-into-gemm", *model), 0u);
  EXPECT_EQ(count_ops(model->graph(), "MatMul"), 5u);
  EXPECT_EQ(count_ops(model->graph(), "Gemm"), 0u);
}

TEST(FuseMatMulAddIntoGemm, RewritesInsideIfBranches) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 4] x, bool cond) => (float[2, 3] y)
  <float[4, 3] w = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, float[3] b = {0.5, -1, 2}>
{
  y = If (cond) <
    then_branch = then_g () => (float[2, 3] a) { pa = MatMul (x, w)  a = Add (pa, b) },
    else_branch = else_g () => (float[2, 3] c) { pc = MatMul (x, w)  c = Add (b, pc) }>
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-matmul-add-into-gemm", *model), 2u);
  EXPECT_EQ(count_ops(model->graph(), "Gemm"), 2u);
  EXPECT_EQ(count_ops(model->graph(), "MatMul"), 0u);
  expect_same_outputs(*before, *model);
}

}  // namespace
}  // namespace onnxkit::testing
