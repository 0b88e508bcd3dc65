#include "tools/convert_precision.h"

#include <fmt/format.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "analysis/onnx_inference.h"
#include "runtime/tensor_proto.h"

namespace onnxkit::tools {

Result<LowFloat> parse_low_float(std::string_view text) {
  if (text == "fp16" || text == "float16") return LowFloat::float16;
  if (text == "bf16" || text == "bfloat16") return LowFloat::bfloat16;
  return make_error("--dtype takes fp16 or bf16, not '{}'", text);
}

const char* to_string(LowFloat type) { return type == LowFloat::float16 ? "float16" : "bfloat16"; }

namespace {

using Proto = onnx::TensorProto;

// Where a float32 value ends up: still float32, or the 16-bit type.
enum class Width { none, full, low };  // none: not a float32 value

bool is_float32(const onnx::TypeProto& type) {
  if (type.has_tensor_type()) return type.tensor_type().elem_type() == Proto::FLOAT;
  if (type.has_sequence_type()) return is_float32(type.sequence_type().elem_type());
  if (type.has_optional_type()) return is_float32(type.optional_type().elem_type());
  return false;
}

void set_elem_type(onnx::TypeProto& type, int32_t elem) {
  if (type.has_tensor_type()) type.mutable_tensor_type()->set_elem_type(elem);
  if (type.has_sequence_type()) set_elem_type(*type.mutable_sequence_type()->mutable_elem_type(), elem);
  if (type.has_optional_type()) set_elem_type(*type.mutable_optional_type()->mutable_elem_type(), elem);
}

// Whether formal parameter `index` of `formal` accepts `token` ("(float16)").
// Past the end only a variadic last parameter answers.
bool accepts(const onnx::OpSchema& schema, const std::vector<onnx::OpSchema::FormalParameter>& formal, size_t index,
             std::string_view token) {
  if (formal.empty()) return false;
  if (index >= formal.size() && formal.back().GetOption() != onnx::OpSchema::Variadic) return false;
  const std::string& type = formal[std::min(index, formal.size() - 1)].GetTypeStr();
  for (const auto& constraint : schema.typeConstraintParams())
    if (constraint.type_param_str == type)
      return std::any_of(constraint.allowed_type_strs.begin(), constraint.allowed_type_strs.end(),
                         [&](const std::string& allowed) { return allowed.find(token) != std::string::npos; });
  return type.find(token) != std::string::npos;
}

class Lowering {
 public:
  Lowering(ir::Model& model, const PrecisionOptions& options)
      : model_(model),
        options_(options),
        elem_(options.type == LowFloat::float16 ? Proto::FLOAT16 : Proto::BFLOAT16),
        token_(options.type == LowFloat::float16 ? "(float16)" : "(bfloat16)"),
        suffix_(options.type == LowFloat::float16 ? "_fp16" : "_bf16"),
        inferred_(analysis::infer_types(model).types) {}

  Result<PrecisionReport> run() {
    model_.graph().for_each_graph([&](ir::Graph& graph) { decide(graph); });
    decide_constants();
    std::vector<ir::Graph*> graphs;
    model_.graph().for_each_graph([&](ir::Graph& graph) { graphs.push_back(&graph); });
    for (ir::Graph* graph : graphs) ONNXKIT_TRY(rewrite(*graph));
    return std::move(report_);
  }

 private:
  // --- deciding ---------------------------------------------------------------

  bool float32(const ir::Value* v) const {
    if (v == nullptr || v->sparse_initializer() != nullptr) return false;
    if (v->initializer() != nullptr) return v->initializer()->data_type() == Proto::FLOAT;
    if (v->has_type()) return is_float32(v->type());
    auto it = inferred_.find(v->name());
    return it != inferred_.end() && is_float32(it->second);
  }

  // The schema of `node` in the opset the model imports for its domain.
  const onnx::OpSchema* schema(const ir::Node& node) const {
    const int64_t version = model_.opset(node.canonical_domain());
    if (version <= 0) return nullptr;
    return onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(std::min<int64_t>(version, INT_MAX)),
                                          std::string(node.canonical_domain()));
  }

  void keep(const ir::Node& node, std::string reason) {
    auto& [count, why] = report_.kept[node.op_type()];
    ++count;
    if (why.empty()) why = std::move(reason);
  }

