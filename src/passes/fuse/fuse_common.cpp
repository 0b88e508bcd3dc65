#include "passes/fuse/fuse_common.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "runtime/tensor_proto.h"

namespace onnxkit::passes::fuse {
namespace {

// The consumer's readers (and its name, when it is a graph output) go to
// `anchor`'s output 0, and the consumer goes. Its description, for the note;
// nullopt and nothing changed when replace_value declines.
std::optional<std::string> absorb_consumer(ir::Node& anchor, ir::Node& consumer) {
  std::string description = consumer.describe();
  ir::Graph& graph = *anchor.graph();
  if (!replace_value(graph, consumer.output(0), anchor.output(0))) return std::nullopt;
  graph.remove_node(&consumer);
  return description;
}

}  // namespace

std::unique_ptr<Pass> make_fusion_pass(std::string_view name, std::string_view summary,
                                       std::initializer_list<std::string_view> op_types, Repeat repeat, FuseStep fuse) {
  return make_node_pass(name, summary, op_types,
                        [repeat, fuse = std::move(fuse)](ir::Node& anchor, PassContext& context) -> size_t {
                          size_t fused = 0;
                          while (fuse(anchor, context)) {
                            ++fused;
                            if (repeat == Repeat::once) break;
                          }
                          return fused;
                        });
}

bool commit_fusion(PassContext& context, ir::Node& anchor, ir::Node& consumer, const std::vector<FusedConstant>& constants,
                   std::string_view into) {
  const std::optional<std::string> consumer_description = absorb_consumer(anchor, consumer);
  if (!consumer_description) return false;
  // Named after the anchor, else its output (which absorb_consumer may have renamed).
  const std::string stem = anchor.name().empty() ? anchor.output(0)->name() : anchor.name();
  for (const FusedConstant& constant : constants)
    set_constant_input(context, anchor, constant.input, constant.data, stem + std::string(constant.suffix));
  context.note(fmt::format("{}: folded {} {}", anchor.describe(), *consumer_description, into));
  return true;
}

std::optional<std::vector<double>> as_doubles(const runtime::Tensor& tensor) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(tensor.numel()));
  Status read = runtime::dispatch_float(tensor.dtype(), [&]<class T>() -> Status {
    for (const T& v : tensor.values<T>()) {
      if constexpr (std::is_same_v<T, double>) out.push_back(v);
      else out.push_back(static_cast<double>(static_cast<float>(v)));  // half types convert through float
    }
    return {};
  });
  if (!read.ok()) return std::nullopt;
  return out;
}

runtime::Tensor from_doubles(runtime::DataType type, const runtime::Shape& shape, const std::vector<double>& values) {
  runtime::Tensor t(type, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (type == runtime::DataType::float64) t.mutable_data<double>()[i] = values[static_cast<size_t>(i)];
    else t.mutable_data<float>()[i] = static_cast<float>(values[static_cast<size_t>(i)]);
  }
  return t;
}

bool is_fusable_weight_type(runtime::DataType type) {
  return type == runtime::DataType::float32 || type == runtime::DataType::float64;
}

std::optional<std::vector<double>> per_channel_values(const runtime::Tensor& constant, size_t rank, size_t channel_axis,
                                                      int64_t channels) {
  if (constant.rank() > rank || channel_axis >= rank || channels <= 0) return std::nullopt;
  auto values = as_doubles(constant);
  if (!values) return std::nullopt;
  // The constant's axis i lines up with axis i + offset of the other tensor.
  const size_t offset = rank - constant.rank();
  bool varies = false;
  for (size_t i = 0; i < constant.rank(); ++i) {
    const int64_t dim = constant.dim(i);
    if (i + offset == channel_axis && dim == channels) varies = true;
    else if (dim != 1) return std::nullopt;
  }
  if (!varies) return std::vector<double>(static_cast<size_t>(channels), values->at(0));
  return values;
}

std::optional<ConvChannelOperand> conv_then_per_channel(ir::Node& conv, std::string_view op, const PassContext& context) {
  ir::Value* conv_out = conv.output(0);
  ir::Node* consumer = sole_consumer(conv_out);
  if (consumer == nullptr || !consumer->is_onnx_op(op) || context.excluded(*consumer) || context.opset() < 7) return std::nullopt;
  auto operand = context.constant(other_operand(*consumer, conv_out));
  // W only once the operand is a constant: reading copies W, and a Conv's
  // Add is most often the residual sum of two activations.
  if (!operand) return std::nullopt;
  auto weights = context.constant(conv.input(1));
  if (!weights || !is_fusable_weight_type(weights->dtype()) || operand->dtype() != weights->dtype() || weights->rank() < 3)
    return std::nullopt;
  auto per_channel = per_channel_values(*operand, weights->rank(), 1, weights->dim(0));
  if (!per_channel) return std::nullopt;
  return ConvChannelOperand{consumer, std::move(*weights), std::move(*per_channel)};
}

