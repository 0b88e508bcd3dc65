// einsum-as-matmul.
#include "passes/fuse/fuse_test_support.h"

namespace onnxkit::testing {
namespace {

TEST(EinsumAsMatmul, MatrixProductsBecomeMatMul) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3, 4] a, float[2, 4, 5] b, float[3, 4] c, float[4, 6] d) => (float[2, 3, 5] y, float[3, 6] z) {
  y = Einsum <equation = "bij, bjk -> bik"> (a, b)
  z = Einsum <equation = "mn,np->mp"> (c, d)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("einsum-as-matmul", *model), 2u);
  EXPECT_EQ(count_ops(model->graph(), "MatMul"), 2u);
  EXPECT_EQ(count_ops(model->graph(), "Einsum"), 0u);
  expect_same_outputs(*before, *model);
}

TEST(EinsumAsMatmul, OtherEquationsStay) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3, 4] a, float[2, 5, 4] b, float[3, 4] c, float[4, 3] d, float[2, 3, 4] e, float[2, 4, 5] f)
  => (float[2, 3, 5] y, float[3] z, float[2, 4, 4] w, float[2, 3, 5] v) {
  y = Einsum <equation = "bij,bkj->bik"> (a, b)
  z = Einsum <equation = "ij,ji->i"> (c, d)
  w = Einsum <equation = "bji,bjk->bik"> (e, e)
  v = Einsum <equation = "...ij,...jk->...ik"> (a, f)
})");
  // B transposed, a diagonal, A transposed, an ellipsis.
  EXPECT_EQ(run_pass("einsum-as-matmul", *model), 0u);
}

}  // namespace
}  // namespace onnxkit::testing