  // Which width each float32 input of each node needs, and which width each
  // float32 node output and graph input has.
  void decide(ir::Graph& graph) {
    const bool main = graph.parent_node() == nullptr;
    for (ir::Value* v : graph.inputs())
      if (!v->is_constant() && float32(v)) width_[v] = main && options_.keep_io_types ? Width::full : Width::low;
    for (size_t k = 0; k < graph.outputs().size(); ++k)
      if (float32(graph.outputs()[k])) output_needs_[{&graph, k}] = main && options_.keep_io_types ? Width::full : Width::low;
    for (ir::Node& node : graph.nodes()) {
      const onnx::OpSchema* s = schema(node);
      const bool asked = std::find(options_.keep_ops.begin(), options_.keep_ops.end(), node.op_type()) != options_.keep_ops.end();
      // A sparse Constant would need a conversion of its own: it stays float32.
      const bool sparse = node.attribute("sparse_value") != nullptr;
      const bool kept_op = asked || sparse;
      bool any_full = false;
      for (size_t i = 0; i < node.inputs().size(); ++i) {
        if (!float32(node.input(i))) continue;
        const bool low = !kept_op && s != nullptr && accepts(*s, s->inputs(), i, token_);
        input_needs_[{&node, i}] = low ? Width::low : Width::full;
        any_full = any_full || !low;
      }
      for (size_t i = 0; i < node.outputs().size(); ++i) {
        ir::Value* out = node.output(i);
        if (!float32(out)) continue;
        const bool low = !kept_op && s != nullptr && accepts(*s, s->outputs(), i, token_);
        width_[out] = low ? Width::low : Width::full;
        any_full = any_full || !low;
      }
      if (!any_full) continue;
      if (asked) keep(node, "asked with --keep-op");
      else if (sparse) keep(node, "a sparse tensor");
      else if (s == nullptr) keep(node, "no schema in this build to say it takes 16-bit floats");
      else keep(node, "its schema takes only float32 there");
    }
  }

  // An initializer becomes 16-bit only when every reader wants it so.
  void decide_constants() {
    model_.graph().for_each_graph([&](ir::Graph& graph) {
      for (ir::Value* v : graph.initializers()) {
        if (!float32(v) || width_.count(v) > 0) continue;  // a graph input's default keeps the input's width
        bool low = true;
        for (const ir::Use& use : v->uses()) {
          auto it = input_needs_.find({use.node, use.index});
          low = low && (it == input_needs_.end() || it->second == Width::low);
        }
        if (v->is_any_graph_output() && options_.keep_io_types) low = false;
        width_[v] = low ? Width::low : Width::full;
      }
    });
  }

  Width width(const ir::Value* v) const {
    auto it = width_.find(v);
    return it == width_.end() ? Width::none : it->second;
  }

  // --- rewriting --------------------------------------------------------------

  Result<Proto> lowered(const Proto& tensor) {
    ONNXKIT_ASSIGN(runtime::Tensor data, runtime::tensor_from_proto(tensor, model_.external_data()));
    const float* x = data.data<float>();
    std::string bytes(static_cast<size_t>(data.numel()) * 2, '\0');
    constexpr float kLargestHalf = 65504.0f;
    for (int64_t i = 0; i < data.numel(); ++i) {
      float f = x[i];
      uint16_t bits;
      if (options_.type == LowFloat::float16) {
        if (std::isfinite(f) && std::fabs(f) > kLargestHalf) {
          f = std::copysign(kLargestHalf, f);
          ++report_.saturated;
        }
        bits = runtime::Float16(f).bits;
      } else {
        bits = runtime::BFloat16(f).bits;
      }
      std::memcpy(&bytes[static_cast<size_t>(i) * 2], &bits, 2);
    }
    Proto out;
    out.set_name(tensor.name());
    out.mutable_dims()->CopyFrom(tensor.dims());
    out.set_data_type(elem_);
    out.set_raw_data(std::move(bytes));
    ++report_.tensors;
    return out;
  }

  // `v` as `want` for readers in `graph`: a Cast placed before `reader`
  // (shared by later readers there).
  ir::Value* cast_of(ir::Value* v, Width want, ir::Graph& graph, ir::Node* reader) {
    auto key = std::make_tuple(v, want, &graph);
    if (auto it = casts_.find(key); it != casts_.end()) return it->second;
    const std::string base = v->name() + (want == Width::low ? suffix_ : "_fp32");
    ir::Node* cast = graph.insert_node(reader, "Cast", {v}, {base});
    cast->set_name(graph.unique_node_name(base));
    set_int(*cast, "to", want == Width::low ? elem_ : Proto::FLOAT);
    ++report_.casts;
    width_[cast->output(0)] = want;
    casts_[key] = cast->output(0);
    return cast->output(0);
  }

  static void set_int(ir::Node& node, const std::string& name, int64_t value) {
    onnx::AttributeProto a;
    a.set_name(name);
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(value);
    node.set_attribute(std::move(a));
  }

