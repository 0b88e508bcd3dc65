#include "runtime/kernels/nn/conv_fusion.h"

#include <any>
#include <limits>
#include <optional>
#include <unordered_map>

#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/nn/blocked.h"
#include "runtime/parallel.h"

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

// Whether the ints attribute `name` of `node` is absent or `expected`.
bool ints_are(const ir::Node& node, const char* name, const std::vector<int64_t>& expected) {
  const std::vector<int64_t> given = node.attr_ints(name);
  return given.empty() || given == expected;
}

// A float32 weight of `shape`.
bool float_constant_of_shape(const ir::Value* v, const ConstantOf& constant_of, const Shape& shape) {
  const Tensor* t = v != nullptr ? constant_of(v) : nullptr;
  return t != nullptr && t->dtype() == DataType::float32 && t->shape() == shape;
}

// The output channels of a 1x1 Conv of stride 1 without pads on a 2-D map,
// with float weights, or 0 for any other node.
int64_t pointwise_channels(const ir::Node& conv, const ConstantOf& constant_of) {
  if (!conv.is_onnx_op("Conv") || conv.outputs().size() != 1 || conv.attr_int("group", 1) != 1) return 0;
  if (conv.attr_string("auto_pad", "NOTSET") != "NOTSET" || !ints_are(conv, "kernel_shape", {1, 1}) ||
      !ints_are(conv, "strides", {1, 1}) || !ints_are(conv, "dilations", {1, 1}) || !ints_are(conv, "pads", {0, 0, 0, 0}))
    return 0;
  const Tensor* w = conv.inputs().size() > 1 ? constant_of(conv.input(1)) : nullptr;
  if (w == nullptr || w->dtype() != DataType::float32 || w->rank() != 4 || w->dim(2) != 1 || w->dim(3) != 1) return 0;
  const ir::Value* b = conv.input(2);
  if (b != nullptr && !float_constant_of_shape(b, constant_of, {w->dim(0)})) return 0;
  return w->dim(0);
}

// The stride of a depthwise 3x3 Conv over `channels` with pads of 1, stride
// 1 or 2 and float weights: oneDNN's depthwise post-op; 0 for any other node.
int64_t depthwise_stride(const ir::Node& conv, int64_t channels, const ConstantOf& constant_of) {
  if (!conv.is_onnx_op("Conv") || conv.outputs().size() != 1 || conv.attr_int("group", 1) != channels) return 0;
  if (conv.attr_string("auto_pad", "NOTSET") != "NOTSET" || !ints_are(conv, "kernel_shape", {3, 3}) ||
      !ints_are(conv, "dilations", {1, 1}) || conv.attr_ints("pads") != std::vector<int64_t>{1, 1, 1, 1})
    return 0;
  if (!float_constant_of_shape(conv.input(1), constant_of, {channels, 1, 3, 3})) return 0;
  if (conv.input(2) != nullptr && !float_constant_of_shape(conv.input(2), constant_of, {channels})) return 0;
  return ints_are(conv, "strides", {1, 1}) ? 1 : conv.attr_ints("strides") == std::vector<int64_t>{2, 2} ? 2 : 0;
}

// Each blocked 1x1 Conv whose value (after its activation) a depthwise
// Conv reads alone takes that Conv over, with its activation.
void fuse_depthwise_after_pointwise(const std::vector<ir::Node*>& order, int64_t opset, const ConstantOf& constant_of,
                                    const IsReturned& is_returned, const std::unordered_set<const ir::Node*>& blocked,
                                    ProducerFusions& f) {
  for (const ir::Node* conv : order) {
    const int64_t channels = blocked.count(conv) ? pointwise_channels(*conv, constant_of) : 0;
    // With a partial last channel block the pair ran slower as one
    // primitive than as two (MobileNetV3's 72, 88, 184 and 200 channels: +4 to
    // +9% on the pair at 1 thread; ShuffleNet's 116 and 232: even).
    if (channels == 0 || channels % channel_block() != 0) continue;
    auto own = f.producers.find(conv);
    ConvFusion fusion = own != f.producers.end() ? std::any_cast<ConvFusion>(own->second.fusion) : ConvFusion{};
    // oneDNN applies the 1x1's activation inside the primitive: not Swish
    // (conv_dnnl.cpp applies that after it), nor a residual.
    if (fusion.activation.add_residual || fusion.activation.kind == Kind::swish) continue;
    // The 1x1's final value: its activation's output, when one was fused.
    FusedActivation unused;
    const ir::Node* last =
        fusion.activation.kind != Kind::none ? activation_after(conv, opset, constant_of, is_returned, unused) : conv;
    // An activation that runs plain (a Clip over channels that are not
    // whole blocks) would take the pair's output out of the blocked layout
    // and back.
    if (last == nullptr || !blocked.count(last)) continue;
    const ir::Value* y = last->output(0);
    const ir::Node* depthwise = sole_reader(y, is_returned);
    if (depthwise == nullptr || !blocked.count(depthwise) || depthwise->input(0) != y) continue;
    const int64_t stride = depthwise_stride(*depthwise, channels, constant_of);
    if (stride == 0) continue;
    FusedActivation after;
    if (auto taken = f.producers.find(depthwise); taken != f.producers.end()) {
      after = std::any_cast<ConvFusion>(taken->second.fusion).activation;
      if (after.add_residual) continue;
      f.producers.erase(taken);
    }
    const bool has_bias = depthwise->input(2) != nullptr;
    fusion.depthwise = {stride, has_bias, after};
    std::vector<const ir::Value*> extra{depthwise->input(1)};
    if (has_bias) extra.push_back(depthwise->input(2));
    f.pass_through[depthwise] = 0;
    f.producers[conv] = {fusion, FusedDepthwise::kWeightsInput, std::move(extra)};
  }
}

