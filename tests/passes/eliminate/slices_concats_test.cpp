// merge-consecutive-slices and flatten-nested-concats.
#include "passes/eliminate/eliminate_test_support.h"

namespace onnxkit::testing {
namespace {

std::vector<int64_t> ints_of(ir::Model& model, const ir::Value* value) {
  passes::PassOptions options;
  passes::PassContext context(model, options);
  return context.constant_ints(value).value_or(std::vector<int64_t>{});
}

TEST(MergeConsecutiveSlices, DisjointAxesJoin) {
  // x[:, 1:5:2][..., -3:] with the second axis written as -1: y = x[:, 1:5:2, -3:].
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[b, 6, 7] x) => (float[b, 2, 3] y)
  <int64[1] s1 = {1}, int64[1] e1 = {5}, int64[1] a1 = {1}, int64[1] k1 = {2},
   int64[1] s2 = {-3}, int64[1] e2 = {9223372036854775807}, int64[1] a2 = {-1}> {
  t = Slice(x, s1, e1, a1, k1)
  y = Slice(t, s2, e2, a2)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("merge-consecutive-slices", *model), 1u);
  model->graph().cleanup();
  ASSERT_EQ(count_ops(model->graph(), "Slice"), 1u);
  const ir::Node* y = model->graph().outputs()[0]->producer();
  EXPECT_EQ(y->input(0)->name(), "x");
  EXPECT_EQ(ints_of(*model, y->input(1)), (std::vector<int64_t>{1, -3}));
  EXPECT_EQ(ints_of(*model, y->input(3)), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(ints_of(*model, y->input(4)), (std::vector<int64_t>{2, 1}));
  expect_same_outputs(*before, *model);
}

TEST(MergeConsecutiveSlices, DeclinesOverlapsAndComputedBounds) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[8, 6] x, int64[1] e) => (float[1, 6] y, float[6, d] z)
  <int64[1] s1 = {1}, int64[1] e1 = {7}, int64[1] a0 = {0}, int64[1] s2 = {2}, int64[1] e2 = {5},
   int64[1] a1 = {1}> {
  t = Slice(x, s1, e1, a0)
  y = Slice(t, s1, s2, a0)
  u = Slice(x, s1, e, a1)
  z = Slice(u, s1, e1, a0)
})");
  // y slices axis 0 twice; u's end is an input.
  EXPECT_EQ(run_pass("merge-consecutive-slices", *model), 0u);
}

TEST(FlattenNestedConcats, SplicesSameAxisOnly) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] a, float[2, 1] b, float[2, 2] c) => (float[2, 8] y, float[4, 6] z, float[2, 4] w) {
  t = Concat <axis = -1> (a, b)
  u = Concat <axis = 1> (c, c)
  y = Concat <axis = 1> (t, u)
  p = Concat <axis = 0> (a, a)
  q = Concat <axis = 1> (p, p)
  z = Identity(q)
  r = Concat <axis = 1> (a, b)
  w = Concat <axis = 1> (r)
  v = Relu(r)
})");
  auto before = clone(*model);
  // y takes t's and u's inputs (t's axis -1 is 1 at rank 2); q's inner
  // Concat joins along 0; r has another reader.
  EXPECT_EQ(run_pass("flatten-nested-concats", *model), 2u);
  model->graph().cleanup();
  const ir::Node* y = model->graph().outputs()[0]->producer();
  ASSERT_EQ(y->inputs().size(), 4u);
  EXPECT_EQ(y->input(0)->name(), "a");
  EXPECT_EQ(y->input(1)->name(), "b");
  EXPECT_EQ(y->input(3)->name(), "c");
  EXPECT_EQ(count_ops(model->graph(), "Concat"), 5u);
  expect_same_outputs(*before, *model);
}

}  // namespace
}  // namespace onnxkit::testing