  // Attributes that make a float32 output, for a node whose output is now 16-bit.
  Status lower_attributes(ir::Node& node) {
    for (ir::Attribute& a : node.attributes()) {
      onnx::AttributeProto& p = a.proto;
      if (p.type() == onnx::AttributeProto::TENSOR && p.t().data_type() == Proto::FLOAT) {
        ONNXKIT_ASSIGN(Proto t, lowered(p.t()));
        *p.mutable_t() = std::move(t);
      } else if (p.type() == onnx::AttributeProto::INT && (p.name() == "to" || p.name() == "dtype") && p.i() == Proto::FLOAT) {
        p.set_i(elem_);
      }
    }
    const std::string& op = node.op_type();
    if (op == "Constant" && (node.attribute("value_float") != nullptr || node.attribute("value_floats") != nullptr)) {
      const ir::Attribute* a =
          node.attribute("value_float") != nullptr ? node.attribute("value_float") : node.attribute("value_floats");
      Proto t;
      t.set_data_type(Proto::FLOAT);
      if (a->proto.type() == onnx::AttributeProto::FLOAT) t.add_float_data(a->proto.f());
      else {
        t.add_dims(a->proto.floats_size());
        for (float f : a->proto.floats()) t.add_float_data(f);
      }
      node.remove_attribute(a->proto.name());
      ONNXKIT_ASSIGN(Proto low, lowered(t));
      onnx::AttributeProto value;
      value.set_name("value");
      value.set_type(onnx::AttributeProto::TENSOR);
      *value.mutable_t() = std::move(low);
      node.set_attribute(std::move(value));
    }
    // Defaults that mean float32: ConstantOfShape's zero, the generators' dtype.
    if (op == "ConstantOfShape" && node.attribute("value") == nullptr) {
      onnx::AttributeProto value;
      value.set_name("value");
      value.set_type(onnx::AttributeProto::TENSOR);
      value.mutable_t()->set_data_type(elem_);
      value.mutable_t()->add_dims(1);
      value.mutable_t()->set_raw_data(std::string(2, '\0'));
      node.set_attribute(std::move(value));
    }
    if ((op == "RandomNormal" || op == "RandomUniform") && node.attribute("dtype") == nullptr) set_int(node, "dtype", elem_);
    return {};
  }

  Status rewrite(ir::Graph& graph) {
    for (ir::Value* v : graph.initializers())
      if (width(v) == Width::low) {
        ONNXKIT_ASSIGN(Proto t, lowered(*v->initializer()));
        graph.set_initializer(v, std::move(t));
      }
    std::vector<ir::Node*> nodes;
    for (ir::Node& node : graph.nodes()) nodes.push_back(&node);
    for (ir::Node* node : nodes) {
      for (size_t i = 0; i < node->inputs().size(); ++i) {
        auto it = input_needs_.find({node, i});
        if (it == input_needs_.end()) continue;
        ir::Value* v = node->input(i);
        if (width(v) != it->second) node->set_input(i, cast_of(v, it->second, graph, node));
      }
      const bool low_output =
          std::any_of(node->outputs().begin(), node->outputs().end(), [&](const ir::Value* v) { return width(v) == Width::low; });
      if (low_output) ONNXKIT_TRY(lower_attributes(*node));
    }
    const bool main = graph.parent_node() == nullptr;
    for (size_t k = 0; k < graph.outputs().size(); ++k) {
      auto it = output_needs_.find({&graph, k});
      ir::Value* v = graph.outputs()[k];
      if (it == output_needs_.end() || width(v) == it->second) continue;
      if (!main) {
        graph.set_output(k, cast_of(v, it->second, graph, nullptr));
        continue;
      }
      // The main graph's output keeps its name: the value before the Cast takes another.
      const std::string name = v->name();
      ONNXKIT_TRY(graph.rename_value(v, graph.unique_name(name + (width(v) == Width::low ? suffix_ : "_fp32"))));
      ir::Node* cast = graph.insert_node(nullptr, "Cast", {v}, {name});
      cast->set_name(graph.unique_node_name(name + "_cast"));
      set_int(*cast, "to", it->second == Width::low ? elem_ : Proto::FLOAT);
      ++report_.casts;
      *cast->output(0)->mutable_info().mutable_type() = v->type();
      width_[cast->output(0)] = it->second;
      graph.set_output(k, cast->output(0));
    }
    for (ir::Value* v : graph.values())
      if (width(v) == Width::low && v->has_type()) set_elem_type(*v->mutable_info().mutable_type(), elem_);
    return {};
  }

  struct PairHash {
    template <class A, class B> size_t operator()(const std::pair<A, B>& p) const {
      return std::hash<A>()(p.first) * 31 + std::hash<B>()(p.second);
    }
  };
  struct CastKeyHash {
    size_t operator()(const std::tuple<ir::Value*, Width, ir::Graph*>& k) const {
      return std::hash<ir::Value*>()(std::get<0>(k)) * 31 + static_cast<size_t>(std::get<1>(k)) * 7 +
             std::hash<ir::Graph*>()(std::get<2>(k));
    }
  };

  ir::Model& model_;
  const PrecisionOptions& options_;
  const int32_t elem_;
  const std::string token_, suffix_;
  const analysis::TypeMap inferred_;
  std::unordered_map<const ir::Value*, Width> width_;
  std::unordered_map<std::pair<const ir::Node*, size_t>, Width, PairHash> input_needs_;
  std::unordered_map<std::pair<const ir::Graph*, size_t>, Width, PairHash> output_needs_;
  std::unordered_map<std::tuple<ir::Value*, Width, ir::Graph*>, ir::Value*, CastKeyHash> casts_;
  PrecisionReport report_;
};

}  // namespace

Result<PrecisionReport> lower_float_precision(ir::Model& model, const PrecisionOptions& options) {
  return Lowering(model, options).run();
}

}  // namespace onnxkit::tools
