// The detection family: NonMaxSuppression, RoiAlign and MaxRoiPool.

#include "runtime/kernels/detection/detection.h"

namespace onnxkit::runtime {

void register_detection_kernels(KernelRegistry& registry) {
  register_each(registry, {detection::register_nms, detection::register_roi_align, detection::register_max_roi_pool});
}

}  // namespace onnxkit::runtime
