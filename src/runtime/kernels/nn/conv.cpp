// Conv (reference), ConvTranspose and Col2Im.

#include "runtime/kernels/nn/conv.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "runtime/kernels/cpu_clones.h"
#include "runtime/kernels/gemm.h"
#include "runtime/kernels/nn/blocked.h"
#include "runtime/kernels/nn/conv_dnnl.h"
#include "runtime/kernels/nn/fourier_conv.h"
#include "runtime/parallel.h"
#include "runtime/session.h"

namespace onnxkit::runtime::nn {
namespace {

// Grid positions o along one axis whose tap o * stride + offset falls inside [0, size).
void valid_range(int64_t offset, int64_t stride, int64_t size, int64_t grid, int64_t& lo, int64_t& hi) {
  lo = std::clamp<int64_t>(ceil_div(-offset, stride), 0, grid);
  hi = std::clamp<int64_t>(floor_div(size - 1 - offset, stride) + 1, lo, grid);
}

// The walk shared by im2col and col2im, for one kernel tap `kr` (row major
// over g.kernel) over grid positions [p0, p1), cut into runs along the last
// axis. For each run, calls run(p, o_first, o_last, lo, hi, base, offset): the
// run starts at grid position p and covers last-axis indices [o_first,
// o_last); those in [lo, hi) tap image[base + offset + o * stride], the others
// fall in the padding (lo == hi when another axis does).
template <class Run> void walk_rows(const WindowGeometry& g, int64_t kr, int64_t p0, int64_t p1, Run&& run) {
  const size_t rank = g.rank();
  const size_t last = rank - 1;
  std::vector<int64_t> k(rank);
  for (size_t d = rank; d-- > 0;) {
    k[d] = kr % g.kernel[d];
    kr /= g.kernel[d];
  }
  const std::vector<int64_t> in_strides = contiguous_strides(g.in);
  const int64_t grid_last = g.out[last];
  const int64_t offset = k[last] * g.dilations[last] - g.pads_begin[last];
  int64_t lo, hi;
  valid_range(offset, g.strides[last], g.in[last], grid_last, lo, hi);
  for (int64_t p = p0; p < p1;) {
    const int64_t o_first = p % grid_last;
    const int64_t run_end = std::min(p1, p - o_first + grid_last);
    int64_t outer = p / grid_last, base = 0;
    bool inside = true;
    for (size_t d = last; d-- > 0;) {
      const int64_t o = outer % g.out[d];
      outer /= g.out[d];
      const int64_t i = o * g.strides[d] + k[d] * g.dilations[d] - g.pads_begin[d];
      if (i < 0 || i >= g.in[d]) inside = false;
      base += i * in_strides[d];
    }
    const int64_t o_last = o_first + (run_end - p);
    run(p, o_first, o_last, inside ? std::max(lo, o_first) : o_first, inside ? std::clamp(hi, o_first, o_last) : o_first, base,
        offset);
    p = run_end;
  }
}

// col[c * ksize + kr][p - p0] for grid positions p in [p0, p1): the image
// value under kernel tap kr of window p, zero in the padding.
template <class T> void im2col_tile(const T* image, int64_t channels, const WindowGeometry& g, int64_t p0, int64_t p1, T* col) {
  const int64_t ksize = g.kernel_size(), in_size = g.in_size(), width = p1 - p0;
  const int64_t stride = g.strides[g.rank() - 1];
  for (int64_t c = 0; c < channels; ++c) {
    const T* src = image + c * in_size;
    for (int64_t kr = 0; kr < ksize; ++kr) {
      T* dst = col + (c * ksize + kr) * width;
      walk_rows(g, kr, p0, p1,
                [&](int64_t p, int64_t o_first, int64_t o_last, int64_t lo, int64_t hi, int64_t base, int64_t offset) {
                  const int64_t shift = p - p0 - o_first;  // dst[shift + o] holds grid position o of this run
                  if (lo >= hi) lo = hi = o_last;
                  for (int64_t o = o_first; o < lo; ++o) dst[shift + o] = T(0);
                  if (stride == 1 && lo < hi) {
                    std::copy(src + base + offset + lo, src + base + offset + hi, dst + shift + lo);
                  } else {
                    for (int64_t o = lo; o < hi; ++o) dst[shift + o] = src[base + offset + o * stride];
                  }
                  for (int64_t o = hi; o < o_last; ++o) dst[shift + o] = T(0);
                });
    }
  }
}

template <class T> void conv_compute(const ConvParams& p, const T* x, const T* w, const T* bias, T* y) {
  const WindowGeometry& g = p.window;
  const int64_t n_batch = p.batch, c_in = p.in_channels, m_out = p.out_channels, groups = p.group;
  const int64_t cg = c_in / groups, mg = m_out / groups;
  const int64_t ksize = g.kernel_size(), depth = cg * ksize;
  const int64_t in_size = g.in_size(), out_size = g.out_size();
  if (n_batch == 0 || m_out == 0 || out_size == 0) return;

  if (cg == 1) {
    // Depthwise: each output channel reads one input channel, too little
    // depth for a matrix multiply; accumulate tap by tap instead.
    const int64_t planes = n_batch * m_out;
    const int64_t stride = g.strides[g.rank() - 1];
#pragma omp parallel for if (planes > 1 && planes * out_size * ksize >= kParallelWork) schedule(static)
    for (int64_t q = 0; q < planes; ++q) {
      const int64_t n = q / m_out, m = q % m_out;
      const T* image = x + (n * c_in + m / mg) * in_size;
      T* out = y + q * out_size;
      std::fill(out, out + out_size, bias != nullptr ? bias[m] : T(0));
      for (int64_t kr = 0; kr < ksize; ++kr) {
        const T wv = w[m * ksize + kr];
        walk_rows(g, kr, 0, out_size,
                  [&](int64_t p, int64_t o_first, int64_t, int64_t lo, int64_t hi, int64_t base, int64_t offset) {
                    const int64_t shift = p - o_first;  // out[shift + o] is grid position o of this run
                    for (int64_t o = lo; o < hi; ++o) out[shift + o] += wv * image[base + offset + o * stride];
                  });
      }
    }
    return;
  }

  // A 1x1 window with unit strides and no padding reads the image as is.
  bool direct = true;
  for (size_t d = 0; d < g.rank(); ++d)
    direct = direct && g.kernel[d] == 1 && g.strides[d] == 1 && g.pads_begin[d] == 0 && g.pads_end[d] == 0;

  // Output positions per task: the im2col tile stays a few MB, and there are
  // tasks enough for every thread.
  const int64_t threads = available_threads();
  int64_t tile = out_size;
  if (!direct) tile = std::min(out_size, std::max<int64_t>(64, (int64_t{1} << 19) / std::max<int64_t>(depth, 1)));
  const int64_t images = n_batch * groups;
  if (images * ceil_div(out_size, tile) < threads) {
    const int64_t per_image = ceil_div(threads, images);
    tile = std::min(tile, std::max<int64_t>(64, ceil_div(out_size, per_image)));
  }
  const int64_t tiles = ceil_div(out_size, tile);
  const int64_t tasks = images * tiles;
  const bool parallel = tasks > 1 && n_batch * m_out * out_size * depth >= kParallelWork;

  // Each thread keeps one im2col buffer for all its tasks.
  auto run_task = [&](int64_t task, std::vector<T>& col) {
    const int64_t n = task / (groups * tiles), gi = (task / tiles) % groups, t = task % tiles;
    const int64_t p0 = t * tile, p1 = std::min(out_size, p0 + tile), width = p1 - p0;
    const T* image = x + (n * c_in + gi * cg) * in_size;
    T* out = y + (n * m_out + gi * mg) * out_size + p0;
    const T* b = image + p0;
    int64_t ldb = in_size;
    if (!direct) {
      im2col_tile(image, cg, g, p0, p1, col.data());
      b = col.data();
      ldb = width;
    }
    gemm_portable(false, false, mg, width, depth, T(1), w + gi * mg * depth, depth, b, ldb, T(0), out, out_size);
    if (bias != nullptr)
      for (int64_t m = 0; m < mg; ++m) {
        const T v = bias[gi * mg + m];
        for (int64_t j = 0; j < width; ++j) out[m * out_size + j] += v;
      }
  };
  const size_t col_size = direct ? 0 : static_cast<size_t>(depth * tile);
  if (!parallel || threads == 1) {  // no region: the products may use the threads
    std::vector<T> col(col_size);
    for (int64_t task = 0; task < tasks; ++task) run_task(task, col);
    return;
  }
#pragma omp parallel
  {
    std::vector<T> col(col_size);
#pragma omp for schedule(dynamic)
    for (int64_t task = 0; task < tasks; ++task) run_task(task, col);
  }
}

}  // namespace

template <class T> void col2im(const T* col, int64_t channels, const WindowGeometry& g, T* image) {
  const int64_t ksize = g.kernel_size(), in_size = g.in_size(), grid = g.out_size();
  const int64_t stride = g.strides[g.rank() - 1];
  for (int64_t c = 0; c < channels; ++c) {
    T* dst = image + c * in_size;
    for (int64_t kr = 0; kr < ksize; ++kr) {
      const T* src = col + (c * ksize + kr) * grid;
      walk_rows(g, kr, 0, grid, [&](int64_t p, int64_t o_first, int64_t, int64_t lo, int64_t hi, int64_t base, int64_t offset) {
        const int64_t shift = p - o_first;  // src[shift + o] holds grid position o of this run
        for (int64_t o = lo; o < hi; ++o) dst[base + offset + o * stride] += src[shift + o];
      });
    }
  }
}

template void col2im<float>(const float*, int64_t, const WindowGeometry&, float*);
template void col2im<double>(const double*, int64_t, const WindowGeometry&, double*);

Status conv_reference(const ConvParams& p, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y) {
  if (x.shape() != p.x_shape())
    return make_error("X has shape {}, the convolution was set up for {}", shape_to_string(x.shape()),
                      shape_to_string(p.x_shape()));
  if (w.shape() != p.w_shape())
    return make_error("W has shape {}, the convolution was set up for {}", shape_to_string(w.shape()),
                      shape_to_string(p.w_shape()));
  if (y.shape() != p.y_shape())
    return make_error("Y has shape {}, expected {}", shape_to_string(y.shape()), shape_to_string(p.y_shape()));
  if (w.dtype() != x.dtype() || y.dtype() != x.dtype())
    return make_error("X, W and Y must have one element type, got {}, {} and {}", to_string(x.dtype()), to_string(w.dtype()),
                      to_string(y.dtype()));
  if (bias != nullptr) {
    if (bias->dtype() != x.dtype()) return make_error("B has type {}, X has {}", to_string(bias->dtype()), to_string(x.dtype()));
    if (bias->rank() != 1 || bias->dim(0) != p.out_channels)
      return make_error("B must have shape [{}] (one value per output channel), got {}", p.out_channels,
                        shape_to_string(bias->shape()));
  }
  return compute_in_float({&x, &w, bias}, y, [&]<class C>(const std::vector<const Tensor*>& in, Tensor& out) -> Status {
    conv_compute<C>(p, in[0]->data<C>(), in[1]->data<C>(), in[2] ? in[2]->data<C>() : nullptr, out.mutable_data<C>());
    return {};
  });
}

Result<const Tensor*> read_bias(KernelContext& ctx, size_t index, const Tensor& x, int64_t channels) {
  if (!ctx.has_input(index)) return static_cast<const Tensor*>(nullptr);
  ONNXKIT_ASSIGN(const Tensor* b, ctx.tensor(index));
  if (b->dtype() != x.dtype()) return make_error("B has type {}, X has {}", to_string(b->dtype()), to_string(x.dtype()));
  if (b->rank() != 1 || b->dim(0) != channels)
    return make_error("B must have shape [{}] (one value per output channel), got {}", channels, shape_to_string(b->shape()));
  return b;
}

namespace {

// The fused residual and activation, for the runs oneDNN does not take.
Status apply_activation(const FusedActivation& activation, const Tensor* residual, Tensor& y) {
  ONNXKIT_TRY(check_residual(residual, y));
  if (activation.kind == FusedActivation::Kind::none && residual == nullptr) return {};
  return dispatch_float(y.dtype(), [&]<class T>() -> Status {
    T* p = y.mutable_data<T>();
    for (int64_t i = 0; i < y.numel(); ++i) {
      auto v = static_cast<compute_t<T>>(p[i]);
      if (residual != nullptr) v += static_cast<compute_t<T>>(residual->data<T>()[i]);
      v = activation.apply(v);
      p[i] = static_cast<T>(v);
    }
    return {};
  });
}

// A 1-D convolution whose stride divides its kernel (an STFT's frames, a
// learned filterbank: kernel 256, stride 128) as kernel/stride products per
// input channel: with x cut into frames of `stride` samples, output t reads
// frames t .. t + kernel/stride - 1, so tap block q of W times the frames
// from q on is one matrix product, and the sum of those is the convolution.
// oneDNN runs these through an im2col of its own at a third of the speed.
// Pads must be whole frames, and x too.
bool runs_as_frame_products(const ConvParams& p) {
  if (p.window.rank() != 1 || p.group != 1 || p.window.dilations[0] != 1) return false;
  const int64_t s = p.window.strides[0], k = p.window.kernel[0];
  return s >= 8 && k % s == 0 && p.window.in[0] % s == 0 && p.window.pads_begin[0] % s == 0 && p.window.pads_end[0] % s == 0 &&
         p.in_channels * (k / s) <= 64;
}

// Long outputs are shared among the threads by ranges: the products of a
// filterbank over a second of audio (16 channels, 499 frames, 511K
// multiply-adds) are each too small for gemm to share. Shorter ones leave
// the threads to gemm: a Silero-style STFT's 124 frames of 258 channels ran
// no faster shared by ranges.
void conv_as_frame_products(const ConvParams& p, const float* x, const float* w, const float* bias,
                            const FusedActivation& activation, const float* residual, float* y) {
  const int64_t s = p.window.strides[0], k = p.window.kernel[0], blocks = k / s;
  const int64_t frames = p.window.in[0] / s, lead = p.window.pads_begin[0] / s;  // pad frames before frame 0
  const int64_t t_out = p.window.out[0], c_in = p.in_channels, m = p.out_channels;
  const double macs = static_cast<double>(p.batch) * static_cast<double>(m * t_out) * static_cast<double>(c_in * k);
  constexpr int64_t kFewestSharedOutputs = 64;  // per thread
  const bool share = macs >= kParallelMacs && t_out >= 2 * kFewestSharedOutputs;
  parallel_ranges(t_out, share, [&](int64_t from, int64_t to) {
    for (int64_t n = 0; n < p.batch; ++n) {
      float* yn = y + n * m * t_out;
      for (int64_t o = 0; o < m; ++o) std::fill(yn + o * t_out + from, yn + o * t_out + to, bias != nullptr ? bias[o] : 0.0f);
      for (int64_t c = 0; c < c_in; ++c)
        for (int64_t q = 0; q < blocks; ++q) {
          // Output t reads frame t + q - lead of x: those inside x.
          const int64_t first = std::max({from, lead - q, int64_t{0}}), end = std::min({to, t_out, frames + lead - q});
          if (first >= end) continue;
          const float* frame = x + (n * c_in + c) * p.window.in[0] + (first + q - lead) * s;
          gemm(false, true, m, end - first, s, 1.0f, w + c * k + q * s, c_in * k, frame, s, 1.0f, yn + first, t_out);
        }
      if (activation.kind == FusedActivation::Kind::none && residual == nullptr) continue;
      for (int64_t o = 0; o < m; ++o) {
        float* row = yn + o * t_out;
        const float* added = residual != nullptr ? residual + (n * m + o) * t_out : nullptr;
        for (int64_t t = from; t < to; ++t) row[t] = activation.apply(added != nullptr ? row[t] + added[t] : row[t]);
      }
    }
  });
}

KernelFactory conv_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    ONNXKIT_ASSIGN(ConvAttributes attrs, read_conv_attributes(info));
    // With a static X shape and W an initializer, the geometry is settled
    // once, here. A declared shape that does not fit W is left for the run
    // to report: declared shapes of intermediate values can be stale.
    std::shared_ptr<const ConvParams> fixed;
    const Tensor* w = info.constant_input(1);
    const ir::Value* x_value = info.node().input(0);
    if (w != nullptr && x_value != nullptr) {
      auto shape = x_value->static_shape();
      if (shape && std::all_of(shape->begin(), shape->end(), [](int64_t d) { return d >= 0; })) {
        auto p = make_conv_params(attrs, *shape, w->shape());
        if (p.ok()) fixed = std::make_shared<const ConvParams>(std::move(p).value());
      }
    }
    const FusedActivation activation = fused_activation(info);
    // Constant float32 weights (and bias) run on oneDNN.
    std::shared_ptr<DnnlConvCache> dnnl;
    const Tensor* b = info.has_input(2) ? info.constant_input(2) : nullptr;
    if (w != nullptr && w->dtype() == DataType::float32 && (!info.has_input(2) || b != nullptr))
      dnnl = DnnlConvCache::shared(*w, b, activation, ActivationLayout::plain, info.options().prepack_weights);
    std::optional<size_t> residual_input;
    if (activation.add_residual) residual_input = FusedActivation::kResidualInput;
    std::shared_ptr<const FourierConv> fourier;
    if (w != nullptr && activation.kind == FusedActivation::Kind::none && !activation.add_residual)
      if (auto basis = FourierConv::recognize(*w)) fourier = std::make_shared<const FourierConv>(std::move(*basis));
    return ComputeFn([attrs, fixed, dnnl, fourier, activation, residual_input](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
      ONNXKIT_ASSIGN(const Tensor* w, ctx.tensor(1));
      if (w->dtype() != x->dtype()) return make_error("W has type {}, X has {}", to_string(w->dtype()), to_string(x->dtype()));
      ConvParams resolved;
      const ConvParams* p = fixed.get();
      if (p == nullptr || p->x_shape() != x->shape() || p->w_shape() != w->shape()) {
        ONNXKIT_ASSIGN(resolved, make_conv_params(attrs, x->shape(), w->shape()));
        p = &resolved;
      }
      ONNXKIT_ASSIGN(const Tensor* bias, read_bias(ctx, 2, *x, p->out_channels));
      const Tensor* residual = nullptr;
      if (residual_input) {
        ONNXKIT_ASSIGN(residual, ctx.tensor(*residual_input));
      }
      Tensor& y = ctx.output(0, x->dtype(), p->y_shape());
      if (fourier && x->dtype() == DataType::float32 && y.numel() > 0 && FourierConv::fits(*p)) {
        fourier->run(*p, x->data<float>(), bias != nullptr ? bias->data<float>() : nullptr, y.mutable_data<float>());
        return {};
      }
      if (x->dtype() == DataType::float32 && y.numel() > 0 && runs_as_frame_products(*p)) {
        ONNXKIT_TRY(check_residual(residual, y));
        conv_as_frame_products(*p, x->data<float>(), w->data<float>(), bias != nullptr ? bias->data<float>() : nullptr,
                               activation, residual != nullptr ? residual->data<float>() : nullptr, y.mutable_data<float>());
        return {};
      }
      if (dnnl && x->dtype() == DataType::float32 && y.numel() > 0)
        if (auto engine = dnnl->get(*p)) return engine->run(*x, y, residual);
      ONNXKIT_TRY(conv_reference(*p, *x, *w, bias, y));
      return apply_activation(activation, residual, y);
    });
  });
}

