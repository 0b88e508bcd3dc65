#pragma once
// What changed in the default ONNX domain after the newest opset that the
// Debian ONNX library knows. Its checker and shape inference apply the
// newest schema they have, which is out of date for these operators.

#include <cstdint>
#include <string_view>

namespace onnxkit::analysis {

// The newest default-domain opset with schemas in the linked ONNX library.
int64_t libonnx_max_opset();

// True when `op_type` (default domain) was added or got a new version after
// libonnx_max_opset() and at or below `opset`.
bool changed_since_libonnx(std::string_view op_type, int64_t opset);

}  // namespace onnxkit::analysis
