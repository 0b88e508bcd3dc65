// DeformConv (opset 19), 2-D: a convolution whose every kernel tap samples X
// at its regular position plus a learned (dy, dx) offset, bilinearly with
// zeros outside X, optionally weighted by a mask (modulated deformable
// convolution, as torchvision.ops.deform_conv2d). Channels are split into
// `group` convolution groups and, independently, `offset_group` groups that
// share offsets.
//
// Per image the sampled taps form a column matrix [C * kH * kW, oH * oW]
// (mask applied); each group is then one GEMM with its weights.

#include <omp.h>

#include <cmath>

#include "runtime/kernels/gemm.h"
#include "runtime/kernels/nn/conv.h"
#include "runtime/kernels/nn/nn.h"

namespace onnxkit::runtime::nn {
namespace {

enum Input : size_t { kX = 0, kW, kOffset, kBias, kMask };

struct DeformAttributes {
  WindowAttributes window;
  int64_t group = 1, offset_group = 1;
};

// X's value at (y, x) by bilinear interpolation; taps outside X read 0.
template <class T> T sample_bilinear(const T* plane, int64_t height, int64_t width, T y, T x) {
  if (!(y > -1 && y < static_cast<T>(height) && x > -1 && x < static_cast<T>(width))) return 0;
  const T y0f = std::floor(y), x0f = std::floor(x);
  const auto y0 = static_cast<int64_t>(y0f), x0 = static_cast<int64_t>(x0f);
  const T fy = y - y0f, fx = x - x0f;
  auto at = [&](int64_t r, int64_t c) -> T { return r >= 0 && r < height && c >= 0 && c < width ? plane[r * width + c] : T(0); };
  return (1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x0 + 1)) + fy * ((1 - fx) * at(y0 + 1, x0) + fx * at(y0 + 1, x0 + 1));
}

template <class T>
void deform_conv_typed(const Tensor& x, const Tensor& w, const Tensor& offset, const Tensor* bias, const Tensor* mask,
                       const WindowGeometry& g, const DeformAttributes& a, Tensor& y) {
  const int64_t batch = x.dim(0), channels = x.dim(1), height = x.dim(2), width = x.dim(3);
  const int64_t out_channels = w.dim(0), kh = g.kernel[0], kw = g.kernel[1], taps = kh * kw;
  const int64_t oh = g.out[0], ow = g.out[1], positions = oh * ow;
  const int64_t channels_per_offset_group = channels / a.offset_group;
  const int64_t group_rows = channels / a.group * taps, group_out = out_channels / a.group;
  std::vector<T> columns(static_cast<size_t>(channels * taps * positions));
  for (int64_t n = 0; n < batch; ++n) {
    const T* image = x.data<T>() + n * channels * height * width;
    const T* offsets = offset.data<T>() + n * a.offset_group * 2 * taps * positions;
    const T* masks = mask ? mask->data<T>() + n * a.offset_group * taps * positions : nullptr;
#pragma omp parallel for schedule(static) if (channels * taps * positions > kParallelWork)
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t og = c / channels_per_offset_group;
      const T* plane = image + c * height * width;
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j) {
          const int64_t tap = i * kw + j;
          const T* dy = offsets + (og * taps + tap) * 2 * positions;  // (dy, dx) pairs per tap
          const T* dx = dy + positions;
          const T* m = masks ? masks + (og * taps + tap) * positions : nullptr;
          T* col = columns.data() + (c * taps + tap) * positions;
          for (int64_t r = 0; r < oh; ++r)
            for (int64_t s = 0; s < ow; ++s) {
              const int64_t p = r * ow + s;
              const T sy = static_cast<T>(r * g.strides[0] - g.pads_begin[0] + i * g.dilations[0]) + dy[p];
              const T sx = static_cast<T>(s * g.strides[1] - g.pads_begin[1] + j * g.dilations[1]) + dx[p];
              T v = sample_bilinear(plane, height, width, sy, sx);
              col[p] = m ? v * m[p] : v;
            }
        }
    }
    T* out = y.mutable_data<T>() + n * out_channels * positions;
    for (int64_t gi = 0; gi < a.group; ++gi)
      gemm(false, false, group_out, positions, group_rows, T(1), w.data<T>() + gi * group_out * group_rows, group_rows,
           columns.data() + gi * group_rows * positions, positions, T(0), out + gi * group_out * positions, positions);
    if (bias)
      for (int64_t o = 0; o < out_channels; ++o)
        for (int64_t p = 0; p < positions; ++p) out[o * positions + p] += bias->data<T>()[o];
  }
}