// --- ConvTranspose ------------------------------------------------------------

struct ConvTransposeAttributes {
  WindowAttributes window;
  int64_t group = 1;
  std::vector<int64_t> output_padding, output_shape;
};

struct ConvTransposeParams {
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
  // The transposed view: `in` is the output image Y, `out` is the grid of X.
  WindowGeometry window;
};

Result<ConvTransposeParams> make_conv_transpose_params(const ConvTransposeAttributes& a, const Shape& x, const Shape& w) {
  ONNXKIT_TRY(check_image_and_filter(x, w));
  const size_t rank = x.size() - 2;
  ConvTransposeParams p;
  p.batch = x[0];
  p.in_channels = x[1];
  p.group = a.group;
  if (w[0] != p.in_channels)
    return make_error("W {} has {} input channels (dim 0), X {} has {}", shape_to_string(w), w[0], shape_to_string(x),
                      p.in_channels);
  if (p.in_channels % p.group != 0)
    return make_error("X has {} channels, which group {} does not divide", p.in_channels, p.group);
  p.out_channels = w[1] * p.group;
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  if (!a.window.kernel_shape.empty() && a.window.kernel_shape != kernel)
    return make_error("kernel_shape {} does not match the spatial dims of W {}", shape_to_string(a.window.kernel_shape),
                      shape_to_string(w));
  for (int64_t k : kernel)
    if (k < 1) return make_error("W {} has an empty kernel dim", shape_to_string(w));

  auto per_axis = [&](const std::vector<int64_t>& v, const char* name, int64_t fallback) -> Result<std::vector<int64_t>> {
    if (v.empty()) return std::vector<int64_t>(rank, fallback);
    if (v.size() != rank)
      return make_error("{} {} has {} values, X has {} spatial dims", name, shape_to_string(v), v.size(), rank);
    return v;
  };
  WindowGeometry& g = p.window;
  g.out.assign(x.begin() + 2, x.end());
  g.kernel = kernel;
  ONNXKIT_ASSIGN(g.strides, per_axis(a.window.strides, "strides", 1));
  ONNXKIT_ASSIGN(g.dilations, per_axis(a.window.dilations, "dilations", 1));
  ONNXKIT_ASSIGN(std::vector<int64_t> out_pad, per_axis(a.output_padding, "output_padding", 0));
  for (int64_t v : out_pad)
    if (v < 0) return make_error("output_padding {} has a negative value", shape_to_string(out_pad));
  std::vector<int64_t> target;  // output_shape, spatial dims only
  if (!a.output_shape.empty()) {
    if (a.output_shape.size() == rank) target = a.output_shape;
    else if (a.output_shape.size() == rank + 2) target.assign(a.output_shape.begin() + 2, a.output_shape.end());
    else
      return make_error("output_shape {} has {} values, X has {} spatial dims", shape_to_string(a.output_shape),
                        a.output_shape.size(), rank);
    for (int64_t v : target)
      if (v < 0) return make_error("output_shape {} has a negative value", shape_to_string(a.output_shape));
  }
  if (a.window.auto_pad == AutoPad::notset && target.empty() && !a.window.pads.empty() && a.window.pads.size() != 2 * rank)
    return make_error("pads {} has {} values, expected {} (begin and end of {} spatial dims)", shape_to_string(a.window.pads),
                      a.window.pads.size(), 2 * rank, rank);
  g.in.assign(rank, 0);
  g.pads_begin.assign(rank, 0);
  g.pads_end.assign(rank, 0);
  for (size_t i = 0; i < rank; ++i) {
    // The full (unpadded) extent the scatter covers along this axis.
    const int64_t full = g.strides[i] * (g.out[i] - 1) + out_pad[i] + (g.kernel[i] - 1) * g.dilations[i] + 1;
    const bool same = a.window.auto_pad == AutoPad::same_upper || a.window.auto_pad == AutoPad::same_lower;
    if (!target.empty() || same) {
      g.in[i] = !target.empty() ? target[i] : g.out[i] * g.strides[i];
      // Negative totals (an output larger than the scatter) are allowed: the
      // extra positions receive only the bias.
      const int64_t total = full - g.in[i];
      const int64_t half = floor_div(total, 2);
      if (a.window.auto_pad == AutoPad::same_upper) {
        g.pads_begin[i] = half;
        g.pads_end[i] = total - half;
      } else {
        g.pads_begin[i] = total - half;
        g.pads_end[i] = half;
      }
    } else {
      if (a.window.auto_pad == AutoPad::notset && !a.window.pads.empty()) {
        g.pads_begin[i] = a.window.pads[i];
        g.pads_end[i] = a.window.pads[rank + i];
      }
      g.in[i] = full - g.pads_begin[i] - g.pads_end[i];
      if (g.in[i] < 0)
        return make_error("spatial dim {}: pads {} remove more than the {} output positions", i, shape_to_string(a.window.pads),
                          full);
    }
  }
  Shape y_shape{p.batch, p.out_channels};
  y_shape.insert(y_shape.end(), g.in.begin(), g.in.end());
  ONNXKIT_TRY(checked_size(y_shape, "Y"));
  return p;
}

