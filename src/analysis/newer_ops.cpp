#include "analysis/newer_ops.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/opset_history.h"
#include "io/tensor_proto.h"

namespace onnxkit::analysis {

namespace {

using Dim = onnx::TensorShapeProto_Dimension;

std::optional<std::vector<int64_t>> int_constant(const ir::Value* value) {
  if (value == nullptr || value->initializer() == nullptr || value->is_graph_input()) return std::nullopt;
  const onnx::TensorProto& t = *value->initializer();
  auto bytes = io::inline_bytes(t);
  if (!bytes.ok()) return std::nullopt;
  std::vector<int64_t> out;
  if (t.data_type() == onnx::TensorProto::INT64) {
    out.resize(bytes->size() / 8);
    std::memcpy(out.data(), bytes->data(), out.size() * 8);
  } else if (t.data_type() == onnx::TensorProto::INT32) {
    std::vector<int32_t> v(bytes->size() / 4);
    std::memcpy(v.data(), bytes->data(), v.size() * 4);
    out.assign(v.begin(), v.end());
  } else {
    return std::nullopt;
  }
  return out;
}

std::optional<std::vector<float>> float_constant(const ir::Value* value) {
  if (value == nullptr || value->initializer() == nullptr || value->is_graph_input()) return std::nullopt;
  const onnx::TensorProto& t = *value->initializer();
  auto bytes = io::inline_bytes(t);
  if (!bytes.ok() || t.data_type() != onnx::TensorProto::FLOAT) return std::nullopt;
  std::vector<float> out(bytes->size() / 4);
  std::memcpy(out.data(), bytes->data(), out.size() * 4);
  return out;
}

// The dims of a typed tensor value, symbolic ones included; nullopt without a shape.
std::optional<std::vector<Dim>> dims_of(const ir::Value* value) {
  if (value == nullptr || !value->has_type() || !value->type().has_tensor_type() || !value->type().tensor_type().has_shape())
    return std::nullopt;
  const auto& shape = value->type().tensor_type().shape();
  return std::vector<Dim>(shape.dim().begin(), shape.dim().end());
}

Dim number(int64_t v) {
  Dim d;
  d.set_dim_value(v);
  return d;
}

bool known(const Dim& d) { return d.has_dim_value(); }

void set_type(ir::Graph& graph, ir::Value* value, int32_t elem_type, const std::vector<Dim>& dims) {
  auto* tensor = value->mutable_info().mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elem_type);
  auto* shape = tensor->mutable_shape();
  shape->clear_dim();
  for (const Dim& d : dims) *shape->add_dim() = d;
  graph.add_value_info(value);
}

int64_t normalize_axis(int64_t axis, size_t rank) { return axis < 0 ? axis + static_cast<int64_t>(rank) : axis; }

using Outputs = std::vector<std::vector<Dim>>;  // dims per output

// The axes an `axes` attribute names, all of them when it is absent.
std::vector<int64_t> axes_or_all(const ir::Node& node, size_t rank) {
  std::vector<int64_t> axes = node.attr_ints("axes");
  if (axes.empty())
    for (size_t i = 0; i < rank; ++i) axes.push_back(static_cast<int64_t>(i));
  return axes;
}

// Each rule gives the output dims of a node whose input 0 has dims `x`, or
// nothing when it cannot tell.

std::optional<Outputs> split_dims(const ir::Node& node, const std::vector<Dim>& x) {
  const size_t rank = x.size();
  int64_t axis = normalize_axis(node.attr_int("axis", 0), rank);
  if (axis < 0 || axis >= static_cast<int64_t>(rank)) return std::nullopt;
  const size_t n = node.outputs().size();
  std::vector<int64_t> sizes;
  if (auto split = int_constant(node.input(1))) {
    sizes = *split;
  } else if (node.input(1) == nullptr && known(x[axis])) {
    int64_t total = x[axis].dim_value();
    int64_t chunk = (total + static_cast<int64_t>(n) - 1) / static_cast<int64_t>(n);
    for (size_t i = 0; i < n; ++i) sizes.push_back(std::min(chunk, total - chunk * static_cast<int64_t>(i)));
  } else {
    return std::nullopt;
  }
  if (sizes.size() != n) return std::nullopt;
  Outputs outs;
  for (int64_t s : sizes) {
    auto dims = x;
    dims[axis] = number(s);
    outs.push_back(dims);
  }
  return outs;
}

std::optional<Outputs> pad_dims(const ir::Node& node, const std::vector<Dim>& x) {
  const size_t rank = x.size();
  auto pads = int_constant(node.input(1));
  if (!pads) return std::nullopt;
  std::vector<int64_t> axes;
  if (node.input(3) != nullptr) {
    auto given = int_constant(node.input(3));
    if (!given) return std::nullopt;
    axes = *given;
  } else {
    for (size_t i = 0; i < rank; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (pads->size() != 2 * axes.size()) return std::nullopt;
  auto dims = x;
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = normalize_axis(axes[i], rank);
    if (a < 0 || a >= static_cast<int64_t>(rank)) return std::nullopt;
    if (known(dims[a])) dims[a] = number(dims[a].dim_value() + (*pads)[i] + (*pads)[i + axes.size()]);
    else dims[a] = Dim();
  }
  return Outputs{dims};
}

std::optional<Outputs> reduce_dims(const ir::Node& node, const std::vector<Dim>& x) {
  const size_t rank = x.size();
  std::vector<int64_t> axes;
  if (node.input(1) != nullptr) {
    auto given = int_constant(node.input(1));
    if (!given) return std::nullopt;
    axes = *given;
  }
  const bool keep = node.attr_int("keepdims", 1) != 0;
  if (axes.empty()) {
    if (node.attr_int("noop_with_empty_axes", 0) != 0) return Outputs{x};
    for (size_t i = 0; i < rank; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) {
    a = normalize_axis(a, rank);
    if (a < 0 || a >= static_cast<int64_t>(rank)) return std::nullopt;
    reduced[a] = true;
  }
  std::vector<Dim> dims;
  for (size_t i = 0; i < rank; ++i) {
    if (!reduced[i]) dims.push_back(x[i]);
    else if (keep) dims.push_back(number(1));
  }
  return Outputs{dims};
}

std::optional<Outputs> resize_dims(const ir::Node& node, const std::vector<Dim>& x) {
  if (node.attr_string("keep_aspect_ratio_policy", "stretch") != "stretch") return std::nullopt;
  const size_t rank = x.size();
  const std::vector<int64_t> axes = axes_or_all(node, rank);
  auto dims = x;
  auto sizes = node.input(3) ? int_constant(node.input(3)) : std::nullopt;
  auto scales = node.input(2) ? float_constant(node.input(2)) : std::nullopt;
  if (sizes && sizes->size() == axes.size()) {
    for (size_t i = 0; i < axes.size(); ++i) dims[normalize_axis(axes[i], rank)] = number((*sizes)[i]);
  } else if (scales && scales->size() == axes.size()) {
    for (size_t i = 0; i < axes.size(); ++i) {
      Dim& d = dims[normalize_axis(axes[i], rank)];
      d = known(d) ? number(static_cast<int64_t>(std::floor(static_cast<float>(d.dim_value()) * (*scales)[i]))) : Dim();
    }
  } else {
    return std::nullopt;
  }
  return Outputs{dims};
}

std::optional<Outputs> center_crop_pad_dims(const ir::Node& node, const std::vector<Dim>& x) {
  auto shape = int_constant(node.input(1));
  if (!shape) return std::nullopt;
  const std::vector<int64_t> axes = axes_or_all(node, x.size());
  if (axes.size() != shape->size()) return std::nullopt;
  auto dims = x;
  for (size_t i = 0; i < axes.size(); ++i) dims[normalize_axis(axes[i], x.size())] = number((*shape)[i]);
  return Outputs{dims};
}

std::optional<Outputs> same_dims(const ir::Node&, const std::vector<Dim>& x) { return Outputs{x}; }

// Multidirectional broadcasting of inputs 0 and 1; nothing when a pair of
// dims may not match.
std::optional<Outputs> broadcast_dims(const ir::Node& node, const std::vector<Dim>& x) {
  auto y = dims_of(node.input(1));
  if (!y) return std::nullopt;
  const size_t rank = x.size(), out_rank = std::max(rank, y->size());
  std::vector<Dim> dims(out_rank);
  for (size_t i = 0; i < out_rank; ++i) {
    const Dim* a = i + rank >= out_rank ? &x[i + rank - out_rank] : nullptr;
    const Dim* b = i + y->size() >= out_rank ? &(*y)[i + y->size() - out_rank] : nullptr;
    if (a && known(*a) && a->dim_value() == 1 && b) dims[i] = *b;
    else if (b && known(*b) && b->dim_value() == 1 && a) dims[i] = *a;
    else if (!b) dims[i] = *a;
    else if (!a) dims[i] = *b;
    else if (known(*a) && known(*b) && a->dim_value() == b->dim_value()) dims[i] = *a;
    else if (!known(*a) && !known(*b) && a->dim_param() == b->dim_param() && !a->dim_param().empty()) dims[i] = *a;
    else return std::nullopt;
  }
  return Outputs{dims};
}

struct ShapeRule {
  std::optional<Outputs> (*dims)(const ir::Node& node, const std::vector<Dim>& x);
  bool boolean = false;  // the outputs are bool; else of input 0's type
};

// The ops with a rule, by op type.
const std::unordered_map<std::string_view, ShapeRule>& shape_rules() {
  static const std::unordered_map<std::string_view, ShapeRule> rules = {
      {"Split", {split_dims}},
      {"Pad", {pad_dims}},
      {"Resize", {resize_dims}},
      {"CenterCropPad", {center_crop_pad_dims}},
      {"ReduceL1", {reduce_dims}},
      {"ReduceL2", {reduce_dims}},
      {"ReduceLogSum", {reduce_dims}},
      {"ReduceLogSumExp", {reduce_dims}},
      {"ReduceMax", {reduce_dims}},
      {"ReduceMean", {reduce_dims}},
      {"ReduceMin", {reduce_dims}},
      {"ReduceProd", {reduce_dims}},
      {"ReduceSum", {reduce_dims}},
      {"ReduceSumSquare", {reduce_dims}},
      {"Mish", {same_dims}},
      {"BitwiseNot", {same_dims}},
      {"GroupNormalization", {same_dims}},
      {"Gelu", {same_dims}},
      {"ScatterND", {same_dims}},
      {"ScatterElements", {same_dims}},
      {"IsInf", {same_dims, /*boolean=*/true}},
      {"IsNaN", {same_dims, /*boolean=*/true}},
      {"BitwiseAnd", {broadcast_dims}},
      {"BitwiseOr", {broadcast_dims}},
      {"BitwiseXor", {broadcast_dims}},
  };
  return rules;
}

}  // namespace

size_t infer_newer_op_types(ir::Graph& graph, int64_t opset) {
  size_t typed = 0;
  auto order = graph.topological_order();
  if (!order.ok()) return 0;
  for (ir::Node* node : *order) {
    if (!node->in_onnx_domain() || !changed_since_libonnx(node->op_type(), opset)) continue;
    bool missing = false;
    for (const ir::Value* out : node->outputs()) missing = missing || (out != nullptr && !dims_of(out));
    if (!missing || node->input(0) == nullptr) continue;
    auto rule = shape_rules().find(node->op_type());
    auto x = dims_of(node->input(0));
    if (rule == shape_rules().end() || !x) continue;
    auto dims = rule->second.dims(*node, *x);
    if (!dims || dims->size() != node->outputs().size()) continue;
    const int32_t elem_type = rule->second.boolean ? onnx::TensorProto::BOOL : node->input(0)->elem_type();
    for (size_t i = 0; i < dims->size(); ++i) {
      ir::Value* out = node->output(i);
      if (out == nullptr || dims_of(out)) continue;
      set_type(graph, out, elem_type, (*dims)[i]);
      ++typed;
    }
  }
  return typed;
}

}  // namespace onnxkit::analysis
