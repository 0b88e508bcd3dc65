// The no-op eliminations: Cast, Transpose, Reshape, Expand, Pad, Slice,
// single Concat and single Split. Each suite: removed where provably a
// copy, kept where not, graph outputs keep their names, inside a branch.
#include "passes/eliminate/eliminate_test_support.h"

namespace onnxkit::testing {
namespace {

// Runs `pass` on `text`, expects `removed` rewrites leaving `left` nodes of
// `op_type`, the outputs' names unchanged, and the same outputs as before.
void expect_removes(std::string_view pass, const char* text, std::string_view op_type, size_t removed, size_t left) {
  auto model = model_from_text(text);
  auto before = clone(*model);
  const auto names = output_names(model->graph());
  EXPECT_EQ(run_pass(pass, *model), removed) << pass;
  EXPECT_EQ(count_ops(model->graph(), op_type), left) << pass;
  EXPECT_EQ(output_names(model->graph()), names) << pass;
  expect_same_outputs(*before, *model);
}

TEST(EliminateNoopCast, SameTypeGoesOtherTypesStay) {
  expect_removes("eliminate-noop-cast", R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x, int64[2] i) => (float[2, 3] y, double[2, 3] z, float[2, 3] w, int64[2] k) {
  a = Cast <to = 1> (x)
  y = Relu(a)
  z = Cast <to = 11> (x)
  b = Sigmoid(x)
  w = CastLike(b, x)
  k = Cast <to = 7> (i)
})",
                 "Cast", 2, 2);  // a, and w (CastLike to its own type); z changes type; k is input->output
}

TEST(EliminateNoopCast, UnknownInputTypeIsDeclined) {
  // `u` comes from a custom op: no type is known, so the Cast must stay.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17, "custom" : 1]>
g (float[2] x) => (float[2] y) { u = custom.Thing(x)  c = Cast <to = 1> (u)  y = Relu(c) })");
  EXPECT_EQ(run_pass("eliminate-noop-cast", *model), 0u);
}

TEST(EliminateNoopCast, InsideABranch) {
  expect_removes("eliminate-noop-cast", R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x, bool c) => (float[2] y) {
  y = If (c) <then_branch = t () => (float[2] t_out) { k = Cast <to = 1> (x)  t_out = Neg(k) },
              else_branch = e () => (float[2] e_out) { e_out = Abs(x) }>
})",
                 "Cast", 1, 0);
}

TEST(EliminateNoopTranspose, IdentityPermutationGoes) {
  expect_removes("eliminate-noop-transpose", R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3, 4] x, float[5] v) => (float[2, 3, 4] y, float[4, 3, 2] z, float[5] w, float[2, 4, 3] u) {
  a = Transpose <perm = [0, 1, 2]> (x)
  y = Relu(a)
  z = Transpose (x)
  b = Transpose (v)
  w = Neg(b)
  u = Transpose <perm = [0, 2, 1]> (x)
})",
                 "Transpose", 2, 2);  // a, and b (reversing one axis); z and u move axes
}

TEST(EliminateNoopTranspose, InsideABranch) {
  expect_removes("eliminate-noop-transpose", R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x, bool c) => (float[2, 3] y) {
  y = If (c) <then_branch = t () => (float[2, 3] t_out) { k = Transpose <perm = [0, 1]> (x)  t_out = Neg(k) },
              else_branch = e () => (float[2, 3] e_out) { e_out = Abs(x) }>
})",
                 "Transpose", 1, 0);
}

TEST(EliminateNoopReshape, ProvablySameShapeGoes) {
  expect_removes("eliminate-noop-reshape", R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N, 4, 6] x) => (float[N, 4, 6] y, float[N, 4, 6] z, float[N, 24] w, float[N, 4, 6] u)
  <int64[3] copy = {0, 4, 6}, int64[3] minus = {0, -1, 6}, int64[2] flat = {0, 24}, int64[3] first_minus = {-1, 4, 6}> {
  a = Reshape(x, copy)
  y = Relu(a)
  z = Reshape(x, minus)
  w = Reshape(x, flat)
  b = Reshape(x, first_minus)
  u = Neg(b)
})",
                 "Reshape", 2, 2);
  // a (0 copies N), b (-1 stands for N: the other dims are known and not 0);
  // w changes rank; z's -1 is undetermined should N be 0.
}

