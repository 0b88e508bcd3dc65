#include "tools/draw_scene.h"

#include <fmt/format.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "io/tensor_proto.h"
#include "ir/model.h"
#include "runtime/tensor_proto.h"
#include "tools/info.h"
#include "tools/node_pairing.h"
#include "util/text.h"

namespace onnxkit::tools::draw {

const char* box_kind_name(BoxKind kind) {
  switch (kind) {
    case BoxKind::node: return "node";
    case BoxKind::input: return "input";
    case BoxKind::output: return "output";
    case BoxKind::scope: return "scope";
    case BoxKind::capture: return "capture";
  }
  return "";
}
namespace {

using nlohmann::json;

constexpr size_t kMaxLineChars = 44;  // longer lines end in "…" (the side panel has them whole)
constexpr size_t kMaxAttributeLines = 6;
constexpr size_t kMaxShownValues = 8;     // a constant this small shows its values in the box
constexpr size_t kMaxScopeMembers = 200;  // names listed in a scope's side panel
constexpr double kMinBoxWidth = 48;
constexpr double kClusterGap = 12;

// Colours by what an op does, as Netron groups them.
constexpr const char* kLayerFill = "#cfe2f3";
constexpr const char* kActivationFill = "#f4cccc";
constexpr const char* kPoolFill = "#d9ead3";
constexpr const char* kNormFill = "#d9d2e9";
constexpr const char* kShapeFill = "#ececec";
constexpr const char* kControlFill = "#fff2cc";
constexpr const char* kPlainFill = "#ffffff";
constexpr const char* kInputFill = "#dbe9ff";
constexpr const char* kOutputFill = "#ffe1d6";
constexpr const char* kCaptureFill = "#f5f5f5";
constexpr const char* kScopeFill = "#eef3e6";
constexpr const char* kRemovedFill = "#f6b8b8";
constexpr const char* kAddedFill = "#bfe8bf";
constexpr const char* kChangedFill = "#ffd89a";
constexpr const char* kNoErrorFill = "#f4f4f4";

const char* op_fill(const std::string& op) {
  static const std::unordered_map<std::string_view, const char*> table = {
      {"Conv", kLayerFill},
      {"ConvTranspose", kLayerFill},
      {"ConvInteger", kLayerFill},
      {"QLinearConv", kLayerFill},
      {"Gemm", kLayerFill},
      {"MatMul", kLayerFill},
      {"MatMulInteger", kLayerFill},
      {"QLinearMatMul", kLayerFill},
      {"Einsum", kLayerFill},
      {"LSTM", kLayerFill},
      {"GRU", kLayerFill},
      {"RNN", kLayerFill},
      {"Attention", kLayerFill},
      {"Relu", kActivationFill},
      {"LeakyRelu", kActivationFill},
      {"PRelu", kActivationFill},
      {"Sigmoid", kActivationFill},
      {"HardSigmoid", kActivationFill},
      {"Tanh", kActivationFill},
      {"Elu", kActivationFill},
      {"Selu", kActivationFill},
      {"Celu", kActivationFill},
      {"Gelu", kActivationFill},
      {"Softmax", kActivationFill},
      {"LogSoftmax", kActivationFill},
      {"Softplus", kActivationFill},
      {"Softsign", kActivationFill},
      {"HardSwish", kActivationFill},
      {"Mish", kActivationFill},
      {"Clip", kActivationFill},
      {"Erf", kActivationFill},
      {"MaxPool", kPoolFill},
      {"AveragePool", kPoolFill},
      {"GlobalAveragePool", kPoolFill},
      {"GlobalMaxPool", kPoolFill},
      {"LpPool", kPoolFill},
      {"MaxRoiPool", kPoolFill},
      {"RoiAlign", kPoolFill},
      {"BatchNormalization", kNormFill},
      {"LayerNormalization", kNormFill},
      {"InstanceNormalization", kNormFill},
      {"GroupNormalization", kNormFill},
      {"LRN", kNormFill},
      {"Dropout", kNormFill},
      {"RMSNormalization", kNormFill},
      {"Shape", kShapeFill},
      {"Size", kShapeFill},
      {"Gather", kShapeFill},
      {"GatherElements", kShapeFill},
      {"Slice", kShapeFill},
      {"Concat", kShapeFill},
      {"Split", kShapeFill},
      {"Reshape", kShapeFill},
      {"Flatten", kShapeFill},
      {"Squeeze", kShapeFill},
      {"Unsqueeze", kShapeFill},
      {"Transpose", kShapeFill},
      {"Expand", kShapeFill},
      {"Tile", kShapeFill},
      {"Cast", kShapeFill},
      {"CastLike", kShapeFill},
      {"Constant", kShapeFill},
      {"ConstantOfShape", kShapeFill},
      {"Range", kShapeFill},
      {"Identity", kShapeFill},
      {"Pad", kShapeFill},
      {"If", kControlFill},
      {"Loop", kControlFill},
      {"Scan", kControlFill},
  };
  auto it = table.find(op);
  return it != table.end() ? it->second : kPlainFill;
}

const char* mark_name(Mark mark) {
  switch (mark) {
    case Mark::removed: return "removed";
    case Mark::added: return "added";
    case Mark::changed: return "changed";
    default: return "";
  }
}

// At most kMaxLineChars code points, the last one "…" when cut.
std::string clip(std::string_view text) {
  size_t i = 0, count = 0;
  while (i < text.size()) {
    if (count == kMaxLineChars - 1) {
      // Cut only when more than one code point is left.
      char32_t c;
      size_t len = decode_utf8(text, i, c);
      if (i + std::max<size_t>(len, 1) < text.size()) return std::string(text.substr(0, i)) + "\u2026";
    }
    char32_t c;
    size_t len = decode_utf8(text, i, c);
    i += std::max<size_t>(len, 1);
    ++count;
  }
  return std::string(text);
}

std::string dims_text(const onnx::TensorProto& t) {
  std::vector<std::string> dims;
  for (int64_t d : t.dims()) dims.push_back(std::to_string(d));
  return io::data_type_name(t.data_type()) + "[" + join(dims, ",") + "]";
}

std::string value_type_text(const ir::Value& v) {
  if (v.has_type()) return io::type_text(v.type());
  if (const onnx::TensorProto* t = v.constant_tensor()) return dims_text(*t);
  return "";
}

// "[0,4096]", "[0.5,1,2]": the values of a constant small enough to show.
std::string values_text(const onnx::TensorProto& t) {
  json j = tensor_json(t);
  if (!j.contains("values") || j["values"].size() > kMaxShownValues) return "";
  std::vector<std::string> parts;
  for (const json& v : j["values"])
    parts.push_back(v.is_number_float() ? fmt::format("{:.4g}", v.get<double>())
                                        : v.dump(-1, ' ', false, json::error_handler_t::replace));
  return "[" + join(parts, ",") + "]";
}

// min/max/mean of a numeric tensor, reading its data (external data through
// the mapped side file); null for other types or unreadable data.
json weight_stats(const onnx::TensorProto& t, const io::ExternalDataStore* store) {
  auto tensor = runtime::tensor_from_proto(t, store);
  if (!tensor.ok() || tensor->numel() == 0) return nullptr;
  json stats = nullptr;
  Status status = runtime::dispatch_numeric(tensor->dtype(), [&]<class T>() -> Status {
    const T* data = tensor->template data<T>();
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    for (int64_t i = 0; i < tensor->numel(); ++i) {
      double x = static_cast<double>(data[i]);
      lo = std::min(lo, x);
      hi = std::max(hi, x);
      sum += x;
    }
    stats = {{"min", lo}, {"max", hi}, {"mean", sum / static_cast<double>(tensor->numel())}};
    return {};
  });
  return status.ok() ? stats : json(nullptr);
}

// The formal name of input `index` of the node's op ("X", "W", "B"), or
// "in<index>" when its schema is unknown.
std::string input_role(const ir::Node& n, size_t index, int64_t opset) {
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(opset), n.domain());
  if (schema == nullptr || schema->inputs().empty()) return fmt::format("in{}", index);
  const auto& formal = schema->inputs();
  return formal[std::min(index, formal.size() - 1)].GetName();
}

// "/layer1/layer1.0" for "/layer1/layer1.0/conv1/Conv" at depth 2: the
// first `depth` parts of the name before its last part; "" when it has none.
std::string scope_of(const std::string& name, int depth) {
  std::vector<std::string> parts;
  for (std::string& p : split(name, '/'))
    if (!p.empty()) parts.push_back(std::move(p));
  if (parts.size() <= 1) return "";
  size_t keep = std::min(static_cast<size_t>(depth), parts.size() - 1);
  std::string scope;
  for (size_t i = 0; i < keep; ++i) scope += "/" + parts[i];
  return scope;
}

// A node folded into its readers: a Constant whose value no graph returns.
bool folded(const ir::Node& n) {
  if (!n.is_onnx_op("Constant")) return false;
  for (const ir::Value* v : n.outputs())
    if (v != nullptr && v->is_any_graph_output()) return false;
  return true;
}

// Colour for an error at t in [0, 1]: green to red.
std::string error_fill(double t) {
  int hue = static_cast<int>(std::lround(120 * (1 - std::clamp(t, 0.0, 1.0))));
  return fmt::format("hsl({},75%,72%)", hue);
}

class Builder {
 public:
  Builder(const ir::Graph& root, const DrawOptions& options) : root_(root), options_(options) {
    const ir::Model* model = root.model();
    store_ = model != nullptr ? model->external_data() : nullptr;
    for (const NodeError& e : options.overlay) {
      auto [it, fresh] = errors_.emplace(e.name, e.error);
      if (!fresh) it->second = std::max(it->second, e.error);
    }
  }

