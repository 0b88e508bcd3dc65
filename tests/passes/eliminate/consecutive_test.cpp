// merge-consecutive-transposes and merge-consecutive-reshapes.
#include "passes/eliminate/eliminate_test_support.h"

namespace onnxkit::testing {
namespace {

TEST(MergeConsecutiveTransposes, ComposesOrCancels) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3, 4] x) => (float[2, 3, 4] y, float[4, 2, 3] z, float[2, 3, 4] w) {
  a = Transpose <perm = [0, 2, 1]> (x)
  b = Transpose <perm = [0, 2, 1]> (a)
  y = Relu(b)
  c = Transpose <perm = [1, 0, 2]> (x)
  z = Transpose <perm = [2, 1, 0]> (c)
  d = Transpose (x)
  e = Transpose (d)
  w = Relu(e)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("merge-consecutive-transposes", *model), 3u);
  model->graph().cleanup();
  // y and w read x again; z is one Transpose of x whose perm is [1,0,2][[2,1,0][i]] = [2, 0, 1].
  EXPECT_EQ(count_ops(model->graph(), "Transpose"), 1u);
  const ir::Node* z = model->graph().outputs()[1]->producer();
  EXPECT_EQ(z->input(0)->name(), "x");
  EXPECT_EQ(z->attr_ints("perm"), (std::vector<int64_t>{2, 0, 1}));
  EXPECT_EQ(output_names(model->graph()), (std::vector<std::string>{"y", "z", "w"}));
  expect_same_outputs(*before, *model);
}

TEST(MergeConsecutiveTransposes, DeclinesUnknownRanksExclusionsAndInterfaceLoss) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17, "custom" : 1]>
g (float[2, 3] x) => (float[2, 3] y, float[3, 2] z) {
  u = custom.Thing(x)
  a = Transpose (u)
  b = Transpose (a)
  z = Transpose <perm = [1, 0]> (x)
  y = Transpose <perm = [1, 0]> (z)
})");
  // b: neither perm is given, and u's rank is unknown. y = z^T = x: but y is an output and
  // x an input (a rename would break the interface).
  EXPECT_EQ(run_pass("merge-consecutive-transposes", *model), 0u);
}

TEST(MergeConsecutiveTransposes, InsideABranch) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x, bool c) => (float[2, 3] y) {
  y = If (c) <then_branch = t () => (float[2, 3] t_out) { a = Transpose(x)  b = Transpose(a)  t_out = Neg(b) },
              else_branch = e () => (float[2, 3] e_out) { e_out = Abs(x) }>
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("merge-consecutive-transposes", *model), 1u);
  expect_same_outputs(*before, *model);
}

TEST(MergeConsecutiveReshapes, TheLastTargetDecides) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3, 4] x) => (float[24] y, float[6, 4] z, float[4, 6] w)
  <int64[2] s1 = {6, 4}, int64[1] flat = {-1}, int64[2] copy = {0, 4}, int64[2] s3 = {4, 6}> {
  a = Reshape(x, s1)
  y = Reshape(a, flat)
  z = Relu(a)
  b = Reshape(x, s1)
  c = Reshape(b, copy)
  w = Reshape(c, s3)
})");
  auto before = clone(*model);
  // y reads x directly (a stays for z); c's 0 copies b's dim 0, which s1
  // says is 6, so c reads x with [6, 4]; w's target copies nothing, so w
  // reads c's new input, x.
  EXPECT_EQ(run_pass("merge-consecutive-reshapes", *model), 3u);
  const ir::Node* y = model->graph().outputs()[0]->producer();
  EXPECT_EQ(y->input(0)->name(), "x");
  const ir::Node* w = model->graph().outputs()[2]->producer();
  EXPECT_EQ(w->input(0)->name(), "x");
  expect_same_outputs(*before, *model);
}

TEST(MergeConsecutiveReshapes, ComputedTargetsAndBranches) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x, bool c) => (float[6] y, float[6] z) <int64[2] s1 = {3, 2}, int64[1] flat = {6}, int64[1] zero = {0}> {
  a = Reshape(x, s1)
  n = Size(x)
  s = Unsqueeze(n, zero)
  y = Reshape(a, s)
  z = If (c) <then_branch = t () => (float[6] t_out) { p = Reshape(x, s1)  q = Reshape(p, flat)  t_out = Neg(q) },
              else_branch = e () => (float[6] e_out) { e_out = Reshape(x, flat) }>
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("merge-consecutive-reshapes", *model), 1u);  // only q: y's target is computed
  expect_same_outputs(*before, *model);
}

TEST(MergeConsecutiveReshapes, CopiedDimsOverASymbolicBatch) {
  // Swin-T's 1x1 windows: [0, 1, 1, 49, 768] then [0, 49, 768] copies the
  // batch through both (a 0 of s1 stays a 0); [0, -1] then [0, 0, 1] copies
  // t's dim 1, which s1 leaves to -1 but inference knows (98); [-1, 2] then
  // [0, -1] copies t's dim 0, batch * 49, which nothing states: declined.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[batch, 49, 2] x) => (float[batch, 49, 2] y, float[batch, 98, 1] z, float[m, 2] w)
  <int64[5] s1 = {0, 1, 1, 49, 2}, int64[3] s2 = {0, 49, 2}, int64[2] s3 = {0, -1}, int64[3] s4 = {0, 0, 1},
   int64[2] s5 = {-1, 2}, int64[2] s6 = {0, -1}> {
  a = Reshape(x, s1)
  y = Reshape(a, s2)
  b = Reshape(x, s3)
  z = Reshape(b, s4)
  c = Reshape(x, s5)
  w = Reshape(c, s6)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("merge-consecutive-reshapes", *model), 2u);
  model->graph().cleanup();
  const ir::Node* y = model->graph().outputs()[0]->producer();
  EXPECT_EQ(y->input(0)->name(), "x");
  const ir::Node* z = model->graph().outputs()[1]->producer();
  EXPECT_EQ(z->input(0)->name(), "x");
  passes::PassContext context(*model, {});
  EXPECT_EQ(context.constant_ints(z->input(1)), (std::vector<int64_t>{0, 98, 1}));
  const ir::Node* w = model->graph().outputs()[2]->producer();
  EXPECT_EQ(w->input(0)->name(), "c");
  EXPECT_EQ(count_ops(model->graph(), "Reshape"), 4u);
  expect_same_outputs(*before, *model);
}

}  // namespace
}  // namespace onnxkit::testing