TEST(EliminateNoopReshape, AllowZeroAndComputedShapesAreDeclined) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x, int64[2] s) => (float[2, 3] y, float[2, 3] z) <int64[2] same = {0, 3}> {
  y = Reshape <allowzero = 1> (x, same)
  z = Reshape(x, s)
})");
  EXPECT_EQ(run_pass("eliminate-noop-reshape", *model), 0u);
}

TEST(EliminateNoopReshape, InsideABranch) {
  expect_removes("eliminate-noop-reshape", R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x, bool c) => (float[2, 3] y) <int64[2] same = {2, 3}> {
  y = If (c) <then_branch = t () => (float[2, 3] t_out) { k = Reshape(x, same)  t_out = Neg(k) },
              else_branch = e () => (float[2, 3] e_out) { e_out = Abs(x) }>
})",
                 "Reshape", 1, 0);
}

TEST(EliminateNoopExpand, BroadcastToOwnShapeGoes) {
  expect_removes("eliminate-noop-expand", R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N, 3, 1] x) => (float[N, 3, 1] y, float[N, 3, 1] z, float[N, 3, 4] w, float[2, N, 3, 1] u)
  <int64[2] tail = {3, 1}, int64[3] ones = {1, 1, 1}, int64[3] wider = {1, 3, 4}, int64[4] longer = {2, 1, 1, 1}> {
  a = Expand(x, tail)
  y = Relu(a)
  b = Expand(x, ones)
  z = Relu(b)
  w = Expand(x, wider)
  u = Expand(x, longer)
})",
                 "Expand", 2, 2);
}

TEST(EliminateNoopExpand, InsideABranch) {
  expect_removes("eliminate-noop-expand", R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x, bool c) => (float[2, 3] y) <int64[1] one = {1}> {
  y = If (c) <then_branch = t () => (float[2, 3] t_out) { k = Expand(x, one)  t_out = Neg(k) },
              else_branch = e () => (float[2, 3] e_out) { e_out = Abs(x) }>
})",
                 "Expand", 1, 0);
}

TEST(EliminateNoopPad, ZeroPadsGoInEveryModeAndOpset) {
  expect_removes("eliminate-noop-pad", R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x) => (float[2, 3] y, float[2, 3] z, float[2, 5] w)
  <int64[4] zeros = {0, 0, 0, 0}, int64[4] some = {0, 1, 0, 1}, float fill = {7}> {
  a = Pad(x, zeros, fill)
  y = Relu(a)
  b = Pad <mode = "reflect"> (x, zeros)
  z = Relu(b)
  w = Pad(x, some)
})",
                 "Pad", 2, 1);
  expect_removes("eliminate-noop-pad", R"(
<ir_version: 4, opset_import: ["" : 10]>
g (float[2, 3] x) => (float[2, 3] y, float[2, 5] z) {
  a = Pad <pads = [0, 0, 0, 0]> (x)
  y = Relu(a)
  z = Pad <pads = [0, 1, 0, 1]> (x)
})",
                 "Pad", 1, 1);
}

TEST(EliminateNoopPad, ComputedPadsAreDeclined) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x, int64[4] p) => (float[M, K] y) { y = Pad(x, p) })");
  EXPECT_EQ(run_pass("eliminate-noop-pad", *model), 0u);
}

TEST(EliminateNoopPad, InsideABranch) {
  expect_removes("eliminate-noop-pad", R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x, bool c) => (float[2, 3] y) <int64[4] zeros = {0, 0, 0, 0}> {
  y = If (c) <then_branch = t () => (float[2, 3] t_out) { k = Pad(x, zeros)  t_out = Neg(k) },
              else_branch = e () => (float[2, 3] e_out) { e_out = Abs(x) }>
})",
                 "Pad", 1, 0);
}

TEST(EliminateNoopSlice, WholeAxisSlicesGo) {
  expect_removes("eliminate-noop-slice", R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N, 8] x) => (float[N, 8] y1, float[N, 8] y2, float[N, 4] y3, float[N, 8] y4, float[N, 8] y5, float[N, 4] y6)
  <int64[1] zero = {0}, int64[1] big = {9223372036854775807}, int64[1] eight = {8}, int64[1] four = {4},
   int64[1] one = {1}, int64[1] minus_one = {-1}, int64[1] neg_start = {-8}, int64[1] two = {2}> {
  a1 = Slice(x, zero, big, one)
  a2 = Slice(x, neg_start, eight, minus_one)
  a3 = Slice(x, zero, four, one)
  a4 = Slice(x, zero, big)
  a5 = Slice(x, zero, big, one, one)
  a6 = Slice(x, zero, big, one, two)
  y1 = Relu(a1)
  y2 = Relu(a2)
  y3 = Relu(a3)
  y4 = Relu(a4)
  y5 = Relu(a5)
  y6 = Relu(a6)
})",
                 "Slice", 4, 2);
  // a1, a2 (start -8 = -dim, axis -1), a4 (axes absent: axis 0, to the
  // end), a5 (step 1); a3 stops at 4 and a6 steps by 2.
}

