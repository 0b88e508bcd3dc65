// eliminate-common-subexpressions: two nodes with the same op, attributes and
// inputs compute the same outputs; the later one goes and its readers read
// the earlier one's outputs.
//
// Before:  a = Relu(x)   b = Relu(x)   y = Add(a, b)
// After:   a = Relu(x)                 y = Add(a, a)
//
// Not merged: nodes with sub-graphs (If/Loop/Scan bodies are compared by
// nothing cheaper than the whole graph), ops whose result is random or
// depends on more than their inputs (Random*, Multinomial, Dropout in
// training, Bernoulli), and ops of unknown domains (they may have state).
// Declined when an output of the later node is a graph output that cannot
// take the earlier node's value (see replace_value).

#include <fmt/format.h>

#include <string>
#include <unordered_map>

#include "passes/eliminate/eliminate_common.h"

namespace onnxkit::passes::eliminate {
namespace {

bool is_deterministic(const ir::Node& node) {
  return !may_be_random(node) && (node.in_onnx_domain() || node.domain() == "ai.onnx.ml");
}

// What makes two nodes compute the same thing: op, domain, inputs (by
// identity) and attributes (by their bytes: the attribute protos here
// hold no sub-graphs and no maps, so equal attributes serialize equally).
std::string signature(const ir::Node& node) {
  std::string key = node.domain() + '\n' + node.op_type() + '\n';
  for (const ir::Value* input : node.inputs()) key += fmt::format("{}|", static_cast<const void*>(input));
  key += fmt::format("\n{}\n", node.outputs().size());
  for (const ir::Attribute& attribute : node.attributes()) {
    std::string bytes;
    attribute.proto.SerializeToString(&bytes);
    key += fmt::format("{}:{}", bytes.size(), bytes);
  }
  return key;
}

bool can_take_over(const ir::Graph& graph, const ir::Node& later, const ir::Node& earlier) {
  for (size_t i = 0; i < later.outputs().size(); ++i) {
    const ir::Value* from = later.output(i);
    const ir::Value* to = earlier.output(i);
    if (from == nullptr) continue;
    if (to == nullptr) return false;  // the earlier node omitted an output the later one computes
    if (!can_replace_value(graph, from, to)) return false;
  }
  return true;
}

class EliminateCommonSubexpressions final : public Pass {
 public:
  std::string_view name() const override { return "eliminate-common-subexpressions"; }
  std::string_view summary() const override { return "merge nodes that compute the same thing from the same inputs"; }

  size_t run(ir::Graph& graph, PassContext& context) const override {
    std::unordered_map<std::string, ir::Node*> first_with;
    std::vector<ir::Node*> nodes;
    for (ir::Node& node : graph.nodes()) nodes.push_back(&node);
    size_t changes = 0;
    // Nodes are in topological order: when a node's inputs were rewired to
    // earlier twins, its own signature already shows that.
    for (ir::Node* node : nodes) {
      if (!node->subgraphs().empty() || !is_deterministic(*node) || context.excluded(*node)) continue;
      auto [it, inserted] = first_with.emplace(signature(*node), node);
      if (inserted) continue;
      ir::Node* earlier = it->second;
      if (!can_take_over(graph, *node, *earlier)) continue;
      for (size_t i = 0; i < node->outputs().size(); ++i)
        if (node->output(i) != nullptr) replace_value(graph, node->output(i), earlier->output(i));
      context.note(fmt::format("{} computes what {} does", node->describe(), earlier->describe()));
      graph.remove_node(node);
      ++changes;
    }
    return changes;
  }
};

}  // namespace

std::unique_ptr<Pass> make_eliminate_common_subexpressions() { return std::make_unique<EliminateCommonSubexpressions>(); }

}  // namespace onnxkit::passes::eliminate