// True when each input pixel of a ConvTranspose writes a patch of Y of its
// own: kernel = stride, no dilation, pads or output padding (the learned 2x
// upsampling of U-Nets and of DBNet's head). 1-D or 2-D.
bool patches_do_not_overlap(const ConvTransposeParams& p) {
  const WindowGeometry& g = p.window;
  if (g.rank() < 1 || g.rank() > 2) return false;
  for (size_t i = 0; i < g.rank(); ++i)
    if (g.kernel[i] != g.strides[i] || g.dilations[i] != 1 || g.pads_begin[i] != 0 || g.pads_end[i] != 0 ||
        g.in[i] != g.out[i] * g.strides[i])
      return false;
  return true;
}

// A 2x2 ConvTranspose's weights, `wt` as conv_transpose_matrices lays them
// out, as patch_tile_2x2 reads them: per group, tile of three output
// channels and input channel, the tile's 3 x 4 weights (zero past the
// group's channels).
std::vector<float> pack_patches_2x2(const float* wt, int64_t groups, int64_t cg, int64_t mg) {
  const int64_t tiles = ceil_div(mg, 3), rows = mg * 4;
  std::vector<float> packed(static_cast<size_t>(groups * tiles * cg * 12), 0.0f);
  for (int64_t gi = 0; gi < groups; ++gi)
    for (int64_t m = 0; m < mg; ++m)
      for (int64_t tap = 0; tap < 4; ++tap)
        for (int64_t c = 0; c < cg; ++c)
          packed[static_cast<size_t>(((gi * tiles + m / 3) * cg + c) * 12 + m % 3 * 4 + tap)] =
              wt[(gi * rows + m * 4 + tap) * cg + c];
  return packed;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define ONNXKIT_PATCHES_AVX2 1
// v bounded by Relu or Clip; the bound first: max and min return their
// second operand when one is NaN, and NaN goes through as in activate_floats.
__attribute__((target("avx2,fma"))) inline __m256 bounded(const FusedActivation& bound, __m256 lower, __m256 upper, __m256 v) {
  if (bound.kind != FusedActivation::Kind::none) v = _mm256_max_ps(lower, v);
  if (bound.kind == FusedActivation::Kind::clip) v = _mm256_min_ps(upper, v);
  return v;
}

// A 2x2 kernel of stride 2 (DBNet's head, U-Nets' upsampling), on AVX2:
// each input row gives two output rows. For eight inputs of a row at a time
// (or 24 with one output channel), a tile of up to three output channels
// keeps its four taps' sums in registers over the input channels; the two
// taps of each output row are then interleaved straight into Y, bounded
// there by Relu or Clip (`bound`; other activations follow). `packed` is
// pack_patches_2x2's. DBNet's 24 -> 24 head on 160 x 160,
// with its Relu, took 2.35 ms against 4.26 by a product per row into a
// column buffer and a scatter (one thread, AVX2).
template <int Channels, int Blocks>
__attribute__((target("avx2,fma"))) void patch_tile_2x2(const float* x, int64_t plane, int64_t cg, const float* packed,
                                                        const float* bias, const FusedActivation& bound, int64_t channels,
                                                        float* y, int64_t y_plane, int64_t yw) {
  __m256 acc[Channels][4][Blocks];
#pragma GCC unroll 4
  for (int m = 0; m < Channels; ++m)
#pragma GCC unroll 4
    for (int tap = 0; tap < 4; ++tap)
#pragma GCC unroll 4
      for (int k = 0; k < Blocks; ++k) acc[m][tap][k] = _mm256_setzero_ps();
  for (int64_t c = 0; c < cg; ++c) {
    __m256 xv[Blocks];
#pragma GCC unroll 4
    for (int k = 0; k < Blocks; ++k) xv[k] = _mm256_loadu_ps(x + c * plane + 8 * k);
    const float* w = packed + c * 12;
#pragma GCC unroll 4
    for (int m = 0; m < Channels; ++m)
#pragma GCC unroll 4
      for (int tap = 0; tap < 4; ++tap) {
        const __m256 wv = _mm256_broadcast_ss(w + m * 4 + tap);
#pragma GCC unroll 4
        for (int k = 0; k < Blocks; ++k) acc[m][tap][k] = _mm256_fmadd_ps(xv[k], wv, acc[m][tap][k]);
      }
  }
  const __m256 lower = _mm256_set1_ps(bound.kind == FusedActivation::Kind::clip ? bound.min : 0.0f);
  const __m256 upper = _mm256_set1_ps(bound.max);
#pragma GCC unroll 4
  for (int m = 0; m < Channels; ++m) {
    if (m >= channels) break;
    const __m256 shift = _mm256_set1_ps(bias != nullptr ? bias[m] : 0.0f);
#pragma GCC unroll 2
    for (int a = 0; a < 2; ++a) {
      float* out = y + m * y_plane + a * yw;
#pragma GCC unroll 4
      for (int k = 0; k < Blocks; ++k) {
        const __m256 even = acc[m][a * 2][k], odd = acc[m][a * 2 + 1][k];
        const __m256 low = _mm256_unpacklo_ps(even, odd), high = _mm256_unpackhi_ps(even, odd);
        _mm256_storeu_ps(out + 16 * k,
                         bounded(bound, lower, upper, _mm256_add_ps(_mm256_permute2f128_ps(low, high, 0x20), shift)));
        _mm256_storeu_ps(out + 16 * k + 8,
                         bounded(bound, lower, upper, _mm256_add_ps(_mm256_permute2f128_ps(low, high, 0x31), shift)));
      }
    }
  }
}

// One input row i of image n, group gi, through patch_tile_2x2; the last
// inputs of a row that fill no register by the scalar sum.
__attribute__((target("avx2,fma"))) void patch_row_2x2(const ConvTransposeParams& p, const float* x, const float* packed,
                                                       const float* bias, const FusedActivation& bound, float* y, int64_t n,
                                                       int64_t gi, int64_t i) {
  const WindowGeometry& g = p.window;
  const int64_t xh = g.out[0], xw = g.out[1], yw = 2 * xw, y_plane = 4 * xh * xw;
  const int64_t cg = p.in_channels / p.group, mg = p.out_channels / p.group, tiles = ceil_div(mg, 3);
  const float* row = x + ((n * p.in_channels + gi * cg) * xh + i) * xw;
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t first = gi * mg + t * 3, channels = std::min<int64_t>(3, mg - t * 3);
    const float* w = packed + (gi * tiles + t) * cg * 12;
    const float* shift = bias != nullptr ? bias + first : nullptr;
    float* out = y + (n * p.out_channels + first) * y_plane + 2 * i * yw;
    int64_t j = 0;
    if (channels == 1)
      for (; j + 24 <= xw; j += 24)
        patch_tile_2x2<1, 3>(row + j, xh * xw, cg, w, shift, bound, channels, out + 2 * j, y_plane, yw);
    for (; j + 8 <= xw; j += 8) {
      if (channels == 1) patch_tile_2x2<1, 1>(row + j, xh * xw, cg, w, shift, bound, channels, out + 2 * j, y_plane, yw);
      else patch_tile_2x2<3, 1>(row + j, xh * xw, cg, w, shift, bound, channels, out + 2 * j, y_plane, yw);
    }
    for (; j < xw; ++j)
      for (int64_t m = 0; m < channels; ++m)
        for (int64_t tap = 0; tap < 4; ++tap) {
          float sum = shift != nullptr ? shift[m] : 0.0f;
          for (int64_t c = 0; c < cg; ++c) sum += row[c * xh * xw + j] * w[c * 12 + m * 4 + tap];
          out[m * y_plane + tap / 2 * yw + 2 * j + tap % 2] = bound.apply(sum);
        }
  }
}
#else
#define ONNXKIT_PATCHES_AVX2 0
#endif

