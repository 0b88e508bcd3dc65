#include "runtime/kernels/nn/depthwise.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "runtime/kernels/cpu_clones.h"
#include "runtime/kernels/lanes.h"
#include "runtime/kernels/nn/blocked.h"
#include "runtime/parallel.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ONNXKIT_DEPTHWISE 1
// One body (GCC vectors) made AVX2 or AVX-512 code by the function it is
// inlined into; fp-contract there makes a multiply and an add one FMA, as
// -std=c++20 does not.
#define ONNXKIT_AVX2 __attribute__((target("avx2,fma"), optimize("fp-contract=fast")))
#define ONNXKIT_AVX512 __attribute__((target("avx512f"), optimize("fp-contract=fast")))
#else
#define ONNXKIT_DEPTHWISE 0
#endif

namespace onnxkit::runtime::nn {
namespace {

constexpr int64_t kLargestKernel = 7;

#if ONNXKIT_DEPTHWISE
// R output pixels from `ow` on, each the sum over the K x K window of
// weights times padded inputs, held to [lo, hi] (NaN kept: the comparisons
// are false for it). A null row lies in the pads above or below the image
// and adds nothing: on the short maps of text recognizers (5x5 windows over
// 2 or 4 rows) most of the window is there. Fewer than four pixels keep two
// sums each: one chain of K * K dependent FMAs would wait on each one's
// latency.
template <int W, int K, int R>
[[gnu::always_inline]] inline void pixels(const float* const* rows, int64_t ow, const float* w, const float* bias,
                                          const float bounds[2], float* out) {
  constexpr int kSums = R >= 4 ? 1 : 2;
  Lanes<W> acc[R][kSums], b, x, weight;  // one register of W channels per pixel
  std::memcpy(&b, bias, sizeof b);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
    for (int s = 0; s < kSums; ++s) acc[r][s] = s == 0 ? b : Lanes<W>{};
#pragma GCC unroll 7
  for (int i = 0; i < K; ++i) {
    if (rows[i] == nullptr) continue;
    const float* row = rows[i] + ow * W;
#pragma GCC unroll 7
    for (int j = 0; j < K; ++j) {
      std::memcpy(&weight, w + (i * K + j) * W, sizeof weight);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        std::memcpy(&x, row + (r + j) * W, sizeof x);
        acc[r][(i * K + j) % kSums] += weight * x;
      }
    }
  }
  const Lanes<W> lo = Lanes<W>{} + bounds[0], hi = Lanes<W>{} + bounds[1];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    Lanes<W> v = kSums == 1 ? acc[r][0] : acc[r][0] + acc[r][kSums - 1];
    v = lo > v ? lo : v;
    v = hi < v ? hi : v;
    std::memcpy(out + (ow + r) * W, &v, sizeof v);
  }
}

// A row by eight pixels, then four, two, one; a row of five to seven (the
// 7 x 7 maps of the last stages) in one go.
template <int W, int K>
[[gnu::always_inline]] inline void row(const float* const* rows, const float* w, const float* bias, const float bounds[2],
                                       float* out, int64_t width) {
  switch (width) {
    case 7: return pixels<W, K, 7>(rows, 0, w, bias, bounds, out);
    case 6: return pixels<W, K, 6>(rows, 0, w, bias, bounds, out);
    case 5: return pixels<W, K, 5>(rows, 0, w, bias, bounds, out);
    default: break;
  }
  int64_t ow = 0;
  for (; ow + 8 <= width; ow += 8) pixels<W, K, 8>(rows, ow, w, bias, bounds, out);
  if (ow + 4 <= width) pixels<W, K, 4>(rows, ow, w, bias, bounds, out), ow += 4;
  if (ow + 2 <= width) pixels<W, K, 2>(rows, ow, w, bias, bounds, out), ow += 2;
  if (ow < width) pixels<W, K, 1>(rows, ow, w, bias, bounds, out);
}

template <int K>
ONNXKIT_AVX2 void row_avx2(const float* const* rows, const float* w, const float* bias, const float bounds[2], float* out,
                           int64_t width) {
  row<8, K>(rows, w, bias, bounds, out, width);
}

template <int K>
ONNXKIT_AVX512 void row_avx512(const float* const* rows, const float* w, const float* bias, const float bounds[2], float* out,
                               int64_t width) {
  row<16, K>(rows, w, bias, bounds, out, width);
}

DepthwiseConv::RowKernel row_kernel(int64_t block, int64_t kernel) {
  if (block == 16) return kernel == 3 ? row_avx512<3> : kernel == 5 ? row_avx512<5> : row_avx512<7>;
  return kernel == 3 ? row_avx2<3> : kernel == 5 ? row_avx2<5> : row_avx2<7>;
}
#endif

// `floats` floats at a 64-byte boundary of `buffer` (whole cache lines:
// a register load that straddles two costs twice).
float* aligned_floats(std::vector<float>& buffer, int64_t floats) {
  constexpr size_t kAlign = 64;
  buffer.resize(static_cast<size_t>(floats) + kAlign / sizeof(float));
  const auto at = reinterpret_cast<uintptr_t>(buffer.data());
  return reinterpret_cast<float*>((at + kAlign - 1) & ~uintptr_t{kAlign - 1});
}

}  // namespace

DepthwiseConv::DepthwiseConv(int64_t channels, int64_t kernel, FusedActivation activation, RowKernel row)
    : channels_(channels),
      kernel_(kernel),
      activation_(activation),
      bounds_{-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity()},
      row_(row) {
  if (activation.kind == FusedActivation::Kind::relu) bounds_[0] = 0.0f;
  if (activation.kind == FusedActivation::Kind::clip) bounds_[0] = activation.min, bounds_[1] = activation.max;
}

