#include "tools/edit_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "io/atomic_file.h"
#include "io/tensor_file.h"
#include "io/tensor_proto.h"
#include "runtime/tensor.h"
#include "tools/edit.h"
#include "tools/edit_literals.h"
#include "util/text.h"

namespace onnxkit::tools {

namespace fs = std::filesystem;

namespace {

using literals::trim;

struct EditContext {
  std::unique_ptr<ir::Model>& model;
  EditToolReport& report;
};

using Handler = Status (*)(EditContext&, const std::string&);

// "LEFT<sep>RIGHT" split at the first `sep`; an error naming the syntax when absent.
Result<std::pair<std::string, std::string>> split_at(const std::string& text, char sep, std::string_view syntax) {
  size_t at = text.find(sep);
  if (at == std::string::npos || at == 0) return make_error("'{}': expected {}", text, syntax);
  return std::make_pair(text.substr(0, at), text.substr(at + 1));
}

// "NODE:ATTR=VALUE": the node or op type, the attribute, the value.
Result<std::tuple<std::string, std::string, std::string>> split_target_attr(const std::string& text, std::string_view syntax) {
  size_t eq = text.find('=');
  if (eq == std::string::npos) return make_error("'{}': expected {}", text, syntax);
  std::string left = text.substr(0, eq);
  size_t colon = left.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == left.size()) return make_error("'{}': expected {}", text, syntax);
  return std::make_tuple(left.substr(0, colon), left.substr(colon + 1), text.substr(eq + 1));
}

std::string type_text(const ir::Value& v) { return v.has_type() ? io::type_text(v.type()) : ""; }

size_t count_nodes(const ir::Model& model) { return model.graph().nodes().size(); }

// --- the operations ------------------------------------------------------------

Status op_input_shape(EditContext& c, const std::string& arg) {
  ONNXKIT_ASSIGN(auto shape, parse_input_shape_flag(arg));
  ONNXKIT_TRY(set_input_shape(*c.model, shape.first, shape.second));
  c.report.done.push_back(fmt::format("input '{}' is now [{}]", shape.first, join(shape.second, ",")));
  return {};
}

Status op_batch(EditContext& c, const std::string& arg) {
  ONNXKIT_ASSIGN(std::vector<std::string> warnings, set_batch(*c.model, trim(arg)));
  for (std::string& w : warnings) c.report.warnings.push_back(std::move(w));
  c.report.done.push_back(fmt::format("batch of every input and output is now {}", trim(arg)));
  c.report.batch = trim(arg);
  return {};
}

Status op_rename(EditContext& c, const std::string& arg) {
  ONNXKIT_ASSIGN(auto names, split_at(arg, '=', "OLD=NEW"));
  auto [old_name, new_name] = names;
  if (new_name.empty()) return make_error("'{}': the new name is empty", arg);
  ir::Graph& graph = c.model->graph();
  auto tensor = find_tensor(graph, old_name);
  if (tensor.ok()) {
    ONNXKIT_TRY(rename_tensor(**tensor, new_name));
    c.report.done.push_back(fmt::format("tensor '{}' is now '{}'", old_name, new_name));
    return {};
  }
  auto node = find_node(graph, old_name);
  if (node.ok()) {
    ONNXKIT_TRY(rename_node(**node, new_name));
    c.report.done.push_back(fmt::format("node '{}' is now '{}'", old_name, new_name));
    return {};
  }
  std::vector<std::string> names_in_use;
  graph.for_each_graph([&](ir::Graph& g) {
    for (ir::Value* v : g.values()) names_in_use.push_back(v->name());
    for (ir::Node& n : g.nodes())
      if (!n.name().empty()) names_in_use.push_back(n.name());
  });
  return make_error("no tensor or node is named '{}'{}", old_name, did_you_mean(old_name, names_in_use));
}

Status op_remove_node(EditContext& c, const std::string& arg) {
  ONNXKIT_ASSIGN(ir::Node * node, find_node(c.model->graph(), trim(arg)));
  std::string what = node->describe();
  bool inlined = node->op_type() == "If";
  ONNXKIT_TRY(remove_node(*node));
  c.report.done.push_back(inlined ? fmt::format("{} inlined (the branch its constant condition takes)", what)
                                  : fmt::format("{} removed; its consumers read its input", what));
  return {};
}

Status op_if_branch(EditContext& c, const std::string& arg) {
  ONNXKIT_ASSIGN(auto parts, split_at(arg, '=', "NODE=then|else"));
  auto [node_name, branch] = parts;
  if (branch != "then" && branch != "else") return make_error("'{}': the branch is 'then' or 'else', not '{}'", arg, branch);
  ONNXKIT_ASSIGN(ir::Node * node, find_node(c.model->graph(), node_name));
  std::string what = node->describe();
  ONNXKIT_TRY(choose_if_branch(*node, branch == "then"));
  c.report.done.push_back(fmt::format("{} replaced by its {} branch", what, branch));
  return {};
}

Status op_freeze_input(EditContext& c, const std::string& arg) {
  ONNXKIT_ASSIGN(auto parts, split_at(arg, '=', "NAME=VALUE"));
  auto [name, text] = parts;
  ONNXKIT_ASSIGN(ir::Value * input, find_tensor(c.model->graph(), name));
  onnx::TensorProto tensor;
  if (text.ends_with(".npy")) {
    ONNXKIT_ASSIGN(tensor, io::read_npy(text));
  } else {
    auto parsed = parse_value_literal(text, input->elem_type());
    if (!parsed.ok()) return parsed.error().in(fmt::format("input '{}'", name));
    tensor = std::move(parsed).value();
  }
  ONNXKIT_ASSIGN(FreezeInputReport frozen, freeze_input(*c.model, name, std::move(tensor)));
  for (std::string& w : frozen.warnings) c.report.warnings.push_back(std::move(w));
  c.report.done.push_back(fmt::format("input '{}' is now the constant {}: {} node{} folded, {} If node{} inlined", name, text,
                                      frozen.folded, frozen.folded == 1 ? "" : "s", frozen.inlined,
                                      frozen.inlined == 1 ? "" : "s"));
  return {};
}

Status op_remove_op(EditContext& c, const std::string& arg) {
  std::vector<std::string> skipped;
  ONNXKIT_ASSIGN(size_t removed, remove_op(*c.model, trim(arg), &skipped));
  if (removed == 0) return make_error("no {} node could be removed: {}", trim(arg), skipped.empty() ? "" : skipped.front());
  for (std::string& s : skipped) c.report.warnings.push_back(std::move(s));
  c.report.done.push_back(fmt::format("{} {} node{} removed", removed, trim(arg), removed == 1 ? "" : "s"));
  return {};
}

Status set_attribute_text(ir::Node& node, const std::string& attr, const std::string& value) {
  ONNXKIT_ASSIGN(onnx::AttributeProto proto, parse_attribute(node, attr, value));
  return set_attribute(node, std::move(proto));
}

Status op_set_attr(EditContext& c, const std::string& arg) {
  ONNXKIT_ASSIGN(auto parts, split_target_attr(arg, "NODE:ATTR=VALUE"));
  auto& [name, attr, value] = parts;
  ONNXKIT_ASSIGN(ir::Node * node, find_node(c.model->graph(), name));
  ONNXKIT_TRY(set_attribute_text(*node, attr, value));
  c.report.done.push_back(fmt::format("{}: {} = {}", node->describe(), attr, value));
  return {};
}

Status op_set_attr_op(EditContext& c, const std::string& arg) {
  ONNXKIT_ASSIGN(auto parts, split_target_attr(arg, "OPTYPE:ATTR=VALUE"));
  auto& [op, attr, value] = parts;
  ONNXKIT_ASSIGN(std::vector<ir::Node*> nodes, require_nodes_by_op(c.model->graph(), op));
  for (ir::Node* node : nodes) ONNXKIT_TRY(set_attribute_text(*node, attr, value));
  c.report.done.push_back(fmt::format("{} {} node{}: {} = {}", nodes.size(), op, nodes.size() == 1 ? "" : "s", attr, value));
  return {};
}

Status op_add_output(EditContext& c, const std::string& arg) {
  for (const std::string& name : split(arg, ',')) {
    ONNXKIT_ASSIGN(ir::Value * value, find_tensor(c.model->graph(), trim(name)));
    ONNXKIT_TRY(add_graph_output(*c.model, *value));
    c.report.done.push_back(fmt::format("'{}' is an output ({})", value->name(), type_text(*value)));
  }
  return {};
}

Status op_outputs_all(EditContext& c, const std::string&) {
  std::vector<std::string> untyped;
  size_t added = add_all_outputs(*c.model, &untyped);
  if (!untyped.empty())
    c.report.warnings.push_back(fmt::format("{} tensor{} left out, their type unknown to shape inference: {}", untyped.size(),
                                            untyped.size() == 1 ? "" : "s", join(untyped, ", ")));
  c.report.done.push_back(fmt::format("{} intermediate tensor{} made outputs", added, added == 1 ? "" : "s"));
  return {};
}

Status op_extract(EditContext& c, const std::string& arg) {
  ir::Graph& graph = c.model->graph();
  auto names = [](std::string_view list) {
    std::vector<std::string> out;
    for (const std::string& n : split(list, ','))
      if (!trim(n).empty()) out.emplace_back(trim(n));
    return out;
  };
  auto all_exist = [&](const std::vector<std::string>& list) {
    return std::all_of(list.begin(), list.end(), [&](const std::string& n) { return graph.find_value(n) != nullptr; });
  };
  // Tensor names may hold ':' themselves (TensorFlow's "x:0"): take the split where every name exists.
  size_t split_at_colon = arg.find(':');
  for (size_t at = arg.find(':'); at != std::string::npos; at = arg.find(':', at + 1))
    if (all_exist(names(std::string_view(arg).substr(0, at))) && all_exist(names(std::string_view(arg).substr(at + 1)))) {
      split_at_colon = at;
      break;
    }
  if (split_at_colon == std::string::npos) return make_error("'{}': expected INPUTS:OUTPUTS, comma-separated tensor names", arg);
  std::vector<std::string> inputs = names(std::string_view(arg).substr(0, split_at_colon));
  std::vector<std::string> outputs = names(std::string_view(arg).substr(split_at_colon + 1));
  size_t before = count_nodes(*c.model);
  ONNXKIT_TRY(extract_subgraph(*c.model, inputs, outputs));
  c.report.done.push_back(fmt::format("extracted {} -> {}: {} of {} nodes kept", join(inputs, ","), join(outputs, ","),
                                      count_nodes(*c.model), before));
  return {};
}

Status op_replace_prelu(EditContext& c, const std::string&) {
  size_t n = replace_prelu(*c.model);
  if (n == 0) c.report.warnings.push_back("--replace-prelu: the model has no PRelu node");
  c.report.done.push_back(fmt::format("{} PRelu node{} rewritten as Relu(x) - Relu(-x) * slope", n, n == 1 ? "" : "s"));
  return {};
}

Status op_fix_prelu_slope(EditContext& c, const std::string&) {
  ONNXKIT_ASSIGN(size_t n, fix_prelu_slope(*c.model));
  c.report.done.push_back(fmt::format("{} PRelu slope{} reshaped from [C] to [C,1,1]", n, n == 1 ? "" : "s"));
  return {};
}

Status op_set_input(EditContext& c, const std::string& arg) {
  size_t eq = arg.find('=');
  std::string left = eq == std::string::npos ? arg : arg.substr(0, eq);
  size_t colon = left.rfind(':');
  if (eq == std::string::npos || colon == std::string::npos || colon == 0)
    return make_error(
        "'{}': expected NODE:INDEX=VALUE (VALUE: a tensor name, FILE.npy, a literal such as "
        "int64:[-1,4096], or nothing to leave an optional input out)",
        arg);
  std::string node_name = left.substr(0, colon);
  auto index = literals::parse_int(left.substr(colon + 1));
  if (!index.ok() || *index < 0) return make_error("'{}': input index '{}' is not a number", arg, left.substr(colon + 1));
  std::string value_text(trim(std::string_view(arg).substr(eq + 1)));
  ONNXKIT_ASSIGN(ir::Node * node, find_node(c.model->graph(), node_name));
  size_t i = static_cast<size_t>(*index);
  ir::Graph& graph = *node->graph();
  if (value_text.empty()) {
    ONNXKIT_TRY(set_node_input(*node, i, nullptr));
    c.report.done.push_back(fmt::format("{}: input #{} ({}) left out", node->describe(), i, input_name(*node, i)));
    return {};
  }
  ir::Value* value = graph.lookup(value_text);
  if (value == nullptr) {
    onnx::TensorProto tensor;
    if (looks_like_tensor_literal(value_text)) {
      ONNXKIT_ASSIGN(tensor, parse_tensor_literal(value_text));
    } else if (value_text.ends_with(".npy")) {
      ONNXKIT_ASSIGN(tensor, io::read_npy(value_text));
    } else {
      std::vector<std::string> names;
      for (ir::Value* v : graph.values()) names.push_back(v->name());
      return make_error("'{}' is neither a tensor of the model, a .npy file nor a literal such as float:[1,1,2,2]{}", value_text,
                        did_you_mean(value_text, names));
    }
    std::string base = node->name().empty() ? node->op_type() : node->name();
    value = graph.add_initializer(fmt::format("{}_{}", base, input_name(*node, i)), std::move(tensor));
  }
  ONNXKIT_TRY(set_node_input(*node, i, value));
  std::string type =
      value->initializer() != nullptr
          ? io::data_type_name(value->initializer()->data_type()) +
                runtime::shape_to_string({value->initializer()->dims().begin(), value->initializer()->dims().end()})
          : type_text(*value);
  c.report.done.push_back(fmt::format("{}: input #{} ({}) now reads '{}'{}", node->describe(), i, input_name(*node, i),
                                      value->name(), type.empty() ? "" : " (" + type + ")"));
  return {};
}

Status op_cleanup(EditContext& c, const std::string&) {
  size_t removed = c.model->graph().cleanup(false);
  c.report.done.push_back(fmt::format("cleanup: {} node{} no output needs removed", removed, removed == 1 ? "" : "s"));
  return {};
}

Status op_freeze_initializers(EditContext& c, const std::string&) {
  const int64_t ir_version = c.model->header().ir_version();
  const size_t frozen = freeze_initializers(*c.model);
  std::string done =
      fmt::format("freeze-initializers: {} input{} backed by an initializer now constant", frozen, frozen == 1 ? "" : "s");
  if (c.model->header().ir_version() != ir_version)
    done += fmt::format(" (IR version {} -> {}, the first where initializers need not be inputs)", ir_version,
                        c.model->header().ir_version());
  c.report.done.push_back(done);
  return {};
}

Status op_set_initializer(EditContext& c, const std::string& arg) {
  ONNXKIT_ASSIGN(auto parts, split_at(arg, '=', "NAME=FILE.npy"));
  ONNXKIT_ASSIGN(ir::Value * value, find_tensor(c.model->graph(), parts.first));
  ONNXKIT_ASSIGN(onnx::TensorProto tensor, io::read_npy(parts.second));
  ONNXKIT_TRY(set_initializer(*value, std::move(tensor)));
  c.report.done.push_back(fmt::format("initializer '{}' now holds {}", value->name(), parts.second));
  return {};
}

Status op_opset(EditContext& c, const std::string& arg) {
  ONNXKIT_ASSIGN(int64_t version, literals::parse_int(arg));
  int64_t from = c.model->opset("");
  if (from == version) {
    c.report.done.push_back(fmt::format("opset is {} already", version));
    return {};
  }
  ONNXKIT_ASSIGN(c.model, convert_opset(*c.model, version));
  c.report.done.push_back(fmt::format("converted from opset {} to {}", from, version));
  return {};
}

struct Entry {
  EditOperationInfo info;
  Handler apply;
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = {
      {{"input-shape", "NAME:DIMS", "set an input's shape, numbers or symbols: input:batch,3,224,224"}, op_input_shape},
      {{"batch", "N|SYMBOL", "set dim 0 of every input and output: 1, or 'batch' to make it dynamic; a dry run shows it free"},
       op_batch},
      {{"rename", "OLD=NEW", "rename a tensor (or, if no tensor has that name, a node) everywhere"}, op_rename},
      {{"remove-node", "NAME", "remove a node: its consumers read its first input (an If with a constant condition is inlined)"},
       op_remove_node},
      {{"remove-op", "OPTYPE", "remove every node of a type, as --remove-node (If only where its condition is constant)"},
       op_remove_op},
      {{"set-attr", "NODE:ATTR=VALUE",
        "set an attribute of one node; VALUE typed by the op's schema: 1e-5, 3, [1,2], name, float:[1,2]"},
       op_set_attr},
      {{"set-attr-op", "OPTYPE:ATTR=VALUE", "set an attribute of every node of a type: InstanceNormalization:epsilon=1e-5"},
       op_set_attr_op},
      {{"add-output", "TENSOR[,TENSOR...]", "make tensors graph outputs, with their inferred type and shape"}, op_add_output},
      {{"outputs-all", "", "make every intermediate tensor a graph output"}, op_outputs_all},
      {{"extract", "INPUTS:OUTPUTS", "keep only what computes OUTPUTS from INPUTS (comma-separated tensor names)"}, op_extract},
      {{"replace-prelu", "", "rewrite PRelu as Relu(x) - Relu(-x) * slope, for engines without PRelu"}, op_replace_prelu},
      {{"fix-prelu-slope", "", "reshape PRelu slopes of shape [C] to [C,1,1] (initializer and declared shape)"},
       op_fix_prelu_slope},
      {{"if-branch", "NODE=then|else",
        "replace an If by the branch named, whatever its condition (an If on data the model is never given otherwise)"},
       op_if_branch},
      {{"freeze-input", "NAME=VALUE",
        "an input becomes a constant (16000, [1,2], int64:[...], FILE.npy) and what it decides is folded, Ifs included"},
       op_freeze_input},
      {{"set-input", "NODE:INDEX=VALUE",
        "rewire an input to a tensor, FILE.npy or a literal (int64:[-1,4096]); empty VALUE leaves it out"},
       op_set_input},
      {{"cleanup", "", "remove nodes and initializers that no output needs"}, op_cleanup},
      {{"set-initializer", "NAME=FILE.npy", "replace an initializer's data (same element type)"}, op_set_initializer},
      {{"freeze-initializers", "",
        "drop initializers from the graph inputs (old exports list every weight there), so runtimes and simplify treat them as constants"},
       op_freeze_initializers},
      {{"opset", "N", "convert to opset N with ONNX's version converter (onnxkit's own steps above 17, up to 21)"}, op_opset},
  };
  return table;
}

}  // namespace

