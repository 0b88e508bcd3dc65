// The detection family: NonMaxSuppression, RoiAlign and MaxRoiPool.

#include "runtime/kernels/detection/detection.h"

namespace onnxkit::runtime {

void register_detection_kernels(KernelRegistry& registry) {
  detection::register_nms(registry);
  detection::register_roi_align(registry);
  detection::register_max_roi_pool(registry);
}

}  // namespace onnxkit::runtime
