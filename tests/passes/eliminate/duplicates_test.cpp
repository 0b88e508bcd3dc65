// eliminate-duplicate-initializers and eliminate-common-subexpressions.
#include "passes/eliminate/eliminate_test_support.h"

namespace onnxkit::testing {
namespace {

TEST(EliminateDuplicateInitializers, EqualTensorsMergeOthersStay) {
  // w2 equals w1; w3 has the same bytes as a different shape; w4 the same
  // values as another type; the default of input d is the caller's to change.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 2] x, float[2, 2] d) => (float[2, 2] a, float[2, 2] b, float[4] c, float[2, 2] e, float[2, 2] f)
  <float[2, 2] w1 = {1, 2, 3, 4}, float[2, 2] w2 = {1, 2, 3, 4}, float[4] w3 = {1, 2, 3, 4},
   double[2, 2] w4 = {1, 2, 3, 4}, float[2, 2] d = {1, 2, 3, 4}> {
  a = Add(x, w1)
  b = Mul(x, w2)
  c = Neg(w3)
  e4 = Cast <to = 1> (w4)
  e = Add(x, e4)
  f = Sub(x, d)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("eliminate-duplicate-initializers", *model), 1u);
  const ir::Node* mul = model->graph().outputs()[1]->producer();
  EXPECT_EQ(mul->input(1)->name(), "w1");
  EXPECT_EQ(model->graph().outputs()[4]->producer()->input(1)->name(), "d");
  expect_same_outputs(*before, *model);
}

TEST(EliminateDuplicateInitializers, AnInitializerThatIsAGraphOutputKeepsItsName) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y, float[2] k) <float[2] w = {5, 6}, float[2] k = {5, 6}> { y = Add(x, w) })");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("eliminate-duplicate-initializers", *model), 1u);
  EXPECT_EQ(output_names(model->graph()), (std::vector<std::string>{"y", "k"}));
  EXPECT_EQ(model->graph().outputs()[0]->producer()->input(1), model->graph().outputs()[1]);
  expect_same_outputs(*before, *model);
}

TEST(EliminateDuplicateInitializers, InsideABranch) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x, bool c) => (float[2] y) {
  y = If (c) <then_branch = t () => (float[2] t_out) <float[2] p = {1, 2}, float[2] q = {1, 2}> { s = Add(x, p)  t_out = Mul(s, q) },
              else_branch = e () => (float[2] e_out) { e_out = Abs(x) }>
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("eliminate-duplicate-initializers", *model), 1u);
  expect_same_outputs(*before, *model);
}

TEST(EliminateCommonSubexpressions, SameOpInputsAndAttributesMerge) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x) => (float[2, 3] y, float[3, 2] z, float[2, 3] w) {
  a = Relu(x)
  b = Relu(x)
  y = Add(a, b)
  t1 = Transpose <perm = [1, 0]> (x)
  t2 = Transpose <perm = [1, 0]> (x)
  z = Sub(t1, t2)
  s1 = Softmax <axis = 0> (x)
  s2 = Softmax <axis = 1> (x)
  w = Add(s1, s2)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("eliminate-common-subexpressions", *model), 2u);
  EXPECT_EQ(count_ops(model->graph(), "Relu"), 1u);
  EXPECT_EQ(count_ops(model->graph(), "Transpose"), 1u);
  EXPECT_EQ(count_ops(model->graph(), "Softmax"), 2u);  // different axes
  expect_same_outputs(*before, *model);
}

TEST(EliminateCommonSubexpressions, ChainsCollapseInOneRun) {
  // Once b is a, the two Negs read the same value and merge too.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y) { a = Relu(x)  b = Relu(x)  na = Neg(a)  nb = Neg(b)  y = Add(na, nb) })");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("eliminate-common-subexpressions", *model), 2u);
  EXPECT_EQ(model->graph().nodes().size(), 3u);
  expect_same_outputs(*before, *model);
}

TEST(EliminateCommonSubexpressions, RandomOpsSubgraphsAndTwoOutputsStay) {
  // Two RandomUniformLike draw different numbers; two Ifs are not compared;
  // two Relus that are both graph outputs cannot become one value.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x, bool c) => (float[2] r, float[2] y1, float[2] y2, float[2] i1, float[2] i2) {
  u1 = RandomUniformLike(x)
  u2 = RandomUniformLike(x)
  r = Add(u1, u2)
  y1 = Relu(x)
  y2 = Relu(x)
  i1 = If (c) <then_branch = t () => (float[2] t_out) { t_out = Neg(x) }, else_branch = e () => (float[2] e_out) { e_out = Abs(x) }>
  i2 = If (c) <then_branch = t2 () => (float[2] t2_out) { t2_out = Neg(x) }, else_branch = e2 () => (float[2] e2_out) { e2_out = Abs(x) }>
})");
  EXPECT_EQ(run_pass("eliminate-common-subexpressions", *model), 0u);
}

TEST(EliminateCommonSubexpressions, ALaterGraphOutputTakesTheEarlierValueUnderItsName) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x, bool c) => (float[2] y, float[2] z) {
  a = Relu(x)
  y = Neg(a)
  z = If (c) <then_branch = t () => (float[2] t_out) { p = Sigmoid(x)  q = Sigmoid(x)  t_out = Add(p, q) },
              else_branch = e () => (float[2] e_out) { e_out = Relu(x) }>
})");
  // No duplicates at the top; one inside the then branch.
  auto before = clone(*model);
  EXPECT_EQ(run_pass("eliminate-common-subexpressions", *model), 1u);
  EXPECT_EQ(count_ops(then_branch(*model), "Sigmoid"), 1u);
  expect_same_outputs(*before, *model);

  auto outputs = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y, float[2] z) { a = Relu(x)  y = Neg(a)  z = Relu(x) })");
  auto before_outputs = clone(*outputs);
  EXPECT_EQ(run_pass("eliminate-common-subexpressions", *outputs), 1u);
  EXPECT_EQ(output_names(outputs->graph()), (std::vector<std::string>{"y", "z"}));
  EXPECT_EQ(outputs->graph().outputs()[0]->producer()->input(0), outputs->graph().outputs()[1]);
  expect_same_outputs(*before_outputs, *outputs);
}

}  // namespace
}  // namespace onnxkit::testing
