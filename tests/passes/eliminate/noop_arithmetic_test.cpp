// eliminate-noop-arithmetic: x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1 go;
// 0 - x, 1 / x, a unit that broadcasts x bigger, and a value that is not the
// unit stay.
#include "passes/eliminate/eliminate_test_support.h"

namespace onnxkit::testing {
namespace {

TEST(EliminateNoopArithmetic, UnitsOnEitherSideOfCommutingOpsGo) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x, int64[3] i) => (float[2, 3] y, float[2, 3] z, int64[3] k)
  <float[3] zeros = {0, 0, 0}, float[1, 1] one = {1}, float zero = {0}, int64[3] izeros = {0, 0, 0}> {
  a = Add(zeros, x)
  b = Mul(a, one)
  c = Sub(b, zero)
  d = Div(c, one)
  y = Tanh(d)
  e = Mul(one, x)
  z = Relu(e)
  j = Add(i, izeros)
  k = Neg(j)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("eliminate-noop-arithmetic", *model), 6u);
  EXPECT_EQ(model->graph().nodes().size(), 3u);  // Tanh, Relu, Neg
  EXPECT_EQ(model->graph().outputs()[0]->producer()->input(0)->name(), "x");
  EXPECT_EQ(model->graph().outputs()[2]->producer()->input(0)->name(), "i");
  expect_same_outputs(*before, *model);
}

TEST(EliminateNoopArithmetic, DeclinesWhatComputesSomething) {
  // 0 - x negates; 1 / x inverts; zeros [2, 3] broadcast x [3] to [2, 3];
  // 0.5 is no unit; a graph input passed straight to an output keeps its Add.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[3] x) => (float[3] y1, float[3] y2, float[2, 3] y3, float[3] y4, float[3] y5)
  <float zero = {0}, float one = {1}, float[2, 3] wide = {0, 0, 0, 0, 0, 0}, float half = {0.5}> {
  y1 = Sub(zero, x)
  y2 = Div(one, x)
  y3 = Add(x, wide)
  y4 = Mul(x, half)
  y5 = Add(x, zero)
})");
  EXPECT_EQ(run_pass("eliminate-noop-arithmetic", *model), 0u);
  EXPECT_EQ(model->graph().nodes().size(), 5u);
}

TEST(EliminateNoopArithmetic, InsideABranchAndWithASymbolicBatch) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N, 4] x, bool c) => (float[N, 4] y) <float[4] zeros = {0, 0, 0, 0}, float ones = {1}> {
  a = Add(x, zeros)
  y = If (c) <then_branch = t () => (float[N, 4] t_out) { m = Mul(a, ones)  t_out = Neg(m) },
              else_branch = e () => (float[N, 4] e_out) { e_out = Abs(a) }>
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("eliminate-noop-arithmetic", *model), 2u);  // the Add, and the Mul of the branch
  EXPECT_EQ(count_ops(model->graph(), "Add") + count_ops(model->graph(), "Mul"), 0u);
  expect_same_outputs(*before, *model);
}

}  // namespace
}  // namespace onnxkit::testing
