// The whole-model operations of tools/edit.h: the fixes the seeds make by
// hand (batch, PReLU, If, cut-outs, opset), and the final validation.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/defs/schema.h>
#include <onnx/version_converter/convert.h>

#include <algorithm>
#include <cctype>
#include <unordered_map>
#include <unordered_set>

#include "analysis/checker.h"
#include "analysis/onnx_inference.h"
#include "analysis/opset_history.h"
#include "io/tensor_proto.h"
#include "passes/eliminate/eliminate_common.h"
#include "passes/fold.h"
#include "passes/pass.h"
#include "runtime/tensor_proto.h"
#include "tools/edit.h"
#include "tools/edit_literals.h"
#include "tools/inputs.h"
#include "tools/opset_upgrade.h"
#include "util/text.h"

namespace onnxkit::tools {

namespace {

bool is_number(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

Status set_dim(onnx::TensorShapeProto::Dimension& dim, const std::string& value) {
  if (!is_number(value)) {
    dim.set_dim_param(value);
    return {};
  }
  auto number = literals::parse_int(value);
  if (!number.ok()) return make_error("dim '{}' is too large", value);
  dim.set_dim_value(*number);
  return {};
}

// The elements of a small constant integer tensor (an initializer or a
// Constant node's output); empty when `value` is not one.
std::vector<int64_t> constant_ints(const ir::Value* value, const ir::Model& model) {
  const onnx::TensorProto* tensor = value != nullptr ? value->constant_tensor() : nullptr;
  if (tensor == nullptr) return {};
  auto t = runtime::tensor_from_proto(*tensor, model.external_data());
  if (!t.ok() || t->dtype() != runtime::DataType::int64 || t->numel() > 64) return {};
  auto values = t->values<int64_t>();
  return {values.begin(), values.end()};
}

}  // namespace

Result<std::pair<std::string, std::vector<std::string>>> parse_input_shape_flag(const std::string& flag) {
  size_t colon = flag.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == flag.size())
    return make_error("--input-shape '{}': expected NAME:D0,D1,... (numbers or symbols), e.g. input:1,3,224,224", flag);
  std::vector<std::string> dims = split(std::string_view(flag).substr(colon + 1), ',');
  for (const std::string& d : dims)
    if (d.empty() || d[0] == '-')
      return make_error("--input-shape '{}': dim '{}' must be a positive number or a symbol", flag, d);
  return std::make_pair(flag.substr(0, colon), dims);
}

Status set_input_shape(ir::Model& model, std::string_view name, const std::vector<std::string>& dims) {
  ir::Graph& graph = model.graph();
  ir::Value* input = nullptr;
  std::vector<std::string> names;
  for (ir::Value* v : graph.inputs()) {
    if (v->is_constant()) continue;
    names.push_back(v->name());
    if (v->name() == name) input = v;
  }
  if (input == nullptr)
    return make_error("'{}' is not an input of the model{} (inputs: {})", name, did_you_mean(name, names), join(names, ", "));
  auto* tensor_type = input->mutable_info().mutable_type()->mutable_tensor_type();
  if (tensor_type->has_shape() && tensor_type->shape().dim_size() != static_cast<int>(dims.size()))
    return make_error("input '{}': {} dims given, the model declares {}", name, dims.size(), tensor_type->shape().dim_size());
  auto* shape = tensor_type->mutable_shape();
  shape->clear_dim();
  for (const std::string& d : dims) ONNXKIT_TRY(set_dim(*shape->add_dim(), d));
  return {};
}

Result<std::vector<std::string>> set_batch(ir::Model& model, std::string_view batch) {
  ir::Graph& graph = model.graph();
  if (batch.empty()) return make_error("the batch must be a number or a symbol such as 'batch'");
  if (!is_number(batch) && !(std::isalpha(static_cast<unsigned char>(batch[0])) || batch[0] == '_'))
    return make_error("batch '{}' is neither a positive number nor a symbol (letters, digits, '_')", batch);
  onnx::TensorShapeProto::Dimension parsed;
  ONNXKIT_TRY(set_dim(parsed, std::string(batch)));
  if (parsed.has_dim_value() && parsed.dim_value() == 0) return make_error("a batch of 0 holds nothing");
  std::vector<std::string> warnings;
  int64_t old_batch = -1;
  size_t changed = 0;
  auto set = [&](ir::Value* v) {
    if (!v->has_type() || !v->type().has_tensor_type() || !v->type().tensor_type().has_shape() ||
        v->type().tensor_type().shape().dim_size() == 0)
      return;
    auto* dim = v->mutable_info().mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0);
    if (old_batch < 0 && dim->has_dim_value()) old_batch = dim->dim_value();
    *dim = parsed;
    ++changed;
  };
  for (ir::Value* v : graph.inputs())
    if (!v->is_constant()) set(v);
  for (ir::Value* v : graph.outputs()) set(v);
  if (changed == 0) return make_error("no input or output of the model declares a shape to set the batch of");
  // Glue that pins the old batch down: the seeds' Reshape to [1, -1].
  if (old_batch > 0 && std::to_string(old_batch) != batch)
    for (ir::Node& node : graph.nodes()) {
      if (node.op_type() != "Reshape") continue;
      std::vector<int64_t> shape = constant_ints(node.input(1), model);
      if (shape.size() < 2 || shape[0] != old_batch) continue;
      std::vector<int64_t> fixed = shape;
      fixed[0] = std::count(shape.begin(), shape.end(), -1) == 0 ? -1 : 0;
      warnings.push_back(
          fmt::format("{} reshapes to the constant {}, which keeps the batch at {}; "
                      "--set-input '{}:1=int64:{}' makes it follow the input",
                      node.describe(), runtime::shape_to_string(shape), old_batch, node.name(), runtime::shape_to_string(fixed)));
    }
  return warnings;
}

