// The graph-surgery primitives of tools/edit.h: finding, nodes, attributes,
// tensors, graph inputs and outputs. The whole-model fixes are in
// edit_fixes.cpp; literals in edit_literals.cpp.

#include "tools/edit.h"

#include <fmt/format.h>
#include <onnx/defs/attr_proto_util.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <set>

#include "analysis/onnx_inference.h"
#include "io/tensor_file.h"
#include "passes/eliminate/eliminate_common.h"
#include "passes/pass.h"
#include "runtime/tensor_proto.h"
#include "tools/edit_literals.h"
#include "util/text.h"

namespace onnxkit::tools {

namespace {

const onnx::OpSchema* schema_of(const ir::Node& node) {
  const ir::Model* model = node.graph()->model();
  const std::string domain(node.canonical_domain());
  int64_t opset = model != nullptr ? model->opset(domain) : 0;
  if (opset <= 0) return nullptr;
  return onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset), domain);
}

std::string type_name(onnx::AttributeProto::AttributeType type) {
  switch (type) {
    case onnx::AttributeProto::FLOAT: return "a float";
    case onnx::AttributeProto::INT: return "an int";
    case onnx::AttributeProto::STRING: return "a string";
    case onnx::AttributeProto::TENSOR: return "a tensor";
    case onnx::AttributeProto::GRAPH: return "a graph";
    case onnx::AttributeProto::SPARSE_TENSOR: return "a sparse tensor";
    case onnx::AttributeProto::TYPE_PROTO: return "a type";
    case onnx::AttributeProto::FLOATS: return "a list of floats";
    case onnx::AttributeProto::INTS: return "a list of ints";
    case onnx::AttributeProto::STRINGS: return "a list of strings";
    case onnx::AttributeProto::TENSORS: return "a list of tensors";
    case onnx::AttributeProto::GRAPHS: return "a list of graphs";
    case onnx::AttributeProto::SPARSE_TENSORS: return "a list of sparse tensors";
    case onnx::AttributeProto::TYPE_PROTOS: return "a list of types";
    default: return "of undefined type";
  }
}

}  // namespace

// --- finding -----------------------------------------------------------------

std::vector<ir::Node*> find_nodes(ir::Graph& graph, const std::function<bool(const ir::Node&)>& match) {
  std::vector<ir::Node*> found;
  graph.for_each_graph([&](ir::Graph& g) {
    for (ir::Node& node : g.nodes())
      if (match(node)) found.push_back(&node);
  });
  return found;
}

std::vector<ir::Node*> find_nodes_by_op(ir::Graph& graph, std::string_view op_type) {
  return find_nodes(graph, [&](const ir::Node& n) { return n.op_type() == op_type; });
}

Result<std::vector<ir::Node*>> require_nodes_by_op(ir::Graph& graph, std::string_view op_type) {
  std::vector<ir::Node*> nodes = find_nodes_by_op(graph, op_type);
  if (!nodes.empty()) return nodes;
  std::set<std::string> ops;
  graph.for_each_graph([&](ir::Graph& g) {
    for (ir::Node& n : g.nodes()) ops.insert(n.op_type());
  });
  return make_error("the model has no {} node{}", op_type, did_you_mean(op_type, {ops.begin(), ops.end()}));
}

Result<ir::Node*> find_node(ir::Graph& graph, std::string_view name) {
  ir::Graph& root = *graph.root();
  std::vector<ir::Node*> found = find_nodes(root, [&](const ir::Node& n) { return n.name() == name; });
  if (found.size() == 1) return found[0];
  if (found.size() > 1)
    return make_error("{} nodes are named '{}' ({} and {}); rename one first", found.size(), name, found[0]->describe(),
                      found[1]->op_type());
  // A tensor of that name is a common mix-up: say which node makes it.
  ir::Value* tensor = nullptr;
  root.for_each_graph([&](ir::Graph& g) {
    if (tensor == nullptr) tensor = g.find_value(name);
  });
  if (tensor != nullptr && tensor->producer() != nullptr)
    return make_error("no node is named '{}': that is a tensor, produced by {}", name, tensor->producer()->describe());
  std::vector<std::string> names;
  root.for_each_graph([&](ir::Graph& g) {
    for (ir::Node& n : g.nodes())
      if (!n.name().empty()) names.push_back(n.name());
  });
  return make_error("no node is named '{}'{}", name, did_you_mean(name, names));
}

