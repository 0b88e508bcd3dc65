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

#include <fmt/format.h>

#include "passes/fuse/fuse_common.h"

namespace onnxkit::passes::fuse {
namespace {

bool fuse_once(ir::Node& conv, PassContext& context) {
  ir::Value* conv_out = conv.output(0);
  ir::Node* mul = sole_consumer(conv_out);
  if (mul == nullptr || !mul->is_onnx_op("Mul") || context.excluded(*mul) || context.opset() < 7) return false;
  auto factor = context.constant(other_operand(*mul, conv_out));
  auto weights = context.constant(conv.input(1));
  if (!factor || !weights || !is_fusable_weight_type(weights->dtype()) || factor->dtype() != weights->dtype() ||
      weights->rank() < 3)
    return false;
  const int64_t channels = weights->dim(0);
  auto per_channel = per_channel_values(*factor, weights->rank(), 1, channels);
  if (!per_channel || channels == 0 || weights->numel() % channels != 0) return false;

  std::optional<std::vector<double>> bias;
  if (conv.input(2) != nullptr) {
    auto given = context.constant(conv.input(2));
    if (!given || given->dtype() != weights->dtype() || given->numel() != channels) return false;
    bias = as_doubles(*given);
    for (size_t o = 0; o < bias->size(); ++o) (*bias)[o] *= (*per_channel)[o];
  }
  std::vector<double> new_weights = *as_doubles(*weights);
  const size_t per_output = new_weights.size() / static_cast<size_t>(channels);
  for (size_t i = 0; i < new_weights.size(); ++i) new_weights[i] *= (*per_channel)[i / per_output];

  const std::optional<std::string> mul_description = absorb_consumer(conv, *mul);
  if (!mul_description) return false;
  const std::string hint = fused_name_hint(conv);
  set_constant_input(context, conv, 1, from_doubles(weights->dtype(), weights->shape(), new_weights),
                     hint + "_weight_fused");
  if (bias)
    set_constant_input(context, conv, 2, from_doubles(weights->dtype(), {channels}, *bias), hint + "_bias_fused");
  context.note(fmt::format("{}: folded {} into its weights", conv.describe(), *mul_description));
  return true;
}

}  // namespace

std::unique_ptr<Pass> make_fuse_mul_into_conv_weights() {
  return make_fusion_pass("fuse-mul-into-conv-weights",
                          "fold a Mul by a per-channel constant into the weights and bias of the Conv before it",
                          {"Conv"}, Repeat::while_it_fuses, fuse_once);
}

}  // namespace onnxkit::passes::fuse