std::optional<std::vector<double>> bias_values(const ir::Node& node, const PassContext& context, runtime::DataType type,
                                               int64_t channels) {
  if (node.input(2) == nullptr) return std::vector<double>(static_cast<size_t>(channels), 0.0);
  auto given = context.constant(node.input(2));
  if (!given || given->dtype() != type || given->numel() != channels) return std::nullopt;
  return as_doubles(*given);
}

std::optional<ChannelAffine> inference_batch_norm(const ir::Node& bn, const PassContext& context, int64_t channels) {
  if (!bn.is_onnx_op("BatchNormalization") || !only_first_output_used(bn) || channels <= 0) return std::nullopt;
  // Training mode normalizes by the batch's own statistics; spatial=0 (before
  // opset 9) keeps statistics per element, not per channel.
  if (bn.attr_int("training_mode", 0) != 0 || bn.attr_int("spatial", 1) == 0) return std::nullopt;
  // Before opset 7, is_test (default 0) chose between the two modes.
  if (context.opset() < 7 && bn.attr_int("is_test", 0) != 1) return std::nullopt;
  std::vector<double> params[4];  // gamma, beta, mean, var: inputs 1 to 4
  for (size_t i = 0; i < 4; ++i) {
    auto tensor = context.constant(bn.input(i + 1));
    if (!tensor || tensor->numel() != channels) return std::nullopt;
    auto values = as_doubles(*tensor);
    if (!values) return std::nullopt;
    params[i] = std::move(*values);
  }
  const double epsilon = bn.attr_float("epsilon", 1e-5f);
  ChannelAffine affine;
  for (size_t c = 0; c < static_cast<size_t>(channels); ++c) {
    const double variance = params[3][c] + epsilon;
    if (!(variance > 0)) return std::nullopt;  // the model divides by zero (or NaN): leave it to fail as it would
    const double scale = params[0][c] / std::sqrt(variance);
    affine.scale.push_back(scale);
    affine.shift.push_back(params[1][c] - params[2][c] * scale);
  }
  return affine;
}

void set_constant_input(PassContext& context, ir::Node& node, size_t index, const runtime::Tensor& data,
                        std::string_view name_hint) {
  ir::Value* current = node.input(index);
  auto old = context.constant(current);
  const bool editable_in_place = old && current->uses().size() == 1 && !current->is_any_graph_output() &&
                                 old->dtype() == data.dtype() && old->shape() == data.shape();
  if (editable_in_place) {
    current->owner()->set_initializer(current, runtime::tensor_to_proto(data));
    return;
  }
  node.set_input(index, context.add_constant(*node.graph(), name_hint, data));
}

std::optional<double> pad_fill_value(const ir::Node& pad, const PassContext& context) {
  if (pad.attr_string("mode", "constant") != "constant") return std::nullopt;
  if (context.opset() < 11) return pad.attr_float("value", 0.0f);
  const ir::Value* fill = pad.input(2);
  if (fill == nullptr) return 0.0;
  auto tensor = context.constant(fill);
  if (!tensor || tensor->numel() != 1) return std::nullopt;
  double value = 0;
  Status read = runtime::dispatch_numeric(tensor->dtype(), [&]<class T>() -> Status {
    value = static_cast<double>(tensor->data<T>()[0]);
    return {};
  });
  if (!read.ok()) return std::nullopt;
  return value;
}

std::optional<std::vector<int64_t>> pad_amounts(const ir::Node& pad, const PassContext& context, size_t rank) {
  std::vector<int64_t> pads;
  if (context.opset() < 11) {
    pads = pad.attr_ints(context.opset() < 2 ? "paddings" : "pads");
  } else {
    auto given = context.constant_ints(pad.input(1));
    if (!given) return std::nullopt;
    pads = std::move(*given);
  }
  if (context.opset() < 18 || pad.input(3) == nullptr) {
    if (pads.size() != 2 * rank) return std::nullopt;
    return pads;
  }
  // From opset 18, pads may cover only the listed axes.
  auto axes = context.constant_ints(pad.input(3));
  if (!axes || pads.size() != 2 * axes->size()) return std::nullopt;
  std::vector<int64_t> full(2 * rank, 0);
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < axes->size(); ++i) {
    int64_t axis = (*axes)[i] < 0 ? (*axes)[i] + static_cast<int64_t>(rank) : (*axes)[i];
    if (axis < 0 || axis >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(axis)]) return std::nullopt;
    seen[static_cast<size_t>(axis)] = true;
    full[static_cast<size_t>(axis)] = pads[i];
    full[static_cast<size_t>(axis) + rank] = pads[i + axes->size()];
  }
  return full;
}

}  // namespace onnxkit::passes::fuse
