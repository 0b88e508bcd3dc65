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

namespace onnxkit::testing {
namespace {

// merge-consecutive-squeezes.
std::vector<int64_t> axes_input(ir::Model& model, const ir::Node* node) {
  passes::PassOptions options;
  passes::PassContext context(model, options);
  return context.constant_ints(node->input(1)).value_or(std::vector<int64_t>{});
}

TEST(MergeConsecutiveSqueezes, UnsqueezesAndSqueezesJoin) {
  // x [a, b]: Unsqueeze [0] gives [1, a, b], then [2] gives [1, a, 1, b]:
  // [0, 2] at once. Unsqueeze [-1] then [1]: [a, b, 1] then [a, 1, b, 1]:
  // the first's axis 2 is the third final position not 1, 3: [1, 3].
  // s [1, c, 1, d, 1]: Squeeze [0] gives [c, 1, d, 1], then [1, -1] removes
  // x's axes 2 and 4: [0, 2, 4].
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[a, b] x, float[1, c, 1, d, 1] s) => (float[1, a, 1, b] y, float[a, 1, b, 1] z, float[c, d] w)
  <int64[1] zero = {0}, int64[1] two = {2}, int64[1] last = {-1}, int64[1] one = {1}, int64[2] both = {1, -1}> {
  t = Unsqueeze(x, zero)
  y = Unsqueeze(t, two)
  u = Unsqueeze(x, last)
  z = Unsqueeze(u, one)
  v = Squeeze(s, zero)
  w = Squeeze(v, both)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("merge-consecutive-squeezes", *model), 3u);
  model->graph().cleanup();
  EXPECT_EQ(model->graph().nodes().size(), 3u);
  EXPECT_EQ(axes_input(*model, model->graph().outputs()[0]->producer()), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(axes_input(*model, model->graph().outputs()[1]->producer()), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(axes_input(*model, model->graph().outputs()[2]->producer()), (std::vector<int64_t>{0, 2, 4}));
  expect_same_outputs(*before, *model);
}

TEST(MergeConsecutiveSqueezes, OldOpsetAttributesAndDeclines) {
  auto model = model_from_text(R"(
<ir_version: 7, opset_import: ["" : 11]>
g (float[3] x, float[1, 3, 1] s, float[1, 3, 1] r) => (float[1, 3, 1] y, float[3] w, float[3] q) {
  t = Unsqueeze <axes = [0]> (x)
  y = Unsqueeze <axes = [2]> (t)
  v = Squeeze(s)
  w = Identity(v)
  p = Squeeze <axes = [0]> (r)
  q = Squeeze(p)
})");
  auto before = clone(*model);
  // q's Squeeze has no axes (all ones, which depends on the dims): declined.
  EXPECT_EQ(run_pass("merge-consecutive-squeezes", *model), 1u);
  EXPECT_EQ(model->graph().outputs()[0]->producer()->attr_ints("axes"), (std::vector<int64_t>{0, 2}));
  expect_same_outputs(*before, *model);
}

}  // namespace
}  // namespace onnxkit::testing