const std::vector<EditOperationInfo>& edit_operations() {
  static const std::vector<EditOperationInfo> infos = [] {
    std::vector<EditOperationInfo> out;
    for (const Entry& e : entries()) out.push_back(e.info);
    return out;
  }();
  return infos;
}

const EditOperationInfo* find_edit_operation(std::string_view name) {
  for (const EditOperationInfo& info : edit_operations())
    if (info.name == name) return &info;
  return nullptr;
}

Result<std::vector<EditOperation>> parse_edit_script(std::string_view text, const std::string& origin) {
  std::vector<EditOperation> ops;
  std::vector<std::string> names;
  for (const EditOperationInfo& info : edit_operations()) names.emplace_back(info.name);
  std::vector<std::string> lines = split(text, '\n');
  for (size_t n = 0; n < lines.size(); ++n) {
    std::string_view line = lines[n];
    for (size_t hash = line.find('#'); hash != std::string_view::npos; hash = line.find('#', hash + 1))
      if (hash == 0 || std::isspace(static_cast<unsigned char>(line[hash - 1]))) {
        line = line.substr(0, hash);
        break;
      }
    line = trim(line);
    if (line.empty()) continue;
    std::string where = fmt::format("{}:{}", origin, n + 1);
    size_t space = line.find_first_of(" \t");
    std::string name(line.substr(0, space));
    std::string argument(space == std::string_view::npos ? "" : trim(line.substr(space)));
    if (name.starts_with("--")) name = name.substr(2);
    if (size_t eq = name.find('='); eq != std::string::npos && argument.empty()) {  // --batch=4
      argument = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const EditOperationInfo* info = find_edit_operation(name);
    if (info == nullptr) {
      if (name == "script") return make_error("{}: a script cannot run another script", where);
      return make_error("{}: unknown operation '{}'{}", where, name, did_you_mean(name, names));
    }
    if (info->argument.empty() && !argument.empty())
      return make_error("{}: {} takes no argument (got '{}')", where, name, argument);
    if (!info->argument.empty() && argument.empty() && name != "set-input")
      return make_error("{}: {} needs {}", where, name, info->argument);
    ops.push_back({name, argument, where});
  }
  return ops;
}

Result<std::vector<EditOperation>> read_edit_script(const fs::path& path) {
  std::ifstream file(path);
  if (!file) return make_error("{}: cannot read the script", path.string());
  std::stringstream text;
  text << file.rdbuf();
  return parse_edit_script(text.str(), path.string());
}

Status apply_edit_operation(std::unique_ptr<ir::Model>& model, const EditOperation& operation, EditToolReport& report) {
  for (const Entry& e : entries())
    if (e.info.name == operation.name) {
      EditContext context{model, report};
      return e.apply(context, operation.argument);
    }
  return make_error("unknown operation '{}'", operation.name);
}

Result<EditToolReport> edit_file(const fs::path& in, const fs::path& out, const std::vector<EditOperation>& operations,
                                 const EditToolOptions& options) {
  EditToolReport report;
  ONNXKIT_TRY(io::check_writable(out));
  ONNXKIT_ASSIGN(std::unique_ptr<ir::Model> model, ir::load_model(in));
  report.nodes_before = count_nodes(*model);
  for (const EditOperation& op : operations) {
    Status applied = apply_edit_operation(model, op, report);
    if (!applied.ok()) {
      std::string what = op.origin.starts_with("--") ? fmt::format("{} {}", op.origin, op.argument) : op.origin;
      return make_error("{}: {}: {} (nothing written)", in.string(), trim(what), applied.error().message());
    }
  }
  Status valid = validate_edited_model(*model, &report.shapeless_outputs);
  if (!valid.ok()) return make_error("{}: {} (nothing written)", in.string(), valid.error().message());
  if (!report.batch.empty()) {
    std::string not_tried;
    Status free = run_at_new_batch(*model, report.batch, &not_tried);
    if (!free.ok())
      return make_error(
          "{}: --batch {}: the batch is not free, the model fails at the new batch: {}; a Reshape or "
          "Expand whose constant shape holds the old batch does this: give it a shape that follows the "
          "input (0 copies a dim, -1 infers one) with --set-input NODE:1=int64:[...] (nothing written)",
          in.string(), report.batch, free.error().message());
    if (not_tried.empty()) report.batch_ran = true;
    else report.warnings.push_back(std::move(not_tried));
  }
  report.nodes_after = count_nodes(*model);
  ONNXKIT_ASSIGN(report.saved, ir::save_model(*model, out, options.save));
  return report;
}

std::string render_edit_text(const EditToolReport& report, const fs::path& out) {
  std::string text;
  for (const std::string& line : report.done) text += fmt::format("  {}\n", line);
  for (const std::string& w : report.warnings) text += fmt::format("warning: {}\n", w);
  const size_t shapeless = report.shapeless_outputs.size();
  if (shapeless > 0)
    text += fmt::format(
        "note: {} output{} declared by element type only, their shape unknown to shape inference ({}): ONNX Runtime "
        "and onnxkit run {}, onnx.checker asks for a shape\n",
        shapeless, shapeless == 1 ? "" : "s", quote_first(report.shapeless_outputs, 3), shapeless == 1 ? "it" : "them");
  const io::SaveSummary& saved = report.saved;
  const std::string side_file =
      saved.external_file.empty() ? "" : fmt::format(" + {} ({})", saved.external_file, human_bytes(saved.external_bytes));
  text +=
      fmt::format("wrote {}{}: {} node{} (was {}); passes the ONNX checker and shape inference{}{}\n", out.string(), side_file,
                  report.nodes_after, report.nodes_after == 1 ? "" : "s", report.nodes_before,
                  shapeless > 0 ? " (but for those output shapes)" : "", report.batch_ran ? ", and runs at the new batch" : "");
  return text;
}

}  // namespace onnxkit::tools
