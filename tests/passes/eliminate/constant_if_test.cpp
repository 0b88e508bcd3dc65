// inline-constant-if, and the elimination family's registration.
#include "passes/eliminate/eliminate_test_support.h"
#include "passes/registry.h"

namespace onnxkit::testing {
namespace {

constexpr const char* kBranches = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y, float[2] z) <bool c = {COND}, float[2] a = {1, -2}> {
  r = Relu(x)
  y = If (c) <then_branch = t () => (float[2] t_out) <float[2] k = {3, 4}> { m = Mul(r, k)  t_out = Add(m, a) },
              else_branch = e () => (float[2] e_out) { e_out = Neg(r) }>
  z = Sigmoid(y)
})";

std::string with_condition(const char* cond) {
  std::string text = kBranches;
  text.replace(text.find("COND"), 4, cond);
  return text;
}

TEST(InlineConstantIf, TheTakenBranchReplacesTheIf) {
  for (const char* cond : {"1", "0"}) {
    auto model = model_from_text(with_condition(cond));
    auto before = clone(*model);
    EXPECT_EQ(run_pass("inline-constant-if", *model), 1u) << cond;
    EXPECT_EQ(count_ops(model->graph(), "If"), 0u);
    EXPECT_EQ(output_names(model->graph()), (std::vector<std::string>{"y", "z"}));
    const std::string taken = cond[0] == '1' ? "Add" : "Neg";
    EXPECT_EQ(model->graph().outputs()[0]->producer()->op_type(), taken) << cond;
    EXPECT_TRUE(model->graph().toposort().ok());
    expect_same_outputs(*before, *model);
  }
}

TEST(InlineConstantIf, AComputedConditionOrAnInputDefaultStays) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x, bool c) => (float[2] y, float[2] z) <bool c = {1}> {
  y = If (c) <then_branch = t () => (float[2] t_out) { t_out = Neg(x) }, else_branch = e () => (float[2] e_out) { e_out = Abs(x) }>
  s = ReduceSum(x)
  p = Greater(s, s)
  z = If (p) <then_branch = t2 () => (float[2] t2_out) { t2_out = Neg(x) }, else_branch = e2 () => (float[2] e2_out) { e2_out = Abs(x) }>
})");
  EXPECT_EQ(run_pass("inline-constant-if", *model), 0u);
}

TEST(InlineConstantIf, ABranchReturningAnInputKeepsTheOutputNameThroughAnIdentity) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y) <bool c = {1}> {
  y = If (c) <then_branch = t () => (float[2] t_out) { t_out = Identity(x) }, else_branch = e () => (float[2] e_out) { e_out = Abs(x) }>
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("inline-constant-if", *model), 1u);  // t_out is the branch's own value: it takes y's name
  expect_same_outputs(*before, *model);
  // A branch returning the outer input x itself: y cannot become x, so y = Identity(x).
  auto direct = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y) <bool c = {1}> {
  y = If (c) <then_branch = t () => (float[2] t_out) { t_out = Neg(x) }, else_branch = e () => (float[2] e_out) { e_out = Abs(x) }>
})");
  direct->graph().nodes().front().subgraphs().front()->set_output(0, direct->graph().find_value("x"));
  EXPECT_EQ(run_pass("inline-constant-if", *direct), 1u);
  EXPECT_EQ(count_ops(direct->graph(), "If"), 0u);
  EXPECT_EQ(output_names(direct->graph()), (std::vector<std::string>{"y"}));
  const ir::Node* producer = direct->graph().outputs()[0]->producer();
  ASSERT_NE(producer, nullptr);
  EXPECT_EQ(producer->op_type(), "Identity");
  EXPECT_EQ(producer->input(0)->name(), "x");
}

TEST(InlineConstantIf, AConstantNodeConditionCounts) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y) {
  c = Constant <value = bool {0}> ()
  y = If (c) <then_branch = t () => (float[2] t_out) { t_out = Neg(x) }, else_branch = e () => (float[2] e_out) { e_out = Abs(x) }>
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("inline-constant-if", *model), 1u);
  EXPECT_EQ(model->graph().outputs()[0]->producer()->op_type(), "Abs");
  expect_same_outputs(*before, *model);
}

TEST(InlineConstantIf, NestedIfsInlineLevelByLevel) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y) <bool c = {1}, bool d = {0}> {
  y = If (c) <then_branch = t () => (float[2] t_out) {
        t_out = If (d) <then_branch = tt () => (float[2] tt_out) { tt_out = Neg(x) },
                        else_branch = te () => (float[2] te_out) { te_out = Sigmoid(x) }>
      },
      else_branch = e () => (float[2] e_out) { e_out = Abs(x) }>
})");
  auto before = clone(*model);
  // The outer If first (parents before sub-graphs), then the inner one, now at the top.
  EXPECT_EQ(run_pass("inline-constant-if", *model), 1u);
  EXPECT_EQ(run_pass("inline-constant-if", *model), 1u);
  EXPECT_EQ(count_ops(model->graph(), "If"), 0u);
  EXPECT_EQ(model->graph().outputs()[0]->producer()->op_type(), "Sigmoid");
  expect_same_outputs(*before, *model);
}

TEST(EliminateFamily, RegisteredInOrderWithSummaries) {
  std::vector<std::unique_ptr<passes::Pass>> passes;
  passes::add_elimination_passes(passes);
  EXPECT_EQ(passes.size(), 24u);
  EXPECT_EQ(passes.front()->name(), "inline-constant-if");
  for (const auto& p : passes) {
    EXPECT_NE(passes::find_pass(p->name()), nullptr) << p->name();
    EXPECT_FALSE(p->summary().empty()) << p->name();
  }
}

}  // namespace
}  // namespace onnxkit::testing
