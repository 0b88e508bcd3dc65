#pragma once
// The tensor family: shape manipulation, casts, layout changes and tensors
// made from attributes. Ops that only change a shape return views.

#include <optional>

#include "runtime/kernels/common.h"

namespace onnxkit::runtime::tensor_ops {

void register_shape_ops(KernelRegistry& registry);
void register_cast(KernelRegistry& registry);
void register_layout_ops(KernelRegistry& registry);
void register_generators(KernelRegistry& registry);

// Reshape's target for an input of shape `in`: 0 copies the input dim
// (unless allowzero), -1 is inferred.
Result<Shape> reshape_target(const Shape& in, const std::vector<int64_t>& target, bool allowzero);

// Shape's output for a tensor of shape `dims`: the dims from `start` to
// `end` (opset 15; all of them by default), clamped as Slice clamps.
Tensor shape_output(const Shape& dims, int64_t start, std::optional<int64_t> end);

}  // namespace onnxkit::runtime::tensor_ops
