#include "analysis/checker.h"

#include <fmt/format.h>
#include <onnx/checker.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

#include "analysis/arity.h"
#include "analysis/library_inference.h"
#include "analysis/opset_history.h"
#include "ir/graph.h"
#include "ir/inline_functions.h"

namespace onnxkit::analysis {
namespace {

namespace checker = onnx::checker;

// The checker's message without the "==> Context" it appends.
std::string short_message(const checker::ValidationError& e) {
  std::string what = e.std::runtime_error::what();
  while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
  return what;
}

std::string describe_node(const onnx::NodeProto& node, int64_t index) {
  if (node.name().empty()) return fmt::format("node #{} ({})", index, node.op_type());
  return fmt::format("node #{} '{}' ({})", index, node.name(), node.op_type());
}

class Checker {
 public:
  Checker(const onnx::ModelProto& model, const std::filesystem::path& dir, bool check_tensors, CheckReport& report)
      : model_(model), report_(report), check_tensors_(check_tensors) {
    const int64_t known_ir = onnx::Version::IR_VERSION;
    ctx_.set_ir_version(static_cast<int>(std::clamp<int64_t>(model.ir_version(), 0, known_ir)));
    std::unordered_map<std::string, int> opsets;
    for (const auto& op : model.opset_import()) opsets[op.domain()] = static_cast<int>(op.version());
    ctx_.set_opset_imports(opsets);
    ctx_.set_model_dir(dir.string());
    auto it = opsets.find("");
    default_opset_ = it != opsets.end() ? it->second : 0;
  }

  void run() {
    check_header();
    checker::LexicalScopeContext root;
    check_graph(model_.graph(), root);
    check_function_calls();
    try {
      checker::check_model_local_functions(model_, ctx_, root);
    } catch (const checker::ValidationError& e) {
      add("model-local functions", short_message(e));
    }
  }

 private:
  void add(std::string location, std::string message, const onnx::NodeProto* node = nullptr, int64_t index = -1) {
    CheckProblem p{std::move(location), std::move(message), index, "", ""};
    if (node != nullptr) {
      p.node_name = node->name();
      p.op_type = node->op_type();
    }
    report_.problems.push_back(std::move(p));
  }

  void check_header() {
    if (model_.ir_version() == 0) add("model", "ir_version is not set");
    if (model_.ir_version() < 0) add("model", fmt::format("ir_version {} is negative", model_.ir_version()));
    if (model_.ir_version() > onnx::Version::IR_VERSION)
      report_.notes.push_back(fmt::format("ir_version {} is newer than this checker knows ({}); checked as {}",
                                          model_.ir_version(), onnx::Version::IR_VERSION, onnx::Version::IR_VERSION));
    if (model_.ir_version() >= 3 && model_.opset_import_size() == 0) add("model", "opset_import is empty");
    std::set<std::string> domains;
    for (const auto& op : model_.opset_import())
      if (!domains.insert(op.domain()).second) add("model", fmt::format("opset_import lists domain '{}' twice", op.domain()));
    std::set<std::string> keys;
    for (const auto& prop : model_.metadata_props())
      if (!keys.insert(prop.key()).second) add("model", fmt::format("metadata_props has key '{}' twice", prop.key()));
    if (default_opset_ > libonnx_max_opset())
      report_.notes.push_back(fmt::format(
          "opset {} is newer than this checker's schemas ({}); operators changed since are checked for structure only",
          default_opset_, libonnx_max_opset()));
  }

  // libonnx's checker lets a declared dim be negative (-5 is no "unknown"),
  // or dims multiply past int64: no tensor can have such a shape.
  void check_dims(const std::string& where, const onnx::ValueInfoProto& vi) {
    if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
    const auto& dims = vi.type().tensor_type().shape().dim();
    int64_t product = 1;
    bool overflows = false;
    for (int i = 0; i < dims.size(); ++i) {
      if (!dims[i].has_dim_value()) continue;
      const int64_t d = dims[i].dim_value();
      if (d < 0) {
        add(where, fmt::format("dim {} is negative ({})", i, d));
        return;
      }
      if (d != 0 && __builtin_mul_overflow(product, d, &product)) overflows = true;
    }
    if (overflows) add(where, "the product of its dims overflows int64");
  }

  bool out_of_date(const onnx::NodeProto& node) const {
    return ir::canonical_domain(node.domain()).empty() && changed_since_libonnx(node.op_type(), default_opset_);
  }

