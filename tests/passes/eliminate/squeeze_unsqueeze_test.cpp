// eliminate-squeeze-unsqueeze.
#include "passes/eliminate/eliminate_test_support.h"

namespace onnxkit::testing {
namespace {

TEST(EliminateSqueezeUnsqueeze, PairsOnTheSameAxesCancel) {
  // Opset 13: axes are inputs; negative axes; a Squeeze without axes on a
  // fully known shape; Unsqueeze then Squeeze.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[N, 1, 8] x, float[4, 1] v, float[N, 8] w) => (float[N, 1, 8] y, float[4, 1] z, float[N, 8] u)
  <int64[1] one = {1}, int64[1] minus_two = {-2}, int64[2] front = {0, -1}> {
  s = Squeeze(x, one)
  t = Unsqueeze(s, minus_two)
  y = Relu(t)
  s2 = Squeeze(v)
  t2 = Unsqueeze(s2, one)
  z = Relu(t2)
  e = Unsqueeze(w, front)
  f = Squeeze(e, front)
  u = Relu(f)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("eliminate-squeeze-unsqueeze", *model), 3u);
  for (const ir::Value* out : model->graph().outputs()) {
    const ir::Value* relu_input = out->producer()->input(0);
    EXPECT_TRUE(relu_input->is_graph_input()) << out->name() << " reads " << relu_input->name();
  }
  expect_same_outputs(*before, *model);
}

TEST(EliminateSqueezeUnsqueeze, OtherAxesAndUnknownDimsAreDeclined) {
  // Different axes; a Squeeze without axes over a symbolic dim (which may be
  // 1); Squeeze then Squeeze.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[1, 1, 8] x, float[N, 1] v) => (float[1, 8, 1] y, float[N, 1] z, float[8] u)
  <int64[1] zero = {0}, int64[1] two = {2}, int64[1] one = {1}> {
  s = Squeeze(x, zero)
  y = Unsqueeze(s, two)
  s2 = Squeeze(v)
  z = Unsqueeze(s2, one)
  u = Squeeze(s, zero)
})");
  EXPECT_EQ(run_pass("eliminate-squeeze-unsqueeze", *model), 0u);
}

TEST(EliminateSqueezeUnsqueeze, AttributesBeforeOpset13AndAGraphOutput) {
  auto model = model_from_text(R"(
<ir_version: 7, opset_import: ["" : 12]>
g (float[2, 1, 3] x) => (float[2, 1, 3] y) {
  r = Relu(x)
  s = Squeeze <axes = [1]> (r)
  y = Unsqueeze <axes = [1]> (s)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("eliminate-squeeze-unsqueeze", *model), 1u);
  EXPECT_EQ(model->graph().outputs()[0]->name(), "y");
  EXPECT_EQ(model->graph().outputs()[0]->producer()->op_type(), "Relu");
  expect_same_outputs(*before, *model);
}

TEST(EliminateSqueezeUnsqueeze, InsideABranch) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x, bool c) => (float[2, 3] y) <int64[1] zero = {0}> {
  y = If (c) <then_branch = t () => (float[2, 3] t_out) { u = Unsqueeze(x, zero)  s = Squeeze(u, zero)  t_out = Neg(s) },
              else_branch = e () => (float[2, 3] e_out) { e_out = Abs(x) }>
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("eliminate-squeeze-unsqueeze", *model), 1u);
  EXPECT_EQ(count_ops(then_branch(*model), "Squeeze"), 0u);
  expect_same_outputs(*before, *model);
}

}  // namespace
}  // namespace onnxkit::testing