// Such a ConvTranspose, float32: per input row one product of the weights
// (`wt`: per group [M/group * kernel x C/group]) by that row gives all its
// patches, which go into Y with the bias. The general path's image-sized
// column buffer, zeroed Y, col2im and bias passes took DBNet's 24-channel
// 160 x 160 -> 320 x 320 head 5.2 ms (ORT's 2.8).
// `packed_2x2`: a constant W packed by pack_patches_2x2 once, or null.
void conv_transpose_patches(const ConvTransposeParams& p, const float* x, const float* wt, const float* packed_2x2,
                            const float* bias, const FusedActivation& activation, float* y) {
  const WindowGeometry& g = p.window;
  const bool two_d = g.rank() == 2;
  const int64_t kh = two_d ? g.kernel[0] : 1, kw = g.kernel.back(), xh = two_d ? g.out[0] : 1, xw = g.out.back();
  const int64_t groups = p.group, cg = p.in_channels / groups, mg = p.out_channels / groups, rows = mg * kh * kw;
  const int64_t yw = xw * kw, y_plane = xh * kh * yw;
  const int64_t items = p.batch * groups * xh;
  const double macs = static_cast<double>(items) * static_cast<double>(rows * xw * cg);
#if ONNXKIT_PATCHES_AVX2
  if (two_d && kh == 2 && kw == 2 && cpu_has_avx2_fma()) {
    std::vector<float> own;  // W packed for this run when it is not a constant
    if (packed_2x2 == nullptr) {
      own = pack_patches_2x2(wt, groups, cg, mg);
      packed_2x2 = own.data();
    }
    const auto split = activation.split_bound();
    const FusedActivation &bound = split.first, &after = split.second;
    parallel_ranges(items, macs >= kParallelMacs, [&](int64_t from, int64_t to) {
      for (int64_t item = from; item < to; ++item) {
        const int64_t i = item % xh, gi = item / xh % groups, n = item / (xh * groups);
        patch_row_2x2(p, x, packed_2x2, bias, bound, y, n, gi, i);
        if (after.kind == FusedActivation::Kind::none) continue;
        for (int64_t m = gi * mg; m < (gi + 1) * mg; ++m)
          activate_floats(after, y + (n * p.out_channels + m) * y_plane + 2 * i * yw, 2 * yw);
      }
    });
    return;
  }
#endif
  parallel_ranges(items, macs >= kParallelMacs, [&](int64_t from, int64_t to) {
    thread_local std::vector<float> col;
    col.resize(static_cast<size_t>(rows * xw));
    for (int64_t item = from; item < to; ++item) {
      const int64_t i = item % xh, gi = item / xh % groups, n = item / (xh * groups);
      gemm(false, false, rows, xw, cg, 1.0f, wt + gi * rows * cg, cg, x + ((n * p.in_channels + gi * cg) * xh + i) * xw, xh * xw,
           0.0f, col.data(), xw);
      for (int64_t m = 0; m < mg; ++m) {
        const int64_t channel = gi * mg + m;
        const float shift = bias != nullptr ? bias[channel] : 0.0f;
        for (int64_t a = 0; a < kh; ++a) {
          float* out = y + (n * p.out_channels + channel) * y_plane + (i * kh + a) * yw;
          for (int64_t b = 0; b < kw; ++b) {
            const float* patch = col.data() + ((m * kh + a) * kw + b) * xw;
            for (int64_t j = 0; j < xw; ++j) out[j * kw + b] = patch[j] + shift;
          }
          activate_floats(activation, out, yw);
        }
      }
    }
  });
}

