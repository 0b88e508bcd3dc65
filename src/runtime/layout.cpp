#include "runtime/layout.h"

#include "runtime/kernels/nn/blocked.h"

namespace onnxkit::runtime {

std::vector<size_t> activation_inputs(const ir::Node& node, const OpTraits& traits) {
  if (traits.blocked == OpTraits::Blocked::own_kernel) return nn::blocked_activation_inputs(node);
  if (traits.blocked == OpTraits::Blocked::elementwise_binary) return {0, 1};
  return {0};
}

LayoutPlan plan_layout(const std::vector<ir::Node*>& order, const ConstantOf& constant, const TraitsOf& traits_of) {
  LayoutPlan plan;
  const nn::ChannelsOf channels_of = [&](const ir::Value* v) -> int64_t {
    auto it = v == nullptr ? plan.channels.end() : plan.channels.find(v);
    return it == plan.channels.end() ? -1 : it->second;
  };
  for (const ir::Node* node : order) {
    if (!node->in_onnx_domain() || node->outputs().empty() || node->output(0) == nullptr) continue;
    const OpTraits traits = traits_of(*node);
    int64_t out = -1;
    if (traits.blocked == OpTraits::Blocked::own_kernel) {
      out = nn::blocked_output_channels(*node, channels_of, constant);
    } else if (const int64_t in = channels_of(node->input(0));
               in >= 0 && (traits.blocked == OpTraits::Blocked::elementwise_unary ||
                           traits.blocked == OpTraits::Blocked::elementwise_binary)) {
      // Padding channels must stay zero, or there must be none.
      const bool fits = traits.zero_preserving || in % nn::channel_block() == 0;
      const bool operands = traits.blocked == OpTraits::Blocked::elementwise_unary ||
                            (node->inputs().size() == 2 && channels_of(node->input(1)) == in);
      if (fits && operands) out = in;
    }  // everything else stays plain
    if (out <= 0) continue;
    plan.blocked_nodes.insert(node);
    plan.channels[node->output(0)] = out;
  }
  return plan;
}

}  // namespace onnxkit::runtime
