#pragma once
// Small helpers shared by the elimination pass tests.

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "passes/pass_test_support.h"

namespace onnxkit::testing {

// Names of the graph's outputs, in order.
inline std::vector<std::string> output_names(const ir::Graph& graph) {
  std::vector<std::string> names;
  for (const ir::Value* v : graph.outputs()) names.push_back(v->name());
  return names;
}

// Options excluding the first node of `op_type`, which gets `name`.
inline passes::PassOptions excluding_first(ir::Graph& graph, std::string_view op_type, const std::string& name) {
  for (ir::Node& node : graph.nodes())
    if (node.op_type() == op_type) {
      node.set_name(name);
      break;
    }
  passes::PassOptions options;
  options.excluded_nodes.insert(name);
  return options;
}

// The If node of the graph's first node that has sub-graphs: its then branch.
inline const ir::Graph& then_branch(const ir::Model& model) {
  for (const ir::Node& node : model.graph().nodes())
    if (!node.subgraphs().empty()) return *node.subgraphs().front();
  ADD_FAILURE() << "no node with a sub-graph";
  return model.graph();
}

}  // namespace onnxkit::testing