  // The main graph, node by node: the checker's own check_graph stops at the
  // first problem.
  void check_graph(const onnx::GraphProto& graph, const checker::LexicalScopeContext& parent) {
    checker::LexicalScopeContext lex(parent);
    for (const auto& vi : graph.input()) {
      try_check(fmt::format("graph input '{}'", vi.name()), [&] { checker::check_value_info(vi, ctx_); });
      check_dims(fmt::format("graph input '{}'", vi.name()), vi);
      if (lex.this_graph_has(vi.name())) add(fmt::format("graph input '{}'", vi.name()), "is listed twice");
      lex.add(vi.name());
    }
    std::set<std::string> initializers;
    for (const auto& vi : graph.output()) {
      try_check(fmt::format("graph output '{}'", vi.name()), [&] { checker::check_value_info(vi, ctx_); });
      check_dims(fmt::format("graph output '{}'", vi.name()), vi);
    }
    for (const auto& t : graph.initializer()) {
      if (check_tensors_) try_check(fmt::format("initializer '{}'", t.name()), [&] { checker::check_tensor(t, ctx_); });
      if (ctx_.get_ir_version() <= 3 && !lex.this_graph_has(t.name()))
        add(fmt::format("initializer '{}'", t.name()), "is not a graph input, which IR version 3 requires");
      if (!initializers.insert(t.name()).second) add(fmt::format("initializer '{}'", t.name()), "is defined twice");
      lex.add(t.name());
    }
    for (const auto& s : graph.sparse_initializer()) {
      try_check(fmt::format("sparse initializer '{}'", s.values().name()), [&] { checker::check_sparse_tensor(s, ctx_); });
      lex.add(s.values().name());
    }
    for (int i = 0; i < graph.node_size(); ++i) {
      const auto& node = graph.node(i);
      std::string where = describe_node(node, i);
      for (const auto& in : node.input())
        if (!in.empty() && !lex.this_or_ancestor_graph_has(in))
          add(where, fmt::format("input '{}' is not a graph input, an initializer, or an output of an earlier node", in), &node,
              i);
      if (out_of_date(node)) {
        // The checker's schema is out of date, but its least counts still hold.
        std::vector<bool> inputs, outputs;
        for (const auto& in : node.input()) inputs.push_back(!in.empty());
        for (const auto& out : node.output()) outputs.push_back(!out.empty());
        std::string problem = arity_problem(node.domain(), node.op_type(), default_opset_, inputs, outputs);
        if (!problem.empty()) add(where, problem, &node, i);
        report_.notes.push_back(
            fmt::format("{}: {} changed after opset {}; checked against its schema for the "
                        "least input and output counts only",
                        where, node.op_type(), libonnx_max_opset()));
      } else {
        try {
          checker::check_node(node, ctx_, lex);
        } catch (const checker::ValidationError& e) {
          add(where, short_message(e), &node, i);
        }
      }
      for (const auto& out : node.output()) {
        if (out.empty()) continue;
        if (lex.this_graph_has(out))
          add(where, fmt::format("output '{}' is already defined (the graph must be in SSA form)", out), &node, i);
        lex.add(out);
      }
    }
    for (const auto& vi : graph.output())
      if (!lex.this_or_ancestor_graph_has(vi.name()))
        add(fmt::format("graph output '{}'", vi.name()), "is not produced by any node, input or initializer");
  }

  // ONNX forbids recursion among model-local functions, and its shape
  // inference, which expands every call into the function's body, recurses
  // without end on one (a stack overflow, not an error): a cycle of calls
  // is a problem here, so that inference never sees it.
  void check_function_calls() {
    std::map<std::string, int> index;  // "domain:name" -> function
    auto key = [](const std::string& domain, const std::string& name) { return domain + ":" + name; };
    for (int i = 0; i < model_.functions_size(); ++i)
      index.emplace(key(model_.functions(i).domain(), model_.functions(i).name()), i);
    if (index.empty()) return;
    std::vector<std::vector<int>> calls(static_cast<size_t>(model_.functions_size()));
    for (int i = 0; i < model_.functions_size(); ++i)
      for_each_node(model_.functions(i).node(), [&](const onnx::NodeProto& node) {
        auto callee = index.find(key(node.domain(), node.op_type()));
        if (callee != index.end()) calls[static_cast<size_t>(i)].push_back(callee->second);
      });
    // Depth-first, with an explicit stack: the chain of calls may be long.
    enum class Mark { unseen, open, done };
    std::vector<Mark> mark(calls.size(), Mark::unseen);
    for (size_t root = 0; root < calls.size(); ++root) {
      if (mark[root] != Mark::unseen) continue;
      std::vector<std::pair<size_t, size_t>> path = {{root, 0}};  // (function, next call to follow)
      mark[root] = Mark::open;
      while (!path.empty()) {
        auto& [f, next] = path.back();
        if (next == calls[f].size()) {
          mark[f] = Mark::done;
          path.pop_back();
          continue;
        }
        const auto callee = static_cast<size_t>(calls[f][next++]);
        if (mark[callee] == Mark::open) {
          std::string cycle;
          bool in_cycle = false;
          for (const auto& [g, _] : path) {
            in_cycle = in_cycle || g == callee;
            if (in_cycle) cycle += function_name(g) + " -> ";
          }
          add(fmt::format("model-local function {}", function_name(callee)),
              fmt::format("calls itself ({}{}); functions may not be recursive", cycle, function_name(callee)));
          return;
        }
        if (mark[callee] == Mark::unseen) {
          mark[callee] = Mark::open;
          path.emplace_back(callee, 0);
        }
      }
    }
  }

