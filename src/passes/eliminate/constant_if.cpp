// inline-constant-if: an If whose condition is a constant runs one branch
// only; that branch's nodes move into the graph in the If's place.
//
// Before:  y = If(c = true) { then: t = Relu(x) => t;  else: ... }   z = Neg(y)
// After:   t = Relu(x)   z = Neg(t)
//
// The condition must be an initializer (not a graph input's default) of one
// element. Declined when an output of the If is a graph output that the
// branch's value cannot replace: the value is an outer one that is a graph
// input or another output, or the branch returns one value twice.

#include <fmt/format.h>

#include <set>

#include "passes/eliminate/eliminate_common.h"

namespace onnxkit::passes::eliminate {
namespace {

std::optional<bool> constant_condition(const ir::Node& node, const PassContext& context) {
  auto cond = context.constant(node.input(0));
  if (!cond || cond->numel() != 1 || cond->dtype() != runtime::DataType::boolean) return std::nullopt;
  return cond->data<bool>()[0];
}

bool can_inline(const ir::Graph& graph, const ir::Node& node, const ir::Graph& branch) {
  if (branch.outputs().size() != node.outputs().size() || !branch.inputs().empty()) return false;
  std::set<const ir::Value*> returned;
  for (size_t i = 0; i < branch.outputs().size(); ++i) {
    const ir::Value* from = node.output(i);
    const ir::Value* to = branch.outputs()[i];
    const bool repeated = !returned.insert(to).second;
    if (from == nullptr || !from->is_graph_output()) continue;
    // The branch's own values become this graph's, neither inputs nor outputs.
    if (repeated || (to->owner() != &branch && !can_replace_value(graph, from, to))) return false;
  }
  return true;
}

class InlineConstantIf final : public Pass {
 public:
  std::string_view name() const override { return "inline-constant-if"; }
  std::string_view summary() const override { return "replace an If with a constant condition by the branch it takes"; }

  size_t run(ir::Graph& graph, PassContext& context) const override {
    size_t changes = 0;
    for (ir::Node* node : nodes_of(graph, {"If"})) {
      if (context.excluded(*node)) continue;
      auto taken = constant_condition(*node, context);
      if (!taken) continue;
      ir::Attribute* attribute = node->attribute(*taken ? "then_branch" : "else_branch");
      if (attribute == nullptr || attribute->graph == nullptr) continue;
      ir::Graph& branch = *attribute->graph;
      if (!can_inline(graph, *node, branch)) continue;
      if (!graph.absorb_subgraph(branch, node).ok()) continue;
      // The branch stops listing its results, so that they can take over the If's outputs.
      const std::vector<ir::Value*> results = branch.outputs();
      while (!branch.outputs().empty()) branch.remove_output(branch.outputs().size() - 1);
      for (size_t i = 0; i < node->outputs().size(); ++i)
        if (node->output(i) != nullptr) replace_value(graph, node->output(i), results[i]);
      context.note(fmt::format("{} took its {} branch, now inlined", node->describe(), *taken ? "then" : "else"));
      graph.remove_node(node);
      ++changes;
    }
    return changes;
  }
};

}  // namespace

std::unique_ptr<Pass> make_inline_constant_if() { return std::make_unique<InlineConstantIf>(); }

}  // namespace onnxkit::passes::eliminate
