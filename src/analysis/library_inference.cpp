#include "analysis/library_inference.h"

#include <onnx/defs/schema.h>

#include <unordered_set>

#include "ir/graph.h"

namespace onnxkit::analysis {

namespace {

// Whether a Shape node of `graph` (its own nodes only: the library
// propagates data through the main graph alone) reads a value that has no
// type after inference without data propagation.
bool shape_reads_untyped_value(const onnx::GraphProto& graph) {
  std::unordered_set<std::string> typed;
  for (const auto* list : {&graph.input(), &graph.output(), &graph.value_info()})
    for (const auto& vi : *list)
      if (vi.has_type()) typed.insert(vi.name());
  for (const auto& t : graph.initializer()) typed.insert(t.name());
  for (const auto& node : graph.node())
    if (node.op_type() == "Shape" && ir::canonical_domain(node.domain()).empty() && node.input_size() > 0 &&
        !typed.count(node.input(0)))
      return true;
  return false;
}

bool has_shape_node(const onnx::GraphProto& graph) {
  for (const auto& node : graph.node())
    if (node.op_type() == "Shape" && ir::canonical_domain(node.domain()).empty()) return true;
  return false;
}

// `options` without data propagation when `infer` on a copy of `target`
// shows it would crash.
const onnx::GraphProto& main_graph(const onnx::ModelProto& model) { return model.graph(); }
const onnx::GraphProto& main_graph(const onnx::GraphProto& graph) { return graph; }

template <typename Target, typename Infer>
onnx::ShapeInferenceOptions safe_options(const Target& target, const onnx::ShapeInferenceOptions& options, Infer infer) {
  if (!options.enable_data_propagation || !has_shape_node(main_graph(target))) return options;
  Target probe = target;
  onnx::ShapeInferenceOptions without = options;
  without.enable_data_propagation = false;
  try {
    infer(probe, without);
  } catch (const std::exception&) {
    // What was typed before the error is in `probe`; what was not counts as untyped.
  }
  return shape_reads_untyped_value(main_graph(probe)) ? without : options;
}

}  // namespace

void infer_shapes(onnx::ModelProto& model, const onnx::ShapeInferenceOptions& options) {
  auto infer = [](onnx::ModelProto& m, const onnx::ShapeInferenceOptions& o) {
    onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(), o);
  };
  infer(model, safe_options(model, options, infer));
}

void infer_shapes(onnx::GraphProto& graph, const std::unordered_map<std::string, int>& opsets,
                  const onnx::ShapeInferenceOptions& options, const onnx::shape_inference::ModelLocalFunctionsMap& functions) {
  auto infer = [&](onnx::GraphProto& g, const onnx::ShapeInferenceOptions& o) {
    onnx::shape_inference::InferShapes(&g, opsets, onnx::OpSchemaRegistry::Instance(), o, functions);
  };
  infer(graph, safe_options(graph, options, infer));
}

}  // namespace onnxkit::analysis
