#include "runtime/layout.h"

#include <set>
#include <string>

#include "runtime/kernels/nn/blocked.h"

namespace onnxkit::runtime {
namespace {

// Element-wise ops that map 0 to 0 keep the padded channels zero, which the
// blocked kernels rely on; the others may run blocked only when there is no
// padding (C a multiple of the block).
const std::set<std::string>& zero_preserving_unary() {
  static const std::set<std::string> ops = {"Relu", "LeakyRelu", "Elu", "HardSwish", "Tanh", "Neg", "Abs", "Mish"};
  return ops;
}
const std::set<std::string>& other_unary() {
  static const std::set<std::string> ops = {"Clip", "Sigmoid", "HardSigmoid", "Softplus", "Selu", "Celu", "Exp"};
  return ops;
}
const std::set<std::string>& binary() {
  static const std::set<std::string> ops = {"Add", "Sub", "Mul"};
  return ops;
}

}  // namespace

std::vector<size_t> activation_inputs(const ir::Node& node) {
  const std::string& op = node.op_type();
  if (binary().count(op) || op == "Concat") {
    std::vector<size_t> all(node.inputs().size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    return all;
  }
  return {0};
}

LayoutPlan plan_layout(const std::vector<ir::Node*>& order,
                       const std::function<const Tensor*(const ir::Value*)>& constant) {
  LayoutPlan plan;
  auto channels_of = [&](const ir::Value* v) -> int64_t {
    auto it = v == nullptr ? plan.channels.end() : plan.channels.find(v);
    return it == plan.channels.end() ? -1 : it->second;
  };
  for (const ir::Node* node : order) {
    if (!node->in_onnx_domain() || node->outputs().empty() || node->output(0) == nullptr) continue;
    const std::string& op = node->op_type();
    const int64_t in = channels_of(node->input(0));
    int64_t out = -1;
    if (op == "Conv") {
      const Tensor* w = constant(node->input(1));
      if (node->outputs().size() == 1 && nn::conv_can_run_blocked(*node, w, constant(node->input(2)))) out = w->dim(0);
    } else if (in < 0) {
      continue;  // everything else joins only when its input is blocked already
    } else if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool") {
      if (nn::pool_can_run_blocked(*node)) out = in;
    } else if (zero_preserving_unary().count(op) || (other_unary().count(op) && in % nn::channel_block() == 0)) {
      out = in;
    } else if (binary().count(op)) {
      if (node->inputs().size() == 2 && channels_of(node->input(1)) == in) out = in;
    } else if (op == "Concat") {
      const int64_t axis = node->attr_int("axis", 1);
      int64_t total = 0;
      bool whole_blocks = axis == 1 || axis == -3;
      for (const ir::Value* v : node->inputs()) {
        int64_t c = channels_of(v);
        whole_blocks = whole_blocks && c > 0 && c % nn::channel_block() == 0;
        total += c;
      }
      if (whole_blocks) out = total;
    }
    if (out <= 0) continue;
    plan.blocked_nodes.insert(node);
    plan.channels[node->output(0)] = out;
  }
  return plan;
}

}  // namespace onnxkit::runtime