// W [C, M/group, k...] as the products read it: per group the transpose
// of its [C/group x M/group * kernel] matrix. (oneDNN's sgemm reading W
// transposed in place made DBNet's 2x upsampling 20% slower.)
template <class T> std::vector<T> conv_transpose_matrices(const T* w, const Shape& w_shape, int64_t group) {
  const int64_t cg = w_shape[0] / group, rows = w_shape[0] > 0 ? shape_size(w_shape) / w_shape[0] : 0;
  std::vector<T> wt(static_cast<size_t>(group * rows * cg));
  for (int64_t gi = 0; gi < group; ++gi)
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t r = 0; r < rows; ++r) wt[(gi * rows + r) * cg + c] = w[(gi * cg + c) * rows + r];
  return wt;
}

// `wt` is W as conv_transpose_matrices lays it out; `packed_2x2` as
// conv_transpose_patches takes it.
template <class T>
void conv_transpose_compute(const ConvTransposeParams& p, const T* x, const T* wt, const float* packed_2x2, const T* bias,
                            const FusedActivation& activation, T* y) {
  const WindowGeometry& g = p.window;
  const int64_t groups = p.group, cg = p.in_channels / groups, mg = p.out_channels / groups;
  const int64_t ksize = g.kernel_size(), rows = mg * ksize;
  const int64_t grid = g.out_size(), image = g.in_size();
  const int64_t y_numel = p.batch * p.out_channels * image;
  if (p.batch == 0 || p.out_channels == 0 || image == 0) return;
  const bool parallel = p.batch * p.out_channels * ksize * grid * std::max<int64_t>(cg, 1) >= kParallelWork;

  if constexpr (std::is_same_v<T, float>)
    if (patches_do_not_overlap(p) && cg > 0) return conv_transpose_patches(p, x, wt, packed_2x2, bias, activation, y);
  std::fill(y, y + y_numel, T(0));

  std::vector<T> col(static_cast<size_t>(rows * grid));
  const int64_t tile = 256;
  const int64_t tiles = (grid + tile - 1) / tile;
  for (int64_t n = 0; n < p.batch; ++n) {
    for (int64_t gi = 0; gi < groups; ++gi) {
      const T* xg = x + (n * p.in_channels + gi * cg) * grid;
      const T* wg = wt + gi * rows * cg;
      parallel_for(tiles, parallel, [&](int64_t t) {
        const int64_t p0 = t * tile, width = std::min(grid, p0 + tile) - p0;
        gemm(false, false, rows, width, cg, T(1), wg, cg, xg + p0, grid, T(0), col.data() + p0, grid);
      });
      T* yg = y + (n * p.out_channels + gi * mg) * image;
#pragma omp parallel for if (parallel && mg > 1) schedule(dynamic)
      for (int64_t m = 0; m < mg; ++m) col2im(col.data() + m * ksize * grid, 1, g, yg + m * image);
    }
  }
  if (bias != nullptr)
    for (int64_t n = 0; n < p.batch; ++n)
      for (int64_t m = 0; m < p.out_channels; ++m) {
        T* plane = y + (n * p.out_channels + m) * image;
        for (int64_t i = 0; i < image; ++i) plane[i] += bias[m];
      }
  if constexpr (std::is_same_v<T, float>) {
    activate_floats(activation, y, y_numel);
  } else {
    if (activation.kind != FusedActivation::Kind::none)
      for (int64_t i = 0; i < y_numel; ++i) y[i] = activation.apply(y[i]);
  }
}

