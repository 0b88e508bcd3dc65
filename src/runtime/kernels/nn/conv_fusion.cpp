#include "runtime/kernels/nn/conv_fusion.h"

#include <any>
#include <limits>
#include <optional>
#include <unordered_map>

namespace onnxkit::runtime::nn {
namespace {

using Kind = FusedActivation::Kind;

// The activation `node` applies to its input 0, when a Conv's kernel can
// apply it: Relu, HardSwish, HardSigmoid, Sigmoid, and Clip with constant
// float bounds.
std::optional<FusedActivation> activation_of(const ir::Node& node, int64_t opset, const ConstantOf& constant_of) {
  if (!node.in_onnx_domain() || node.inputs().empty()) return std::nullopt;
  const std::string& op = node.op_type();
  if (op != "Clip" && node.inputs().size() != 1) return std::nullopt;
  if (op == "Relu") return FusedActivation{Kind::relu};
  if (op == "HardSwish") return FusedActivation{Kind::hard_swish};
  if (op == "Sigmoid") return FusedActivation{Kind::sigmoid};
  if (op == "HardSigmoid") {
    FusedActivation a{Kind::hard_sigmoid};
    a.alpha = node.attr_float("alpha", 0.2f);
    a.beta = node.attr_float("beta", 0.5f);
    return a;
  }
  if (op != "Clip") return std::nullopt;
  FusedActivation clip{Kind::clip, -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity()};
  if (opset < 11) {
    clip.min = node.attr_float("min", -std::numeric_limits<float>::max());
    clip.max = node.attr_float("max", std::numeric_limits<float>::max());
    return clip;
  }
  for (size_t i : {1, 2}) {
    if (node.input(i) == nullptr) continue;
    auto bound = constant_scalar(node.input(i), constant_of);
    if (!bound) return std::nullopt;
    (i == 1 ? clip.min : clip.max) = static_cast<float>(*bound);
  }
  return clip;
}

// The activation read alone by `node`'s output, when a Conv can apply it.
const ir::Node* activation_after(const ir::Node* node, int64_t opset, const ConstantOf& constant_of,
                                 const IsReturned& is_returned, FusedActivation& activation) {
  const ir::Node* after = sole_reader(node, is_returned);
  if (after == nullptr || after->input(0) != node->output(0)) return nullptr;
  auto a = activation_of(*after, opset, constant_of);
  if (!a) return nullptr;
  activation = *a;
  return after;
}

// Conv -> Sigmoid -> Mul(Conv, Sigmoid): the Sigmoid and the Mul alone read
// the Conv's output, the Mul alone the Sigmoid's, and neither is returned.
// The Mul, or null.
const ir::Node* swish_after(const ir::Node* conv, const IsReturned& is_returned) {
  const ir::Value* y = conv->output(0);
  if (conv->outputs().size() != 1 || is_returned(y) || y->is_any_graph_output() || y->uses().size() != 2) return nullptr;
  for (const auto& use : y->uses()) {
    const ir::Node* sigmoid = use.node;
    if (sigmoid->graph() != y->owner() || !sigmoid->is_onnx_op("Sigmoid") || sigmoid->outputs().size() != 1) continue;
    const ir::Node* mul = sole_reader(sigmoid, is_returned);
    if (mul == nullptr || !mul->is_onnx_op("Mul") || mul->outputs().size() != 1 ||
        ir::other_operand(*mul, sigmoid->output(0)) != y)
      continue;
    return mul;
  }
  return nullptr;
}

}  // namespace

FusedActivation fused_activation(const KernelInfo& info) {
  const auto* activation = std::any_cast<FusedActivation>(&info.fusion());
  return activation != nullptr ? *activation : FusedActivation{};
}

ProducerFusions find_conv_fusions(const std::vector<ir::Node*>& order, int64_t opset, const ConstantOf& constant_of,
                                  const IsReturned& is_returned, const SameShape& same_shape,
                                  const std::unordered_set<const ir::Node*>& blocked) {
  std::unordered_map<const ir::Node*, size_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  ProducerFusions f;
  f.kind = "(fused into Conv)";
  for (const ir::Node* conv : order) {
    // A blocked BatchNormalization (blocked.h) applies the activation after
    // it too, and nothing else: DenseNet's BN -> ReLU before each conv.
    const bool blocked_norm = conv->is_onnx_op("BatchNormalization") && blocked.count(conv);
    if (!conv->is_onnx_op("Conv") && !blocked_norm) continue;
    FusedActivation activation;
    if (const ir::Node* after = activation_after(conv, opset, constant_of, is_returned, activation)) {
      f.pass_through[after] = 0;
      f.producers[conv] = {activation, 0, {}};
      continue;
    }
    if (blocked_norm) continue;
    if (const ir::Node* mul = swish_after(conv, is_returned)) {
      const size_t y_at = mul->input(0) == conv->output(0) ? 0 : 1;
      f.pass_through[mul->input(1 - y_at)->producer()] = 0;  // the Sigmoid
      f.pass_through[mul] = y_at;
      f.producers[conv] = {FusedActivation{Kind::swish}, 0, {}};
      continue;
    }
    const ir::Node* next = sole_reader(conv, is_returned);
    const bool add = next != nullptr && next->is_onnx_op("Add") && next->outputs().size() == 1;
    const ir::Value* residual = add ? ir::other_operand(*next, conv->output(0)) : nullptr;
    if (residual == nullptr || residual == conv->output(0) || constant_of(residual) != nullptr) continue;
    const ir::Node* source = residual->producer();
    if (source != nullptr && (!position.count(source) || position.at(source) > position.at(conv))) continue;
    if (blocked.count(conv) != blocked.count(next) || (blocked.count(conv) && (source == nullptr || !blocked.count(source))))
      continue;
    if (!same_shape(conv->output(0), residual)) continue;  // else the Add broadcasts
    if (const ir::Node* after = activation_after(next, opset, constant_of, is_returned, activation)) f.pass_through[after] = 0;
    activation.add_residual = true;
    f.pass_through[next] = next->input(0) == conv->output(0) ? 0 : 1;
    f.producers[conv] = {activation, FusedActivation::kResidualInput, {residual}};
  }
  return f;
}

}  // namespace onnxkit::runtime::nn
