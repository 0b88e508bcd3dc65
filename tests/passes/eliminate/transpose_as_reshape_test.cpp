// transpose-as-reshape: Transposes that only move axes of size 1.
#include "passes/eliminate/eliminate_test_support.h"

namespace onnxkit::testing {
namespace {

// The int64 target of the Reshape producing graph output `index`.
std::vector<int64_t> target_of(const ir::Model& model, size_t index) {
  const ir::Node* node = model.graph().outputs()[index]->producer();
  EXPECT_TRUE(node != nullptr && node->op_type() == "Reshape");
  passes::PassOptions options;
  passes::PassContext context(const_cast<ir::Model&>(model), options);
  return context.constant_ints(node->input(1)).value_or(std::vector<int64_t>{});
}

TEST(TransposeAsReshape, UnitAxesMoveAndASymbolStays) {
  // [b, 1, 7, 5] -> [b, 7, 1, 5]: the 1 moves, b stays (0); [1, n, 3] ->
  // [n, 3, 1]: n moves, the only symbol, so -1.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[b, 1, 7, 5] x, float[1, n, 3] u) => (float[b, 7, 1, 5] y, float[n, 3, 1] z) {
  y = Transpose <perm = [0, 2, 1, 3]> (x)
  z = Transpose <perm = [1, 2, 0]> (u)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("transpose-as-reshape", *model), 2u);
  EXPECT_EQ(count_ops(model->graph(), "Transpose"), 0u);
  EXPECT_EQ(target_of(*model, 0), (std::vector<int64_t>{0, 7, 1, 5}));
  EXPECT_EQ(target_of(*model, 1), (std::vector<int64_t>{-1, 3, 1}));
  EXPECT_EQ(output_names(model->graph()), (std::vector<std::string>{"y", "z"}));
  expect_same_outputs(*before, *model);
}

TEST(TransposeAsReshape, DeclinesRealMovesSymbolsAndZeros) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 1, 3] x, float[b, 1, c] u, float[0, 1, 3] e, float[2, 3] v)
  => (float[3, 1, 2] y, float[1, c, b] z, float[1, 0, 3] w, float[3, 2] t) {
  y = Transpose <perm = [2, 1, 0]> (x)
  z = Transpose <perm = [1, 2, 0]> (u)
  w = Transpose <perm = [1, 0, 2]> (e)
  t = Transpose (v)
})");
  // y swaps 2 and 3: a real transpose. z: b and c both symbolic, and they
  // swap order anyway. w: a known 0 would read as "copy". t: no perm, and a
  // real transpose.
  EXPECT_EQ(run_pass("transpose-as-reshape", *model), 0u);
}

TEST(TransposeAsReshape, TwoSymbolsMovingDecline) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, b, c] x) => (float[b, c, 1] y) {
  y = Transpose <perm = [1, 2, 0]> (x)
})");
  // b and c keep their order but both move: two -1s cannot be said.
  EXPECT_EQ(run_pass("transpose-as-reshape", *model), 0u);
}

TEST(TransposeAsReshape, InsideABranch) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 6] x, bool c) => (float[6, 1] y) {
  y = If (c) <then_branch = t () => (float[6, 1] t_out) { a = Transpose <perm = [1, 0]> (x)  t_out = Neg(a) },
              else_branch = e () => (float[6, 1] e_out) { e_out = Transpose <perm = [1, 0]> (x) }>
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("transpose-as-reshape", *model), 2u);
  expect_same_outputs(*before, *model);
}

}  // namespace
}  // namespace onnxkit::testing
