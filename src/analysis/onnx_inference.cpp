#include "analysis/onnx_inference.h"

#include <fmt/format.h>

#include "analysis/checker.h"
#include "analysis/library_inference.h"
#include "analysis/newer_ops.h"
#include "analysis/symbolic_shapes.h"

namespace onnxkit::analysis {

namespace {

// The types a graph and its sub-graphs declare; the enclosing graph's come
// first, so they win should a sub-graph reuse a name.
void add_declared_types(const onnx::GraphProto& g, TypeMap& types) {
  for (const auto* list : {&g.input(), &g.output(), &g.value_info()})
    for (const auto& vi : *list)
      if (vi.has_type()) types.emplace(vi.name(), vi.type());
  for (const auto& node : g.node())
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) add_declared_types(attr.g(), types);
      for (const auto& sub : attr.graphs()) add_declared_types(sub, types);
    }
}

// The types the model declares, after inference or without it.
InferenceResult declared_types(const onnx::ModelProto& proto, InferenceResult result) {
  add_declared_types(proto.graph(), result.types);
  return result;
}

// `others` applies to inputs only: an output's unnamed dim (a count of
// detections) is inference's to find.
void bind_dims(onnx::ValueInfoProto& value, const DimBindings& bindings, bool input) {
  if (!value.type().has_tensor_type() || !value.type().tensor_type().has_shape()) return;
  auto* shape = value.mutable_type()->mutable_tensor_type()->mutable_shape();
  auto whole = bindings.input_shapes.find(value.name());
  if (whole != bindings.input_shapes.end() && static_cast<int>(whole->second.size()) == shape->dim_size()) {
    for (int i = 0; i < shape->dim_size(); ++i) shape->mutable_dim(i)->set_dim_value(whole->second[static_cast<size_t>(i)]);
    return;
  }
  for (auto& dim : *shape->mutable_dim()) {
    if (dim.has_dim_value()) continue;
    auto named = dim.has_dim_param() ? bindings.by_name.find(dim.dim_param()) : bindings.by_name.end();
    if (named != bindings.by_name.end()) dim.set_dim_value(named->second);
    else if (bindings.others && input) dim.set_dim_value(*bindings.others);
  }
}

}  // namespace

// The model without weights (inference reads small constant tensors,
// Reshape targets and the like, never weights), with `dims` bound.
onnx::ModelProto skeleton_proto(const ir::Model& model, const DimBindings& dims) {
  ir::ExportOptions skeleton;
  skeleton.max_inline_data_bytes = 64 * 1024;
  onnx::ModelProto proto = ir::export_model(model, skeleton);
  if (!dims.empty()) {
    onnx::GraphProto& g = *proto.mutable_graph();
    for (auto& v : *g.mutable_input()) bind_dims(v, dims, true);
    for (auto& v : *g.mutable_output()) bind_dims(v, dims, false);
    g.clear_value_info();  // intermediate shapes in the old symbols would contradict the numbers
  }
  return proto;
}

InferenceResult infer_types_with_onnx(const ir::Model& model, const DimBindings& dims) {
  onnx::ModelProto proto = skeleton_proto(model, dims);
  InferenceResult result;
  // ONNX's inference assumes what its checker enforces (it crashes on a cycle,
  // for one), so it only sees models that pass.
  CheckOptions structure;
  structure.tensors = false;
  CheckReport check = check_model(proto, model.external_data() ? model.external_data()->base_dir() : ".", structure);
  if (!check.valid()) {
    result.warning = fmt::format("shapes were not inferred: the model fails the ONNX checker ({}: {}); see 'onnxkit check'",
                                 check.problems[0].location, check.problems[0].message);
    return declared_types(proto, std::move(result));
  }
  try {
    onnx::ShapeInferenceOptions options(/*check_type=*/false, /*error_mode=*/0, /*data_prop=*/true);
    infer_shapes(proto, options);
  } catch (const std::exception& e) {
    std::string what = e.what();
    result.warning = "ONNX shape inference stopped: " + what.substr(0, what.find('\n'));
  }
  return declared_types(proto, std::move(result));
}

std::string apply_inferred_types(ir::Model& model) {
  ir::Graph& graph = model.graph();
  // Types our own rules add are declared as value_info for the next round of
  // the library's inference, which then carries them downstream; the list the
  // model had is restored at the end.
  const std::vector<ir::Value*> declared = graph.value_info();
  std::string warning;
  for (int round = 0; round < 8; ++round) {
    InferenceResult result = infer_types_with_onnx(model);
    warning = result.warning;
    for (ir::Value* v : graph.values()) {
      if (v->is_graph_input() || v->is_constant()) continue;
      auto found = result.types.find(v->name());
      if (found != result.types.end()) *v->mutable_info().mutable_type() = found->second;
      else if (!v->is_graph_output()) v->mutable_info().clear_type();
    }
    // Both run every round: the newer-op rules may give a shape the
    // symbolic rules carry on, and the other way round.
    const size_t newer = infer_newer_op_types(graph, model.opset());
    if (newer + infer_symbolic_shapes(graph, model.opset()) == 0) break;
  }
  graph.clear_value_info();
  for (ir::Value* v : declared) graph.add_value_info(v);
  return warning;
}

InferenceResult infer_types(const ir::Model& model, const DimBindings& dims) {
  auto copy = ir::import_model(skeleton_proto(model, dims), model.shared_external_data());
  if (!copy.ok()) return infer_types_with_onnx(model, dims);
  ir::Model& work = **copy;
  const std::string warning = apply_inferred_types(work);
  // Sub-graph types come from the library's pass over the result; the main
  // graph's are the rounds' own, symbolic shapes included.
  InferenceResult result = infer_types_with_onnx(work);
  result.warning = warning;
  for (const ir::Value* v : work.graph().values())
    if (v->has_type()) result.types[v->name()] = v->type();
  return result;
}

}  // namespace onnxkit::analysis
