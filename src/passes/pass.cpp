#include "passes/pass.h"

#include <algorithm>

#include "passes/fold.h"
#include "passes/registry.h"
#include "passes/resolve_shape_inputs.h"
#include "runtime/kernel.h"
#include "runtime/tensor_proto.h"

namespace onnxkit::passes {

bool PassContext::excluded(const ir::Node& node) const {
  return !node.name().empty() && options_.excluded_nodes.count(node.name()) > 0;
}

bool PassContext::has_constant(const ir::Value* value) {
  // An initializer that is also a graph input is only a default: callers may feed another value.
  return value != nullptr && value->initializer() != nullptr && !value->is_graph_input();
}

std::optional<runtime::Tensor> PassContext::constant(const ir::Value* value) const {
  if (!has_constant(value)) return std::nullopt;
  auto tensor = runtime::tensor_from_proto(*value->initializer(), model_.external_data());
  if (!tensor.ok()) return std::nullopt;
  return std::move(tensor).value();
}

std::optional<std::vector<int64_t>> PassContext::constant_ints(const ir::Value* value) const {
  auto data = constant(value);
  if (!data || data->rank() > 1) return std::nullopt;
  if (data->dtype() == runtime::DataType::int64) {
    auto v = data->values<int64_t>();
    return std::vector<int64_t>(v.begin(), v.end());
  }
  if (data->dtype() == runtime::DataType::int32) {
    auto v = data->values<int32_t>();
    return std::vector<int64_t>(v.begin(), v.end());
  }
  return std::nullopt;
}

ir::Value* PassContext::add_constant(ir::Graph& graph, std::string_view name, const runtime::Tensor& tensor) {
  return graph.add_initializer(name, runtime::tensor_to_proto(tensor));
}

namespace {

bool is_output_of(const ir::Graph& graph, const ir::Value* value) {
  return std::find(graph.outputs().begin(), graph.outputs().end(), value) != graph.outputs().end();
}

}  // namespace

bool can_replace_value(const ir::Graph& graph, const ir::Value* from, const ir::Value* to) {
  if (from == to || !is_output_of(graph, from)) return true;
  // `to` takes over the output's name, which must not break another
  // interface: inputs and outputs keep theirs, and outer values are not ours.
  return to->owner() == &graph && !to->is_graph_input() && !to->is_any_graph_output();
}

bool replace_value(ir::Graph& graph, ir::Value* from, ir::Value* to) {
  if (from == to) return true;
  if (!can_replace_value(graph, from, to)) return false;
  // Sub-graphs below may return `from` directly (a branch that is just an
  // outer value): they return `to` instead.
  for (ir::Node& node : graph.nodes())
    for (ir::Graph* sub : node.subgraphs())
      sub->for_each_graph([&](ir::Graph& g) {
        for (size_t i = 0; i < g.outputs().size(); ++i)
          if (g.outputs()[i] == from) g.set_output(i, to);
      });
  graph.replace_all_uses(from, to);
  if (!is_output_of(graph, from)) return true;
  for (size_t i = 0; i < graph.outputs().size(); ++i)
    if (graph.outputs()[i] == from) graph.set_output(i, to);
  std::string name = from->name();
  if (from->has_type()) *to->mutable_info().mutable_type() = from->type();  // the declared output type
  // Neither rename can fail: both names are made free first.
  (void)graph.rename_value(from, graph.unique_name(name + "_replaced"));
  (void)graph.rename_value(to, name);
  return true;
}

bool only_first_output_used(const ir::Node& node) {
  if (node.output(0) == nullptr) return false;
  for (size_t i = 1; i < node.outputs().size(); ++i)
    if (node.output(i) != nullptr && node.output(i)->is_used()) return false;
  return true;
}

bool bypass_node(ir::Node& node) {
  ir::Value* in = node.input(0);
  ir::Value* out = node.output(0);
  if (in == nullptr || !only_first_output_used(node)) return false;
  ir::Graph& graph = *node.graph();
  if (!replace_value(graph, out, in)) return false;
  graph.remove_node(&node);
  return true;
}

bool may_be_random(const ir::Node& node) {
  return runtime::KernelRegistry::builtin().traits(node.domain(), node.op_type()).random;
}

std::vector<ir::Node*> nodes_of(ir::Graph& graph, const std::vector<std::string_view>& op_types) {
  std::vector<ir::Node*> found;
  for (ir::Node& node : graph.nodes())
    for (std::string_view op : op_types)
      if (node.is_onnx_op(op)) found.push_back(&node);
  return found;
}

namespace {

class NodePass final : public Pass {
 public:
  NodePass(std::string_view name, std::string_view summary, std::initializer_list<std::string_view> op_types, NodeRewrite rewrite)
      : name_(name), summary_(summary), op_types_(op_types), rewrite_(std::move(rewrite)) {}

  std::string_view name() const override { return name_; }
  std::string_view summary() const override { return summary_; }

  size_t run(ir::Graph& graph, PassContext& context) const override {
    size_t changes = 0;
    for (ir::Node* node : nodes_of(graph, op_types_))
      if (!context.excluded(*node)) changes += rewrite_(*node, context);
    return changes;
  }

 private:
  std::string_view name_;
  std::string_view summary_;
  std::vector<std::string_view> op_types_;
  NodeRewrite rewrite_;
};

}  // namespace

std::unique_ptr<Pass> make_node_pass(std::string_view name, std::string_view summary,
                                     std::initializer_list<std::string_view> op_types, NodeRewrite rewrite) {
  return std::make_unique<NodePass>(name, summary, op_types, std::move(rewrite));
}

void add_each(std::vector<std::unique_ptr<Pass>>& passes, std::initializer_list<PassFactory> factories) {
  for (PassFactory make : factories) passes.push_back(make());
}

const std::vector<std::unique_ptr<Pass>>& all_passes() {
  static const std::vector<std::unique_ptr<Pass>> passes = [] {
    std::vector<std::unique_ptr<Pass>> list;
    list.push_back(make_resolve_shape_inputs());
    add_elimination_passes(list);
    add_fusion_passes(list);
    list.push_back(make_fold_constants());
    return list;
  }();
  return passes;
}

const Pass* find_pass(std::string_view name) {
  for (const auto& pass : all_passes())
    if (pass->name() == name) return pass.get();
  return nullptr;
}

size_t run_on_all_graphs(const Pass& pass, ir::Graph& graph, PassContext& context) {
  size_t changes = pass.run(graph, context);
  for (ir::Node& node : graph.nodes())
    for (ir::Graph* sub : node.subgraphs()) changes += run_on_all_graphs(pass, *sub, context);
  return changes;
}

}  // namespace onnxkit::passes