TEST(EliminateNoopSlice, BeforeOpset10AttributesAndAnUnknownEndAreHandled) {
  expect_removes("eliminate-noop-slice", R"(
<ir_version: 4, opset_import: ["" : 9]>
g (float[N, 8] x) => (float[N, 8] y, float[N, 4] z) {
  a = Slice <starts = [0], ends = [8], axes = [1]> (x)
  y = Relu(a)
  z = Slice <starts = [0], ends = [4], axes = [1]> (x)
})",
                 "Slice", 1, 1);
  // An end of 100 on a symbolic axis might not reach its end.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N, 8] x) => (float[M, 8] y) <int64[1] zero = {0}, int64[1] hundred = {100}> { y = Slice(x, zero, hundred, zero) })");
  EXPECT_EQ(run_pass("eliminate-noop-slice", *model), 0u);
}

TEST(EliminateNoopSlice, InsideABranch) {
  expect_removes("eliminate-noop-slice", R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x, bool c) => (float[2, 3] y) <int64[1] zero = {0}, int64[1] three = {3}, int64[1] one = {1}> {
  y = If (c) <then_branch = t () => (float[2, 3] t_out) { k = Slice(x, zero, three, one)  t_out = Neg(k) },
              else_branch = e () => (float[2, 3] e_out) { e_out = Abs(x) }>
})",
                 "Slice", 1, 0);
}

TEST(EliminateSingleConcat, OneInputGoesTwoStay) {
  expect_removes("eliminate-single-concat", R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x, bool c) => (float[2, 3] y, float[4, 3] z, float[2, 3] w) {
  a = Concat <axis = 0> (x)
  y = Relu(a)
  z = Concat <axis = 0> (x, a)
  w = If (c) <then_branch = t () => (float[2, 3] t_out) { k = Concat <axis = 1> (x)  t_out = Neg(k) },
              else_branch = e () => (float[2, 3] e_out) { e_out = Abs(x) }>
})",
                 "Concat", 2, 1);
}

TEST(EliminateSingleSplit, OneOutputGoesTwoStay) {
  expect_removes("eliminate-single-split", R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 4] x, bool c) => (float[2, 4] y, float[2, 2] z1, float[2, 2] z2, float[2, 4] w) <int64[1] whole = {4}> {
  a = Split <axis = 1> (x, whole)
  y = Relu(a)
  z1, z2 = Split <axis = 1> (x)
  w = If (c) <then_branch = t () => (float[2, 4] t_out) { k = Split <axis = 0> (x)  t_out = Neg(k) },
              else_branch = e () => (float[2, 4] e_out) { e_out = Abs(x) }>
})",
                 "Split", 2, 1);
}

TEST(EliminateNoops, AGraphInputPassedToAnOutputStays) {
  // Each op below copies x to the output y: removing it would make input and
  // output one value under two names.
  for (const char* body : {"y = Cast <to = 1> (x)", "y = Transpose <perm = [0, 1]> (x)", "y = Concat <axis = 0> (x)",
                           "y = Pad(x, zeros)", "y = Reshape(x, same)", "y = Expand(x, one)"}) {
    auto model = model_from_text(std::string(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 2] x) => (float[2, 2] y) <int64[4] zeros = {0, 0, 0, 0}, int64[2] same = {2, 2}, int64[1] one = {1}> { )") +
                                 body + " }");
    for (std::string_view pass : {"eliminate-noop-cast", "eliminate-noop-transpose", "eliminate-single-concat",
                                  "eliminate-noop-pad", "eliminate-noop-reshape", "eliminate-noop-expand"})
      EXPECT_EQ(run_pass(pass, *model), 0u) << pass << " on " << body;
    EXPECT_EQ(model->graph().nodes().size(), 1u) << body;
  }
}

}  // namespace
}  // namespace onnxkit::testing
