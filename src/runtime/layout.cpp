#include "runtime/layout.h"

#include "runtime/kernels/nn/blocked.h"

namespace onnxkit::runtime {
namespace {

// A squeeze-excitation gate on partial blocks: a Sigmoid or HardSigmoid (its
// values in [0, 1], so finite, but 1/2 in the padded channels, not zero)
// read only by Muls that scale a blocked value of its channels, whose zero
// padding the product keeps (0 * finite). MobileNetV3's gates of 72 and 120
// channels otherwise sent each block's activations to the plain layout and
// back, around the Mul: 6% of its run.
bool is_gate_of_blocked(const ir::Node& node, int64_t channels, const std::unordered_map<const ir::Value*, int64_t>& planned,
                        const std::unordered_set<const ir::Value*>& gates) {
  if (!node.is_onnx_op("Sigmoid") && !node.is_onnx_op("HardSigmoid")) return false;
  const ir::Value* gate = node.output(0);
  if (gate->is_any_graph_output() || gate->uses().empty()) return false;
  for (const auto& use : gate->uses()) {
    const ir::Node* mul = use.node;
    if (mul->graph() != gate->owner() || !mul->is_onnx_op("Mul") || mul->inputs().size() != 2 || mul->outputs().size() != 1)
      return false;
    const ir::Value* scaled = ir::other_operand(*mul, gate);
    auto it = scaled == nullptr || gates.count(scaled) ? planned.end() : planned.find(scaled);
    if (it == planned.end() || it->second != channels) return false;  // blocked before the gate, zeros padding it
  }
  return true;
}

}  // namespace

std::vector<size_t> activation_inputs(const ir::Node& node, const OpTraits& traits) {
  if (traits.blocked == OpTraits::Blocked::own_kernel) return nn::blocked_activation_inputs(node);
  if (traits.blocked == OpTraits::Blocked::elementwise_binary) return {0, 1};
  return {0};
}

LayoutPlan plan_layout(const std::vector<ir::Node*>& order, const ConstantOf& constant, const TraitsOf& traits_of) {
  LayoutPlan plan;
  std::unordered_set<const ir::Value*> gates;  // the blocked values whose padding is not zero
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
      const bool gate = !traits.zero_preserving && in % nn::channel_block() != 0 && !gates.count(node->input(0)) &&
                        is_gate_of_blocked(*node, in, plan.channels, gates);
      const bool fits = traits.zero_preserving || in % nn::channel_block() == 0 || gate;
      if (gate) gates.insert(node->output(0));
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
