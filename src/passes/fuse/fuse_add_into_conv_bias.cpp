// fuse-add-into-conv-bias: adding a per-channel constant after a Conv is what
// the Conv's bias is for.
//
// Before:  c = Conv(x, W, B)    y = Add(c, K)    (or Add(K, c))
// After:   y = Conv(x, W, B')                    (the Conv's output takes y's place and name)
//
// Conditions: Conv with constant float32/float64 W (its shape gives the M
// output channels and the output's rank) and an optional constant B; its
// output read by the Add alone and not a graph output; K a constant of W's
// type that, aligned on the right against the output [N, M, spatial...], has
// size 1 everywhere but the channel axis (size M or 1) and no more axes than
// the output: [M, 1, 1], [1, M, 1, 1], [1], a scalar. Anything else ([M], [2,
// M, 1, 1], [1, 1, 1, 1, 1]) would broadcast differently or make the output
// bigger, and is left alone. Opset 7+ (older Add broadcasts by attribute).
//
// The algebra: Conv(x, W, B) + K = Conv(x, W, B + k), with k[o] the value of
// K for output channel o; B' = B + k (B = 0 when absent).

#include <fmt/format.h>

#include "passes/fuse/fuse_common.h"

namespace onnxkit::passes::fuse {
namespace {

bool fuse_once(ir::Node& conv, PassContext& context) {
  ir::Value* conv_out = conv.output(0);
  ir::Node* add = sole_consumer(conv_out);
  if (add == nullptr || !add->is_onnx_op("Add") || context.excluded(*add) || context.opset() < 7) return false;
  auto addend = context.constant(other_operand(*add, conv_out));
  auto weights = context.constant(conv.input(1));
  if (!addend || !weights || !is_fusable_weight_type(weights->dtype()) || addend->dtype() != weights->dtype() ||
      weights->rank() < 3)
    return false;
  const int64_t channels = weights->dim(0);
  auto per_channel = per_channel_values(*addend, weights->rank(), 1, channels);
  if (!per_channel) return false;

  std::vector<double> bias(static_cast<size_t>(channels), 0.0);
  if (conv.input(2) != nullptr) {
    auto given = context.constant(conv.input(2));
    if (!given || given->dtype() != weights->dtype() || given->numel() != channels) return false;
    bias = *as_doubles(*given);
  }
  for (size_t o = 0; o < bias.size(); ++o) bias[o] += (*per_channel)[o];

  const std::optional<std::string> add_description = absorb_consumer(conv, *add);
  if (!add_description) return false;
  const std::string hint = fused_name_hint(conv);
  set_constant_input(context, conv, 2, from_doubles(weights->dtype(), {channels}, bias), hint + "_bias_fused");
  context.note(fmt::format("{}: folded {} into its bias", conv.describe(), *add_description));
  return true;
}

}  // namespace

std::unique_ptr<Pass> make_fuse_add_into_conv_bias() {
  return make_fusion_pass("fuse-add-into-conv-bias",
                          "fold an Add of a per-channel constant into the bias of the Conv before it", {"Conv"},
                          Repeat::while_it_fuses, fuse_once);  // Conv, Add, Add: both fold
}

}  // namespace onnxkit::passes::fuse
