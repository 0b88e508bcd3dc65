#include "ir/inline_functions.h"

#include <fmt/format.h>
#include <google/protobuf/unknown_field_set.h>

#include <deque>
#include <functional>
#include <unordered_map>
#include <unordered_set>

namespace onnxkit::ir {
namespace {

using Nodes = google::protobuf::RepeatedPtrField<onnx::NodeProto>;
using Attributes = google::protobuf::RepeatedPtrField<onnx::AttributeProto>;

// Fields of ONNX releases newer than Debian's library (1.12), which keeps
// them as unknown fields: NodeProto.overload, FunctionProto.attribute_proto
// (the attributes' defaults) and FunctionProto.overload.
constexpr int kNodeOverload = 8;
constexpr int kFunctionAttributeProto = 11;
constexpr int kFunctionOverload = 13;

std::vector<std::string> unknown_bytes(const google::protobuf::Message& message, int number) {
  std::vector<std::string> out;
  const auto& fields = message.GetReflection()->GetUnknownFields(message);
  for (int i = 0; i < fields.field_count(); ++i) {
    const auto& f = fields.field(i);
    if (f.number() == number && f.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      out.push_back(f.length_delimited());
  }
  return out;
}

std::string unknown_string(const google::protobuf::Message& message, int number) {
  auto all = unknown_bytes(message, number);
  return all.empty() ? std::string() : all.back();
}

std::string function_key(std::string_view domain, std::string_view name, std::string_view overload) {
  return fmt::format("{}\x1f{}\x1f{}", canonical_domain(domain), name, overload);
}

std::string call_key(const onnx::NodeProto& node) {
  return function_key(node.domain(), node.op_type(), unknown_string(node, kNodeOverload));
}

std::string function_label(const onnx::FunctionProto& f) {
  return f.domain().empty() ? fmt::format("'{}'", f.name()) : fmt::format("'{}:{}'", f.domain(), f.name());
}

std::string node_label(const onnx::NodeProto& node) {
  return node.name().empty() ? fmt::format("{} node", node.op_type()) : fmt::format("{} node '{}'", node.op_type(), node.name());
}

const onnx::AttributeProto* find_attribute(const Attributes& attributes, std::string_view name) {
  for (const auto& a : attributes)
    if (a.name() == name) return &a;
  return nullptr;
}

// Visits every node of `nodes` and of the sub-graphs in their attributes
// (protobuf's nesting limit bounds the depth).
template <class Visit> void for_each_node(const Nodes& nodes, const Visit& visit) {
  for (const auto& node : nodes) {
    visit(node);
    for (const auto& a : node.attribute()) {
      if (a.has_g()) for_each_node(a.g().node(), visit);
      for (const auto& g : a.graphs()) for_each_node(g.node(), visit);
    }
  }
}

// Every graph of the model (sub-graphs included): its names, so that fresh
// ones never clash.
void collect_names(const onnx::GraphProto& graph, std::unordered_set<std::string>& values,
                   std::unordered_set<std::string>& nodes) {
  for (const auto& v : graph.input()) values.insert(v.name());
  for (const auto& v : graph.output()) values.insert(v.name());
  for (const auto& v : graph.value_info()) values.insert(v.name());
  for (const auto& t : graph.initializer()) values.insert(t.name());
  for (const auto& t : graph.sparse_initializer()) values.insert(t.values().name());
  for (const auto& n : graph.node()) {
    nodes.insert(n.name());
    for (const auto& o : n.output()) values.insert(o);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) collect_names(a.g(), values, nodes);
      for (const auto& g : a.graphs()) collect_names(g, values, nodes);
    }
  }
}

class NameSource {
 public:
  explicit NameSource(const onnx::GraphProto& graph) { collect_names(graph, values_, nodes_); }
  std::string value(const std::string& base) { return fresh(base, values_); }
  std::string node(const std::string& base) { return fresh(base, nodes_); }

