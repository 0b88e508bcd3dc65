// MaxRoiPool (opset 1): Fast R-CNN's region pooling. Each region (batch
// index, x1, y1, x2, y2, in input coordinates times spatial_scale, rounded
// to whole pixels and inclusive of both ends) is cut into pooled_shape bins
// of fractional size; a bin takes the maximum of the pixels it touches, or 0
// when it lies wholly outside X. This is Caffe's ROIPooling, as
// torchvision.ops.roi_pool and ONNX Runtime compute it.

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/kernels/detection/detection.h"

namespace onnxkit::runtime::detection {
namespace {

// Region coordinates beyond this are refused, so pixel arithmetic stays exact.
constexpr double kMaxCoordinate = double(int64_t{1} << 40);

Status max_roi_pool(KernelContext& ctx, int64_t pooled_h, int64_t pooled_w, double scale) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  ONNXKIT_ASSIGN(const Tensor* rois_t, ctx.tensor(1));
  if (x->rank() != 4) return make_error("X must be [N, C, H, W], got {}", shape_to_string(x->shape()));
  if (rois_t->rank() != 2 || rois_t->dim(1) != 5)
    return make_error("rois must be [num_rois, 5], got {}", shape_to_string(rois_t->shape()));
  ONNXKIT_ASSIGN(std::vector<double> rois, read_doubles(*rois_t, "rois"));
  const int64_t batch = x->dim(0), channels = x->dim(1), height = x->dim(2), width = x->dim(3);
  const int64_t regions = rois_t->dim(0);
  for (int64_t r = 0; r < regions; ++r) {
    const double* roi = &rois[static_cast<size_t>(r * 5)];
    if (!(roi[0] >= 0 && roi[0] < static_cast<double>(batch)) || roi[0] != std::floor(roi[0]))
      return make_error("region {} has batch index {}, outside [0, {})", r, roi[0], batch);
    for (int i = 1; i < 5; ++i)
      if (!(std::abs(roi[i] * scale) <= kMaxCoordinate)) return make_error("region {} has coordinate {}", r, roi[i]);
  }
  Tensor& y = ctx.output(0, x->dtype(), {regions, channels, pooled_h, pooled_w});
  return dispatch_float(x->dtype(), [&]<class T>() -> Status {
    const T* in = x->data<T>();
    T* out = y.mutable_data<T>();
    for (int64_t r = 0; r < regions; ++r) {
      const double* roi = &rois[static_cast<size_t>(r * 5)];
      const auto b = static_cast<int64_t>(roi[0]);
      // std::round rounds halves away from zero, as Caffe's round() does.
      const auto x1 = static_cast<int64_t>(std::round(roi[1] * scale));
      const auto y1 = static_cast<int64_t>(std::round(roi[2] * scale));
      const auto x2 = static_cast<int64_t>(std::round(roi[3] * scale));
      const auto y2 = static_cast<int64_t>(std::round(roi[4] * scale));
      const double bin_h = static_cast<double>(std::max<int64_t>(y2 - y1 + 1, 1)) / static_cast<double>(pooled_h);
      const double bin_w = static_cast<double>(std::max<int64_t>(x2 - x1 + 1, 1)) / static_cast<double>(pooled_w);
      for (int64_t c = 0; c < channels; ++c) {
        const T* plane = in + (b * channels + c) * height * width;
        for (int64_t ph = 0; ph < pooled_h; ++ph) {
          const int64_t h0 = std::clamp<int64_t>(static_cast<int64_t>(std::floor(ph * bin_h)) + y1, 0, height);
          const int64_t h1 = std::clamp<int64_t>(static_cast<int64_t>(std::ceil((ph + 1) * bin_h)) + y1, 0, height);
          for (int64_t pw = 0; pw < pooled_w; ++pw) {
            const int64_t w0 = std::clamp<int64_t>(static_cast<int64_t>(std::floor(pw * bin_w)) + x1, 0, width);
            const int64_t w1 = std::clamp<int64_t>(static_cast<int64_t>(std::ceil((pw + 1) * bin_w)) + x1, 0, width);
            double best = h0 < h1 && w0 < w1 ? -std::numeric_limits<double>::infinity() : 0.0;
            for (int64_t h = h0; h < h1; ++h)
              for (int64_t w = w0; w < w1; ++w) best = std::max(best, static_cast<double>(plane[h * width + w]));
            *out++ = static_cast<T>(best);
          }
        }
      }
    }
    return {};
  });
}

}  // namespace

void register_max_roi_pool(KernelRegistry& registry) {
  registry.add("", "MaxRoiPool", 1, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
                 const std::vector<int64_t> pooled = info.attr_ints("pooled_shape");
                 if (pooled.size() != 2 || pooled[0] <= 0 || pooled[1] <= 0)
                   return make_error("attribute 'pooled_shape' must hold two positive sizes");
                 const double scale = info.attr_float("spatial_scale", 1.0f);
                 if (!(scale > 0 && std::isfinite(scale))) return make_error("spatial_scale {} is not positive", scale);
                 return ComputeFn([=](KernelContext& ctx) { return max_roi_pool(ctx, pooled[0], pooled[1], scale); });
               }));
}

}  // namespace onnxkit::runtime::detection
