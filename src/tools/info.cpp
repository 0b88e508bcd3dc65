#include "tools/info.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>

#include "analysis/onnx_inference.h"
#include "analysis/stats.h"
#include "io/tensor_proto.h"
#include "ir/inline_functions.h"
#include "runtime/tensor.h"
#include "util/text.h"

namespace onnxkit::tools {
namespace {

using nlohmann::json;

json dims_json(const onnx::TensorShapeProto& shape) {
  json dims = json::array();
  for (const auto& d : shape.dim()) {
    if (d.has_dim_value()) dims.push_back(d.dim_value());
    else if (d.has_dim_param() && !d.dim_param().empty()) dims.push_back(d.dim_param());
    else dims.push_back(nullptr);
  }
  return dims;
}

json type_json(const onnx::TypeProto& type) {
  switch (type.value_case()) {
    case onnx::TypeProto::kTensorType: {
      const auto& t = type.tensor_type();
      return {{"kind", "tensor"},
              {"dtype", io::data_type_name(t.elem_type())},
              {"shape", t.has_shape() ? dims_json(t.shape()) : json(nullptr)}};
    }
    case onnx::TypeProto::kSparseTensorType: {
      const auto& t = type.sparse_tensor_type();
      return {{"kind", "sparse_tensor"},
              {"dtype", io::data_type_name(t.elem_type())},
              {"shape", t.has_shape() ? dims_json(t.shape()) : json(nullptr)}};
    }
    case onnx::TypeProto::kSequenceType: return {{"kind", "sequence"}, {"element", type_json(type.sequence_type().elem_type())}};
    case onnx::TypeProto::kOptionalType: return {{"kind", "optional"}, {"element", type_json(type.optional_type().elem_type())}};
    case onnx::TypeProto::kMapType:
      return {{"kind", "map"},
              {"key", io::data_type_name(type.map_type().key_type())},
              {"value", type_json(type.map_type().value_type())}};
    default: return nullptr;
  }
}

// A float as JSON by its shortest decimal form: 1e-05, not the
// 9.999999747378752e-06 its widening to double would print.
json float_json(float f) { return std::strtod(fmt::format("{}", f).c_str(), nullptr); }

// A half by the fewest digits that read back as the same half, as numpy
// prints it: 6e-08, not 5.960464477539063e-08.
json half_json(runtime::Float16 h) {
  const float f = static_cast<float>(h);
  if (!std::isfinite(f)) return f;
  for (int digits = 1; digits < 9; ++digits) {
    const double d = std::strtod(fmt::format("{:.{}g}", f, digits).c_str(), nullptr);
    if (runtime::Float16(static_cast<float>(d)).bits == h.bits) return d;
  }
  return float_json(f);
}

template <class T> T read_at(const std::string& bytes, size_t i) {
  T v;
  std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
  return v;
}

// The first values of a small inline tensor, as JSON numbers; null when the
// tensor is large, external, or of a type shown only by its dtype.
json tensor_values(const onnx::TensorProto& t, uint64_t count) {
  constexpr uint64_t kMaxShown = 16;
  if (count > kMaxShown || io::is_external(t)) return nullptr;
  if (t.data_type() == onnx::TensorProto::STRING) {
    json out = json::array();
    for (const auto& s : t.string_data()) out.push_back(s);
    return out;
  }
  auto bytes = io::inline_bytes(t);
  if (!bytes.ok() || bytes->size() != io::data_byte_size(t.data_type(), count)) return nullptr;
  json out = json::array();
  for (size_t i = 0; i < count; ++i) {
    switch (t.data_type()) {
      case onnx::TensorProto::FLOAT: out.push_back(float_json(read_at<float>(*bytes, i))); break;
      case onnx::TensorProto::DOUBLE: out.push_back(read_at<double>(*bytes, i)); break;
      case onnx::TensorProto::FLOAT16: out.push_back(half_json(read_at<runtime::Float16>(*bytes, i))); break;
      case onnx::TensorProto::INT64: out.push_back(read_at<int64_t>(*bytes, i)); break;
      case onnx::TensorProto::INT32: out.push_back(read_at<int32_t>(*bytes, i)); break;
      case onnx::TensorProto::INT16: out.push_back(read_at<int16_t>(*bytes, i)); break;
      case onnx::TensorProto::INT8: out.push_back(read_at<int8_t>(*bytes, i)); break;
      case onnx::TensorProto::UINT64: out.push_back(read_at<uint64_t>(*bytes, i)); break;
      case onnx::TensorProto::UINT32: out.push_back(read_at<uint32_t>(*bytes, i)); break;
      case onnx::TensorProto::UINT16: out.push_back(read_at<uint16_t>(*bytes, i)); break;
      case onnx::TensorProto::UINT8: out.push_back(read_at<uint8_t>(*bytes, i)); break;
      case onnx::TensorProto::BOOL: out.push_back(read_at<uint8_t>(*bytes, i) != 0); break;
      default: return nullptr;
    }
  }
  return out;
}

json graph_summary(const ir::Graph& g) { return {{"graph", g.name()}, {"nodes", g.nodes().size()}}; }

}  // namespace

json tensor_json(const onnx::TensorProto& t) {
  json j = {{"dtype", io::data_type_name(t.data_type())}, {"dims", json(std::vector<int64_t>(t.dims().begin(), t.dims().end()))}};
  if (io::is_external(t)) j["external"] = true;
  auto count = io::element_count(t);
  if (count.ok()) {
    json values = tensor_values(t, *count);
    if (!values.is_null()) j["values"] = std::move(values);
  }
  return j;
}

json attribute_json(const ir::Attribute& attr) {
  const auto& a = attr.proto;
  if (!a.ref_attr_name().empty()) return {{"ref", a.ref_attr_name()}};
  switch (a.type()) {
    case onnx::AttributeProto::FLOAT: return float_json(a.f());
    case onnx::AttributeProto::INT: return a.i();
    case onnx::AttributeProto::STRING: return a.s();
    case onnx::AttributeProto::TENSOR: return tensor_json(a.t());
    case onnx::AttributeProto::GRAPH: return attr.graph ? graph_summary(*attr.graph) : json(nullptr);
    case onnx::AttributeProto::SPARSE_TENSOR:
      return {{"sparse", true},
              {"dims", json(std::vector<int64_t>(a.sparse_tensor().dims().begin(), a.sparse_tensor().dims().end()))}};
    case onnx::AttributeProto::TYPE_PROTO: return type_json(a.tp());
    case onnx::AttributeProto::FLOATS: {
      json out = json::array();
      for (float f : a.floats()) out.push_back(float_json(f));
      return out;
    }
    case onnx::AttributeProto::INTS: return json(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
    case onnx::AttributeProto::STRINGS: return json(std::vector<std::string>(a.strings().begin(), a.strings().end()));
    case onnx::AttributeProto::TENSORS: {
      json out = json::array();
      for (const auto& t : a.tensors()) out.push_back(tensor_json(t));
      return out;
    }
    case onnx::AttributeProto::GRAPHS: {
      json out = json::array();
      for (const auto& g : attr.graphs) out.push_back(graph_summary(*g));
      return out;
    }
    default: return nullptr;
  }
}

namespace {

// The inferred type with its dims as the model declares them: ONNX's
// inference names a dim it cannot resolve unk__N, which the model never
// said; such a dim stays unknown unless the declaration names it.
onnx::TypeProto shown_type(const onnx::TypeProto& inferred, const ir::Value& v) {
  onnx::TypeProto out = inferred;
  if (!out.has_tensor_type() || !out.tensor_type().has_shape()) return out;
  auto* shape = out.mutable_tensor_type()->mutable_shape();
  const onnx::TensorShapeProto* declared = nullptr;
  if (v.has_type() && v.type().has_tensor_type() && v.type().tensor_type().has_shape() &&
      v.type().tensor_type().shape().dim_size() == shape->dim_size())
    declared = &v.type().tensor_type().shape();
  for (int i = 0; i < shape->dim_size(); ++i) {
    auto* dim = shape->mutable_dim(i);
    if (dim->has_dim_value()) continue;
    if (declared != nullptr && declared->dim(i).has_dim_param()) *dim = declared->dim(i);
    else if (dim->dim_param().starts_with("unk__")) dim->clear_dim_param();
  }
  return out;
}

json value_json(const ir::Value* v, const analysis::TypeMap& types) {
  if (v == nullptr) return nullptr;  // an omitted optional input or output
  json j = {{"name", v->name()}};
  auto it = types.find(v->name());
  if (it != types.end()) {
    j["type"] = type_json(shown_type(it->second, *v));
  } else if (v->has_type()) {
    j["type"] = type_json(v->type());
  } else if (const auto* t = v->initializer()) {
    j["type"] = {{"kind", "tensor"},
                 {"dtype", io::data_type_name(t->data_type())},
                 {"shape", json(std::vector<int64_t>(t->dims().begin(), t->dims().end()))}};
  }
  if (v->is_constant()) j["initializer"] = true;
  return j;
}

json node_json(const ir::Node& n, size_t index, const std::optional<analysis::NodeCost>& cost, const analysis::TypeMap& types) {
  json j = {{"index", index}, {"name", n.name()}, {"op_type", n.op_type()}, {"domain", n.domain()}};
  j["inputs"] = json::array();
  for (const ir::Value* v : n.inputs()) j["inputs"].push_back(value_json(v, types));
  j["outputs"] = json::array();
  for (const ir::Value* v : n.outputs()) j["outputs"].push_back(value_json(v, types));
  j["attributes"] = json::object();
  for (const auto& a : n.attributes()) j["attributes"][a.name()] = attribute_json(a);
  if (cost) {
    j["macs"] = cost->macs;
    j["flops"] = cost->flops;
  } else {
    j["macs"] = nullptr;
    j["flops"] = nullptr;
  }
  return j;
}

// "float32[1,3,224,224]", "float32[batch,3,?,?]", "seq(float32[?])".
std::string type_text(const json& type) {
  if (type.is_null()) return "?";
  const std::string kind = type.value("kind", "");
  if (kind == "sequence") return "seq(" + type_text(type["element"]) + ")";
  if (kind == "optional") return "optional(" + type_text(type["element"]) + ")";
  if (kind == "map") return fmt::format("map({}, {})", type["key"].get<std::string>(), type_text(type["value"]));
  std::string out = type["dtype"].get<std::string>();
  if (kind == "sparse_tensor") out = "sparse " + out;
  if (type["shape"].is_null()) return out + "[rank ?]";
  std::vector<std::string> dims;
  for (const auto& d : type["shape"]) dims.push_back(d.is_null() ? "?" : d.is_string() ? d.get<std::string>() : d.dump());
  return out + "[" + join(dims, ",") + "]";
}

// "1 node", "3 nodes".
std::string count_of(size_t n, std::string_view noun) { return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s"); }

std::string value_text(const json& v) {
  if (v.is_null()) return "(none)";
  std::string out = v["name"].get<std::string>();
  if (v.contains("type")) out += " " + type_text(v["type"]);
  if (v.value("initializer", false)) out += " (initializer)";
  return out;
}

}  // namespace

std::string attribute_text(const json& a) {
  if (a.is_object() && a.contains("graph"))
    return fmt::format("<graph '{}', {}>", a["graph"].get<std::string>(), count_of(a["nodes"].get<size_t>(), "node"));
  if (a.is_object() && a.contains("dtype") && a.contains("dims")) {
    std::string out = fmt::format("tensor {}{}", a["dtype"].get<std::string>(), a["dims"].dump());
    if (a.contains("values")) out += " " + a["values"].dump();
    return out;
  }
  if (a.is_string()) return "'" + a.get<std::string>() + "'";
  return a.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

// The bindings for the cost: the user's, then 1 for every symbolic dim of
// the inputs left; `assumed` gets the names taken as 1 ("?" for unnamed dims).
Result<analysis::DimBindings> cost_bindings(const ir::Graph& g, const InfoOptions& options, std::vector<std::string>& assumed) {
  analysis::DimBindings bindings;
  std::set<std::string> symbols;
  std::vector<std::string> input_names;
  for (const ir::Value* v : g.inputs()) {
    if (v->is_constant()) continue;
    input_names.push_back(v->name());
    if (!v->has_type() || !v->type().has_tensor_type() || !v->type().tensor_type().has_shape()) continue;
    const auto& shape = v->type().tensor_type().shape();
    auto given = std::find_if(options.shapes.begin(), options.shapes.end(), [&](const auto& s) { return s.first == v->name(); });
    if (given != options.shapes.end()) {
      if (static_cast<int>(given->second.size()) != shape.dim_size())
        return make_error("--shape {}: {} dims given, the input has {}", v->name(), given->second.size(), shape.dim_size());
      bindings.input_shapes.emplace(v->name(), given->second);
      continue;
    }
    for (const auto& d : shape.dim())
      if (!d.has_dim_value()) symbols.insert(d.has_dim_param() ? d.dim_param() : "?");
  }
  for (const auto& [name, dims] : options.shapes)
    if (std::find(input_names.begin(), input_names.end(), name) == input_names.end())
      return make_error("--shape: '{}' is not an input of the model{}", name, did_you_mean(name, input_names));
  for (const auto& [name, value] : options.dims) {
    if (!symbols.count(name))
      return make_error("--dim: no input has a dim named '{}'{}", name,
                        did_you_mean(name, std::vector<std::string>(symbols.begin(), symbols.end())));
    bindings.by_name.emplace(name, value);
  }
  for (const std::string& symbol : symbols) {
    if (bindings.by_name.count(symbol)) continue;
    assumed.push_back(symbol);
    if (symbol == "?") bindings.others = 1;
    else bindings.by_name.emplace(symbol, 1);
  }
  return bindings;
}

// "12 Reshape, 3 Loop": nodes by op type, most first.
std::string op_counts(const std::map<std::string, size_t>& count) {
  std::vector<std::pair<std::string, size_t>> sorted(count.begin(), count.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> parts;
  for (const auto& [op, n] : sorted) parts.push_back(fmt::format("{} {}", n, op));
  return join(parts, ", ");
}

// The cost as a polynomial in `symbols`, of degree <= 2 in each: counted
// with every symbol at 1, 2 and 3 (the rest of `bindings` as they are),
// solved for the coefficients, then checked at two more points. Terms are
// {coefficient, exponent per symbol}; nullopt when the check fails (a
// stride's rounding, say: the cost is no such polynomial).
using Terms = std::vector<std::pair<double, std::vector<int>>>;
struct SymbolicCost {
  std::optional<Terms> macs, flops;
};

SymbolicCost symbolic_cost(const ir::Model& model, const analysis::DimBindings& bindings,
                           const std::vector<std::string>& symbols) {
  auto cost_at = [&](const std::vector<int64_t>& values) {
    analysis::DimBindings at = bindings;
    for (size_t i = 0; i < symbols.size(); ++i) at.by_name[symbols[i]] = values[i];
    analysis::ModelStats stats = analysis::compute_stats(model, analysis::infer_types(model, at).types);
    return std::pair(static_cast<double>(stats.total_macs), static_cast<double>(stats.total_flops));
  };
  const size_t k = symbols.size();
  size_t points = 1;
  for (size_t i = 0; i < k; ++i) points *= 3;
  // Grid point p has value 1 + (p / 3^d) % 3 for symbol d.
  std::vector<double> macs(points), flops(points);
  for (size_t p = 0; p < points; ++p) {
    std::vector<int64_t> values;
    for (size_t d = 0, stride = 1; d < k; ++d, stride *= 3) values.push_back(1 + static_cast<int64_t>((p / stride) % 3));
    std::tie(macs[p], flops[p]) = cost_at(values);
  }
  // f(x) = a + b x + c x^2 from f(1), f(2), f(3), along each symbol in turn.
  auto solve = [&](std::vector<double>& f) {
    for (size_t d = 0, stride = 1; d < k; ++d, stride *= 3)
      for (size_t p = 0; p < points; ++p) {
        if ((p / stride) % 3 != 0) continue;
        const double f1 = f[p], f2 = f[p + stride], f3 = f[p + 2 * stride];
        const double c = (f1 - 2 * f2 + f3) / 2, b = f2 - f1 - 3 * c;
        f[p] = f1 - b - c, f[p + stride] = b, f[p + 2 * stride] = c;
      }
  };
  solve(macs);
  solve(flops);
  auto evaluate = [&](const std::vector<double>& coefficients, const std::vector<int64_t>& values) {
    double sum = 0;
    for (size_t p = 0; p < points; ++p) {
      double term = coefficients[p];
      for (size_t d = 0, stride = 1; d < k; ++d, stride *= 3)
        term *= std::pow(static_cast<double>(values[d]), static_cast<int>((p / stride) % 3));
      sum += term;
    }
    return sum;
  };
  auto terms = [&](const std::vector<double>& coefficients) {
    Terms out;
    for (size_t p = 0; p < points; ++p) {
      if (std::abs(coefficients[p]) < 0.5) continue;
      std::vector<int> powers;
      for (size_t d = 0, stride = 1; d < k; ++d, stride *= 3) powers.push_back(static_cast<int>((p / stride) % 3));
      out.emplace_back(coefficients[p], powers);
    }
    // Highest total degree first.
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
      return std::accumulate(a.second.begin(), a.second.end(), 0) > std::accumulate(b.second.begin(), b.second.end(), 0);
    });
    return out;
  };
  SymbolicCost result{terms(macs), terms(flops)};
  for (int64_t base : {4, 5}) {
    std::vector<int64_t> values;
    for (size_t d = 0; d < k; ++d) values.push_back(d % 2 == 0 ? base : base + 2);
    auto [m, f] = cost_at(values);
    if (std::abs(evaluate(macs, values) - m) > 0.5 + 1e-9 * m) result.macs.reset();
    if (std::abs(evaluate(flops, values) - f) > 0.5 + 1e-9 * f) result.flops.reset();
  }
  return result;
}

json terms_json(const std::optional<Terms>& terms, const std::vector<std::string>& symbols) {
  if (!terms) return nullptr;
  json out = json::array();
  for (const auto& [coefficient, powers] : *terms) {
    json p = json::object();
    for (size_t d = 0; d < symbols.size(); ++d)
      if (powers[d] > 0) p[symbols[d]] = powers[d];
    // Whole coefficients as integers: counts are exact up to 2^53.
    json c = std::abs(coefficient - std::round(coefficient)) < 1e-9 ? json(std::llround(coefficient)) : json(coefficient);
    out.push_back({{"coefficient", c}, {"powers", p}});
  }
  return out;
}

// "1.82G*batch + 3.1M*batch*seq^2".
std::string terms_text(const json& terms) {
  if (terms.empty()) return "0";
  std::vector<std::string> parts;
  for (const auto& t : terms) {
    const double c = t["coefficient"].get<double>();
    std::string part = c >= 1 && std::abs(c - std::round(c)) < 1e-9 ? human_count(static_cast<uint64_t>(std::llround(c)))
                                                                    : fmt::format("{:.3g}", c);
    part.erase(std::remove(part.begin(), part.end(), ' '), part.end());
    for (const auto& [symbol, power] : t["powers"].items())
      part += "*" + symbol + (power.get<int>() > 1 ? "^" + std::to_string(power.get<int>()) : "");
    parts.push_back(part);
  }
  return join(parts, " + ");
}

}  // namespace

Result<json> model_info(const ir::Model& model, const InfoOptions& options) {
  analysis::InferenceResult inferred = analysis::infer_types(model);
  std::vector<std::string> assumed;
  ONNXKIT_ASSIGN(analysis::DimBindings bindings, cost_bindings(model.graph(), options, assumed));
  // Shapes are reported as declared; costs need numbers for the symbols.
  std::optional<analysis::InferenceResult> bound;
  if (!bindings.empty()) bound = analysis::infer_types(model, bindings);
  analysis::ModelStats stats = analysis::compute_stats(model, bound ? bound->types : inferred.types);
  const auto& h = model.header();
  const ir::Graph& g = model.graph();

  json info;
  info["schema"] = "onnxkit.info/1";
  uint64_t external_bytes = model.external_data() != nullptr ? model.external_data()->mapped_bytes() : 0;
  info["file"] = {{"path", model.path().string()}, {"size_bytes", model.file_size()}, {"external_data_bytes", external_bytes}};
  info["ir_version"] = h.ir_version();
  info["producer"] = {{"name", h.producer_name()}, {"version", h.producer_version()}};
  info["domain"] = h.domain();
  info["model_version"] = h.model_version();
  info["doc_string"] = h.doc_string();
  info["opsets"] = json::array();
  for (const auto& op : h.opset_import()) info["opsets"].push_back({{"domain", op.domain()}, {"version", op.version()}});
  info["metadata"] = json::object();
  for (const auto& p : h.metadata_props()) info["metadata"][p.key()] = p.value();
  info["functions"] = h.functions_size();
  info["local_functions"] = json::array();
  if (h.functions_size() > 0) {
    ir::ExportOptions skeleton;
    skeleton.max_inline_data_bytes = 0;
    for (const ir::LocalFunction& f : ir::list_local_functions(ir::export_model(model, skeleton))) {
      json attributes = json::object();
      for (const std::string& name : f.attributes) attributes[name] = nullptr;
      for (const auto& d : f.defaults) attributes[d.name()] = attribute_json(ir::Attribute{d, nullptr, {}});
      info["local_functions"].push_back({{"domain", f.domain},
                                         {"name", f.name},
                                         {"overload", f.overload},
                                         {"inputs", f.inputs},
                                         {"outputs", f.outputs},
                                         {"attributes", attributes},
                                         {"nodes", f.nodes},
                                         {"call_sites", f.call_sites},
                                         {"text", ir::describe(f)}});
    }
  }
  info["graph"] = {{"name", g.name()}, {"nodes", stats.node_count}, {"nodes_with_subgraphs", stats.total_node_count}};

  info["inputs"] = json::array();
  for (const ir::Value* v : g.inputs())
    if (!v->is_constant()) info["inputs"].push_back(value_json(v, inferred.types));
  // IR < 4 lists initializers as inputs too: those are overridable defaults.
  info["inputs_with_defaults"] = json::array();
  for (const ir::Value* v : g.inputs())
    if (v->is_constant()) info["inputs_with_defaults"].push_back(v->name());
  info["outputs"] = json::array();
  for (const ir::Value* v : g.outputs()) info["outputs"].push_back(value_json(v, inferred.types));

  info["operators"] = json::array();
  for (const auto& op : stats.operators)
    info["operators"].push_back({{"domain", op.domain}, {"op_type", op.op_type}, {"count", op.count}});
  info["initializers"] = {
      {"count", stats.initializer_count}, {"parameters", stats.parameter_count}, {"bytes", stats.parameter_bytes}};
  const auto& constants = stats.constant_nodes;
  const auto& nested = stats.subgraph_initializers;
  info["parameters"] = {
      {"elements", stats.parameter_count + constants.elements + nested.elements},
      {"bytes", stats.parameter_bytes + constants.bytes + nested.bytes},
      {"constant_nodes", {{"count", constants.tensors}, {"elements", constants.elements}, {"bytes", constants.bytes}}},
      {"subgraph_initializers", {{"count", nested.tensors}, {"elements", nested.elements}, {"bytes", nested.bytes}}}};
  info["compute"] = {{"macs", stats.total_macs},
                     {"flops", stats.total_flops},
                     {"nodes_without_shapes", stats.nodes_without_shapes},
                     {"ops_without_shapes", op_counts(stats.ops_without_shapes)},
                     {"nodes_without_cost_model", stats.nodes_without_cost_model},
                     {"ops_without_cost_model", op_counts(stats.ops_without_cost_model)},
                     {"notes", stats.cost_notes},
                     {"dims", bindings.by_name},
                     {"assumed_dims", assumed}};
  if (bindings.others) info["compute"]["dims"]["?"] = *bindings.others;
  for (const auto& [name, dims] : bindings.input_shapes) info["compute"]["input_shapes"][name] = dims;
  if (options.symbolic) {
    std::vector<std::string> symbols;
    for (const std::string& name : assumed)
      if (name != "?") symbols.push_back(name);
    // 3^k counts: past three symbols the fit costs more than it tells.
    if (symbols.empty() || symbols.size() > 3) {
      info["compute"]["symbolic"] = {{"symbols", symbols}, {"macs", nullptr}, {"flops", nullptr}};
    } else {
      SymbolicCost cost = symbolic_cost(model, bindings, symbols);
      info["compute"]["symbolic"] = {
          {"symbols", symbols}, {"macs", terms_json(cost.macs, symbols)}, {"flops", terms_json(cost.flops, symbols)}};
    }
  }
  if (!inferred.warning.empty()) info["warnings"] = json::array({inferred.warning});

  if (options.nodes) {
    info["nodes"] = json::array();
    size_t i = 0;
    for (const ir::Node& n : g.nodes()) {
      info["nodes"].push_back(node_json(n, i, stats.node_costs[i], inferred.types));
      ++i;
    }
  }
  return info;
}

Result<json> model_info(const std::filesystem::path& path, const InfoOptions& options) {
  ONNXKIT_ASSIGN(auto model, ir::load_model(path));
  return model_info(*model, options);
}

namespace {

// "ai.onnx 17, ai.onnx.ml 3"
std::string opsets_text(const json& info) {
  std::vector<std::string> opsets;
  for (const auto& op : info["opsets"]) {
    const std::string domain = op["domain"].get<std::string>();
    opsets.push_back(fmt::format("{} {}", domain.empty() ? "ai.onnx" : domain, op["version"].get<int64_t>()));
  }
  return join(opsets, ", ");
}

// An entry of "operators" by name: "Conv", "ai.onnx.ml:ZipMap".
std::string operator_label(const json& op) {
  const std::string domain = op["domain"].get<std::string>();
  return domain.empty() ? op["op_type"].get<std::string>() : domain + ":" + op["op_type"].get<std::string>();
}

}  // namespace

std::string render_info_text(const json& info) {
  std::string out;
  auto line = [&](std::string_view label, const std::string& text) { out += fmt::format("{:<13}{}\n", label, text); };
  const auto& file = info["file"];
  std::string size = human_bytes(file["size_bytes"].get<uint64_t>());
  if (file["external_data_bytes"].get<uint64_t>() > 0)
    size += " + " + human_bytes(file["external_data_bytes"].get<uint64_t>()) + " external data";
  line("model", fmt::format("{} ({})", file["path"].get<std::string>(), size));
  std::string producer = info["producer"]["name"].get<std::string>();
  if (!info["producer"]["version"].get<std::string>().empty()) producer += " " + info["producer"]["version"].get<std::string>();
  line("ir_version", std::to_string(info["ir_version"].get<int64_t>()));
  if (!producer.empty()) line("producer", producer);
  line("opsets", opsets_text(info));
  for (const auto& [key, value] : info["metadata"].items()) line("metadata", key + " = " + value.get<std::string>());
  if (info["functions"].get<int>() > 0) {
    line("functions", std::to_string(info["functions"].get<int>()));
    for (const auto& f : info["local_functions"]) {
      std::string text = f["text"].get<std::string>();
      std::vector<std::string> defaults;
      for (const auto& [name, value] : f["attributes"].items())
        if (!value.is_null()) defaults.push_back(name + "=" + attribute_text(value));
      if (!defaults.empty()) text += ", defaults " + join(defaults, " ");
      line("", text);
    }
  }
  const auto& graph = info["graph"];
  std::string nodes = count_of(graph["nodes"].get<size_t>(), "node");
  if (graph["nodes_with_subgraphs"] != graph["nodes"])
    nodes += fmt::format(" ({} with sub-graphs)", graph["nodes_with_subgraphs"].get<size_t>());
  line("graph", fmt::format("'{}', {}", graph["name"].get<std::string>(), nodes));
  const auto& params = info["parameters"];
  std::vector<std::string> held = {count_of(info["initializers"]["count"].get<size_t>(), "initializer")};
  if (size_t n = params["constant_nodes"]["count"].get<size_t>(); n > 0) held.push_back(count_of(n, "Constant node"));
  if (size_t n = params["subgraph_initializers"]["count"].get<size_t>(); n > 0)
    held.push_back(count_of(n, "sub-graph initializer"));
  line("parameters",
       fmt::format("{} ({}) in {}, {}", human_count(params["elements"].get<uint64_t>()), params["elements"].get<uint64_t>(),
                   join(held, " and "), human_bytes(params["bytes"].get<uint64_t>())));
  const auto& compute = info["compute"];
  const size_t uncounted = compute["nodes_without_shapes"].get<size_t>();
  const size_t unmodelled = compute["nodes_without_cost_model"].get<size_t>();
  std::string cost =
      fmt::format("{}{}, {}", uncounted + unmodelled > 0 ? "at least " : "", human_count(compute["macs"].get<uint64_t>(), "MACs"),
                  human_count(compute["flops"].get<uint64_t>(), "FLOPs"));
  std::vector<std::string> bound;
  for (const auto& [name, value] : compute["dims"].items()) bound.push_back(fmt::format("{}={}", name, value.get<int64_t>()));
  if (compute.contains("input_shapes"))
    for (const auto& [name, dims] : compute["input_shapes"].items())
      bound.push_back(fmt::format("{}:{}", name, fmt::join(dims.get<std::vector<int64_t>>(), ",")));
  if (!bound.empty()) cost += " with " + join(bound, ", ");
  if (!compute["assumed_dims"].empty()) {
    const std::string first = compute["assumed_dims"][0].get<std::string>();
    cost += fmt::format(" (symbolic dims taken as 1; {} sets them)",
                        first == "?" ? std::string("--shape INPUT:DIMS") : fmt::format("--dim {}=N", first));
  }
  if (uncounted > 0)
    cost += fmt::format(" (not counted: {} whose shapes are unknown: {})", count_of(uncounted, "node"),
                        compute["ops_without_shapes"].get<std::string>());
  if (unmodelled > 0)
    cost += fmt::format(" (not counted, no cost model: {})", compute["ops_without_cost_model"].get<std::string>());
  line("compute", cost);
  for (const auto& note : compute["notes"]) line("", note.get<std::string>());
  if (compute.contains("symbolic")) {
    const auto& symbolic = compute["symbolic"];
    const auto& symbols = symbolic["symbols"];
    if (symbols.empty()) line("symbolic", "no named symbolic dim left unbound");
    else if (symbols.size() > 3)
      line("symbolic", fmt::format("not fitted: {} symbols (at most 3; --dim binds the others)", symbols.size()));
    else if (symbolic["macs"].is_null() || symbolic["flops"].is_null())
      line("symbolic", fmt::format("not fitted: the cost is no polynomial of degree <= 2 in {}",
                                   join(symbols.get<std::vector<std::string>>(), ", ")));
    else
      line("symbolic", fmt::format("{}{} MACs, {} FLOPs", uncounted + unmodelled > 0 ? "at least " : "",
                                   terms_text(symbolic["macs"]), terms_text(symbolic["flops"])));
  }

  out += "inputs\n";
  for (const auto& v : info["inputs"]) out += "  " + value_text(v) + "\n";
  if (!info["inputs_with_defaults"].empty())
    out += fmt::format("  (+ {} also listed as inputs)\n", count_of(info["inputs_with_defaults"].size(), "initializer"));
  out += "outputs\n";
  for (const auto& v : info["outputs"]) out += "  " + value_text(v) + "\n";
  out += "operators\n";
  for (const auto& op : info["operators"]) out += fmt::format("  {:<28}{:>6}\n", operator_label(op), op["count"].get<size_t>());
  if (info.contains("nodes")) {
    out += "nodes\n";
    for (const auto& n : info["nodes"]) {
      std::string head = fmt::format("  #{} {}", n["index"].get<size_t>(), n["op_type"].get<std::string>());
      if (!n["domain"].get<std::string>().empty()) head += " (" + n["domain"].get<std::string>() + ")";
      if (!n["name"].get<std::string>().empty()) head += " '" + n["name"].get<std::string>() + "'";
      if (!n["macs"].is_null() && n["macs"].get<uint64_t>() > 0)
        head += fmt::format("  [{}, {}]", human_count(n["macs"].get<uint64_t>(), "MACs"),
                            human_count(n["flops"].get<uint64_t>(), "FLOPs"));
      else if (!n["flops"].is_null() && n["flops"].get<uint64_t>() > 0)
        head += fmt::format("  [{}]", human_count(n["flops"].get<uint64_t>(), "FLOPs"));
      out += head + "\n";
      std::vector<std::string> ins, outs, attrs;
      for (const auto& v : n["inputs"]) ins.push_back(value_text(v));
      for (const auto& v : n["outputs"]) outs.push_back(value_text(v));
      for (const auto& [k, v] : n["attributes"].items()) attrs.push_back(k + "=" + attribute_text(v));
      out += "      in:    " + join(ins, ", ") + "\n";
      out += "      out:   " + join(outs, ", ") + "\n";
      if (!attrs.empty()) out += "      attrs: " + join(attrs, " ") + "\n";
    }
  }
  if (info.contains("warnings"))
    for (const auto& w : info["warnings"]) out += "warning: " + w.get<std::string>() + "\n";
  return out;
}

std::string render_info_comparison(const std::vector<json>& infos) {
  using Row = std::pair<std::string, std::vector<std::string>>;
  std::vector<Row> rows;
  auto add = [&](std::string label, const std::function<std::string(const json&)>& cell) {
    std::vector<std::string> cells;
    for (const json& info : infos) cells.push_back(cell(info));
    rows.emplace_back(std::move(label), std::move(cells));
  };
  add("model", [](const json& i) { return std::filesystem::path(i["file"]["path"].get<std::string>()).filename().string(); });
  add("file size", [](const json& i) {
    std::string size = human_bytes(i["file"]["size_bytes"].get<uint64_t>());
    if (uint64_t external = i["file"]["external_data_bytes"].get<uint64_t>(); external > 0) size += " + " + human_bytes(external);
    return size;
  });
  add("ir_version", [](const json& i) { return std::to_string(i["ir_version"].get<int64_t>()); });
  add("opsets", opsets_text);
  add("nodes", [](const json& i) { return std::to_string(i["graph"]["nodes"].get<size_t>()); });
  add("parameters", [](const json& i) { return human_count(i["parameters"]["elements"].get<uint64_t>()); });
  add("weights", [](const json& i) { return human_bytes(i["parameters"]["bytes"].get<uint64_t>()); });
  add("MACs", [](const json& i) {
    const auto& c = i["compute"];
    const bool partial = c["nodes_without_shapes"].get<size_t>() + c["nodes_without_cost_model"].get<size_t>() > 0;
    return (partial ? ">= " : "") + human_count(c["macs"].get<uint64_t>());
  });
  // Inputs and outputs by position, operators by name over every model.
  for (const char* side : {"inputs", "outputs"}) {
    size_t most = 0;
    for (const json& info : infos) most = std::max(most, info[side].size());
    for (size_t k = 0; k < most; ++k)
      add(fmt::format("{} {}", std::string_view(side).substr(0, std::string_view(side).size() - 1), k),
          [&](const json& i) { return k < i[side].size() ? value_text(i[side][k]) : std::string("-"); });
  }
  std::vector<std::string> ops;
  for (const json& info : infos)
    for (const auto& op : info["operators"])
      if (std::string name = operator_label(op); std::find(ops.begin(), ops.end(), name) == ops.end()) ops.push_back(name);
  for (const std::string& name : ops)
    add("  " + name, [&](const json& i) {
      for (const auto& op : i["operators"])
        if (operator_label(op) == name) return std::to_string(op["count"].get<size_t>());
      return std::string("-");
    });

  size_t label_width = 0;
  std::vector<size_t> widths(infos.size(), 0);
  for (const auto& [label, cells] : rows) {
    label_width = std::max(label_width, label.size());
    for (size_t c = 0; c < cells.size(); ++c) widths[c] = std::max(widths[c], cells[c].size());
  }
  std::string out;
  bool operators_heading = false;
  for (const auto& [label, cells] : rows) {
    if (!operators_heading && label.starts_with("  ")) {
      out += "operators\n";
      operators_heading = true;
    }
    const bool differ = label != "model" && std::adjacent_find(cells.begin(), cells.end(), std::not_equal_to<>()) != cells.end();
    std::string line = fmt::format("{}{:<{}}", differ ? "* " : "  ", label, label_width);
    for (size_t c = 0; c < cells.size(); ++c) line += fmt::format("  {:<{}}", cells[c], widths[c]);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace onnxkit::tools
