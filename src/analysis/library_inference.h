#pragma once
// libonnx's shape inference, called so that it cannot crash on a model it
// accepts. Every call to onnx::shape_inference::InferShapes goes through here.

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <string>
#include <unordered_map>

namespace onnxkit::analysis {

// As onnx::shape_inference::InferShapes, and throws what it throws.
// ONNX 1.12's data propagation reads the type of a Shape node's input
// without checking that it has one: a Shape reading an untyped value (the
// output of a custom-domain op, or of a node whose inference failed)
// crashes the process. A first pass without data propagation, on a copy,
// finds such a Shape; then data propagation is left out of the real pass.
void infer_shapes(onnx::ModelProto& model, const onnx::ShapeInferenceOptions& options);
void infer_shapes(onnx::GraphProto& graph, const std::unordered_map<std::string, int>& opsets,
                  const onnx::ShapeInferenceOptions& options, const onnx::shape_inference::ModelLocalFunctionsMap& functions);

}  // namespace onnxkit::analysis