  Result<SceneResult> build() {
    if (options_.diff_with != nullptr && options_.collapse_depth > 0)
      return make_error("--diff and --collapse cannot be drawn together yet; drop one");
    Level top;
    top.graph = &root_;
    top.scene = std::make_unique<Scene>();
    top.collapse = options_.collapse_depth;
    if (options_.diff_with != nullptr) pairing_ = pair_nodes(root_, *options_.diff_with);
    build_level(top);
    if (options_.diff_with != nullptr) add_diff(top);
    finish_overlay(top);
    lay_out(*top.scene);
    double legend_height = legend_.empty() ? 0 : legend_.size() * kLineHeight + kPadY;
    place(*top.scene, {0, legend_height});
    top.scene->height += legend_height;
    SceneResult result;
    result.scene = std::move(top.scene);
    result.details = std::move(details_);
    result.legend = std::move(legend_);
    result.overlay_matched = overlay_matched_;
    return result;
  }

 private:
  // The scene of one graph while it is being built.
  struct Level {
    const ir::Graph* graph = nullptr;
    std::unique_ptr<Scene> scene;
    int collapse = 0;                                       // scope depth folded into one box (top level only)
    std::string top_id;                                     // the top-level box holding this graph ("" at the top)
    std::unordered_map<const ir::Value*, uint32_t> source;  // value -> box that provides it
    std::unordered_map<const ir::Node*, uint32_t> node_box;
    std::map<std::string, uint32_t> scope_box;
    std::map<uint32_t, std::vector<const ir::Node*>> scope_members;
    std::set<std::tuple<uint32_t, uint32_t, std::string>> edge_keys;
    std::set<std::pair<uint32_t, std::string>> labelled;
    std::vector<uint32_t> output_box;
  };

