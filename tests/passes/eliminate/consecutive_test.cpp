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
  // y reads x directly (a stays for z); c copies a dim of b, so it keeps
  // reading b; w's target copies nothing, so w reads c's input, b.
  EXPECT_EQ(run_pass("merge-consecutive-reshapes", *model), 2u);
  const ir::Node* y = model->graph().outputs()[0]->producer();
  EXPECT_EQ(y->input(0)->name(), "x");
  const ir::Node* w = model->graph().outputs()[2]->producer();
  EXPECT_EQ(w->input(0)->name(), "b");
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

}  // namespace
}  // namespace onnxkit::testing
