// Constant folding: results checked against hand-computed values, and the
// model's outputs against the unfolded model's on random inputs.
#include "passes/fold.h"

#include <gtest/gtest.h>

#include "analysis/onnx_inference.h"
#include "passes/pass_test_support.h"
#include "runtime/tensor_proto.h"

namespace onnxkit::testing {
namespace {

struct Folded {
  size_t folded = 0;
  std::vector<std::string> warnings;
};

// The pass on every graph, as the driver runs it.
Folded fold(ir::Model& model, const passes::PassOptions& options = {}, passes::FoldOptions folding = {}) {
  analysis::apply_inferred_types(model);
  passes::PassOptions with_limits = options;
  with_limits.folding = folding;
  passes::PassContext context(model, with_limits);
  Folded result;
  result.folded = passes::run_on_all_graphs(*passes::make_fold_constants(), model.graph(), context);
  result.warnings = context.take_warnings();
  model.graph().cleanup();
  return result;
}

std::vector<float> floats_of(const ir::Value* v) {
  auto t = runtime::tensor_from_proto(*v->initializer());
  EXPECT_TRUE(t.ok());
  return std::vector<float>(t->data<float>(), t->data<float>() + t->numel());
}

TEST(FoldConstants, ChainOfConstantsBecomesOneInitializerWithTheSameName) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y) <float[2] a = {1, 2}, float[2] b = {3, 5}> {
  s = Add(a, b)
  m = Mul(s, b)
  y = Add(x, m)
})");
  auto before = clone(*model);
  EXPECT_EQ(fold(*model).folded, 2u);
  EXPECT_EQ(model->graph().nodes().size(), 1u);
  ir::Value* m = model->graph().find_value("m");
  ASSERT_NE(m, nullptr);
  ASSERT_NE(m->initializer(), nullptr);
  EXPECT_EQ(floats_of(m), (std::vector<float>{12, 35}));  // (1+3)*3, (2+5)*5
  expect_same_outputs(*before, *model);
}

TEST(FoldConstants, ShapeOfAStaticTensorFoldsButNotOfASymbolicOne) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x, float[N, 3] z) => (int64[2] s, int64[2] t) {
  s = Shape(x)
  t = Shape(z)
})");
  EXPECT_EQ(fold(*model).folded, 1u);
  ir::Graph& g = model->graph();
  ASSERT_EQ(g.outputs()[0]->name(), "s");
  ASSERT_NE(g.outputs()[0]->initializer(), nullptr);
  auto s = runtime::tensor_from_proto(*g.outputs()[0]->initializer());
  EXPECT_EQ(std::vector<int64_t>(s->data<int64_t>(), s->data<int64_t>() + 2), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(count_ops(g, "Shape"), 1u);
}

TEST(FoldConstants, RandomAndQuantizeOpsAndGraphInputDefaultsStay) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x, float[2] d) => (float[2] y, float[2] r, uint8[2] q) <float[2] d = {1, 1}, float[2] a = {1, 2}, float s = {0.5}> {
  y = Add(d, a)
  r = RandomUniformLike(a)
  q = QuantizeLinear(a, s)
})");
  EXPECT_EQ(fold(*model).folded, 0u);
  EXPECT_EQ(model->graph().nodes().size(), 3u);
}

TEST(FoldConstants, SizeLimitKeepsBigExpansionsButFoldsShrinkingOnes) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1000, 1000] x) => (float[1000, 1000] y, float[1] z) <int64[2] shape = {1000, 1000}, float[1] one = {1}> {
  big = ConstantOfShape <value = float[1] {2}> (shape)
  y = Add(x, big)
  z = Abs(one)
})");
  passes::FoldOptions folding;
  folding.size_limit = 1024;
  EXPECT_EQ(fold(*model, {}, folding).folded, 1u);  // Abs folds; the 4 MB ConstantOfShape does not
  EXPECT_EQ(count_ops(model->graph(), "ConstantOfShape"), 1u);
}

TEST(FoldConstants, OutputsOverTheWorkBudgetAreRefusedBeforeTheyAreAllocated) {
  // 2^40 floats (4 TiB) asked of ConstantOfShape and of Range: computing
  // them only to drop them by size took the memory first. Tile of a
  // 16-element constant 1024 times stays below the default budget of 2^24
  // elements but over a budget of 1000.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1] x) => (float[1] y) <int64[1] huge = {1099511627776}, float start = {0}, float limit = {1099511627776},
                                float delta = {1}, float[16] row = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
                                int64[1] repeats = {1024}, int64[1] one = {1}> {
  big = ConstantOfShape <value = float[1] {2}> (huge)
  r = Range(start, limit, delta)
  t = Tile(row, repeats)
  a = Slice(big, one, one)
  b = Slice(r, one, one)
  c = Slice(t, one, one)
  s = Sum(x, a, b, c)
  y = Identity(s)
})");
  for (const char* name : {"big", "r", "t"}) model->graph().find_value(name)->producer()->set_name(name);
  auto defaults = fold(*clone(*model));
  EXPECT_EQ(defaults.folded, 2u);  // Tile, and its Slice
  std::string warnings;
  for (const std::string& w : defaults.warnings) warnings += w + "\n";
  // 2^24 and the one element of its input.
  EXPECT_NE(warnings.find("ConstantOfShape node 'big': its outputs would take the run past its budget of 16777217 elements"),
            std::string::npos)
      << warnings;
  EXPECT_NE(warnings.find("Range node 'r'"), std::string::npos) << warnings;

  passes::FoldOptions folding;
  folding.work_limit = 1000;
  auto small = fold(*model, {}, folding);
  EXPECT_EQ(small.folded, 0u);
  EXPECT_EQ(small.warnings.size(), 3u);
  EXPECT_EQ(count_ops(model->graph(), "Tile"), 1u);
}

TEST(FoldConstants, ExcludedNodesStay) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y) <float[2] a = {1, 2}> {
  n = Neg(a)
  y = Add(x, n)
})");
  model->graph().nodes().front().set_name("keep_me");
  passes::PassOptions options;
  options.excluded_nodes.insert("keep_me");
  EXPECT_EQ(fold(*model, options).folded, 0u);
}

TEST(FoldConstants, FoldsInsideSubgraphsWithOuterConstants) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x, bool c) => (float[2] y) <float[2] a = {1, -2}> {
  y = If (c) <then_branch = t () => (float[2] t_out) { n = Neg(a)  t_out = Add(x, n) },
              else_branch = e () => (float[2] e_out) { e_out = Sub(x, a) }>
})");
  auto before = clone(*model);
  EXPECT_EQ(fold(*model).folded, 1u);
  EXPECT_EQ(count_ops(model->graph(), "Neg"), 0u);
  expect_same_outputs(*before, *model);
}

TEST(FoldConstants, AFailingKernelLeavesTheNodeWithAWarningNamingIt) {
  // Reshape to a shape of the wrong size cannot run.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[3] x) => (float[5] y) <float[6] a = {1, 2, 3, 4, 5, 6}, int64[1] shape = {5}> {
  r = Reshape(a, shape)
  y = Add(x, r)
})");
  model->graph().nodes().front().set_name("bad_reshape");
  auto result = fold(*model);
  EXPECT_EQ(result.folded, 0u);
  ASSERT_EQ(result.warnings.size(), 1u);
  EXPECT_NE(result.warnings[0].find("bad_reshape"), std::string::npos) << result.warnings[0];
}

}  // namespace
}  // namespace onnxkit::testing