namespace {

// Constant folding over the main graph and every sub-graph; returns how many
// nodes it folded.
size_t fold_everywhere(ir::Model& model, passes::PassContext& context) {
  const passes::Pass* fold = passes::find_pass(passes::kFoldConstants);
  size_t folded = 0;
  model.graph().for_each_graph([&](ir::Graph& g) { folded += fold->run(g, context); });
  return folded;
}

}  // namespace

Result<FreezeInputReport> freeze_input(ir::Model& model, std::string_view name, onnx::TensorProto tensor) {
  ir::Graph& graph = model.graph();
  std::vector<std::string> names;
  size_t index = graph.inputs().size();
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    if (graph.inputs()[i]->is_constant()) continue;
    names.push_back(graph.inputs()[i]->name());
    if (graph.inputs()[i]->name() == name) index = i;
  }
  if (index == graph.inputs().size()) return make_error("'{}' is not an input of the model{}", name, did_you_mean(name, names));
  ir::Value& input = *graph.inputs()[index];
  const auto type_name = [](int32_t t) { return runtime::to_string(static_cast<runtime::DataType>(t)); };
  if (input.elem_type() != 0 && tensor.data_type() != input.elem_type())
    return make_error("input '{}' is {}, the value {}", name, type_name(input.elem_type()), type_name(tensor.data_type()));
  if (input.has_type() && input.type().has_tensor_type() && input.type().tensor_type().has_shape()) {
    const auto& dims = input.type().tensor_type().shape().dim();
    bool fits = dims.size() == tensor.dims_size();
    for (int i = 0; fits && i < dims.size(); ++i) fits = !dims[i].has_dim_value() || dims[i].dim_value() == tensor.dims(i);
    if (!fits)
      return make_error("input '{}' is declared {}, the value has shape {}", name, io::type_text(input.type()),
                        runtime::shape_to_string(std::vector<int64_t>(tensor.dims().begin(), tensor.dims().end())));
  }
  graph.set_initializer(&input, std::move(tensor));
  graph.remove_input(index);

  FreezeInputReport report;
  for (bool changed = true; changed;) {
    passes::PassOptions options;
    passes::PassContext context(model, options);
    report.folded += fold_everywhere(model, context);
    for (std::string& w : context.take_warnings()) report.warnings.push_back(std::move(w));
    changed = false;
    // Sub-graphs before the graphs holding them, as remove_op does.
    std::vector<ir::Node*> ifs = find_nodes_by_op(graph, "If");
    for (auto it = ifs.rbegin(); it != ifs.rend(); ++it)
      if (constant_if_condition(**it)) {
        ONNXKIT_TRY(inline_if(**it));
        ++report.inlined;
        changed = true;
      }
  }
  graph.cleanup(false);
  return report;
}