// W and B of a ConvTranspose with the inference BatchNormalization after it
// folded in (FusedBatchNorm): per output channel m, with the
// normalization's y = a x + b, W'[c, j, ...] = W[c, j, ...] a[m] (m = j of
// c's group) and B'[m] = B[m] a[m] + b[m].
Result<std::pair<Tensor, Tensor>> fold_batch_norm(const KernelInfo& info, int64_t group, double epsilon) {
  const Tensor* w = info.constant_input(1);
  const Tensor* b = info.has_input(2) ? info.constant_input(2) : nullptr;
  if (w == nullptr || w->dtype() != DataType::float32 || w->rank() < 3 || (info.has_input(2) && b == nullptr) ||
      w->dim(0) % group != 0)
    return make_error("the BatchNormalization after it needs constant float32 weights and bias to fold into");
  const int64_t in_channels = w->dim(0), per_group = w->dim(1), channels = per_group * group;
  const int64_t kernel = in_channels * per_group > 0 ? w->numel() / (in_channels * per_group) : 0;
  std::array<const Tensor*, 4> norm{};  // scale, B, mean, var
  for (size_t i = 0; i < 4; ++i) {
    norm[i] = info.constant_input(FusedBatchNorm::kInput + i);
    if (norm[i] == nullptr || norm[i]->dtype() != DataType::float32 || norm[i]->numel() != channels)
      return make_error("the BatchNormalization after it needs constant float32 statistics of {} values", channels);
  }
  if (b != nullptr && (b->dtype() != DataType::float32 || b->numel() != channels))
    return make_error("B has {} values for {} output channels", b->numel(), channels);
  const BatchNormAffine affine = batch_norm_affine(norm, epsilon);
  const std::vector<double>& scale = affine.a;
  Tensor folded_b(DataType::float32, {channels});
  for (int64_t m = 0; m < channels; ++m)
    folded_b.mutable_data<float>()[m] = static_cast<float>(
        (b != nullptr ? b->data<float>()[m] : 0.0f) * scale[static_cast<size_t>(m)] + affine.b[static_cast<size_t>(m)]);
  Tensor folded_w(DataType::float32, w->shape());
  for (int64_t c = 0; c < in_channels; ++c)
    for (int64_t j = 0; j < per_group; ++j) {
      const double s = scale[static_cast<size_t>(c / (in_channels / group) * per_group + j)];
      for (int64_t k = 0; k < kernel; ++k) {
        const int64_t at = (c * per_group + j) * kernel + k;
        folded_w.mutable_data<float>()[at] = static_cast<float>(w->data<float>()[at] * s);
      }
    }
  return std::pair{std::move(folded_w), std::move(folded_b)};
}