  std::string function_name(size_t i) const {
    const auto& f = model_.functions(static_cast<int>(i));
    return f.domain().empty() ? fmt::format("'{}'", f.name()) : fmt::format("'{}:{}'", f.domain(), f.name());
  }

  // Every node of `nodes` and of the sub-graphs in their attributes
  // (protobuf's nesting limit bounds the depth).
  template <class Visit>
  static void for_each_node(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes, const Visit& visit) {
    for (const auto& node : nodes) {
      visit(node);
      for (const auto& attr : node.attribute()) {
        if (attr.has_g()) for_each_node(attr.g().node(), visit);
        for (const auto& g : attr.graphs()) for_each_node(g.node(), visit);
      }
    }
  }

  template <class F> void try_check(const std::string& where, F&& check) {
    try {
      check();
    } catch (const checker::ValidationError& e) {
      add(where, short_message(e));
    }
  }

  const onnx::ModelProto& model_;
  CheckReport& report_;
  checker::CheckerContext ctx_;
  bool check_tensors_;
  int64_t default_opset_ = 0;
};

struct NodeError {
  std::string op, name, message;
};

// Strict inference reports node errors as lines of
// "(op_type:Conv, node name: conv1): [ShapeInferenceError] ...", or
// "(op_type:Conv): ..." for a node without a name. Parsed by hand: node
// names come from the model, and std::regex recursed once per character of
// a long one until the stack overflowed.
std::optional<NodeError> parse_node_error(std::string_view line) {
  constexpr std::string_view kOp = "(op_type:", kName = ", node name: ", kEnd = "): ";
  size_t op = line.find(kOp);
  if (op == std::string_view::npos) return std::nullopt;
  op += kOp.size();
  const size_t name = line.find(kName, op);
  const size_t unnamed_end = line.find(kEnd, op);
  if (name == std::string_view::npos || (unnamed_end != std::string_view::npos && unnamed_end < name)) {
    if (unnamed_end == std::string_view::npos) return std::nullopt;
    return NodeError{std::string(line.substr(op, unnamed_end - op)), "", std::string(line.substr(unnamed_end + kEnd.size()))};
  }
  const size_t end = line.find(kEnd, name + kName.size());
  if (end == std::string_view::npos) return std::nullopt;
  return NodeError{std::string(line.substr(op, name - op)),
                   std::string(line.substr(name + kName.size(), end - name - kName.size())),
                   std::string(line.substr(end + kEnd.size()))};
}

// Reports the node errors in `text` (strict inference's exception) as
// problems, each node described as in `graph` followed by `scope` (" in the
// else_branch of If node #1 'x'" for a branch; "" for the main graph).
void report_inference_errors(const std::string& text, const onnx::GraphProto& graph, const std::string& scope,
                             int64_t default_opset, CheckReport& report) {
  // The library names a node by name and op only; unnamed nodes are told
  // apart when their op is unique among them.
  std::multimap<std::pair<std::string, std::string>, int64_t> index_by_name_and_op;
  for (int i = 0; i < graph.node_size(); ++i)
    index_by_name_and_op.emplace(std::pair(graph.node(i).name(), graph.node(i).op_type()), i);
  size_t start = 0;
  bool any = false;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string_view line = std::string_view(text).substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end == std::string::npos ? text.size() : end + 1;
    auto parsed = parse_node_error(line);
    if (!parsed) continue;
    any = true;
    auto [op, name, message] = *parsed;
    auto range = index_by_name_and_op.equal_range(std::pair(name, op));
    int64_t index = std::distance(range.first, range.second) == 1 ? range.first->second : -1;
    std::string where =
        (index >= 0 ? describe_node(graph.node(static_cast<int>(index)), index) : fmt::format("node '{}' ({})", name, op)) +
        scope;
    if (changed_since_libonnx(op, default_opset)) {
      report.notes.push_back(where + ": shape inference skipped, the op changed after the checker's opset");
      continue;
    }
    report.problems.push_back({where, "shape inference: " + message, scope.empty() ? index : -1, name, op});
  }
  if (!any) report.problems.push_back({"shape inference" + scope, text.substr(0, text.find('\n')), -1, "", ""});
}

using Types = std::unordered_map<std::string, onnx::TypeProto>;

// The types a graph's nodes see: the graph's own values (inputs,
// initializers, and what inference wrote into value_info and outputs) over
// those of the graphs enclosing it.
Types visible_types(const onnx::GraphProto& graph, Types types) {
  for (const auto* list : {&graph.input(), &graph.value_info(), &graph.output()})
    for (const auto& vi : *list)
      if (vi.has_type()) types[vi.name()] = vi.type();
  for (const auto& t : graph.initializer()) {
    onnx::TypeProto type;
    type.mutable_tensor_type()->set_elem_type(t.data_type());
    for (int64_t d : t.dims()) type.mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
    types[t.name()] = type;
  }
  return types;
}

// The names the nodes of `graph` (and of the graphs inside them) define and read.
void collect_names(const onnx::GraphProto& graph, std::set<std::string>& defined, std::set<std::string>& read) {
  for (const auto& vi : graph.input()) defined.insert(vi.name());
  for (const auto& t : graph.initializer()) defined.insert(t.name());
  for (const auto& node : graph.node()) {
    for (const auto& in : node.input())
      if (!in.empty()) read.insert(in);
    for (const auto& out : node.output()) defined.insert(out);
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) collect_names(attr.g(), defined, read);
      for (const auto& g : attr.graphs()) collect_names(g, defined, read);
    }
  }
  for (const auto& vi : graph.output()) read.insert(vi.name());
}