Status choose_if_branch(ir::Node& node, bool then_branch) {
  if (node.op_type() != "If") return make_error("{} is not an If", node.describe());
  return passes::eliminate::inline_if_branch(node, then_branch);
}

Status run_at_new_batch(const ir::Model& model, std::string_view batch, std::string* not_tried) {
  const std::shared_ptr<const ir::Model> borrowed(std::shared_ptr<void>(), &model);
  runtime::SessionOptions session_options;
  session_options.threads = 1;
  ONNXKIT_ASSIGN(std::unique_ptr<runtime::Session> session, runtime::Session::create(borrowed, session_options));
  InputOptions inputs;
  inputs.random = true;
  inputs.unbound_dims = 2;
  ONNXKIT_ASSIGN(runtime::NamedValues feeds, prepare_inputs(*session, inputs));
  runtime::RunLimits limits;
  limits.timeout = std::chrono::seconds(10);
  limits.max_elements = uint64_t{1} << 28;
  auto ran = session->run(feeds, limits);
  if (ran.ok()) {
    const int64_t expected = is_number(batch) ? std::stoll(std::string(batch)) : 2;
    for (size_t i = 0; i < ran->size(); ++i) {
      const runtime::Datum& out = (*ran)[i];
      if (!out.is_tensor() || out.tensor().shape().empty() || out.tensor().shape()[0] == expected) continue;
      return make_error("output '{}' comes out as {} when the batch is {}: something inside keeps the old batch",
                        session->outputs()[i].name, out.describe(), expected);
    }
    return {};
  }
  const std::string& message = ran.error().message();
  if (message.find("time limit") != std::string::npos || message.find("budget of") != std::string::npos) {
    *not_tried = fmt::format("the dry run at the new batch stopped at its budget (10 s, 2^28 elements): {}", message);
    return {};
  }
  return ran.error();
}

Result<size_t> remove_op(ir::Model& model, std::string_view op_type, std::vector<std::string>* skipped) {
  ONNXKIT_ASSIGN(std::vector<ir::Node*> nodes, require_nodes_by_op(model.graph(), op_type));
  size_t removed = 0;
  // Sub-graphs before the graphs holding them: inlining an If never frees a node still to visit.
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    ir::Node& node = **it;
    if (node.op_type() == "If" && !constant_if_condition(node)) {
      if (skipped != nullptr)
        skipped->push_back(
            fmt::format("{} kept: its condition is not a constant (--if-branch {}=then|else picks a "
                        "branch)",
                        node.describe(), node.name()));
      continue;
    }
    Status gone = remove_node(node);
    if (!gone.ok()) {
      if (skipped != nullptr) skipped->push_back(fmt::format("kept: {}", gone.error().message()));
      continue;
    }
    ++removed;
  }
  return removed;
}

size_t freeze_initializers(ir::Model& model) {
  ir::Graph& graph = model.graph();
  size_t frozen = 0;
  for (size_t i = graph.inputs().size(); i-- > 0;) {
    if (!graph.inputs()[i]->is_constant()) continue;
    graph.remove_input(i);
    ++frozen;
  }
  // IR version 4 is the first that lets an initializer stand without an input.
  if (frozen > 0 && model.header().ir_version() < 4) model.mutable_header().set_ir_version(4);
  return frozen;
}

std::string describe_initializer_inputs(const ir::Model& model) {
  std::vector<std::string> names;
  for (const ir::Value* v : model.graph().inputs())
    if (v->is_constant()) names.push_back(v->name());
  if (names.empty()) return "";
  return fmt::format("{}: {}", names.size(), quote_first(names, 3));
}

size_t add_all_outputs(ir::Model& model, std::vector<std::string>* untyped) {
  ir::Graph& graph = model.graph();
  analysis::apply_inferred_types(model);
  size_t added = 0;
  for (ir::Node& node : graph.nodes())
    for (ir::Value* v : node.outputs()) {
      if (v == nullptr || v->is_graph_output()) continue;
      if (v->elem_type() == 0) {
        if (untyped != nullptr) untyped->push_back(v->name());
        continue;
      }
      graph.add_output(v);
      ++added;
    }
  return added;
}

