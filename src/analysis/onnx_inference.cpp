#include "analysis/onnx_inference.h"

#include <onnx/shape_inference/implementation.h>

namespace onnxkit::analysis {

InferenceResult infer_types_with_onnx(const ir::Model& model) {
  // Inference reads small constant tensors (Reshape targets and the like),
  // never weights, so large data stays behind.
  ir::ExportOptions skeleton;
  skeleton.max_inline_data_bytes = 64 * 1024;
  onnx::ModelProto proto = ir::export_model(model, skeleton);
  InferenceResult result;
  try {
    onnx::ShapeInferenceOptions options(/*check_type=*/false, /*error_mode=*/0, /*data_prop=*/true);
    onnx::shape_inference::InferShapes(proto, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception& e) {
    std::string what = e.what();
    result.warning = "ONNX shape inference stopped: " + what.substr(0, what.find('\n'));
  }
  const auto& g = proto.graph();
  for (const auto* list : {&g.input(), &g.output(), &g.value_info()})
    for (const auto& vi : *list)
      if (vi.has_type()) result.types.emplace(vi.name(), vi.type());
  return result;
}

}  // namespace onnxkit::analysis