Result<ir::Value*> find_tensor(ir::Graph& graph, std::string_view name) {
  ir::Graph& root = *graph.root();
  ir::Value* found = nullptr;
  std::vector<std::string> names;
  root.for_each_graph([&](ir::Graph& g) {
    if (found == nullptr) found = g.find_value(name);
    for (ir::Value* v : g.values()) names.push_back(v->name());
  });
  if (found != nullptr) return found;
  std::vector<ir::Node*> nodes = find_nodes(root, [&](const ir::Node& n) { return n.name() == name; });
  if (!nodes.empty() && nodes[0]->output(0) != nullptr)
    return make_error("no tensor is named '{}': that is {}, whose output is '{}'", name, nodes[0]->describe(),
                      nodes[0]->output(0)->name());
  std::sort(names.begin(), names.end());
  return make_error("no tensor is named '{}'{}", name, did_you_mean(name, names));
}

// --- nodes -----------------------------------------------------------------

Status remove_node(ir::Node& node) {
  if (node.is_onnx_op("If")) return inline_if(node);
  if (node.input(0) == nullptr) {
    bool used = false;
    for (ir::Value* out : node.outputs()) used = used || (out != nullptr && out->is_used());
    if (used) {
      const ir::Value* out = node.output(0);
      std::string reader = out != nullptr && !out->uses().empty() ? out->uses()[0].node->describe() : "a graph output";
      return make_error(
          "{} has no input for its consumers to read instead: removing it would leave {} reading '{}', "
          "which nothing defines",
          node.describe(), reader, out != nullptr ? out->name() : "");
    }
    node.graph()->remove_node(&node);
    return {};
  }
  for (size_t i = 1; i < node.outputs().size(); ++i) {
    const ir::Value* extra = node.output(i);
    if (extra != nullptr && extra->is_used())
      return make_error("{}: its output #{} '{}' is in use, and bypassing the node keeps only the first", node.describe(), i,
                        extra->name());
  }
  if (!passes::bypass_node(node))
    return make_error("{} connects '{}' straight to graph output '{}': bypassing it would rename a graph input or output",
                      node.describe(), node.input(0)->name(), node.output(0) != nullptr ? node.output(0)->name() : "");
  return {};
}

std::optional<bool> constant_if_condition(ir::Node& node) {
  passes::PassOptions options;
  passes::PassContext context(*node.graph()->model(), options);
  return passes::eliminate::constant_if_condition(node, context);
}

Status inline_if(ir::Node& node) {
  std::optional<bool> taken = constant_if_condition(node);
  if (!taken)
    return make_error("{}: its condition '{}' is not a constant, so there is no branch to keep", node.describe(),
                      node.input(0) != nullptr ? node.input(0)->name() : "");
  ir::Node* condition = node.input(0)->producer();
  ONNXKIT_TRY(passes::eliminate::inline_if_branch(node, *taken));
  // A Constant that only said which branch to take has nothing left to say.
  if (condition != nullptr && condition->op_type() == "Constant" && condition->output(0) != nullptr &&
      !condition->output(0)->is_used())
    condition->graph()->remove_node(condition);
  return {};
}