  uint32_t add_box(Level& level, Box box, json detail) {
    box.id = fmt::format("b{}", next_id_++);
    if (!level.top_id.empty()) detail["top"] = level.top_id;
    detail["kind"] = box_kind_name(box.kind);
    details_[box.id] = std::move(detail);
    level.scene->boxes.push_back(std::move(box));
    return static_cast<uint32_t>(level.scene->boxes.size() - 1);
  }

  json value_detail(const ir::Value* v) {
    if (v == nullptr) return {{"name", ""}};
    json d = {{"name", v->name()}, {"type", value_type_text(*v)}};
    if (const onnx::TensorProto* t = v->constant_tensor()) {
      d["constant"] = true;
      if (io::is_external(*t)) d["external"] = true;
      std::string values = values_text(*t);
      if (!values.empty()) d["values"] = values;
      if (options_.weight_stats && options_.format == DrawFormat::html) {  // only the page shows them
        auto [it, fresh] = stats_.try_emplace(t, nullptr);
        if (fresh) it->second = weight_stats(*t, store_);
        if (!it->second.is_null()) d["stats"] = it->second;
      }
    }
    return d;
  }

  uint32_t io_box(Level& level, const ir::Value& v, BoxKind kind, Mark mark = Mark::none) {
    Box box;
    box.kind = kind;
    box.name = v.name();
    box.mark = mark;
    box.fill = kind == BoxKind::input ? kInputFill : kind == BoxKind::output ? kOutputFill : kCaptureFill;
    box.lines.push_back({clip(v.name()), TextLine::title});
    std::string type = value_type_text(v);
    if (!type.empty()) box.lines.push_back({clip(type), TextLine::plain});
    if (kind == BoxKind::capture) box.lines.push_back({"from the enclosing graph", TextLine::dim});
    json detail = {{"name", v.name()}, {"type", type}};
    if (mark != Mark::none) detail["mark"] = mark_name(mark);
    return add_box(level, std::move(box), std::move(detail));
  }