 private:
  std::string fresh(const std::string& base, std::unordered_set<std::string>& used) {
    std::string name = base;
    uint64_t& next = next_suffix_[base];
    while (used.count(name) != 0) name = fmt::format("{}_{}", base, ++next);
    used.insert(name);
    return name;
  }
  std::unordered_set<std::string> values_, nodes_;
  std::unordered_map<std::string, uint64_t> next_suffix_;
};

// The chain of functions being expanded around a node, innermost first.
struct Chain {
  int function;
  std::shared_ptr<const Chain> outer;
};

class Inliner {
 public:
  Inliner(onnx::ModelProto& model, const InlineOptions& options) : model_(model), options_(options), names_(model.graph()) {}

  Result<InlineSummary> run() {
    for (int i = 0; i < model_.functions_size(); ++i) {
      const auto& f = model_.functions(i);
      if (!index_.emplace(function_key(f.domain(), f.name(), unknown_string(f, kFunctionOverload)), i).second)
        return make_error("model-local function {} is defined twice", function_label(f));
      std::vector<onnx::AttributeProto> defaults;
      for (const std::string& bytes : unknown_bytes(f, kFunctionAttributeProto)) {
        onnx::AttributeProto a;
        if (!a.ParseFromString(bytes))
          return make_error("model-local function {}: an attribute default is not a valid AttributeProto", function_label(f));
        defaults.push_back(std::move(a));
      }
      defaults_.push_back(std::move(defaults));
    }
    imports_checked_.assign(static_cast<size_t>(model_.functions_size()), false);
    std::vector<std::pair<onnx::GraphProto*, std::shared_ptr<const Chain>>> graphs = {{model_.mutable_graph(), nullptr}};
    while (!graphs.empty()) {
      auto [graph, chain] = graphs.back();
      graphs.pop_back();
      ONNXKIT_TRY(expand_graph(*graph, chain, graphs));
    }
    if (!kept_calls_) model_.clear_functions();
    return summary_;
  }

 private:
  using GraphStack = std::vector<std::pair<onnx::GraphProto*, std::shared_ptr<const Chain>>>;

  // Expands the calls among `graph`'s nodes (in place, keeping their order)
  // and queues the sub-graphs of the nodes that stay.
  Status expand_graph(onnx::GraphProto& graph, const std::shared_ptr<const Chain>& chain, GraphStack& graphs) {
    Nodes old;
    old.Swap(graph.mutable_node());
    std::deque<std::pair<onnx::NodeProto, std::shared_ptr<const Chain>>> work;
    for (auto& n : old) work.emplace_back(std::move(n), chain);
    std::vector<std::shared_ptr<const Chain>> kept_chains;
    while (!work.empty()) {
      auto [node, node_chain] = std::move(work.front());
      work.pop_front();
      auto callee = index_.find(call_key(node));
      if (callee != index_.end() && options_.keep_call && options_.keep_call(node)) {
        kept_calls_ = true;
        callee = index_.end();
      }
      if (callee == index_.end()) {
        graph.add_node()->Swap(&node);
        kept_chains.push_back(node_chain);
        continue;
      }
      const int f = callee->second;
      ONNXKIT_TRY(refuse_recursion(f, node_chain));
      ONNXKIT_TRY(merge_imports(f));
      ONNXKIT_ASSIGN(std::vector<onnx::NodeProto> body, expand_call(node, f));
      ++summary_.calls;
      summary_.nodes += body.size();
      if (summary_.nodes > options_.max_nodes)
        return make_error("expanding the model-local functions would add more than {} nodes (at {} calling {})",
                          options_.max_nodes, node_label(node), function_label(model_.functions(f)));
      auto inner = std::make_shared<const Chain>(Chain{f, node_chain});
      for (auto it = body.rbegin(); it != body.rend(); ++it) work.emplace_front(std::move(*it), inner);
    }
    for (int i = 0; i < graph.node_size(); ++i)
      for (auto& a : *graph.mutable_node(i)->mutable_attribute()) {
        if (a.has_g()) graphs.emplace_back(a.mutable_g(), kept_chains[static_cast<size_t>(i)]);
        for (auto& g : *a.mutable_graphs()) graphs.emplace_back(&g, kept_chains[static_cast<size_t>(i)]);
      }
    return {};
  }