Result<ir::Node*> replace_node(ir::Node& node, std::string_view op_type, std::vector<onnx::AttributeProto> attributes,
                               std::string_view domain) {
  ir::Graph& graph = *node.graph();
  std::vector<std::string> names;
  for (const ir::Value* out : node.outputs()) names.push_back(out != nullptr ? out->name() : std::string());
  ir::Node* fresh = graph.insert_node(&node, op_type, node.inputs(), names, domain);  // outputs named name_1...
  for (onnx::AttributeProto& a : attributes) {
    Status set = set_attribute(*fresh, std::move(a));
    if (!set.ok()) {
      graph.remove_node(fresh);
      return set.error();
    }
  }
  // A fresh value can always take over, graph outputs included.
  for (size_t i = 0; i < node.outputs().size(); ++i)
    if (node.output(i) != nullptr) passes::replace_value(graph, node.output(i), fresh->output(i));
  std::string name = node.name();
  graph.remove_node(&node);
  for (size_t i = 0; i < names.size(); ++i) {
    ir::Value* out = fresh->output(i);
    if (out != nullptr && out->name() != names[i] && graph.unique_name(names[i]) == names[i])
      (void)graph.rename_value(out, names[i]);
  }
  fresh->set_name(name);
  return fresh;
}

Status rename_node(ir::Node& node, std::string name) {
  if (name == node.name()) return {};
  if (name.empty()) return make_error("cannot give {} an empty name", node.describe());
  if (node.graph()->unique_node_name(name) != name)
    return make_error("cannot rename {} to '{}': another node has that name", node.describe(), name);
  node.set_name(std::move(name));
  return {};
}

Status rename_tensor(ir::Value& value, std::string name) { return value.owner()->rename_value(&value, std::move(name)); }

Status set_node_input(ir::Node& node, size_t index, ir::Value* value) {
  const onnx::OpSchema* schema = schema_of(node);
  if (value != nullptr) {
    if (node.graph()->lookup(value->name()) != value)
      return make_error("'{}' is not visible from {} (it lives in another sub-graph)", value->name(), node.describe());
    if (schema != nullptr && index >= static_cast<size_t>(schema->max_input()))
      return make_error("{} takes at most {} inputs; there is no input #{}", node.describe(), schema->max_input(), index);
    node.set_input(index, value);
    return {};
  }
  if (index >= node.inputs().size() || node.input(index) == nullptr) return {};  // already unset
  if (schema != nullptr && !schema->inputs().empty()) {
    const auto& formals = schema->inputs();
    const auto& formal = formals[std::min(index, formals.size() - 1)];
    if (formal.GetOption() == onnx::OpSchema::Single)
      return make_error("input #{} ('{}') of {} is required: it cannot be left out", index, formal.GetName(), node.describe());
    if (formal.GetOption() == onnx::OpSchema::Variadic)
      return make_error("input #{} of {} is one of its variadic inputs: it cannot be left out", index, node.describe());
  }
  node.set_input(index, nullptr);
  while (!node.inputs().empty() && node.inputs().back() == nullptr) node.remove_input(node.inputs().size() - 1);
  return {};
}

std::string input_name(const ir::Node& node, size_t index) {
  const onnx::OpSchema* schema = schema_of(node);
  if (schema == nullptr || schema->inputs().empty()) return fmt::format("input{}", index);
  return schema->inputs()[std::min(index, schema->inputs().size() - 1)].GetName();
}

// --- attributes ----------------------------------------------------------------

Result<onnx::AttributeProto::AttributeType> schema_attribute_type(const ir::Node& node, std::string_view name) {
  const onnx::OpSchema* schema = schema_of(node);
  if (schema == nullptr) return onnx::AttributeProto::UNDEFINED;
  const auto& attributes = schema->attributes();
  auto it = attributes.find(std::string(name));
  if (it != attributes.end()) return it->second.type;
  std::vector<std::string> names;
  for (const auto& [n, _] : attributes) names.push_back(n);
  if (std::string hint = did_you_mean(name, names); !hint.empty())
    return make_error("{} has no attribute '{}'{}", node.op_type(), name, hint);
  if (names.empty()) return make_error("{} has no attributes", node.op_type());
  return make_error("{} has no attribute '{}' (its attributes: {})", node.op_type(), name, join(names, ", "));
}

