// eliminate-identity and eliminate-dropout.
#include "passes/eliminate/eliminate_test_support.h"

namespace onnxkit::testing {
namespace {

TEST(EliminateIdentity, RemovesIdentityChainsAndKeepsOutputNames) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x) => (float[2, 3] y, float[2, 3] z) {
  a = Identity(x)
  b = Relu(a)
  c = Identity(b)
  y = Identity(c)
  z = Sigmoid(a)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("eliminate-identity", *model), 3u);
  EXPECT_EQ(count_ops(model->graph(), "Identity"), 0u);
  EXPECT_EQ(output_names(model->graph()), (std::vector<std::string>{"y", "z"}));
  EXPECT_EQ(model->graph().outputs()[0]->producer()->op_type(), "Relu");
  expect_same_outputs(*before, *model);
}

TEST(EliminateIdentity, DeclinesWhenTheInterfaceWouldLoseAName) {
  // Output y is input x passed through; output w is the same value as output v.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y, float[2] v, float[2] w) {
  y = Identity(x)
  v = Relu(x)
  w = Identity(v)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("eliminate-identity", *model), 0u);
  EXPECT_EQ(count_ops(model->graph(), "Identity"), 2u);
  expect_same_outputs(*before, *model);
}

TEST(EliminateIdentity, ExcludedNodeStays) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y) { a = Identity(x)  y = Relu(a) })");
  auto options = excluding_first(model->graph(), "Identity", "keep");
  EXPECT_EQ(run_pass("eliminate-identity", *model, options), 0u);
  EXPECT_EQ(count_ops(model->graph(), "Identity"), 1u);
}

TEST(EliminateIdentity, InsideABranch) {
  // The then branch's Identity reads an outer value and feeds a node; the
  // else branch returns an Identity of an outer value, which must stay (a
  // branch output cannot be renamed into the outer value).
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x, bool c) => (float[2] y) {
  y = If (c) <then_branch = t () => (float[2] t_out) { i = Identity(x)  t_out = Neg(i) },
              else_branch = e () => (float[2] e_out) { e_out = Identity(x) }>
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("eliminate-identity", *model), 1u);
  EXPECT_EQ(count_ops(then_branch(*model), "Identity"), 0u);
  EXPECT_EQ(count_ops(model->graph(), "Identity"), 1u);
  expect_same_outputs(*before, *model);
}

TEST(EliminateDropout, RemovesInferenceDropoutOnlyWhenItsMaskIsUnused) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x, bool train) => (float[2, 3] y, float[2, 3] z, bool[2, 3] mask, float[2, 3] w)
  <float ratio = {0.5}, bool off = {0}> {
  a = Dropout(x, ratio)
  y = Relu(a)
  d, mask = Dropout(x, ratio)
  z = Relu(d)
  b = Dropout(x, ratio, train)
  c = Dropout(x, ratio, off)
  w = Add(b, c)
})");
  EXPECT_EQ(run_pass("eliminate-dropout", *model), 2u);  // a, and c (training_mode a constant false)
  EXPECT_EQ(count_ops(model->graph(), "Dropout"), 2u);   // the one with a used mask; the one with a live flag
  const ir::Node* relu = model->graph().outputs()[0]->producer();
  EXPECT_EQ(relu->input(0)->name(), "x");
}

TEST(EliminateDropout, RatioZeroIsTheIdentityEvenInTraining) {
  // Swin-T's F.dropout(p=0.0): training_mode true (even a live flag), nothing dropped, scale 1.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x, bool train) => (float[2, 3] y, float[2, 3] z, float[2, 3] w)
  <float zero = {0}, double zero64 = {0}, float half = {0.5}, bool on = {1}> {
  a = Dropout(x, zero, on)
  y = Relu(a)
  b = Dropout(x, zero64, train)
  z = Relu(b)
  c = Dropout(x, half, on)
  w = Relu(c)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("eliminate-dropout", *model), 2u);  // a and b; c drops half its inputs
  EXPECT_EQ(count_ops(model->graph(), "Dropout"), 1u);
  EXPECT_EQ(model->graph().outputs()[0]->producer()->input(0)->name(), "x");
  EXPECT_EQ(model->graph().outputs()[1]->producer()->input(0)->name(), "x");
}

TEST(EliminateDropout, BeforeOpset7OnlyWithIsTest) {
  auto model = model_from_text(R"(
<ir_version: 3, opset_import: ["" : 6]>
g (float[2, 3] x) => (float[2, 3] y, float[2, 3] z) {
  a = Dropout <is_test = 1> (x)
  y = Relu(a)
  b = Dropout (x)
  z = Relu(b)
})");
  EXPECT_EQ(run_pass("eliminate-dropout", *model), 1u);
  EXPECT_EQ(model->graph().outputs()[0]->producer()->input(0)->name(), "x");
  EXPECT_EQ(model->graph().outputs()[1]->producer()->input(0)->producer()->op_type(), "Dropout");
}

TEST(EliminateDropout, NumericallyTheIdentityAtInferenceAndInABranch) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x, bool c) => (float[2, 3] y, float[2, 3] z) <float ratio = {0.3}> {
  a = Dropout(x, ratio)
  y = Tanh(a)
  z = If (c) <then_branch = t () => (float[2, 3] t_out) { d = Dropout(x, ratio)  t_out = Neg(d) },
              else_branch = e () => (float[2, 3] e_out) { e_out = Abs(x) }>
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("eliminate-dropout", *model), 2u);
  EXPECT_EQ(count_ops(model->graph(), "Dropout"), 0u);
  expect_same_outputs(*before, *model);
}

}  // namespace
}  // namespace onnxkit::testing