std::unique_ptr<DepthwiseConv> DepthwiseConv::create(const ConvAttributes& attrs, const Tensor& w, const Tensor* bias,
                                                     FusedActivation activation) {
#if ONNXKIT_DEPTHWISE
  if (!cpu_has_avx2_fma() || w.dtype() != DataType::float32 || w.rank() != 4 || w.dim(1) != 1 || attrs.group != w.dim(0))
    return nullptr;
  const int64_t channels = w.dim(0), kernel = w.dim(2);
  if (w.dim(3) != kernel || (kernel != 3 && kernel != 5 && kernel != 7)) return nullptr;
  const WindowAttributes& win = attrs.window;
  if (!all_ones(win.strides) || !all_ones(win.dilations) ||
      (!win.kernel_shape.empty() && win.kernel_shape != std::vector<int64_t>{kernel, kernel}))
    return nullptr;
  if (bias != nullptr && (bias->dtype() != DataType::float32 || bias->numel() != channels)) return nullptr;
  if (activation.add_residual || activation.apply(0.0f) != 0.0f) return nullptr;
  const int64_t block = channel_block(), blocks = ceil_div(channels, block), taps = kernel * kernel;
  std::unique_ptr<DepthwiseConv> conv(new DepthwiseConv(channels, kernel, activation, row_kernel(block, kernel)));
  conv->weights_.assign(static_cast<size_t>(blocks * taps * block), 0.0f);
  conv->bias_.assign(static_cast<size_t>(blocks * block), 0.0f);
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t t = 0; t < taps; ++t)
      conv->weights_[static_cast<size_t>((c / block * taps + t) * block + c % block)] = w.data<float>()[c * taps + t];
    if (bias != nullptr) conv->bias_[static_cast<size_t>(c)] = bias->data<float>()[c];
  }
  return conv;
#else
  (void)attrs, (void)w, (void)bias, (void)activation;
  return nullptr;
#endif
}

bool DepthwiseConv::fits(const ConvParams& p) const {
  const WindowGeometry& g = p.window;
  return p.in_channels == channels_ && p.out_channels == channels_ && p.group == channels_ && g.rank() == 2 &&
         g.kernel == std::vector<int64_t>{kernel_, kernel_} && all_ones(g.strides) && all_ones(g.dilations);
}

Status DepthwiseConv::run(const ConvParams& p, const Tensor& x, Tensor& y) const {
  if (!fits(p))
    return make_error("the {}x{} depthwise convolution of {} channels was given another convolution", kernel_, kernel_,
                      channels_);
  const WindowGeometry& g = p.window;
  const Shape x_shape = blocked_shape(p.batch, channels_, g.in[0], g.in[1]);
  const Shape y_shape = blocked_shape(p.batch, channels_, g.out[0], g.out[1]);
  if (x.dtype() != DataType::float32 || x.shape() != x_shape || y.dtype() != DataType::float32 || y.shape() != y_shape)
    return make_error("the depthwise convolution expects float32 {} -> {}, got {} {} -> {} {}", shape_to_string(x_shape),
                      shape_to_string(y_shape), to_string(x.dtype()), shape_to_string(x.shape()), to_string(y.dtype()),
                      shape_to_string(y.shape()));
  const int64_t block = channel_block(), k = kernel_, in_h = g.in[0], in_w = g.in[1], out_h = g.out[0], out_w = g.out[1];
  const int64_t top = g.pads_begin[0], left = g.pads_begin[1];
  if (y.numel() == 0) return {};
  // A padded row: every input pixel an output reads, pads included (stride 1).
  const int64_t padded = out_w + k - 1;
  const int64_t blocks = ceil_div(channels_, block), planes = p.batch * blocks, items = planes * out_h;
  const double macs = static_cast<double>(items) * static_cast<double>(out_w * k * k * block);
  const float* xv = x.data<float>();
  float* yv = y.mutable_data<float>();
  // Relu and Clip are the row kernel's bounds; any other activation (zero at
  // zero, as create() asks) runs over each row after it.
  using Kind = FusedActivation::Kind;
  const bool bounded = activation_.kind == Kind::none || activation_.kind == Kind::relu || activation_.kind == Kind::clip;
  parallel_ranges(items, macs >= kParallelMacs, [&](int64_t from, int64_t to) {
    thread_local std::vector<float> scratch;
    float* ring = aligned_floats(scratch, k * padded * block);
    std::fill(ring, ring + k * padded * block, 0.0f);  // the pads, which copies never touch
    for (int64_t item = from; item < to;) {
      const int64_t plane = item / out_h, first = item % out_h, last = std::min(out_h, first + (to - item));
      const float* in = xv + plane * in_h * in_w * block;
      const float* w = weights_.data() + plane % blocks * k * k * block;
      const float* bias = bias_.data() + plane % blocks * block;
      int64_t held[kLargestKernel];  // the input row in each ring slot
      std::fill(held, held + k, int64_t{-1});
      for (int64_t oh = first; oh < last; ++oh) {
        const float* rows[kLargestKernel];
        for (int64_t i = 0; i < k; ++i) {
          const int64_t ih = oh - top + i;
          if (ih < 0 || ih >= in_h) {
            rows[i] = nullptr;
            continue;
          }
          float* slot = ring + ih % k * padded * block;
          if (held[ih % k] != ih) {
            std::memcpy(slot + left * block, in + ih * in_w * block, static_cast<size_t>(in_w * block) * sizeof(float));
            held[ih % k] = ih;
          }
          rows[i] = slot;
        }
        float* out = yv + (plane * out_h + oh) * out_w * block;
        row_(rows, w, bias, bounds_, out, out_w);
        if (!bounded) activate_floats(activation_, out, out_w * block);
      }
      item += last - first;
    }
  });
  return {};
}

}  // namespace onnxkit::runtime::nn