Status set_attribute(ir::Node& node, onnx::AttributeProto attribute) {
  if (attribute.name().empty()) return make_error("an attribute of {} needs a name", node.describe());
  ONNXKIT_ASSIGN(auto expected, schema_attribute_type(node, attribute.name()));
  if (attribute.type() == onnx::AttributeProto::UNDEFINED)
    return make_error("attribute '{}' of {} has no type", attribute.name(), node.describe());
  if (expected != onnx::AttributeProto::UNDEFINED && expected != attribute.type())
    return make_error("attribute '{}' of {} is {}, not {}", attribute.name(), node.op_type(), type_name(expected),
                      type_name(attribute.type()));
  ONNXKIT_TRY(ir::import_attribute(node, std::move(attribute)));
  return {};
}

Status delete_attribute(ir::Node& node, std::string_view name) {
  if (node.remove_attribute(name)) return {};
  std::vector<std::string> names;
  for (const ir::Attribute& a : node.attributes()) names.push_back(a.name());
  return make_error("{} has no attribute '{}'{}", node.describe(), name, did_you_mean(name, names));
}

Result<onnx::AttributeProto> parse_attribute(const ir::Node& node, std::string_view name, std::string_view text) {
  using onnx::AttributeProto;
  ONNXKIT_ASSIGN(AttributeProto::AttributeType type, schema_attribute_type(node, name));
  if (type == AttributeProto::UNDEFINED)
    if (const ir::Attribute* existing = node.attribute(name)) type = existing->proto.type();
  std::string_view trimmed = literals::trim(text);
  bool npy = trimmed.size() > 4 && trimmed.ends_with(".npy");
  if (type == AttributeProto::UNDEFINED) {  // from the literal
    if (looks_like_tensor_literal(trimmed) || npy) {
      type = AttributeProto::TENSOR;
    } else if (literals::is_bracketed(trimmed)) {
      std::vector<std::string> items = literals::parse_list(trimmed);
      bool ints = std::all_of(items.begin(), items.end(), [](const std::string& s) { return literals::is_int(s); });
      bool floats = std::all_of(items.begin(), items.end(), [](const std::string& s) { return literals::is_float(s); });
      type = ints ? AttributeProto::INTS : floats ? AttributeProto::FLOATS : AttributeProto::STRINGS;
    } else {
      type = literals::is_int(trimmed)     ? AttributeProto::INT
             : literals::is_float(trimmed) ? AttributeProto::FLOAT
                                           : AttributeProto::STRING;
    }
  }
  std::string attr(name);
  auto wrong = [&](const Error& e) {
    return make_error("attribute '{}' of {} is {}: {}", name, node.op_type(), type_name(type), e.message());
  };
  switch (type) {
    case AttributeProto::INT: {
      auto v = literals::parse_int(trimmed);
      if (!v.ok()) return wrong(v.error());
      return onnx::MakeAttribute(attr, *v);
    }
    case AttributeProto::FLOAT: {
      auto v = literals::parse_float(trimmed);
      if (!v.ok()) return wrong(v.error());
      return onnx::MakeAttribute(attr, static_cast<float>(*v));
    }
    case AttributeProto::STRING: return onnx::MakeAttribute(attr, literals::unquote(trimmed));
    case AttributeProto::INTS: {
      std::vector<int64_t> values;
      for (const std::string& item : literals::parse_list(trimmed)) {
        auto v = literals::parse_int(item);
        if (!v.ok()) return wrong(v.error());
        values.push_back(*v);
      }
      return onnx::MakeAttribute(attr, std::move(values));
    }
    case AttributeProto::FLOATS: {
      std::vector<float> values;
      for (const std::string& item : literals::parse_list(trimmed)) {
        auto v = literals::parse_float(item);
        if (!v.ok()) return wrong(v.error());
        values.push_back(static_cast<float>(*v));
      }
      return onnx::MakeAttribute(attr, std::move(values));
    }
    case AttributeProto::STRINGS: return onnx::MakeAttribute(attr, literals::parse_list(trimmed));
    case AttributeProto::TENSOR: {
      if (npy) {
        auto t = io::read_npy(std::string(trimmed));
        if (!t.ok()) return t.error();
        return onnx::MakeAttribute(attr, std::move(t).value());
      }
      auto t = parse_tensor_literal(trimmed);
      if (!t.ok()) return wrong(t.error());
      return onnx::MakeAttribute(attr, std::move(t).value());
    }
    default:
      return make_error("attribute '{}' of {} is {}: set it through the library (tools::set_attribute), not from text", name,
                        node.op_type(), type_name(type));
  }
}