// ConvTranspose -> [BatchNormalization] -> [activation], a float32
// ConvTranspose with constant weights and bias (FusedBatchNorm).
void fuse_after_conv_transpose(const ir::Node* conv, int64_t opset, const ConstantOf& constant_of, const IsReturned& is_returned,
                               ProducerFusions& f) {
  const Tensor* w = conv->inputs().size() > 1 ? constant_of(conv->input(1)) : nullptr;
  if (conv->outputs().size() != 1 || w == nullptr || w->dtype() != DataType::float32 || w->rank() < 3) return;
  if (conv->inputs().size() > 2 && conv->input(2) != nullptr && constant_of(conv->input(2)) == nullptr) return;
  const int64_t channels = w->dim(1) * conv->attr_int("group", 1);
  ConvFusion fusion;
  ProducerFusions::Producer producer;
  const ir::Node* last = conv;
  const ir::Node* norm = sole_reader(conv, is_returned);
  if (norm != nullptr && norm->is_onnx_op("BatchNormalization") && norm->input(0) == conv->output(0) &&
      batch_norm_params(*norm, channels, [&](size_t i) { return constant_of(norm->input(i)); })) {
    fusion.batch_norm = {.fused = true, .epsilon = norm->attr_float("epsilon", 1e-5f)};
    f.pass_through[norm] = 0;
    producer.extra_from = FusedBatchNorm::kInput;
    for (size_t i = 1; i < 5; ++i) producer.extra.push_back(norm->input(i));
    last = norm;
  }
  if (const ir::Node* after = activation_after(last, opset, constant_of, is_returned, fusion.activation))
    f.pass_through[after] = 0;
  if (!fusion.batch_norm.fused && fusion.activation.kind == Kind::none) return;
  producer.fusion = fusion;
  f.producers[conv] = std::move(producer);
}

}  // namespace

void activate_floats(const FusedActivation& a, float* y, int64_t n) {
  switch (a.kind) {
    case Kind::none: return;
    case Kind::relu:
      for (int64_t i = 0; i < n; ++i) y[i] = y[i] < 0.0f ? 0.0f : y[i];
      return;
    case Kind::clip:
      for (int64_t i = 0; i < n; ++i) y[i] = y[i] < a.min ? a.min : (y[i] > a.max ? a.max : y[i]);
      return;
    case Kind::sigmoid: return sigmoid_floats(y, y, n);
    case Kind::hard_sigmoid: return hard_sigmoid_floats(y, y, n, a.alpha, a.beta, false);
    case Kind::hard_swish: return hard_sigmoid_floats(y, y, n, 1.0f / 6.0f, 0.5f, true);
    case Kind::swish: return swish_floats(y, y, n, 1.0f);
  }
}

void activate_floats_shared(const FusedActivation& a, float* y, int64_t n, int threads) {
  if (a.kind == Kind::none) return;
  constexpr int64_t kPiece = 1 << 14;  // floats
  const int64_t pieces = (n + kPiece - 1) / kPiece;
  const ThreadLimit limit(threads);
  parallel_for(pieces, pieces > 1 && threads > 1,
               [&](int64_t i) { activate_floats(a, y + i * kPiece, std::min(kPiece, n - i * kPiece)); });
}

FusedActivation fused_activation(const KernelInfo& info) {
  const auto* fusion = std::any_cast<ConvFusion>(&info.fusion());
  return fusion != nullptr ? fusion->activation : FusedActivation{};
}

FusedDepthwise fused_depthwise(const KernelInfo& info) {
  const auto* fusion = std::any_cast<ConvFusion>(&info.fusion());
  return fusion != nullptr ? fusion->depthwise : FusedDepthwise{};
}

FusedBatchNorm fused_batch_norm(const KernelInfo& info) {
  const auto* fusion = std::any_cast<ConvFusion>(&info.fusion());
  return fusion != nullptr ? fusion->batch_norm : FusedBatchNorm{};
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
    if (conv->is_onnx_op("ConvTranspose") && !blocked.count(conv)) {
      fuse_after_conv_transpose(conv, opset, constant_of, is_returned, f);
      continue;
    }
    if (!conv->is_onnx_op("Conv") && !blocked_norm) continue;
    FusedActivation activation;
    if (const ir::Node* after = activation_after(conv, opset, constant_of, is_returned, activation)) {
      f.pass_through[after] = 0;
      f.producers[conv] = {ConvFusion{activation}, 0, {}};
      continue;
    }
    if (blocked_norm) continue;
    if (const ir::Node* mul = swish_after(conv, is_returned)) {
      const size_t y_at = mul->input(0) == conv->output(0) ? 0 : 1;
      f.pass_through[mul->input(1 - y_at)->producer()] = 0;  // the Sigmoid
      f.pass_through[mul] = y_at;
      f.producers[conv] = {ConvFusion{FusedActivation{Kind::swish}}, 0, {}};
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
    f.producers[conv] = {ConvFusion{activation}, FusedActivation::kResidualInput, {residual}};
  }
  fuse_depthwise_after_pointwise(order, opset, constant_of, is_returned, blocked, f);
  return f;
}

}  // namespace onnxkit::runtime::nn