Status extract_subgraph(ir::Model& model, const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
  ir::Graph& graph = model.graph();
  if (outputs.empty()) return make_error("name at least one output to extract");
  std::vector<std::string> all;
  for (ir::Value* v : graph.values()) all.push_back(v->name());
  auto find = [&](const std::string& name, std::string_view role) -> Result<ir::Value*> {
    ir::Value* v = graph.find_value(name);
    if (v == nullptr) return make_error("{} '{}' is not a tensor of the main graph{}", role, name, did_you_mean(name, all));
    return v;
  };
  for (const std::string& name : inputs)
    if (std::find(outputs.begin(), outputs.end(), name) != outputs.end())
      return make_error("'{}' is listed both as an input and as an output", name);
  analysis::apply_inferred_types(model);

  std::vector<ir::Value*> new_inputs;
  for (const std::string& name : inputs) {
    ONNXKIT_ASSIGN(ir::Value * v, find(name, "input"));
    if (v->is_graph_input()) {
      new_inputs.push_back(v);
      continue;
    }
    if (v->is_constant()) return make_error("input '{}' is an initializer: it stays a constant, leave it out", name);
    if (v->elem_type() == 0) return make_error("shape inference does not know the type of '{}': it cannot become an input", name);
    // The cut: a new graph input takes over the tensor's name and its consumers.
    ir::Value* cut = graph.add_value(name + "_cut");
    *cut->mutable_info().mutable_type() = v->type();
    graph.replace_all_uses(v, cut);
    ONNXKIT_TRY(graph.rename_value(v, graph.unique_name(name + "_before_cut")));
    ONNXKIT_TRY(graph.rename_value(cut, name));
    graph.declare_input(cut);
    new_inputs.push_back(cut);
  }
  std::vector<ir::Value*> new_outputs;
  for (const std::string& name : outputs) {
    ONNXKIT_ASSIGN(ir::Value * v, find(name, "output"));
    if (v->elem_type() == 0)
      return make_error("shape inference does not know the type of '{}': it cannot become an output", name);
    new_outputs.push_back(v);
  }
  while (!graph.outputs().empty()) graph.remove_output(graph.outputs().size() - 1);
  for (ir::Value* v : new_outputs) {
    if (!v->has_type() && v->initializer() != nullptr) {
      auto* tt = v->mutable_info().mutable_type()->mutable_tensor_type();
      tt->set_elem_type(v->initializer()->data_type());
      for (int64_t d : v->initializer()->dims()) tt->mutable_shape()->add_dim()->set_dim_value(d);
    }
    graph.add_output(v);
  }
  for (size_t i = graph.inputs().size(); i-- > 0;) {
    ir::Value* v = graph.inputs()[i];
    if (std::find(new_inputs.begin(), new_inputs.end(), v) == new_inputs.end() && !v->is_constant()) graph.remove_input(i);
  }
  // Keep the order the user gave.
  std::vector<ir::Value*> constants;
  for (ir::Value* v : graph.inputs()) constants.push_back(v);
  while (!graph.inputs().empty()) graph.remove_input(graph.inputs().size() - 1);
  for (ir::Value* v : new_inputs) graph.declare_input(v);
  for (ir::Value* v : constants) graph.declare_input(v);
  graph.cleanup(false);
  // Whatever the outputs still need must come from the inputs or constants.
  for (ir::Node& node : graph.nodes())
    for (ir::Value* v : node.inputs())
      if (v != nullptr && v->owner() == &graph && v->producer() == nullptr && !v->is_graph_input() && !v->is_constant())
        return make_error("the outputs need '{}' (read by {}), which is not among the inputs given", v->name(), node.describe());
  for (ir::Value* v : graph.outputs())
    if (v->producer() == nullptr && !v->is_graph_input() && !v->is_constant())
      return make_error("output '{}' is computed before the inputs given: it would have nothing to compute it", v->name());
  return {};
}

