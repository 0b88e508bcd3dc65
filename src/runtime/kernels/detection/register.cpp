// The detection family: NonMaxSuppression, RoiAlign and MaxRoiPool.

#include "runtime/kernels/detection/detection.h"

namespace onnxkit::runtime {
namespace detection {

Result<std::vector<double>> read_floats(const Tensor& t, std::string_view name) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  Status s = dispatch_float(t.dtype(), [&]<class T>() -> Status {
    const T* p = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(p[i]);
    return {};
  });
  if (!s.ok()) return s.error().in(name);
  return out;
}

}  // namespace detection

void register_detection_kernels(KernelRegistry& registry) {
  detection::register_nms(registry);
  detection::register_roi_align(registry);
  detection::register_max_roi_pool(registry);
}

}  // namespace onnxkit::runtime
