// fuse-transpose-into-gemm.
#include "passes/eliminate/eliminate_test_support.h"  // excluding_first
#include "passes/fuse/fuse_test_support.h"

namespace onnxkit::testing {
namespace {

TEST(FuseTransposeIntoGemm, TogglesTransAAndTransB) {
  // y = a'' * b' + c: A is transposed by the node and by transA (cancelling),
  // B only by the node.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[3, 4] a, float[5, 4] b, float[5] c) => (float[3, 5] y) {
  ta = Transpose <perm = [1, 0]> (a)
  tb = Transpose (b)
  y = Gemm <transA = 1, alpha = 0.5> (ta, tb, c)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-transpose-into-gemm", *model), 2u);
  model->graph().cleanup();
  EXPECT_EQ(count_ops(model->graph(), "Transpose"), 0u);
  const ir::Node* gemm = model->graph().outputs()[0]->producer();
  EXPECT_EQ(gemm->attr_int("transA", -1), 0);
  EXPECT_EQ(gemm->attr_int("transB", -1), 1);
  EXPECT_EQ(gemm->input(0)->name(), "a");
  EXPECT_EQ(gemm->input(1)->name(), "b");
  expect_same_outputs(*before, *model);
}

TEST(FuseTransposeIntoGemm, SharedTransposeStaysForItsOtherReader) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4, 4] a, float[4, 4] b) => (float[4, 4] y, float[4, 4] z) {
  t = Transpose <perm = [1, 0]> (a)
  y = Gemm (t, b)
  z = Relu(t)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-transpose-into-gemm", *model), 1u);
  model->graph().cleanup();
  EXPECT_EQ(count_ops(model->graph(), "Transpose"), 1u);
  expect_same_outputs(*before, *model);
}

TEST(FuseTransposeIntoGemm, DeclinesOtherPermsAndExclusions) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4, 4] a, float[4, 4] b) => (float[4, 4] y, float[4, 4] z) {
  u = Transpose <perm = [1, 0]> (b)
  z = Gemm (a, u)
  t = Transpose <perm = [0, 1]> (a)
  y = Gemm (t, b)
})");
  // t's perm is the identity (another pass removes it); u is excluded.
  EXPECT_EQ(run_pass("fuse-transpose-into-gemm", *model, excluding_first(model->graph(), "Transpose", "u")), 0u);
}

}  // namespace
}  // namespace onnxkit::testing