size_t replace_prelu(ir::Model& model) {
  size_t replaced = 0;
  for (ir::Node* node : find_nodes_by_op(model.graph(), "PRelu")) {
    if (!node->in_onnx_domain() || node->input(0) == nullptr || node->input(1) == nullptr || node->output(0) == nullptr) continue;
    ir::Graph& graph = *node->graph();
    ir::Value* x = node->input(0);
    ir::Value* slope = node->input(1);
    std::string base = node->name().empty() ? std::string("PRelu") : node->name();
    auto add = [&](std::string_view op, std::vector<ir::Value*> inputs, std::string_view part) {
      ir::Node* n = graph.insert_node(node, op, inputs, {fmt::format("{}/{}_output_0", base, part)});
      n->set_name(graph.unique_node_name(fmt::format("{}/{}", base, part)));
      return n->output(0);
    };
    // y = Relu(x) - Relu(-x) * s: for x >= 0 it is x - 0, for x < 0 it is 0 - (-x * s) = x * s.
    ir::Value* positive = add("Relu", {x}, "Relu");
    ir::Value* negated = add("Neg", {x}, "Neg");
    ir::Value* negative = add("Relu", {negated}, "Relu_neg");
    ir::Value* scaled = add("Mul", {negative, slope}, "Mul");
    ir::Value* y = add("Sub", {positive, scaled}, "Sub");
    passes::replace_value(graph, node->output(0), y);  // a fresh value: always takes over
    graph.remove_node(node);
    ++replaced;
  }
  return replaced;
}

Result<size_t> fix_prelu_slope(ir::Model& model) {
  analysis::apply_inferred_types(model);
  size_t fixed = 0;
  for (ir::Node* node : find_nodes_by_op(model.graph(), "PRelu")) {
    ir::Value* slope = node->input(1);
    if (slope == nullptr || slope->initializer() == nullptr || slope->initializer()->dims_size() != 1) continue;
    int64_t channels = slope->initializer()->dims(0);
    if (channels <= 1) continue;  // a scalar slope broadcasts as it is
    size_t rank = 4;
    if (auto shape = node->input(0) != nullptr ? node->input(0)->static_shape() : std::nullopt) rank = shape->size();
    if (rank < 3) continue;  // [N, C]: a [C] slope is already per channel
    ir::Graph& graph = *slope->owner();
    bool shared = std::any_of(slope->uses().begin(), slope->uses().end(),
                              [](const ir::Use& u) { return u.node->op_type() != "PRelu" || u.index != 1; });
    ir::Value* target = slope;
    if (shared) {  // other nodes read it as [C]: this PRelu gets its own copy
      target = graph.add_initializer(slope->name() + "_per_channel", *slope->initializer());
      node->set_input(1, target);
    }
    onnx::TensorProto* tensor = target->mutable_initializer();
    tensor->clear_dims();
    tensor->add_dims(channels);
    for (size_t i = 2; i < rank; ++i) tensor->add_dims(1);
    // The declared type (MXNet lists its weights as graph inputs too) changes with it.
    if (target->has_type() && target->type().has_tensor_type()) {
      auto* shape = target->mutable_info().mutable_type()->mutable_tensor_type()->mutable_shape();
      shape->clear_dim();
      for (int64_t d : tensor->dims()) shape->add_dim()->set_dim_value(d);
    }
    ++fixed;
  }
  return fixed;
}

namespace {

// ONNX's version converter reports a step it cannot make as an assertion:
// "<file>:<line>: <function>: Assertion `false` failed: No Adapter From
// Version $14 for Relu". Said here as one line naming the op and the step.
std::string converter_failure(const std::string& what, int64_t from, int64_t to) {
  std::string text = what.substr(0, what.find('\n'));
  if (const size_t failed = text.find("failed: "); failed != std::string::npos) text = text.substr(failed + 8);
  const auto after = [&](std::string_view marker) -> std::optional<std::string> {
    const size_t at = text.find(marker);
    if (at == std::string::npos) return std::nullopt;
    return text.substr(at + marker.size());
  };
  if (auto rest = after("No Adapter From Version $")) {
    const size_t space = rest->find(' ');
    const std::string version = rest->substr(0, space);
    const std::string op = space == std::string::npos ? "" : std::string(literals::trim(rest->substr(space + 5)));  // " for "
    return to < from ? fmt::format("{} cannot be converted below opset {} here", op, version)
                     : fmt::format("{} cannot be converted above opset {} here", op, version);
  }
  if (auto rest = after("No Previous Version of ")) {
    const std::string op = rest->substr(0, rest->find(' '));
    const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(op, static_cast<int>(from), "");
    if (schema != nullptr) return fmt::format("{} does not exist before opset {}", op, schema->SinceVersion());
    return fmt::format("{} has no earlier version", op);
  }
  // An adapter's own refusal, e.g. upsample_9_8.h: "Unsuppported conversion
  // due to unavailable input: scale".
  std::string step;
  if (const size_t h = what.find(".h:"); h != std::string::npos) {
    const size_t slash = what.rfind('/', h);
    step = what.substr(slash == std::string::npos ? 0 : slash + 1, h - (slash == std::string::npos ? 0 : slash + 1));
  }
  return step.empty() ? text : fmt::format("{} (the converter's step '{}')", text, step);
}

// The converter's exception text as the error.
Result<onnx::ModelProto> try_convert(const onnx::ModelProto& proto, int64_t version) {
  try {
    return onnx::version_conversion::ConvertVersion(proto, static_cast<int>(version));
  } catch (const std::exception& e) {
    return make_error("{}", e.what());
  }
}

}  // namespace