  uint32_t node_box(Level& level, const ir::Node& n, Mark mark) {
    const int64_t opset = n.graph()->model() != nullptr ? n.graph()->model()->opset(n.domain()) : 0;
    Box box;
    box.kind = BoxKind::node;
    box.name = n.name();
    box.op = n.op_type();
    box.mark = mark;
    box.fill = op_fill(n.op_type());
    std::string title = n.in_onnx_domain() ? n.op_type() : n.domain() + ":" + n.op_type();
    box.lines.push_back({clip(title), TextLine::title});
    json detail = {{"name", n.name()}, {"op", n.op_type()}, {"domain", n.domain()}};
    json attributes = json::array();
    size_t attribute_lines = 0;
    for (const ir::Attribute& a : n.attributes()) {
      std::string text = attribute_text(attribute_json(a));
      // Element types read better by name: Cast's "to", EyeLike's and the Random ops' "dtype".
      bool element_type =
          (n.is_onnx_op("Cast") && a.name() == "to") || (a.name() == "dtype" && a.proto.type() == onnx::AttributeProto::INT);
      if (element_type) text = io::data_type_name(static_cast<int32_t>(a.proto.i()));
      attributes.push_back({a.name(), text});
      bool graph = a.graph != nullptr || !a.graphs.empty();
      if (!graph && attribute_lines < kMaxAttributeLines && a.name().size() + text.size() + 1 <= kMaxLineChars) {
        box.lines.push_back({a.name() + " " + text, TextLine::plain});
        ++attribute_lines;
      }
    }
    detail["attributes"] = std::move(attributes);
    json inputs = json::array();
    for (size_t i = 0; i < n.inputs().size(); ++i) {
      const ir::Value* v = n.input(i);
      inputs.push_back(value_detail(v));
      const onnx::TensorProto* t = v != nullptr ? v->constant_tensor() : nullptr;
      if (t == nullptr || !options_.weights) continue;
      std::string line = input_role(n, i, opset) + " " + dims_text(*t);
      std::string values = values_text(*t);
      if (!values.empty()) line += " = " + values;
      box.lines.push_back({clip(line), TextLine::dim});
    }
    detail["inputs"] = std::move(inputs);
    json outputs = json::array();
    for (const ir::Value* v : n.outputs()) outputs.push_back(value_detail(v));
    detail["outputs"] = std::move(outputs);
    if (mark != Mark::none) detail["mark"] = mark_name(mark);

    uint32_t index = add_box(level, std::move(box), std::move(detail));
    const std::string id = level.scene->boxes[index].id;
    for (const ir::Attribute& a : n.attributes()) {
      std::vector<const ir::Graph*> graphs;
      if (a.graph) graphs.push_back(a.graph.get());
      for (const auto& g : a.graphs) graphs.push_back(g.get());
      for (const ir::Graph* g : graphs) {
        if (options_.subgraphs == SubgraphDrawing::collapse) {
          level.scene->boxes[index].lines.push_back(
              {clip(fmt::format("{}: {} nodes", a.name(), g->nodes().size())), TextLine::dim});
          continue;
        }
        Level inner;
        inner.graph = g;
        inner.scene = std::make_unique<Scene>();
        inner.top_id = level.top_id.empty() ? id : level.top_id;
        build_level(inner);
        finish_overlay(inner);
        level.scene->boxes[index].clusters.push_back({a.name(), std::move(inner.scene), {}, 0, 0});
      }
    }
    return index;
  }

