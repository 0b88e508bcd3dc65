#pragma once
// The detection family: NonMaxSuppression, RoiAlign and MaxRoiPool.
//
// Boxes, regions and indices come from tensors: every index is checked
// against its bound and every coordinate that decides a loop count is
// checked for being finite before it is used, so bad input is an error and
// never an out-of-bounds access or an endless loop.

#include "runtime/kernels/common.h"

namespace onnxkit::runtime::detection {

void register_nms(KernelRegistry& registry);           // NonMaxSuppression (opset 10+)
void register_roi_align(KernelRegistry& registry);     // RoiAlign (opsets 10 and 16)
void register_max_roi_pool(KernelRegistry& registry);  // MaxRoiPool (opset 1)

}  // namespace onnxkit::runtime::detection