namespace {

// Above the converter's newest opset: the converter up to it, then onnxkit's own steps.
Result<std::unique_ptr<ir::Model>> convert_beyond_converter(const ir::Model& model, int64_t version) {
  const int64_t from = model.opset("");
  if (from > version)
    return make_error(
        "converting down from opset {} to {} is not possible here: ONNX's converter in this build knows "
        "opsets up to {}",
        from, version, analysis::libonnx_max_opset());
  std::unique_ptr<ir::Model> converted;
  if (from < analysis::libonnx_max_opset()) {
    ONNXKIT_ASSIGN(converted, convert_opset(model, analysis::libonnx_max_opset()));
  } else {
    ONNXKIT_ASSIGN(converted, ir::import_model(ir::export_model(model), model.shared_external_data()));
    converted->set_source(model.path(), model.file_size());
  }
  ONNXKIT_TRY(upgrade_opset_beyond_converter(*converted, version));
  return converted;
}

}  // namespace

Result<std::unique_ptr<ir::Model>> convert_opset(const ir::Model& model, int64_t version) {
  int64_t from = model.opset("");
  const int64_t newest = analysis::libonnx_max_opset();
  if (version < 1 || version > kNewestUpgradableOpset)
    return make_error(
        "opset {} is outside what this build converts (1 to {}: ONNX's converter up to {}, onnxkit's own "
        "steps above)",
        version, kNewestUpgradableOpset, newest);
  if (from == 0) return make_error("the model does not import the default ONNX domain");
  if (version > newest) return convert_beyond_converter(model, version);
  if (from > newest)
    return make_error(
        "converting down from opset {} is not possible here: ONNX's converter in this build knows opsets up "
        "to {}",
        from, newest);
  auto converted = try_convert(ir::export_model(model), version);
  if (!converted.ok()) {
    // Reported if the second try fails too: it speaks of the model as given.
    const std::string failure = converted.error().message();
    // Adapters read shapes and constant inputs (Upsample's scales, Reshape's
    // shape): old exports compute them or leave shapes out. Folded and typed,
    // the model may go through.
    ONNXKIT_ASSIGN(std::unique_ptr<ir::Model> prepared, ir::import_model(ir::export_model(model), model.shared_external_data()));
    passes::PassOptions options;
    passes::PassContext context(*prepared, options);
    fold_everywhere(*prepared, context);
    prepared->graph().cleanup(false);
    analysis::apply_inferred_types(*prepared);
    converted = try_convert(ir::export_model(*prepared), version);
    if (!converted.ok())
      return make_error("ONNX's version converter cannot take the model from opset {} to {}: {}", from, version,
                        converter_failure(failure, from, version));
  }
  ONNXKIT_ASSIGN(auto result, ir::import_model(std::move(*converted), model.shared_external_data()));
  result->set_source(model.path(), model.file_size());
  return result;
}

