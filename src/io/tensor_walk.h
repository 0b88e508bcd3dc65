#pragma once
// Visits every TensorProto a model holds: initializers, sparse initializers,
// tensor-valued attributes, and those inside sub-graphs, model-local functions
// and training_info. External data can sit in any of them.

#include <onnx/onnx_pb.h>

#include <functional>
#include <string>

#include "util/result.h"

namespace onnxkit::io {

// `where` says where the tensor sits, for error messages: "initializer 'w'",
// "node 'n' (Constant) attribute 'value'".
using TensorVisitor = std::function<Status(onnx::TensorProto& tensor, const std::string& where)>;

// Stops at, and returns, the first error the visitor returns.
Status for_each_tensor(onnx::ModelProto& model, const TensorVisitor& visit);

}  // namespace onnxkit::io