struct InferenceSetup {
  std::unordered_map<std::string, int> opsets;
  onnx::shape_inference::ModelLocalFunctionsMap functions;
  int64_t default_opset = 0;
};

constexpr bool kCheckType = true;
constexpr int kStrict = 1;
constexpr bool kDataPropagation = true;

// ONNX 1.12 infers If branches leniently even when asked to be strict: an
// error in a branch is dropped, and ONNX Runtime later refuses the model.
// Each branch is inferred here once more, strictly, as a graph of its own
// whose inputs are the outer values it reads, typed as `graph` (already
// inferred) and the graphs enclosing it know them; then its own Ifs. A
// branch reading a value of unknown type is left: nothing to check it
// against. (Loop and Scan bodies take their input types from the loop.)
void check_if_branches(const onnx::GraphProto& graph, const Types& outer, const std::string& scope, const InferenceSetup& setup,
                       CheckReport& report) {
  const Types types = visible_types(graph, outer);
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    if (node.op_type() != "If" || !ir::canonical_domain(node.domain()).empty()) continue;
    for (const auto& attr : node.attribute()) {
      if (!attr.has_g()) continue;
      const std::string where = fmt::format(" in the {} of {}{}", attr.name(), describe_node(node, i), scope);
      std::set<std::string> defined, read;
      collect_names(attr.g(), defined, read);
      onnx::GraphProto branch = attr.g();
      bool typed = true;
      for (const std::string& name : read) {
        if (defined.count(name)) continue;
        auto type = types.find(name);
        if (type == types.end()) {
          typed = false;
          break;
        }
        auto* input = branch.add_input();
        input->set_name(name);
        *input->mutable_type() = type->second;
      }
      if (!typed) continue;
      try {
        onnx::ShapeInferenceOptions options(kCheckType, kStrict, kDataPropagation);
        infer_shapes(branch, setup.opsets, options, setup.functions);
      } catch (const std::exception& e) {
        report_inference_errors(e.what(), attr.g(), where, setup.default_opset, report);
        continue;
      }
      check_if_branches(branch, types, where, setup, report);
    }
  }
}

void check_inference(const onnx::ModelProto& model, int64_t default_opset, CheckReport& report) {
  onnx::ModelProto copy = model;
  try {
    onnx::ShapeInferenceOptions options(kCheckType, kStrict, kDataPropagation);
    infer_shapes(copy, options);
  } catch (const std::exception& e) {
    report_inference_errors(e.what(), model.graph(), "", default_opset, report);
    return;
  }
  InferenceSetup setup;
  for (const auto& op : model.opset_import()) setup.opsets[op.domain()] = static_cast<int>(op.version());
  for (const auto& f : model.functions()) setup.functions[f.domain() + ":" + f.name()] = &f;
  setup.default_opset = default_opset;
  check_if_branches(copy.graph(), {}, "", setup, report);
}

}  // namespace

CheckReport check_model(const onnx::ModelProto& model, const std::filesystem::path& model_dir, const CheckOptions& options) {
  CheckReport report;
  for (const ir::LocalFunction& f : ir::list_local_functions(model)) report.functions.push_back(ir::describe(f));
  Checker(model, model_dir, options.tensors, report).run();
  if (options.full && report.valid()) {
    int64_t opset = 0;
    for (const auto& op : model.opset_import())
      if (ir::canonical_domain(op.domain()).empty()) opset = op.version();
    check_inference(model, opset, report);
  }
  return report;
}

}  // namespace onnxkit::analysis