namespace {

// Dims of `declared` that inference now contradicts take the inferred value;
// the rest (names such as "batch" included) stay as declared.
onnx::TypeProto merge_declared(const onnx::TypeProto& declared, const onnx::TypeProto& inferred) {
  if (!declared.has_tensor_type() || !inferred.has_tensor_type()) return declared;
  onnx::TypeProto merged = declared;
  auto* tt = merged.mutable_tensor_type();
  const auto& it = inferred.tensor_type();
  if (it.elem_type() != 0) tt->set_elem_type(it.elem_type());
  if (!it.has_shape()) return merged;
  if (!tt->has_shape() || tt->shape().dim_size() != it.shape().dim_size()) {
    *tt->mutable_shape() = it.shape();
    return merged;
  }
  for (int i = 0; i < it.shape().dim_size(); ++i) {
    const auto& d = it.shape().dim(i);
    auto* m = tt->mutable_shape()->mutable_dim(i);
    if (d.has_dim_value() && !(m->has_dim_value() && m->dim_value() == d.dim_value())) *m = d;
  }
  return merged;
}

Status check_connected(ir::Graph& root) {
  Status status;
  root.for_each_graph([&](ir::Graph& g) {
    if (!status.ok()) return;
    auto defined = [](const ir::Value* v) { return v->producer() != nullptr || v->is_constant() || v->is_graph_input(); };
    for (ir::Node& node : g.nodes())
      for (ir::Value* v : node.inputs())
        if (v != nullptr && !defined(v) && status.ok())
          status = make_error(
              "{} reads '{}', which nothing defines any more (no node makes it, and it is neither an "
              "input nor an initializer)",
              node.describe(), v->name());
    for (ir::Value* v : g.outputs())
      if (!defined(v) && status.ok()) status = make_error("graph output '{}' is no longer computed by anything", v->name());
  });
  return status;
}

}  // namespace

Status validate_edited_model(ir::Model& model, std::vector<std::string>* shapeless_outputs) {
  ir::Graph& graph = model.graph();
  ONNXKIT_TRY(check_connected(graph));
  ONNXKIT_TRY(graph.toposort());

  // Types again from scratch: declared output shapes and value_info may be
  // stale after the edit, and strict inference would reject them.
  std::unordered_map<ir::Value*, onnx::TypeProto> declared;
  for (ir::Value* v : graph.outputs())
    if (v->has_type() && !v->is_graph_input() && !v->is_constant()) {
      declared[v] = v->type();
      if (v->type().has_tensor_type()) v->mutable_info().mutable_type()->mutable_tensor_type()->clear_shape();
    }
  for (ir::Value* v : graph.value_info())
    if (v->has_type() && v->type().has_tensor_type() && !v->is_graph_output())
      v->mutable_info().mutable_type()->mutable_tensor_type()->clear_shape();
  analysis::apply_inferred_types(model);
  for (auto& [v, type] : declared) *v->mutable_info().mutable_type() = merge_declared(type, v->type());
  std::vector<ir::Value*> value_info = graph.value_info();
  graph.clear_value_info();
  for (ir::Value* v : value_info)
    if (v->has_type()) graph.add_value_info(v);

  onnx::ModelProto proto = ir::export_model(model);
  analysis::CheckOptions options;
  options.full = true;
  analysis::CheckReport report =
      analysis::check_model(proto, model.external_data() != nullptr ? model.external_data()->base_dir() : ".", options);
  if (shapeless_outputs != nullptr) {
    // ONNX's checker wants a shape on every graph output, while the IR and
    // runtimes (ONNX Runtime's, ours) take an element type alone: tolerated
    // for outputs whose shape inference cannot tell, and nothing else.
    std::unordered_set<std::string> without_shape;
    for (const ir::Value* v : graph.outputs())
      if (v->has_type() && v->type().has_tensor_type() && !v->type().tensor_type().has_shape())
        without_shape.insert(fmt::format("graph output '{}'", v->name()));
    std::erase_if(report.problems, [&](const analysis::CheckProblem& p) {
      if (!without_shape.contains(p.location) || p.message.find("Field 'shape' of 'type' is required") == std::string::npos)
        return false;
      shapeless_outputs->push_back(p.location.substr(14, p.location.size() - 15));
      return true;
    });
  }
  if (!report.valid()) {
    const analysis::CheckProblem& p = report.problems[0];
    std::string more = report.problems.size() > 1 ? fmt::format(" (and {} more problems)", report.problems.size() - 1) : "";
    std::string message = p.message.substr(0, p.message.find('\n'));
    return make_error("the edited model fails the ONNX checker: {}: {}{}", p.location, message, more);
  }
  return {};
}

}  // namespace onnxkit::tools