  Status refuse_recursion(int f, const std::shared_ptr<const Chain>& chain) const {
    for (const Chain* c = chain.get(); c != nullptr; c = c->outer.get()) {
      if (c->function != f) continue;
      std::vector<std::string> cycle = {function_label(model_.functions(f))};
      for (const Chain* d = chain.get(); d != c; d = d->outer.get())
        cycle.push_back(function_label(model_.functions(d->function)));
      cycle.push_back(function_label(model_.functions(f)));
      std::string text;
      for (auto it = cycle.rbegin(); it != cycle.rend(); ++it) text += (text.empty() ? "" : " -> ") + *it;
      return make_error("model-local function {} calls itself ({}); functions may not be recursive",
                        function_label(model_.functions(f)), text);
    }
    return {};
  }

  // The function's operator sets must be the model's: its nodes run with
  // the model's opset versions once expanded.
  Status merge_imports(int f) {
    if (imports_checked_[static_cast<size_t>(f)]) return {};
    const auto& function = model_.functions(f);
    for (const auto& import : function.opset_import()) {
      int64_t model_version = 0;
      for (const auto& m : model_.opset_import())
        if (canonical_domain(m.domain()) == canonical_domain(import.domain())) model_version = m.version();
      if (model_version == 0) {
        *model_.add_opset_import() = import;
      } else if (model_version != import.version()) {
        const std::string domain = canonical_domain(import.domain()).empty() ? "ai.onnx" : import.domain();
        return make_error(
            "model-local function {} imports {} opset {} but the model imports opset {}; ONNX asks a function's "
            "operator sets to match the model's (convert the function, e.g. with onnx.version_converter)",
            function_label(function), domain, import.version(), model_version);
      }
    }
    imports_checked_[static_cast<size_t>(f)] = true;
    return {};
  }

  // A copy of function `f`'s body for `call`, renamed into the calling graph
  // and with its attribute references resolved.
  Result<std::vector<onnx::NodeProto>> expand_call(const onnx::NodeProto& call, int f) {
    const onnx::FunctionProto& function = model_.functions(f);
    const std::string where = fmt::format("{} (calling model-local function {})", node_label(call), function_label(function));
    if (call.input_size() > function.input_size() || call.output_size() > function.output_size())
      return make_error("{}: the call has {} inputs and {} outputs, the function takes {} and gives {}", where, call.input_size(),
                        call.output_size(), function.input_size(), function.output_size());
    const std::string prefix = (call.name().empty() ? function.name() : call.name()) + "/";
    std::unordered_map<std::string, std::string> rename;
    for (int i = 0; i < function.input_size(); ++i)
      rename[function.input(i)] = i < call.input_size() ? call.input(i) : std::string();
    std::unordered_set<std::string> produced;
    for_each_node(function.node(), [&](const onnx::NodeProto& n) {
      for (const auto& o : n.output()) produced.insert(o);
    });
    std::vector<onnx::NodeProto> body;
    for (int i = 0; i < function.output_size(); ++i) {
      const std::string& formal = function.output(i);
      std::string actual = i < call.output_size() && !call.output(i).empty() ? call.output(i) : names_.value(prefix + formal);
      if (produced.count(formal) == 0) {
        // An input returned as it is: the call's output still needs a producer.
        auto in = rename.find(formal);
        if (in == rename.end() || in->second.empty())
          return make_error("{}: function output '{}' is made by none of its nodes", where, formal);
        onnx::NodeProto identity;
        identity.set_op_type("Identity");
        identity.set_name(names_.node(prefix + "Identity"));
        identity.add_input(in->second);
        identity.add_output(actual);
        body.push_back(std::move(identity));
        continue;
      }
      rename[formal] = actual;
    }
    // Every other name the body defines, sub-graphs included, gets a fresh one.
    auto define = [&](const std::string& name) {
      if (!name.empty() && rename.count(name) == 0) rename[name] = names_.value(prefix + name);
    };
    std::function<void(const onnx::GraphProto&)> define_graph = [&](const onnx::GraphProto& g) {
      for (const auto& v : g.input()) define(v.name());
      for (const auto& t : g.initializer()) define(t.name());
      for (const auto& t : g.sparse_initializer()) define(t.values().name());
      for (const auto& n : g.node()) {
        for (const auto& o : n.output()) define(o);
        for (const auto& a : n.attribute()) {
          if (a.has_g()) define_graph(a.g());
          for (const auto& s : a.graphs()) define_graph(s);
        }
      }
    };
    for (const auto& n : function.node()) {
      for (const auto& o : n.output()) define(o);
      for (const auto& a : n.attribute()) {
        if (a.has_g()) define_graph(a.g());
        for (const auto& s : a.graphs()) define_graph(s);
      }
    }
    std::string undefined;
    auto map = [&](std::string* name) {
      if (name->empty()) return;
      auto it = rename.find(*name);
      if (it == rename.end()) {
        if (undefined.empty()) undefined = *name;
        return;
      }
      *name = it->second;
    };
    std::function<void(onnx::GraphProto&)> rename_graph = [&](onnx::GraphProto& g) {
      for (auto& v : *g.mutable_input()) map(v.mutable_name());
      for (auto& v : *g.mutable_output()) map(v.mutable_name());
      for (auto& v : *g.mutable_value_info()) map(v.mutable_name());
      for (auto& t : *g.mutable_initializer()) map(t.mutable_name());
      for (auto& t : *g.mutable_sparse_initializer()) map(t.mutable_values()->mutable_name());
      for (auto& n : *g.mutable_node()) rename_node(n, map, rename_graph);
    };
    for (const auto& n : function.node()) {
      onnx::NodeProto copy = n;
      rename_node(copy, map, rename_graph);
      if (!undefined.empty())
        return make_error("{}: {} of the function reads '{}', which the function neither takes nor makes", where, node_label(n),
                          undefined);
      copy.set_name(names_.node(prefix + (n.name().empty() ? n.op_type() : n.name())));
      ONNXKIT_TRY(resolve_references(*copy.mutable_attribute(), call, f, where));
      body.push_back(std::move(copy));
    }
    return body;
  }