  // The box providing value v in this level: its producer's, the graph
  // input's, or a capture box made on first use for a value from outside.
  uint32_t source_of(Level& level, const ir::Value* v) {
    auto it = level.source.find(v);
    if (it != level.source.end()) return it->second;
    uint32_t box = io_box(level, *v, level.top_id.empty() && level.graph == &root_ ? BoxKind::input : BoxKind::capture);
    if (level.scene->boxes[box].kind == BoxKind::input) {
      level.scene->boxes[box].lines.push_back({"not declared as an input", TextLine::dim});
      details_[level.scene->boxes[box].id]["undeclared"] = true;
    }
    level.source.emplace(v, box);
    return box;
  }

  void add_edge(Level& level, uint32_t from, uint32_t to, const ir::Value& v, Mark mark = Mark::none) {
    if (from == to) return;
    auto key = std::make_tuple(from, to, level.collapse > 0 ? std::string() : v.name());
    if (!level.edge_keys.insert(key).second) return;
    Edge e;
    e.from = from;
    e.to = to;
    e.tensor = v.name();
    e.label = value_type_text(v);
    e.labelled = level.labelled.emplace(from, v.name()).second;
    e.mark = mark;
    level.scene->edges.push_back(std::move(e));
  }

  void build_level(Level& level) {
    const ir::Graph& g = *level.graph;
    for (const ir::Value* v : g.inputs())
      if (v->constant_tensor() == nullptr) level.source[v] = io_box(level, *v, BoxKind::input);
    for (const ir::Node& n : g.nodes()) {
      if (folded(n)) continue;
      std::string scope = level.collapse > 0 ? scope_of(n.name(), level.collapse) : "";
      uint32_t box;
      if (scope.empty()) {
        box = node_box(level, n, Mark::none);
      } else {
        auto it = level.scope_box.find(scope);
        if (it == level.scope_box.end()) {
          Box b;
          b.kind = BoxKind::scope;
          b.name = scope;
          b.fill = kScopeFill;
          it = level.scope_box.emplace(scope, add_box(level, std::move(b), {{"name", scope}})).first;
        }
        box = it->second;
        level.scope_members[box].push_back(&n);
      }
      level.node_box[&n] = box;
      for (const ir::Value* v : n.outputs())
        if (v != nullptr) level.source[v] = box;
    }
    for (size_t k = 0; k < g.outputs().size(); ++k) level.output_box.push_back(io_box(level, *g.outputs()[k], BoxKind::output));
    for (const auto& [box, members] : level.scope_members) describe_scope(level, box, members);

    for (const ir::Node& n : g.nodes()) {
      auto it = level.node_box.find(&n);
      if (it == level.node_box.end()) continue;
      for (const ir::Value* v : n.inputs())
        if (v != nullptr && v->constant_tensor() == nullptr) add_edge(level, source_of(level, v), it->second, *v);
      for (const ir::Graph* sub : n.subgraphs())
        for (const ir::Value* v : sub->outer_values_used())
          if (v->constant_tensor() == nullptr) add_edge(level, source_of(level, v), it->second, *v);
    }
    for (size_t k = 0; k < g.outputs().size(); ++k) {
      const ir::Value* v = g.outputs()[k];
      add_edge(level, source_of(level, v), level.output_box[k], *v);
    }
  }

