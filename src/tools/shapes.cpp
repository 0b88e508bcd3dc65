#include "tools/shapes.h"

#include "analysis/onnx_inference.h"
#include "io/atomic_file.h"
#include "ir/model.h"
#include "tools/edit.h"

namespace onnxkit::tools {

Result<ShapesReport> infer_shapes_file(const std::filesystem::path& in, const std::filesystem::path& out,
                                       const ShapesOptions& options) {
  ONNXKIT_TRY(io::check_writable(out));
  ONNXKIT_ASSIGN(std::unique_ptr<ir::Model> model, ir::load_model(in));
  for (const auto& [name, dims] : options.input_shapes) {
    Status set = set_input_shape(*model, name, dims);
    if (!set.ok()) return make_error("--input-shape: {}", set.error().message());
  }
  // The outputs' declared shapes were worked out from the old input shapes.
  if (!options.input_shapes.empty())
    for (ir::Value* v : model->graph().outputs())
      if (v->has_type() && v->type().has_tensor_type()) v->mutable_info().mutable_type()->mutable_tensor_type()->clear_shape();
  ShapesReport report;
  ir::Graph& graph = model->graph();
  graph.clear_value_info();
  report.warning = analysis::apply_inferred_types(*model);
  for (ir::Node& node : graph.nodes())
    for (ir::Value* v : node.outputs()) {
      if (v == nullptr || v->is_graph_output()) continue;
      ++report.values;
      if (!v->has_type()) continue;
      graph.add_value_info(v);
      auto dims = v->static_shape();
      if (!dims) continue;
      ++report.with_shape;
      bool all_static = true;
      for (int64_t d : *dims) all_static = all_static && d >= 0;
      report.fully_static += all_static;
    }
  ONNXKIT_TRY(ir::save_model(*model, out, options.save));
  return report;
}

}  // namespace onnxkit::tools