KernelFactory conv_transpose_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    ConvTransposeAttributes a;
    ONNXKIT_ASSIGN(a.window, read_window_attributes(info));
    a.window.ceil_mode = false;
    a.group = info.attr_int("group", 1);
    if (a.group < 1) return make_error("group is {}, must be at least 1", a.group);
    a.output_padding = info.attr_ints("output_padding");
    a.output_shape = info.attr_ints("output_shape");
    ONNXKIT_TRY(check_attribute_range(a.output_padding, "attribute output_padding"));
    ONNXKIT_TRY(check_attribute_range(a.output_shape, "attribute output_shape"));
    const FusedActivation activation = fused_activation(info);
    std::shared_ptr<const std::pair<Tensor, Tensor>> folded;  // W and B with a fused BatchNormalization
    if (const FusedBatchNorm norm = fused_batch_norm(info); norm.fused) {
      ONNXKIT_ASSIGN(auto made, fold_batch_norm(info, a.group, norm.epsilon));
      folded = std::make_shared<const std::pair<Tensor, Tensor>>(std::move(made));
    }
    // A constant float32 W is laid out for the products once.
    std::shared_ptr<const std::vector<float>> constant_wt;
    const Tensor* constant_w = folded ? &folded->first : info.constant_input(1);
    if (constant_w != nullptr && constant_w->dtype() == DataType::float32 && constant_w->rank() >= 3 &&
        constant_w->dim(0) % a.group == 0)
      constant_wt = std::make_shared<const std::vector<float>>(
          conv_transpose_matrices(constant_w->data<float>(), constant_w->shape(), a.group));
    std::shared_ptr<const std::vector<float>> constant_packed;  // a 2x2 kernel's, for its AVX2 tiles
    if (constant_wt && constant_w->rank() == 4 && constant_w->dim(2) == 2 && constant_w->dim(3) == 2)
      constant_packed = std::make_shared<const std::vector<float>>(
          pack_patches_2x2(constant_wt->data(), a.group, constant_w->dim(0) / a.group, constant_w->dim(1)));
    return ComputeFn([a, activation, folded, constant_wt, constant_packed](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
      const Tensor* w = folded ? &folded->first : nullptr;
      if (!folded) {
        ONNXKIT_ASSIGN(w, ctx.tensor(1));
      }
      if (w->dtype() != x->dtype()) return make_error("W has type {}, X has {}", to_string(w->dtype()), to_string(x->dtype()));
      ONNXKIT_ASSIGN(ConvTransposeParams p, make_conv_transpose_params(a, x->shape(), w->shape()));
      const Tensor* bias = folded ? &folded->second : nullptr;
      if (!folded) {
        ONNXKIT_ASSIGN(bias, read_bias(ctx, 2, *x, p.out_channels));
      }
      Shape y_shape{p.batch, p.out_channels};
      y_shape.insert(y_shape.end(), p.window.in.begin(), p.window.in.end());
      Tensor& y = ctx.output(0, x->dtype(), y_shape);
      return compute_in_float({x, w, bias}, y, [&]<class C>(const std::vector<const Tensor*>& in, Tensor& out) -> Status {
        std::vector<C> wt;
        const C* matrices = nullptr;
        const float* packed = nullptr;
        if constexpr (std::is_same_v<C, float>) {
          if (constant_wt) matrices = constant_wt->data();  // W is float32, so is X (checked above)
          if (constant_packed) packed = constant_packed->data();
        }
        if (matrices == nullptr) {
          wt = conv_transpose_matrices(in[1]->data<C>(), w->shape(), a.group);
          matrices = wt.data();
        }
        conv_transpose_compute<C>(p, in[0]->data<C>(), matrices, packed, in[2] ? in[2]->data<C>() : nullptr, activation,
                                  out.mutable_data<C>());
        return {};
      });
    });
  });
}

