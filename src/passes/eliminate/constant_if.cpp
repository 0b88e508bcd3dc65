// inline-constant-if: an If whose condition is a constant runs one branch
// only; that branch's nodes move into the graph in the If's place.
//
// Before:  y = If(c = true) { then: t = Relu(x) => t;  else: ... }   z = Neg(y)
// After:   t = Relu(x)   z = Neg(t)
//
// When an output of the If is a graph output and the branch returns a value
// that cannot take its name (an outer graph input, or a value returned
// twice), an Identity carries it: y = Identity(x).

#include <fmt/format.h>

#include "passes/eliminate/eliminate_common.h"
#include "runtime/tensor_proto.h"

namespace onnxkit::passes::eliminate {

std::optional<bool> constant_if_condition(const ir::Node& node, const PassContext& context) {
  if (!node.is_onnx_op("If") || node.input(0) == nullptr) return std::nullopt;
  const onnx::TensorProto* proto = node.input(0)->constant_tensor();
  if (proto == nullptr) return std::nullopt;
  auto data = runtime::tensor_from_proto(*proto, context.model().external_data());
  if (!data.ok() || data->numel() != 1 || data->dtype() != runtime::DataType::boolean) return std::nullopt;
  return data->data<bool>()[0];
}

Status inline_if_branch(ir::Node& node, bool taken) {
  const char* branch_name = taken ? "then_branch" : "else_branch";
  ir::Attribute* attribute = node.attribute(branch_name);
  if (attribute == nullptr || attribute->graph == nullptr) return make_error("{} has no {}", node.describe(), branch_name);
  ir::Graph& branch = *attribute->graph;
  if (branch.outputs().size() != node.outputs().size())
    return make_error("{}: its {} returns {} values for {} outputs", node.describe(), branch_name, branch.outputs().size(),
                      node.outputs().size());
  ir::Graph& graph = *node.graph();
  ONNXKIT_TRY(graph.absorb_subgraph(branch, &node));
  // The branch stops listing its results, so that they can take over the If's outputs.
  const std::vector<ir::Value*> results = branch.outputs();
  while (!branch.outputs().empty()) branch.remove_output(branch.outputs().size() - 1);
  for (size_t i = 0; i < node.outputs().size(); ++i) {
    ir::Value* from = node.output(i);
    if (from == nullptr || replace_value(graph, from, results[i])) continue;
    ir::Node* identity = graph.insert_node(&node, "Identity", {results[i]}, {from->name() + "_inlined"});
    identity->set_name(graph.unique_node_name(from->name() + "_inlined"));
    replace_value(graph, from, identity->output(0));  // a fresh value: cannot decline
  }
  graph.remove_node(&node);
  return {};
}

namespace {

size_t inline_constant_if(ir::Node& node, PassContext& context) {
  auto taken = constant_if_condition(node, context);
  if (!taken) return 0;
  std::string described = node.describe();
  if (!inline_if_branch(node, *taken).ok()) return 0;
  context.note(fmt::format("{} took its {} branch, now inlined", described, *taken ? "then" : "else"));
  return 1;
}

}  // namespace

std::unique_ptr<Pass> make_inline_constant_if() {
  return make_node_pass("inline-constant-if", "replace an If with a constant condition by the branch it takes", {"If"},
                        inline_constant_if);
}

}  // namespace onnxkit::passes::eliminate