  template <class Map, class RenameGraph>
  static void rename_node(onnx::NodeProto& node, const Map& map, const RenameGraph& rename_graph) {
    for (auto& i : *node.mutable_input()) map(&i);
    for (auto& o : *node.mutable_output()) map(&o);
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_g()) rename_graph(*a.mutable_g());
      for (auto& g : *a.mutable_graphs()) rename_graph(g);
    }
  }

  // Attributes that name one of the function's (ref_attr_name) take the
  // call's value, else the function's default, else are left out (the op's
  // own default applies), in sub-graphs too.
  Status resolve_references(Attributes& attributes, const onnx::NodeProto& call, int f, const std::string& where) {
    Attributes resolved;
    for (auto& a : attributes) {
      if (a.ref_attr_name().empty()) {
        if (a.has_g()) ONNXKIT_TRY(resolve_in_graph(*a.mutable_g(), call, f, where));
        for (auto& g : *a.mutable_graphs()) ONNXKIT_TRY(resolve_in_graph(g, call, f, where));
        resolved.Add()->Swap(&a);
        continue;
      }
      const onnx::AttributeProto* value = find_attribute(call.attribute(), a.ref_attr_name());
      if (value == nullptr)
        for (const auto& d : defaults_[static_cast<size_t>(f)])
          if (d.name() == a.ref_attr_name()) value = &d;
      if (value == nullptr) continue;
      if (a.type() != onnx::AttributeProto::UNDEFINED && value->type() != onnx::AttributeProto::UNDEFINED &&
          a.type() != value->type())
        return make_error("{}: attribute '{}' is {}, where the function uses it as {}", where, a.ref_attr_name(),
                          onnx::AttributeProto::AttributeType_Name(value->type()),
                          onnx::AttributeProto::AttributeType_Name(a.type()));
      onnx::AttributeProto* copy = resolved.Add();
      *copy = *value;
      copy->set_name(a.name());
    }
    attributes.Swap(&resolved);
    return {};
  }

  Status resolve_in_graph(onnx::GraphProto& graph, const onnx::NodeProto& call, int f, const std::string& where) {
    for (auto& n : *graph.mutable_node()) ONNXKIT_TRY(resolve_references(*n.mutable_attribute(), call, f, where));
    return {};
  }

  onnx::ModelProto& model_;
  const InlineOptions& options_;
  NameSource names_;
  std::unordered_map<std::string, int> index_;
  std::vector<std::vector<onnx::AttributeProto>> defaults_;
  std::vector<bool> imports_checked_;
  bool kept_calls_ = false;
  InlineSummary summary_;
};

}  // namespace