// --- Col2Im ---------------------------------------------------------------------

Result<std::vector<int64_t>> read_shape_input(KernelContext& ctx, size_t index, const char* name) {
  ONNXKIT_ASSIGN(const Tensor* t, ctx.tensor(index));
  if (t->dtype() != DataType::int64 || t->rank() != 1)
    return make_error("{} must be a 1-D int64 tensor, got {}{}", name, to_string(t->dtype()), shape_to_string(t->shape()));
  return std::vector<int64_t>(t->data<int64_t>(), t->data<int64_t>() + t->numel());
}

KernelFactory col2im_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    ONNXKIT_ASSIGN(WindowAttributes attrs, read_window_attributes(info));
    attrs.auto_pad = AutoPad::notset;
    attrs.ceil_mode = false;
    return ComputeFn([attrs](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* input, ctx.tensor(0));
      ONNXKIT_ASSIGN(std::vector<int64_t> image, read_shape_input(ctx, 1, "image_shape"));
      ONNXKIT_ASSIGN(std::vector<int64_t> block, read_shape_input(ctx, 2, "block_shape"));
      if (image.empty() || block.size() != image.size())
        return make_error("image_shape {} and block_shape {} must have the same, non-zero, number of dims",
                          shape_to_string(image), shape_to_string(block));
      for (int64_t v : block)
        if (v < 1) return make_error("block_shape {} has a dim below 1", shape_to_string(block));
      for (int64_t v : image)
        if (v < 0) return make_error("image_shape {} has a negative dim", shape_to_string(image));
      ONNXKIT_TRY(check_attribute_range(image, "image_shape"));
      ONNXKIT_TRY(check_attribute_range(block, "block_shape"));
      if (input->rank() != 3)
        return make_error("input must have shape [N, C * prod(block_shape), L], got {}", shape_to_string(input->shape()));
      ONNXKIT_ASSIGN(WindowGeometry g, resolve_window(attrs, image, block));
      const int64_t ksize = g.kernel_size();
      if (input->dim(1) % ksize != 0)
        return make_error("input dim 1 ({}) is not a multiple of the block size {} (block_shape {})", input->dim(1), ksize,
                          shape_to_string(block));
      if (input->dim(2) != g.out_size())
        return make_error("input dim 2 is {}, but image_shape {} holds {} blocks {} (grid {})", input->dim(2),
                          shape_to_string(image), g.out_size(), shape_to_string(block), shape_to_string(g.out));
      const int64_t n_batch = input->dim(0), channels = input->dim(1) / ksize;
      Shape y_shape{n_batch, channels};
      y_shape.insert(y_shape.end(), image.begin(), image.end());
      ONNXKIT_TRY(checked_size(y_shape, "output"));
      Tensor& y = ctx.output(0, input->dtype(), y_shape);
      return compute_in_float({input}, y, [&]<class C>(const std::vector<const Tensor*>& in, Tensor& out) -> Status {
        const C* col = in[0]->data<C>();
        C* image = out.mutable_data<C>();
        const int64_t planes = n_batch * channels, in_size = g.in_size(), rows = ksize * g.out_size();
        std::fill(image, image + planes * in_size, C(0));
#pragma omp parallel for if (planes > 1 && planes * rows >= kParallelWork) schedule(dynamic)
        for (int64_t q = 0; q < planes; ++q) col2im(col + q * rows, 1, g, image + q * in_size);
        return {};
      });
    });
  });
}

}  // namespace

void register_conv(KernelRegistry& r) {
  // Conv and ConvTranspose kept their semantics from opset 1 (later versions
  // only widened types and clarified text).
  r.add("", "Conv", 1, kLatestOpset, conv_kernel(), {.blocked = OpTraits::Blocked::own_kernel});  // blocked.h
  r.add("", "ConvTranspose", 1, kLatestOpset, conv_transpose_kernel());
  r.add("", "Col2Im", 18, kLatestOpset, col2im_kernel());
}

}  // namespace onnxkit::runtime::nn
