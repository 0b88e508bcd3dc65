// fuse-mul-into-conv-weights: multiplying a Conv's output by a per-channel
// constant scales the Conv's weights and bias instead.
//
// Before:  c = Conv(x, W, B)    y = Mul(c, K)    (or Mul(K, c))
// After:   y = Conv(x, W', B')                   (the Conv's output takes y's place and name)
//
// Conditions: Conv with constant float32/float64 W and an optional constant
// B; its output read by the Mul alone and not a graph output; K a constant of
// W's type with one value per output channel, as fuse-add-into-conv-bias
// accepts ([M, 1, 1], [1, M, 1, 1], [1], a scalar; nothing that would
// broadcast the output bigger). Opset 7+ (older Mul broadcasts by attribute).
//
// The algebra: the Conv is linear in (W, B) per output channel o, so with
// m[o] the value of K for channel o:
//   Conv(x, W, B)[:, o] * m[o] = Conv(x, W', B')[:, o],
//   W'[o, ...] = W[o, ...] * m[o],  B'[o] = B[o] * m[o]   (no B stays no B).
// Weights that another node also reads are copied, not edited.

#include "passes/fuse/fuse_common.h"

namespace onnxkit::passes::fuse {
namespace {

bool fuse_once(ir::Node& conv, PassContext& context) {
  auto mul = conv_then_per_channel(conv, "Mul", context);
  if (!mul) return false;
  const runtime::Tensor& weights = mul->weights;
  const std::vector<double>& factor = mul->per_channel;
  const int64_t channels = weights.dim(0);
  if (channels == 0 || weights.numel() % channels != 0) return false;
  auto bias = bias_values(conv, context, weights.dtype(), channels);
  if (!bias) return false;
  for (size_t o = 0; o < bias->size(); ++o) (*bias)[o] *= factor[o];
  std::vector<double> new_weights = *as_doubles(weights);
  const size_t per_output = new_weights.size() / static_cast<size_t>(channels);
  for (size_t i = 0; i < new_weights.size(); ++i) new_weights[i] *= factor[i / per_output];

  std::vector<FusedConstant> constants = {{1, from_doubles(weights.dtype(), weights.shape(), new_weights), "_weight_fused"}};
  if (conv.input(2) != nullptr)  // no B stays no B
    constants.push_back({2, from_doubles(weights.dtype(), {channels}, *bias), "_bias_fused"});
  return commit_fusion(context, conv, *mul->consumer, constants, "into its weights");
}

}  // namespace

std::unique_ptr<Pass> make_fuse_mul_into_conv_weights() {
  return make_fusion_pass("fuse-mul-into-conv-weights",
                          "fold a Mul by a per-channel constant into the weights and bias of the Conv before it", {"Conv"},
                          Repeat::while_it_fuses, fuse_once);
}

}  // namespace onnxkit::passes::fuse
