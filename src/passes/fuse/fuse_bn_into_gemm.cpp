// fuse-bn-into-gemm: a BatchNormalization over the features of a Gemm's
// output becomes part of the Gemm's B and C.
//
// Before:  g = Gemm<alpha, beta, transB>(A, B, C)    y = BatchNormalization(g, gamma, beta_bn, mean, var)
// After:   y = Gemm<transB>(A, B', C')               (alpha = beta = 1; the Gemm's output takes y's place)
//
// Conditions: B a constant float32/float64 matrix; C absent or a constant of
// the same type broadcastable to [N] (shape [], [1], [N], [1, N]); opset 7+; the Gemm's
// output (always [M, N]) read by the BatchNormalization alone and not a graph
// output; the BatchNormalization in inference mode (only Y used) with
// constant parameters of N values; neither node excluded.
//
// The algebra: Gemm computes g = alpha * A'B' + beta * C, and inference BN
// y[:, n] = g[:, n] * s[n] + shift[n] with s = gamma / sqrt(var + eps),
// shift = beta_bn - mean * s. Column n of A'B' is linear in column n of B'
// (row n of B when transB), so
//   B'[:, n] = B[:, n] * alpha * s[n]          (rows of B when transB = 1)
//   C'[n]    = beta * C[n] * s[n] + shift[n]   (C = 0 when absent)
// and the Gemm keeps alpha = beta = 1.

#include "passes/fuse/fuse_common.h"

namespace onnxkit::passes::fuse {
namespace {

bool fuse_once(ir::Node& gemm, PassContext& context) {
  ir::Value* gemm_out = gemm.output(0);
  ir::Node* bn = sole_consumer(gemm_out);
  // Checked before B is read: reading copies it, and B may be most of the model.
  if (bn == nullptr || !bn->is_onnx_op("BatchNormalization") || context.excluded(*bn) || bn->input(0) != gemm_out) return false;

  // Before opset 7 a per-feature C needs Gemm's `broadcast` attribute; not worth the case.
  if (context.opset() < 7) return false;
  auto b = context.constant(gemm.input(1));
  if (!b || !is_fusable_weight_type(b->dtype()) || b->rank() != 2) return false;
  const bool trans_b = gemm.attr_int("transB", 0) != 0;
  const int64_t n_features = trans_b ? b->dim(0) : b->dim(1);
  const double alpha = gemm.attr_float("alpha", 1.0f);
  const double beta = gemm.attr_float("beta", 1.0f);

  std::vector<double> bias(static_cast<size_t>(n_features), 0.0);
  if (gemm.input(2) != nullptr) {
    auto c = context.constant(gemm.input(2));
    if (!c || c->dtype() != b->dtype()) return false;
    // Only a per-feature C folds into a per-feature C'; [M, N] would stay [M, N].
    auto per_feature = per_channel_values(*c, 2, 1, n_features);
    if (!per_feature) return false;
    for (size_t n = 0; n < bias.size(); ++n) bias[n] = beta * (*per_feature)[n];
  }
  auto bn_affine = inference_batch_norm(*bn, context, n_features);
  if (!bn_affine) return false;

  std::vector<double> new_b = *as_doubles(*b);
  const int64_t rows = b->dim(0), cols = b->dim(1);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t col = 0; col < cols; ++col)
      new_b[static_cast<size_t>(r * cols + col)] *= alpha * bn_affine->scale[static_cast<size_t>(trans_b ? r : col)];
  for (size_t n = 0; n < bias.size(); ++n) bias[n] = bias[n] * bn_affine->scale[n] + bn_affine->shift[n];

  if (!commit_fusion(context, gemm, *bn,
                     {{1, from_doubles(b->dtype(), b->shape(), new_b), "_B_fused"},
                      {2, from_doubles(b->dtype(), {n_features}, bias), "_C_fused"}},
                     "into B and C"))
    return false;
  gemm.remove_attribute("alpha");
  gemm.remove_attribute("beta");
  return true;
}

}  // namespace

std::unique_ptr<Pass> make_fuse_bn_into_gemm() {
  return make_fusion_pass("fuse-bn-into-gemm", "fold an inference BatchNormalization into the B and C of the Gemm before it",
                          {"Gemm"}, Repeat::while_it_fuses, fuse_once);
}

}  // namespace onnxkit::passes::fuse