// --- tensors -----------------------------------------------------------------

Status set_initializer(ir::Value& value, onnx::TensorProto tensor) {
  if (value.initializer() == nullptr) {
    if (value.producer() != nullptr)
      return make_error("'{}' is not an initializer: {} computes it", value.name(), value.producer()->describe());
    return make_error("'{}' is not an initializer", value.name());
  }
  if (tensor.data_type() != value.initializer()->data_type())
    return make_error("'{}' holds {}, the new data {}", value.name(),
                      runtime::to_string(static_cast<runtime::DataType>(value.initializer()->data_type())),
                      runtime::to_string(static_cast<runtime::DataType>(tensor.data_type())));
  std::vector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
  value.owner()->set_initializer(&value, std::move(tensor));
  if (value.has_type() && value.type().has_tensor_type()) {
    auto* shape = value.mutable_info().mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->clear_dim();
    for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
  }
  return {};
}

// --- graph inputs and outputs ----------------------------------------------------

Status add_graph_output(ir::Model& model, ir::Value& value) {
  ir::Graph& graph = model.graph();
  if (value.owner() != &graph) {
    ir::Node* holder = value.owner()->parent_node();
    return make_error("'{}' is inside a sub-graph of {}: only tensors of the main graph can become outputs", value.name(),
                      holder != nullptr ? holder->describe() : std::string("another graph"));
  }
  if (value.is_graph_output()) return {};
  if (!value.is_graph_input() && !value.is_constant()) analysis::apply_inferred_types(model);
  if (value.elem_type() == 0)
    return make_error("shape inference does not know the type of '{}': it cannot be declared as an output", value.name());
  if (!value.has_type()) {  // an initializer: its type is its data's
    auto* tensor_type = value.mutable_info().mutable_type()->mutable_tensor_type();
    tensor_type->set_elem_type(value.initializer()->data_type());
    for (int64_t d : value.initializer()->dims()) tensor_type->mutable_shape()->add_dim()->set_dim_value(d);
  }
  graph.add_output(&value);
  return {};
}

Status remove_graph_output(ir::Model& model, std::string_view name) {
  ir::Graph& graph = model.graph();
  std::vector<std::string> names;
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    if (graph.outputs()[i]->name() == name) {
      graph.remove_output(i);
      return {};
    }
    names.push_back(graph.outputs()[i]->name());
  }
  return make_error("'{}' is not an output of the model{}", name, did_you_mean(name, names));
}

Result<ir::Value*> add_graph_input(ir::Model& model, std::string_view name, const onnx::TypeProto& type) {
  ir::Graph& graph = model.graph();
  if (graph.unique_name(name) != name) return make_error("cannot add input '{}': the name is already used", name);
  return graph.add_input(name, type);
}

Status remove_graph_input(ir::Model& model, std::string_view name) {
  ir::Graph& graph = model.graph();
  std::vector<std::string> names;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    ir::Value* v = graph.inputs()[i];
    if (v->name() != name) {
      names.push_back(v->name());
      continue;
    }
    if (!v->uses().empty() && !v->is_constant())
      return make_error("input '{}' is still read by {}", name, v->uses()[0].node->describe());
    graph.remove_input(i);
    if (!v->is_used() && !v->is_constant()) graph.erase_value(v);
    return {};
  }
  return make_error("'{}' is not an input of the model{}", name, did_you_mean(name, names));
}

}  // namespace onnxkit::tools