  void describe_scope(Level& level, uint32_t index, const std::vector<const ir::Node*>& members) {
    Box& box = level.scene->boxes[index];
    box.count = members.size();
    std::map<std::string, size_t> ops;
    for (const ir::Node* n : members) ++ops[n->op_type()];
    std::vector<std::pair<std::string, size_t>> by_count(ops.begin(), ops.end());
    std::stable_sort(by_count.begin(), by_count.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string last = box.name.substr(box.name.rfind('/') + 1);
    box.lines.push_back({clip(last), TextLine::title});
    if (last.size() + 1 != box.name.size()) box.lines.push_back({clip(box.name), TextLine::dim});
    box.lines.push_back({fmt::format("{} node{}", members.size(), members.size() == 1 ? "" : "s"), TextLine::plain});
    std::vector<std::string> top;
    for (size_t i = 0; i < by_count.size() && i < 3; ++i)
      top.push_back(by_count[i].second > 1 ? fmt::format("{} x{}", by_count[i].first, by_count[i].second) : by_count[i].first);
    box.lines.push_back({clip(join(top, ", ")), TextLine::dim});
    json& detail = details_[box.id];
    detail["count"] = members.size();
    detail["ops"] = ops;
    json names = json::array();
    for (size_t i = 0; i < members.size() && i < kMaxScopeMembers; ++i) names.push_back(members[i]->name());
    detail["members"] = std::move(names);
  }

  // Marks what the other graph removed or changed, and draws in what it
  // added: its nodes, inputs and outputs, and its edges between paired nodes.
  void add_diff(Level& level) {
    const ir::Graph& other = *options_.diff_with;
    size_t removed = 0, added = 0, changed = 0;
    for (const ir::Node& n : level.graph->nodes()) {
      auto it = level.node_box.find(&n);
      if (it == level.node_box.end()) continue;
      Box& box = level.scene->boxes[it->second];
      const ir::Node* partner = pairing_.partner_in_b(&n);
      json& detail = details_[box.id];
      if (partner == nullptr) {
        box.mark = Mark::removed;
        ++removed;
      } else if (std::string what = node_difference(n, *partner, pairing_); !what.empty()) {
        box.mark = Mark::changed;
        box.lines.push_back({clip("changed: " + what), TextLine::dim});
        detail["difference"] = what;
        ++changed;
      }
      if (box.mark != Mark::none) detail["mark"] = mark_name(box.mark);
    }
    std::set<std::pair<uint32_t, uint32_t>> before, after;
    for (const Edge& e : level.scene->edges) before.emplace(e.from, e.to);
    const size_t original_edges = level.scene->edges.size();

    std::unordered_map<const ir::Node*, uint32_t> added_box;
    for (const ir::Node& n : other.nodes())
      if (pairing_.partner_in_a(&n) == nullptr && !folded(n)) {
        added_box[&n] = node_box(level, n, Mark::added);
        ++added;
      }
    std::map<std::string, uint32_t> inputs_by_name, outputs_by_name;
    for (const auto& [v, box] : level.source)
      if (level.scene->boxes[box].kind == BoxKind::input) inputs_by_name[v->name()] = box;
    for (size_t k = 0; k < level.output_box.size(); ++k) outputs_by_name[level.graph->outputs()[k]->name()] = level.output_box[k];
    auto box_in_a = [&](const ir::Node* nb) -> std::optional<uint32_t> {
      if (auto it = added_box.find(nb); it != added_box.end()) return it->second;
      if (const ir::Node* na = pairing_.partner_in_a(nb))
        if (auto it = level.node_box.find(na); it != level.node_box.end()) return it->second;
      return std::nullopt;
    };
    auto source = [&](const ir::Value* v) -> std::optional<uint32_t> {
      if (v->producer() != nullptr) return box_in_a(v->producer());
      auto it = inputs_by_name.find(v->name());
      if (it != inputs_by_name.end()) return it->second;
      uint32_t box = io_box(level, *v, BoxKind::input, Mark::added);
      inputs_by_name[v->name()] = box;
      return box;
    };
    auto connect = [&](const ir::Value* v, uint32_t to) {
      std::optional<uint32_t> from = source(v);
      if (!from) return;
      after.emplace(*from, to);
      if (!before.count({*from, to})) add_edge(level, *from, to, *v, Mark::added);
    };
    for (const ir::Node& n : other.nodes()) {
      std::optional<uint32_t> to = box_in_a(&n);
      if (!to) continue;
      for (const ir::Value* v : n.inputs())
        if (v != nullptr && v->constant_tensor() == nullptr) connect(v, *to);
    }
    for (const ir::Value* v : other.outputs()) {
      auto it = outputs_by_name.find(v->name());
      uint32_t to = it != outputs_by_name.end() ? it->second : io_box(level, *v, BoxKind::output, Mark::added);
      connect(v, to);
    }
    for (size_t i = 0; i < original_edges; ++i) {
      Edge& e = level.scene->edges[i];
      if (!after.count({e.from, e.to})) e.mark = Mark::removed;
    }
    legend_.push_back(fmt::format("diff: {} removed (red), {} added (green), {} changed (orange)", removed, added, changed));
  }

  // Error of a node: its name's, else the largest of its outputs'.
  std::optional<double> node_error(const ir::Node& n) const {
    if (auto it = errors_.find(n.name()); !n.name().empty() && it != errors_.end()) return it->second;
    std::optional<double> worst;
    for (const ir::Value* v : n.outputs())
      if (v != nullptr)
        if (auto it = errors_.find(v->name()); it != errors_.end()) worst = std::max(worst.value_or(it->second), it->second);
    return worst;
  }

  // Records each box's error (a scope's: the largest of its nodes'); the
  // colours come once the range over every level is known (finish_legend).
  void finish_overlay(Level& level) {
    if (errors_.empty()) return;
    std::map<uint32_t, double> box_error;
    for (const ir::Node& n : level.graph->nodes()) {
      auto it = level.node_box.find(&n);
      if (it == level.node_box.end()) continue;
      if (std::optional<double> e = node_error(n)) {
        auto [slot, fresh] = box_error.emplace(it->second, *e);
        if (!fresh) slot->second = std::max(slot->second, *e);
        matched_names_.insert(n.name());
      }
    }
    for (uint32_t i = 0; i < level.scene->boxes.size(); ++i) {
      Box& box = level.scene->boxes[i];
      if (box.kind != BoxKind::node && box.kind != BoxKind::scope) continue;
      auto it = box_error.find(i);
      if (it == box_error.end()) {
        box.fill = kNoErrorFill;
        continue;
      }
      box.lines.push_back({fmt::format("error {:.3g}", it->second), TextLine::plain});
      details_[box.id]["error"] = it->second;
      pending_overlay_.push_back({&box, it->second});
    }
    if (level.graph == &root_) finish_legend();
  }

  void finish_legend() {
    double lo = INFINITY, hi = -INFINITY;
    for (const auto& [box, e] : pending_overlay_) {
      lo = std::min(lo, e);
      hi = std::max(hi, e);
    }
    const bool log_scale = lo > 0 && hi / lo > 100;
    for (auto& [box, e] : pending_overlay_) {
      double t = hi > lo ? (log_scale ? std::log(e / lo) / std::log(hi / lo) : (e - lo) / (hi - lo)) : (hi > 0 ? 1 : 0);
      box->fill = error_fill(t);
    }
    overlay_matched_ = 0;
    for (const NodeError& e : options_.overlay) overlay_matched_ += matched_entry(e.name);
    legend_.push_back(
        pending_overlay_.empty()
            ? fmt::format("overlay: none of the {} entries names a node or its output", options_.overlay.size())
            : fmt::format("overlay '{}': {:.3g} (green) to {:.3g} (red){}, {} of {} entries matched; grey: no entry",
                          kOverlayErrorField, lo, hi, log_scale ? " on a log scale" : "", overlay_matched_,
                          options_.overlay.size()));
  }

  bool matched_entry(const std::string& name) const {
    if (matched_names_.count(name)) return true;
    const ir::Value* v = root_.find_value(name);
    return v != nullptr && v->producer() != nullptr && matched_names_.count(v->producer()->name());
  }

  void lay_out(Scene& scene) {
    std::vector<LayoutBox> boxes;
    boxes.reserve(scene.boxes.size());
    for (Box& b : scene.boxes) {
      size_box(b);
      boxes.push_back({b.width, b.height});
    }
    std::vector<LayoutEdge> edges;
    edges.reserve(scene.edges.size());
    double longest_label = 0;
    for (const Edge& e : scene.edges) {
      edges.push_back({e.from, e.to});
      if (e.labelled) longest_label = std::max(longest_label, text_width(e.label));
    }
    LayoutOptions options;
    options.left_right = options_.left_right;
    options.rank_gap = options_.left_right ? std::clamp(longest_label + 24, 48.0, 240.0) : kLineHeight + 26;
    Layout layout = layered_layout(boxes, edges, options);
    for (size_t i = 0; i < scene.boxes.size(); ++i) scene.boxes[i].at = layout.positions[i];
    for (size_t i = 0; i < scene.edges.size(); ++i) scene.edges[i].route = std::move(layout.routes[i]);
    scene.width = layout.width;
    for (const Edge& e : scene.edges)  // labels are drawn at 9/11 of the box text's size
      if (e.labelled && e.route.size() >= 2)
        scene.width = std::max(scene.width, e.route[1].x + 4 + text_width(e.label) * 9 / kFontSize + kPadX);
    scene.height = layout.height;
    scene.crossings = layout.crossings;
  }

  static double text_height(const Box& b) { return b.lines.size() * kLineHeight + 2 * kPadY; }

  void size_box(Box& b) {
    double width = kMinBoxWidth;
    for (const TextLine& line : b.lines) width = std::max(width, text_width(line.text) + 2 * kPadX);
    double height = text_height(b);
    if (!b.clusters.empty()) {
      double across = 0, deepest = 0;
      for (Cluster& c : b.clusters) {
        lay_out(*c.scene);
        c.width = std::max(c.scene->width, text_width(c.title) + 2 * kPadX);
        c.height = c.scene->height + kLineHeight;
        across += c.width + (across > 0 ? kClusterGap : 0);
        deepest = std::max(deepest, c.height);
      }
      width = std::max(width, across + 2 * kPadX);
      height += deepest + kPadY;
    }
    b.width = width;
    b.height = height;
  }

  // Moves a laid-out scene (relative to its own corner) to `origin`.
  void place(Scene& scene, Point origin) {
    for (Box& b : scene.boxes) {
      b.at.x += origin.x;
      b.at.y += origin.y;
      double x = b.at.x + kPadX;
      for (Cluster& c : b.clusters) {
        c.at = {x, b.at.y + text_height(b)};
        place(*c.scene, {c.at.x + (c.width - c.scene->width) / 2, c.at.y + kLineHeight});
        x += c.width + kClusterGap;
      }
    }
    for (Edge& e : scene.edges)
      for (Point& p : e.route) {
        p.x += origin.x;
        p.y += origin.y;
      }
  }

  const ir::Graph& root_;
  const DrawOptions& options_;
  const io::ExternalDataStore* store_ = nullptr;
  NodePairing pairing_;
  std::unordered_map<std::string, double> errors_;
  std::set<std::string> matched_names_;
  std::vector<std::pair<Box*, double>> pending_overlay_;
  std::unordered_map<const onnx::TensorProto*, json> stats_;
  json details_ = json::object();
  std::vector<std::string> legend_;
  size_t overlay_matched_ = 0;
  size_t next_id_ = 0;
};

}  // namespace

double text_width(std::string_view text) {
  size_t count = 0;
  for (size_t i = 0; i < text.size();) {
    char32_t c;
    size_t len = decode_utf8(text, i, c);
    i += std::max<size_t>(len, 1);
    ++count;
  }
  return count * kCharWidth;
}

Result<SceneResult> build_scene(const ir::Graph& graph, const DrawOptions& options) { return Builder(graph, options).build(); }

}  // namespace onnxkit::tools::draw