Status deform_conv(KernelContext& ctx, const DeformAttributes& a) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(kX));
  ONNXKIT_ASSIGN(const Tensor* w, ctx.tensor(kW));
  ONNXKIT_ASSIGN(const Tensor* offset, ctx.tensor(kOffset));
  const Tensor* mask = nullptr;
  if (ctx.has_input(kMask)) {
    ONNXKIT_ASSIGN(mask, ctx.tensor(kMask));
  }
  if (x->rank() != 4)
    return make_error("X must be [N, C, H, W] (only 2-D deformable convolution), got {}", shape_to_string(x->shape()));
  const int64_t batch = x->dim(0), channels = x->dim(1);
  if (w->rank() != 4 || channels % a.group != 0 || w->dim(1) * a.group != channels || w->dim(0) % a.group != 0)
    return make_error("W {} does not fit X {} in {} group(s)", shape_to_string(w->shape()), shape_to_string(x->shape()), a.group);
  if (channels % a.offset_group != 0) return make_error("offset_group {} does not divide {} channels", a.offset_group, channels);
  const std::vector<int64_t> kernel{w->dim(2), w->dim(3)};
  if (!a.window.kernel_shape.empty() && a.window.kernel_shape != kernel)
    return make_error("kernel_shape does not match W {}", shape_to_string(w->shape()));
  ONNXKIT_ASSIGN(const Tensor* bias, read_bias(ctx, kBias, *x, w->dim(0)));
  ONNXKIT_ASSIGN(WindowGeometry g, resolve_window(a.window, {x->dim(2), x->dim(3)}, kernel));
  const int64_t taps = kernel[0] * kernel[1];
  const Shape offset_shape{batch, a.offset_group * 2 * taps, g.out[0], g.out[1]};
  if (offset->shape() != offset_shape)
    return make_error("offset must be {}, got {}", shape_to_string(offset_shape), shape_to_string(offset->shape()));
  const Shape mask_shape{batch, a.offset_group * taps, g.out[0], g.out[1]};
  if (mask && mask->shape() != mask_shape)
    return make_error("mask must be {}, got {}", shape_to_string(mask_shape), shape_to_string(mask->shape()));
  for (const Tensor* t : {w, offset, mask})
    if (t && t->dtype() != x->dtype()) return make_error("inputs differ in element type from X");
  const Shape out_shape{batch, w->dim(0), g.out[0], g.out[1]};
  ONNXKIT_TRY(checked_size(out_shape, "output"));
  Tensor& y = ctx.output(0, x->dtype(), out_shape);
  return compute_in_float({x, w, offset, bias, mask}, y,
                          [&]<class C>(const std::vector<const Tensor*>& in, Tensor& out) -> Status {
                            deform_conv_typed<C>(*in[0], *in[1], *in[2], in[3], in[4], g, a, out);
                            return {};
                          });
}

}  // namespace

void register_deform_conv(KernelRegistry& registry) {
  registry.add("", "DeformConv", 19, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
                 DeformAttributes a;
                 ONNXKIT_ASSIGN(a.window, read_window_attributes(info));
                 a.group = info.attr_int("group", 1);
                 a.offset_group = info.attr_int("offset_group", 1);
                 if (a.group <= 0 || a.offset_group <= 0) return make_error("group and offset_group must be positive");
                 return ComputeFn([a](KernelContext& ctx) { return deform_conv(ctx, a); });
               }));
}

}  // namespace onnxkit::runtime::nn