Result<InlineSummary> inline_functions(onnx::ModelProto& model, const InlineOptions& options) {
  if (model.functions_size() == 0) return InlineSummary{};
  onnx::ModelProto work = model;
  ONNXKIT_ASSIGN(InlineSummary summary, Inliner(work, options).run());
  model.Swap(&work);
  return summary;
}

Result<std::unique_ptr<Model>> inline_functions(const Model& model, const InlineOptions& options) {
  onnx::ModelProto proto = export_model(model);
  ONNXKIT_TRY(inline_functions(proto, options));
  ONNXKIT_ASSIGN(auto inlined, import_model(std::move(proto), model.shared_external_data()));
  inlined->set_source(model.path(), model.file_size());
  return inlined;
}

bool calls_local_functions(const Model& model) {
  const onnx::ModelProto& header = model.header();
  if (header.functions_size() == 0) return false;
  std::unordered_set<std::string> keys;
  for (const auto& f : header.functions()) keys.insert(function_key(f.domain(), f.name(), unknown_string(f, kFunctionOverload)));
  bool found = false;
  model.graph().for_each_graph([&](const Graph& g) {
    for (const Node& n : g.nodes()) found = found || keys.count(call_key(n.header())) != 0;
  });
  return found;
}

std::string describe(const LocalFunction& f) {
  auto join = [](const std::vector<std::string>& parts) {
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
    return out;
  };
  std::string text = f.domain.empty() ? f.name : f.domain + ":" + f.name;
  if (!f.overload.empty()) text += " (overload '" + f.overload + "')";
  text += fmt::format("({}) -> ({})", join(f.inputs), join(f.outputs));
  if (!f.attributes.empty()) text += fmt::format(", attributes [{}]", join(f.attributes));
  text +=
      fmt::format(", {} node{}, {} call site{}", f.nodes, f.nodes == 1 ? "" : "s", f.call_sites, f.call_sites == 1 ? "" : "s");
  return text;
}

std::vector<LocalFunction> list_local_functions(const onnx::ModelProto& model) {
  std::vector<LocalFunction> out;
  std::unordered_map<std::string, size_t> index;
  for (const auto& f : model.functions()) {
    LocalFunction lf;
    lf.domain = f.domain();
    lf.name = f.name();
    lf.overload = unknown_string(f, kFunctionOverload);
    lf.inputs.assign(f.input().begin(), f.input().end());
    lf.outputs.assign(f.output().begin(), f.output().end());
    lf.attributes.assign(f.attribute().begin(), f.attribute().end());
    for (const std::string& bytes : unknown_bytes(f, kFunctionAttributeProto)) {
      onnx::AttributeProto a;
      if (!a.ParseFromString(bytes)) continue;
      lf.attributes.push_back(a.name());
      lf.defaults.push_back(std::move(a));
    }
    for_each_node(f.node(), [&](const onnx::NodeProto&) { ++lf.nodes; });
    index.emplace(function_key(lf.domain, lf.name, lf.overload), out.size());
    out.push_back(std::move(lf));
  }
  auto count = [&](const onnx::NodeProto& n) {
    auto it = index.find(call_key(n));
    if (it != index.end()) ++out[it->second].call_sites;
  };
  for_each_node(model.graph().node(), count);
  for (const auto& f : model.functions()) for_each_node(f.node(), count);
  return out;
}

}  // namespace onnxkit::ir
