// eliminate-repeated-unary (idempotent ops and involutions applied twice)
// and eliminate-where-not.
#include "passes/eliminate/eliminate_test_support.h"

namespace onnxkit::testing {
namespace {

TEST(EliminateRepeatedUnary, IdempotentOpsKeepOneAndInvolutionsCancel) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x, bool[4] b) => (float[2, 3] y, float[2, 3] z, float[2, 3] w, bool[4] v, float[2, 3] r) {
  a = Relu(x)
  a2 = Relu(a)
  y = Relu(a2)
  c = Abs(x)
  d = Ceil(c)
  z = Ceil(d)
  n = Neg(x)
  n2 = Neg(n)
  w = Sigmoid(n2)
  t = Not(b)
  v = Not(t)
  f = Floor(x)
  r = Round(f)
})");
  auto before = clone(*model);
  // Relu x3 -> one Relu; Ceil x2 -> one; Neg x2 -> none; Not x2 would give
  // v = b, an input as an output: declined. Floor then Round differ.
  EXPECT_EQ(run_pass("eliminate-repeated-unary", *model), 4u);
  model->graph().cleanup();
  EXPECT_EQ(count_ops(model->graph(), "Relu"), 1u);
  EXPECT_EQ(count_ops(model->graph(), "Ceil"), 1u);
  EXPECT_EQ(count_ops(model->graph(), "Neg"), 0u);
  EXPECT_EQ(count_ops(model->graph(), "Not"), 2u);
  EXPECT_EQ(count_ops(model->graph(), "Round"), 1u);
  EXPECT_EQ(output_names(model->graph()), (std::vector<std::string>{"y", "z", "w", "v", "r"}));
  expect_same_outputs(*before, *model);
}

TEST(EliminateRepeatedUnary, HonoursExclusions) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x) => (float[2, 3] y) {
  a = Relu(x)
  y = Relu(a)
})");
  EXPECT_EQ(run_pass("eliminate-repeated-unary", *model, excluding_first(model->graph(), "Relu", "keep")), 0u);
}

TEST(EliminateWhereNot, SwapsBranches) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (bool[2, 3] c, float[2, 3] a, float[3] b) => (float[2, 3] y, bool[2, 3] m) {
  n = Not(c)
  y = Where(n, a, b)
  m = Identity(n)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("eliminate-where-not", *model), 1u);
  const ir::Node* y = model->graph().outputs()[0]->producer();
  EXPECT_EQ(y->input(0)->name(), "c");
  EXPECT_EQ(y->input(1)->name(), "b");
  EXPECT_EQ(y->input(2)->name(), "a");
  EXPECT_EQ(count_ops(model->graph(), "Not"), 1u);  // m still reads it
  expect_same_outputs(*before, *model);
}

}  // namespace
}  // namespace onnxkit::testing
