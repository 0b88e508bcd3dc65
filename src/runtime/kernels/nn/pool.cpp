// Pooling: MaxPool (with Indices), AveragePool, LpPool, their global forms,
// and MaxUnpool.

#include <omp.h>

#include <algorithm>
#include <any>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "runtime/kernels/cpu_clones.h"
#include "runtime/kernels/lanes.h"
#include "runtime/kernels/nn/nn.h"
#include "runtime/parallel.h"

namespace onnxkit::runtime::nn {
namespace {

enum class PoolKind { max, average, lp };

struct PoolAttributes {
  PoolKind kind = PoolKind::max;
  WindowAttributes window;
  bool count_include_pad = false;     // AveragePool
  double p = 2;                       // LpPool
  bool column_major_indices = false;  // MaxPool storage_order = 1
};

// Where the taps of window o fall along one axis.
struct AxisWindow {
  int64_t start = 0;       // input index of tap 0 (may be in the padding)
  int64_t lo = 0, hi = 0;  // taps [lo, hi) are inside the input
  int64_t padded = 0;      // taps inside the padded input (count_include_pad)
};

std::vector<std::vector<AxisWindow>> axis_windows(const WindowGeometry& g) {
  std::vector<std::vector<AxisWindow>> axes(g.rank());
  for (size_t d = 0; d < g.rank(); ++d) {
    const int64_t k = g.kernel[d], dil = g.dilations[d];
    for (int64_t o = 0; o < g.out[d]; ++o) {
      AxisWindow w;
      w.start = o * g.strides[d] - g.pads_begin[d];
      w.lo = std::clamp<int64_t>(ceil_div(-w.start, dil), 0, k);
      w.hi = std::clamp<int64_t>(floor_div(g.in[d] - 1 - w.start, dil) + 1, w.lo, k);
      // Taps within [-pads_begin, in + pads_end): with ceil_mode a window may
      // reach past the end padding, and those taps never count.
      const int64_t plo = std::clamp<int64_t>(ceil_div(-g.pads_begin[d] - w.start, dil), 0, k);
      const int64_t phi = std::clamp<int64_t>(floor_div(g.in[d] + g.pads_end[d] - 1 - w.start, dil) + 1, plo, k);
      w.padded = phi - plo;
      axes[d].push_back(w);
    }
  }
  return axes;
}

// |v|^p and its inverse, with the usual p of 1 and 2 spared a pow.
inline double lp_term(double v, double p) { return p == 2 ? v * v : p == 1 ? std::abs(v) : std::pow(std::abs(v), p); }
inline double lp_root(double sum, double p) { return p == 2 ? std::sqrt(sum) : p == 1 ? sum : std::pow(sum, 1.0 / p); }

// Pools every (n, c) plane of x into y; `indices` (MaxPool only) may be null.
template <class T>
void pool_compute(const PoolAttributes& a, const WindowGeometry& g, int64_t planes, const T* x, T* y, int64_t* indices) {
  using C = compute_t<T>;
  const size_t rank = g.rank();
  const int64_t in_size = g.in_size(), out_size = g.out_size();
  const auto axes = axis_windows(g);
  std::vector<int64_t> row_strides(rank, 1), col_strides(rank, 1);
  for (size_t d = rank; d-- > 1;) row_strides[d - 1] = row_strides[d] * g.in[d];
  for (size_t d = 1; d < rank; ++d) col_strides[d] = col_strides[d - 1] * g.in[d - 1];
  const int64_t last = static_cast<int64_t>(rank) - 1;
  const int64_t dil_last = g.dilations[last];
  const bool parallel = planes > 1 && planes * out_size * g.kernel_size() >= kParallelWork;

#pragma omp parallel for if (parallel) schedule(static)
  for (int64_t q = 0; q < planes; ++q) {
    const T* xp = x + q * in_size;
    std::vector<int64_t> o(rank, 0), t(rank, 0);
    for (int64_t j = 0; j < out_size; ++j) {
      bool empty = false;
      int64_t padded = 1, valid = 1;
      for (size_t d = 0; d < rank; ++d) {
        const AxisWindow& w = axes[d][static_cast<size_t>(o[d])];
        empty = empty || w.lo >= w.hi;
        padded *= w.padded;
        valid *= w.hi - w.lo;
      }
      C best = a.kind == PoolKind::max ? (std::numeric_limits<C>::has_infinity ? -std::numeric_limits<C>::infinity()
                                                                               : std::numeric_limits<C>::lowest())
                                       : C(0);
      int64_t best_at = -1;
      double sum = 0;
      if (!empty) {
        // Taps along every axis but the last, counted like an odometer; the
        // last axis is the inner loop.
        for (size_t d = 0; d + 1 < rank; ++d) t[d] = axes[d][static_cast<size_t>(o[d])].lo;
        const AxisWindow& wl = axes[static_cast<size_t>(last)][static_cast<size_t>(o[static_cast<size_t>(last)])];
        while (true) {
          int64_t base = 0;
          for (size_t d = 0; d + 1 < rank; ++d)
            base += (axes[d][static_cast<size_t>(o[d])].start + t[d] * g.dilations[d]) * row_strides[d];
          const int64_t first = base + wl.start;  // the plane offset of tap 0 on the last axis
          if (a.kind == PoolKind::max) {
            for (int64_t k = wl.lo; k < wl.hi; ++k) {
              const C v = static_cast<C>(xp[first + k * dil_last]);
              // NaNs never win; the first of equal maxima does.
              if (v > best || (best_at < 0 && v == v)) {
                best = v;
                best_at = first + k * dil_last;
              }
            }
          } else if (a.kind == PoolKind::average) {
            for (int64_t k = wl.lo; k < wl.hi; ++k) sum += static_cast<double>(static_cast<C>(xp[first + k * dil_last]));
          } else {
            for (int64_t k = wl.lo; k < wl.hi; ++k)
              sum += lp_term(static_cast<double>(static_cast<C>(xp[first + k * dil_last])), a.p);
          }
          bool more = false;
          for (size_t d = rank - 1; d-- > 0;) {
            if (++t[d] < axes[d][static_cast<size_t>(o[d])].hi) {
              more = true;
              break;
            }
            t[d] = axes[d][static_cast<size_t>(o[d])].lo;
          }
          if (!more) break;
        }
      }
      C result;
      if (a.kind == PoolKind::max) {
        result = best;
      } else if (a.kind == PoolKind::average) {
        const int64_t count = a.count_include_pad ? padded : valid;
        result = static_cast<C>(count > 0 ? sum / static_cast<double>(count) : 0.0);
      } else {
        result = static_cast<C>(lp_root(sum, a.p));
      }
      y[q * out_size + j] = static_cast<T>(result);
      if (indices != nullptr) {
        int64_t at = 0;
        if (best_at >= 0) {
          // best_at is the row-major offset in the plane; storage_order 1
          // reports it column-major.
          if (a.column_major_indices) {
            int64_t rest = best_at;
            for (size_t d = 0; d < rank; ++d) {
              at += (rest / row_strides[d]) * col_strides[d];
              rest %= row_strides[d];
            }
          } else {
            at = best_at;
          }
        }
        indices[q * out_size + j] = q * in_size + at;
      }
      for (size_t d = rank; d-- > 0;) {
        if (++o[d] < g.out[d]) break;
        o[d] = 0;
      }
    }
  }
}

Result<PoolAttributes> read_pool_attributes(const KernelInfo& info, PoolKind kind) {
  PoolAttributes a;
  a.kind = kind;
  ONNXKIT_ASSIGN(a.window, read_window_attributes(info));
  if (a.window.kernel_shape.empty()) return make_error("kernel_shape is required");
  a.count_include_pad = info.attr_int("count_include_pad", 0) != 0;
  if (kind == PoolKind::average) add_pads_before(info, a.window, a.count_include_pad);
  const int64_t order = info.attr_int("storage_order", 0);
  if (order != 0 && order != 1) return make_error("storage_order is {}, must be 0 (row major) or 1 (column major)", order);
  a.column_major_indices = order == 1;
  return a;
}

// The p of LpPool and GlobalLpPool: a float before opset 2, an int after.
Result<double> read_p(const KernelInfo& info) {
  const ir::Attribute* attr = info.node().attribute("p");
  double p = 2;
  if (attr != nullptr) p = attr->proto.has_f() ? attr->proto.f() : static_cast<double>(attr->proto.i());
  if (!(p > 0)) return make_error("p is {}, must be positive", p);
  return p;
}

Result<WindowGeometry> pool_geometry(const PoolAttributes& a, const Tensor& x) {
  const size_t rank = a.window.kernel_shape.size();
  if (x.rank() != rank + 2)
    return make_error("X has shape {}, expected rank {} ([N, C] and the {} spatial dims of kernel_shape {})",
                      shape_to_string(x.shape()), rank + 2, rank, shape_to_string(a.window.kernel_shape));
  ONNXKIT_ASSIGN(WindowGeometry g,
                 resolve_window(a.window, std::vector<int64_t>(x.shape().begin() + 2, x.shape().end()), a.window.kernel_shape));
  Shape y_shape{x.dim(0), x.dim(1)};
  y_shape.insert(y_shape.end(), g.out.begin(), g.out.end());
  ONNXKIT_TRY(checked_size(y_shape, "Y"));
  return g;
}

// The common case of real models, 2-D float max or average pooling without
// indices, as plain loops over precomputed windows: the general N-D walk
// above spends more time counting than comparing.
void pool_2d_float(const PoolAttributes& a, const WindowGeometry& g, int64_t planes, const float* x, float* y) {
  const auto axes = axis_windows(g);
  const int64_t ih = g.in[0], iw = g.in[1], oh = g.out[0], ow = g.out[1];
  const int64_t dh = g.dilations[0], dw = g.dilations[1];
  const bool parallel = planes > 1 && planes * oh * ow * g.kernel_size() >= kParallelWork;
#pragma omp parallel for if (parallel) schedule(static)
  for (int64_t q = 0; q < planes; ++q) {
    const float* xp = x + q * ih * iw;
    float* yp = y + q * oh * ow;
    for (int64_t i = 0; i < oh; ++i) {
      const AxisWindow& r = axes[0][static_cast<size_t>(i)];
      for (int64_t j = 0; j < ow; ++j) {
        const AxisWindow& c = axes[1][static_cast<size_t>(j)];
        if (a.kind == PoolKind::max) {
          float best = -std::numeric_limits<float>::infinity();
          for (int64_t u = r.lo; u < r.hi; ++u) {
            const float* row = xp + (r.start + u * dh) * iw + c.start;
            for (int64_t v = c.lo; v < c.hi; ++v) best = std::max(best, row[v * dw]);
          }
          yp[i * ow + j] = best;
        } else {
          float sum = 0;
          for (int64_t u = r.lo; u < r.hi; ++u) {
            const float* row = xp + (r.start + u * dh) * iw + c.start;
            for (int64_t v = c.lo; v < c.hi; ++v) sum += row[v * dw];
          }
          const int64_t count = a.count_include_pad ? r.padded * c.padded : (r.hi - r.lo) * (c.hi - c.lo);
          yp[i * ow + j] = count > 0 ? sum / static_cast<float>(count) : 0.0f;
        }
      }
    }
  }
}

KernelFactory pool_kernel(PoolKind kind) {
  return make_kernel([kind](const KernelInfo& info) -> Result<ComputeFn> {
    ONNXKIT_ASSIGN(PoolAttributes a, read_pool_attributes(info, kind));
    if (kind == PoolKind::lp) {
      ONNXKIT_ASSIGN(a.p, read_p(info));
    }
    return ComputeFn([a](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
      ONNXKIT_ASSIGN(WindowGeometry g, pool_geometry(a, *x));
      Shape y_shape{x->dim(0), x->dim(1)};
      y_shape.insert(y_shape.end(), g.out.begin(), g.out.end());
      const int64_t planes = x->dim(0) * x->dim(1);
      Tensor& y = ctx.output(0, x->dtype(), y_shape);
      int64_t* indices = nullptr;
      if (a.kind == PoolKind::max && ctx.wants_output(1))
        indices = ctx.output(1, DataType::int64, y_shape).mutable_data<int64_t>();
      if (indices == nullptr && g.rank() == 2 && x->dtype() == DataType::float32 && a.kind != PoolKind::lp) {
        pool_2d_float(a, g, planes, x->data<float>(), y.mutable_data<float>());
        return Status();
      }
      auto run = [&]<class T>() -> Status {
        pool_compute<T>(a, g, planes, x->data<T>(), y.mutable_data<T>(), indices);
        return {};
      };
      if (a.kind == PoolKind::max && (x->dtype() == DataType::int8 || x->dtype() == DataType::uint8))
        return x->dtype() == DataType::int8 ? run.operator()<int8_t>() : run.operator()<uint8_t>();
      return dispatch_float(x->dtype(), run);
    });
  });
}

// --- global pooling ---------------------------------------------------------------

KernelFactory global_pool_kernel(PoolKind kind) {
  return make_kernel([kind](const KernelInfo& info) -> Result<ComputeFn> {
    double p = 2;
    if (kind == PoolKind::lp) {
      ONNXKIT_ASSIGN(p, read_p(info));
    }
    return ComputeFn([kind, p](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
      if (x->rank() < 2) return make_error("X must have shape [N, C, D1, ...], got {}", shape_to_string(x->shape()));
      Shape y_shape(x->rank(), 1);
      y_shape[0] = x->dim(0);
      y_shape[1] = x->dim(1);
      const int64_t planes = x->dim(0) * x->dim(1), size = dims_product(x->shape(), 2, x->rank());
      Tensor& y = ctx.output(0, x->dtype(), y_shape);
      return dispatch_float(x->dtype(), [&]<class T>() -> Status {
        using C = compute_t<T>;
        const T* xp = x->data<T>();
        T* yp = y.mutable_data<T>();
#pragma omp parallel for if (planes > 1 && planes * size >= kParallelWork) schedule(static)
        for (int64_t q = 0; q < planes; ++q) {
          const T* v = xp + q * size;
          double r;
          if (kind == PoolKind::max) {
            C best = -std::numeric_limits<C>::infinity();
            for (int64_t i = 0; i < size; ++i) best = std::max(best, static_cast<C>(v[i]));
            r = static_cast<double>(best);
          } else if (kind == PoolKind::average) {
            double sum = 0;
            for (int64_t i = 0; i < size; ++i) sum += static_cast<double>(static_cast<C>(v[i]));
            r = size > 0 ? sum / static_cast<double>(size) : std::numeric_limits<double>::quiet_NaN();
          } else {
            double sum = 0;
            for (int64_t i = 0; i < size; ++i) sum += lp_term(static_cast<double>(static_cast<C>(v[i])), p);
            r = lp_root(sum, p);
          }
          yp[q] = static_cast<T>(static_cast<C>(r));
        }
        return {};
      });
    });
  });
}

// --- global average over blocked planes ------------------------------------------

// Sums of `pixels` pixels of L lanes into four partial sums per lane, one
// per pixel modulo 4, so that the adds do not wait on each other.
template <int64_t L> inline void average_lanes(const float* in, int64_t pixels, float* out) {
  float sum[4][L] = {};
  int64_t p = 0;
  for (; p + 4 <= pixels; p += 4)
    for (int64_t k = 0; k < 4; ++k) {
#pragma omp simd
      for (int64_t l = 0; l < L; ++l) sum[k][l] += in[(p + k) * L + l];
    }
  for (; p < pixels; ++p) {
#pragma omp simd
    for (int64_t l = 0; l < L; ++l) sum[0][l] += in[p * L + l];
  }
  const float scale = 1.0f / static_cast<float>(pixels);
  for (int64_t l = 0; l < L; ++l) out[l] = (sum[0][l] + sum[1][l] + (sum[2][l] + sum[3][l])) * scale;
}

// Planes [first, last) of blocked activations, `lanes` (8 or 16) channels
// each: one pass over each plane, a vector of lanes per pixel.
ONNXKIT_AVX2_CLONES void average_blocked_planes(const float* x, float* y, int64_t first, int64_t last, int64_t pixels,
                                                int64_t lanes) {
  for (int64_t q = first; q < last; ++q) {
    if (lanes == 16) average_lanes<16>(x + q * pixels * 16, pixels, y + q * 16);
    else average_lanes<8>(x + q * pixels * 8, pixels, y + q * 8);
  }
}

}  // namespace

void global_average_blocked(const float* x, float* y, int64_t planes, int64_t pixels, int64_t lanes) {
  if (pixels == 0) {
    std::fill_n(y, planes * lanes, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  const double work = static_cast<double>(planes * pixels * lanes);
  parallel_ranges(planes, planes > 1 && work >= kParallelMacs,
                  [&](int64_t first, int64_t last) { average_blocked_planes(x, y, first, last, pixels, lanes); });
}

namespace {

// --- max and average pooling over blocked planes ---------------------------------

// Output rows [first, last) of pool_blocked_rows (row = plane * out height +
// r), a vector of L lanes per pixel. Max and sum are separable: the window's
// input rows are first combined column by column into `line`, then each
// output pixel combines kw pixels of it (a 3x3 window: 2 + 2 ops per pixel
// instead of 8). Columns whose window lies inside the input row skip the
// bounds checks. kWidth > 0 is kw known when compiling: 3, the common
// window, with its loops unrolled, a third faster. Ours rather than
// oneDNN's, whose primitive cost 4x more on SqueezeNet's max pools and 1.3x
// more on Inception's average pools. Inlined into each clone of
// pool_blocked_rows, for its vector width.
template <int L, bool kAverage, int kWidth>
__attribute__((always_inline)) inline void pool_rows(const float* x, float* y, int64_t first, int64_t last,
                                                     const WindowGeometry& g, bool count_include_pad, float* line) {
  using Pixel = Lanes<L>;
  const int64_t ih = g.in[0], iw = g.in[1], oh = g.out[0], ow = g.out[1];
  const int64_t kh = g.kernel[0], kw = kWidth > 0 ? kWidth : g.kernel[1], sh = g.strides[0], sw = g.strides[1];
  const int64_t dh = g.dilations[0], dw = g.dilations[1], ph = g.pads_begin[0], pw = g.pads_begin[1];
  const int64_t inner_begin = std::min(ow, (pw + sw - 1) / sw);
  const int64_t last_inner_start = iw - 1 - (kw - 1) * dw + pw;  // the largest c * sw whose window fits
  const int64_t inner_end = last_inner_start < 0 ? inner_begin : std::clamp(last_inner_start / sw + 1, inner_begin, ow);
  const float initial = kAverage ? 0.0f : -std::numeric_limits<float>::infinity();
  const int64_t line_floats = iw * L;
  for (int64_t row = first; row < last; ++row) {
    const int64_t r = row % oh;
    const float* in = x + row / oh * ih * iw * L;
    float* out = y + row * ow * L;
    // The window's rows inside the input, the same for every column: [i_begin, i_end).
    int64_t i_begin = 0, i_end = kh;
    while (i_begin < kh && r * sh - ph + i_begin * dh < 0) ++i_begin;
    while (i_end > i_begin && r * sh - ph + (i_end - 1) * dh >= ih) --i_end;
    const float* top = in + std::clamp<int64_t>(r * sh - ph + i_begin * dh, 0, ih - 1) * line_floats;
    // The rows the next output row adds, asked for ahead: a map that comes
    // from L3 or memory (Inception's first pools, 64 x 147 x 147) otherwise
    // waits on every line.
    const int64_t next_row = std::max<int64_t>(0, r * sh - ph + (i_end - 1) * dh + 1);
    const int64_t rows_ahead = std::clamp<int64_t>(ih - next_row, 0, sh);
    const float* ahead = in + std::min(next_row, ih - 1) * line_floats;
    auto combine_rows = [&](int64_t rows) __attribute__((always_inline)) {
      for (int64_t w = 0; w < iw; ++w) {
        for (int64_t s = 0; s < rows_ahead; ++s) __builtin_prefetch(ahead + s * line_floats + w * L);
        Pixel acc = Pixel{} + initial;
        for (int64_t i = 0; i < rows; ++i) {
          Pixel v;
          std::memcpy(&v, top + i * dh * line_floats + w * L, sizeof v);
          if constexpr (kAverage) acc += v;
          else acc = v > acc ? v : acc;  // maxps(v, acc): a NaN input never wins
        }
        std::memcpy(line + w * L, &acc, sizeof acc);
      }
    };
    if (kWidth > 0 && i_end - i_begin == kWidth) combine_rows(kWidth);  // a square window's rows, unrolled
    else combine_rows(i_end - i_begin);
    // The mean's divisor: the window's taps inside the input, or with
    // count_include_pad inside the padded input (ceil_mode's last window
    // may reach past it, and those taps never count).
    int64_t padded_rows = 0;
    for (int64_t i = 0; i < kh; ++i) {
      const int64_t h = r * sh - ph + i * dh;
      padded_rows += h >= -ph && h < ih + g.pads_end[0];
    }
    auto reciprocal = [&](int64_t columns, int64_t padded_columns) {
      const int64_t count = count_include_pad ? padded_rows * padded_columns : (i_end - i_begin) * columns;
      return count > 0 ? 1.0f / static_cast<float>(count) : 0.0f;
    };
    const float inner_scale = kAverage ? reciprocal(kw, kw) : 1.0f;
    auto column = [&](int64_t c, bool checked) __attribute__((always_inline)) {
      Pixel acc = Pixel{} + initial;
      int64_t columns = 0, padded_columns = 0;  // of the window inside the input, and inside the padded input
      for (int64_t j = 0; j < kw; ++j) {
        const int64_t w = c * sw - pw + j * dw;
        padded_columns += w >= -pw && w < iw + g.pads_end[1];
        if (checked && (w < 0 || w >= iw)) continue;
        ++columns;
        Pixel v;
        std::memcpy(&v, line + w * L, sizeof v);
        if constexpr (kAverage) acc += v;
        else acc = v > acc ? v : acc;
      }
      if constexpr (kAverage) acc *= checked ? reciprocal(columns, padded_columns) : inner_scale;
      std::memcpy(out + c * L, &acc, sizeof acc);
    };
    int64_t c = 0;
    for (; c < inner_begin; ++c) column(c, true);
    for (; c < inner_end; ++c) column(c, false);
    for (; c < ow; ++c) column(c, true);
  }
}

template <int L, bool kAverage>
__attribute__((always_inline)) inline void pool_rows_of_width(const float* x, float* y, int64_t first, int64_t last,
                                                              const WindowGeometry& g, bool count_include_pad, float* line) {
  if (g.kernel[1] == 3) pool_rows<L, kAverage, 3>(x, y, first, last, g, count_include_pad, line);
  else pool_rows<L, kAverage, 0>(x, y, first, last, g, count_include_pad, line);
}

ONNXKIT_AVX512_CLONES void pool_blocked_rows(const float* x, float* y, int64_t first, int64_t last, const WindowGeometry& g,
                                             int64_t lanes, bool average, bool count_include_pad) {
  thread_local std::vector<float> line;  // one input row's worth of pixels
  line.resize(static_cast<size_t>(g.in[1] * lanes));
  if (average) {
    if (lanes == 16) pool_rows_of_width<16, true>(x, y, first, last, g, count_include_pad, line.data());
    else pool_rows_of_width<8, true>(x, y, first, last, g, count_include_pad, line.data());
  } else {
    if (lanes == 16) pool_rows_of_width<16, false>(x, y, first, last, g, false, line.data());
    else pool_rows_of_width<8, false>(x, y, first, last, g, false, line.data());
  }
}

void pool_blocked(const float* x, float* y, int64_t planes, const WindowGeometry& g, int64_t lanes, bool average,
                  bool count_include_pad) {
  const int64_t rows = planes * g.out[0];
  const double work = static_cast<double>(rows * g.out[1] * g.kernel_size() * lanes);
  parallel_ranges(rows, work >= kParallelMacs, [&](int64_t first, int64_t last) {
    pool_blocked_rows(x, y, first, last, g, lanes, average, count_include_pad);
  });
}

}  // namespace

bool average_pool_takes_pads(const ir::Node& pool) {
  if (!pool.is_onnx_op("AveragePool") || pool.attr_ints("kernel_shape").size() != 2) return false;
  if (pool.attr_string("auto_pad", "NOTSET") != "NOTSET" || pool.attr_int("ceil_mode", 0) != 0) return false;
  if (pool.attr_int("count_include_pad", 0) != 0) return true;
  const std::vector<int64_t> own = pool.attr_ints("pads");
  return std::all_of(own.begin(), own.end(), [](int64_t p) { return p == 0; });
}

void add_pads_before(const KernelInfo& info, WindowAttributes& window, bool& count_include_pad) {
  const auto* before = std::any_cast<PadsBefore>(&info.fusion());
  if (before == nullptr) return;
  if (window.pads.empty()) window.pads.assign(4, 0);
  for (size_t i = 0; i < 4; ++i) window.pads[i] += before->pads[i];
  count_include_pad = true;
}

void max_pool_blocked(const float* x, float* y, int64_t planes, const WindowGeometry& g, int64_t lanes) {
  pool_blocked(x, y, planes, g, lanes, false, false);
}

void average_pool_blocked(const float* x, float* y, int64_t planes, const WindowGeometry& g, bool count_include_pad,
                          int64_t lanes) {
  pool_blocked(x, y, planes, g, lanes, true, count_include_pad);
}

namespace {

// --- MaxUnpool ---------------------------------------------------------------------

KernelFactory max_unpool_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    ONNXKIT_ASSIGN(WindowAttributes w, read_window_attributes(info));
    if (w.kernel_shape.empty()) return make_error("kernel_shape is required");
    return ComputeFn([w](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
      ONNXKIT_ASSIGN(const Tensor* index, ctx.tensor(1));
      const size_t rank = w.kernel_shape.size();
      if (x->rank() != rank + 2)
        return make_error("X has shape {}, expected rank {} ([N, C] and the {} spatial dims of kernel_shape {})",
                          shape_to_string(x->shape()), rank + 2, rank, shape_to_string(w.kernel_shape));
      if (index->dtype() != DataType::int64) return make_error("I must be int64, got {}", to_string(index->dtype()));
      if (index->shape() != x->shape())
        return make_error("I has shape {}, X has {}: they must match", shape_to_string(index->shape()),
                          shape_to_string(x->shape()));
      // Indices address the unpooled shape the attributes imply; an
      // output_shape input only enlarges the result around it (the extra
      // positions, at the end of each spatial dim, stay zero).
      std::vector<int64_t> strides = w.strides.empty() ? std::vector<int64_t>(rank, 1) : w.strides;
      if (strides.size() != rank)
        return make_error("strides {} has {} values, X has {} spatial dims", shape_to_string(strides), strides.size(), rank);
      std::vector<int64_t> pads = w.pads.empty() ? std::vector<int64_t>(2 * rank, 0) : w.pads;
      if (pads.size() != 2 * rank)
        return make_error("pads {} has {} values, expected {}", shape_to_string(pads), pads.size(), 2 * rank);
      Shape inferred{x->dim(0), x->dim(1)};
      for (size_t d = 0; d < rank; ++d) {
        const int64_t size = (x->dim(d + 2) - 1) * strides[d] + w.kernel_shape[d] - pads[d] - pads[rank + d];
        if (size < 0) return make_error("spatial dim {}: the unpooled size would be negative ({})", d, size);
        inferred.push_back(size);
      }
      Shape y_shape = inferred;
      if (ctx.has_input(2)) {
        ONNXKIT_ASSIGN(const Tensor* s, ctx.tensor(2));
        if (s->dtype() != DataType::int64 || s->rank() != 1 || s->numel() != static_cast<int64_t>(rank + 2))
          return make_error("output_shape must be a 1-D int64 tensor of {} values, got {}{}", rank + 2, to_string(s->dtype()),
                            shape_to_string(s->shape()));
        y_shape.assign(s->data<int64_t>(), s->data<int64_t>() + s->numel());
        if (y_shape[0] != x->dim(0) || y_shape[1] != x->dim(1))
          return make_error("output_shape {} does not keep the batch and channels of X {}", shape_to_string(y_shape),
                            shape_to_string(x->shape()));
        ONNXKIT_TRY(checked_size(y_shape, "output_shape"));
        for (size_t d = 2; d < y_shape.size(); ++d)
          if (y_shape[d] < inferred[d])
            return make_error("output_shape {} is smaller than the unpooled shape {}", shape_to_string(y_shape),
                              shape_to_string(inferred));
      }
      ONNXKIT_ASSIGN(const int64_t inferred_total, checked_size(inferred, "unpooled"));
      const int64_t* at = index->data<int64_t>();
      std::vector<int64_t> target(static_cast<size_t>(index->numel()));
      for (int64_t i = 0; i < index->numel(); ++i) {
        if (at[i] < 0 || at[i] >= inferred_total)
          return make_error("I[{}] = {} is outside the unpooled tensor of {} elements (shape {})", i, at[i], inferred_total,
                            shape_to_string(inferred));
        // The same coordinates in the (possibly larger) output.
        int64_t rest = at[i], flat = 0, scale = 1;
        for (size_t d = inferred.size(); d-- > 0;) {
          flat += (rest % inferred[d]) * scale;
          rest /= inferred[d];
          scale *= y_shape[d];
        }
        target[static_cast<size_t>(i)] = flat;
      }
      Tensor& y = ctx.output(0, x->dtype(), y_shape);
      const int64_t total = y.numel();
      return dispatch_float(x->dtype(), [&]<class T>() -> Status {
        T* yp = y.mutable_data<T>();
        std::fill(yp, yp + total, T(0.0f));
        const T* xp = x->data<T>();
        for (int64_t i = 0; i < x->numel(); ++i) yp[target[static_cast<size_t>(i)]] = xp[i];
        return {};
      });
    });
  });
}

}  // namespace

void register_pool(KernelRegistry& r) {
  // One kernel per op serves every version: later opsets only added
  // attributes (Indices and storage_order in 8, ceil_mode and dilations in
  // 10/18/19, count_include_pad in 7) whose defaults reproduce the older ones.
  // MaxPool, AveragePool and their global forms run blocked too (blocked.h).
  const OpTraits blocked{.blocked = OpTraits::Blocked::own_kernel};
  r.add("", "MaxPool", 1, kLatestOpset, pool_kernel(PoolKind::max), blocked);
  r.add("", "AveragePool", 1, kLatestOpset, pool_kernel(PoolKind::average), blocked);
  r.add("", "LpPool", 1, kLatestOpset, pool_kernel(PoolKind::lp));
  r.add("", "GlobalMaxPool", 1, kLatestOpset, global_pool_kernel(PoolKind::max), blocked);
  r.add("", "GlobalAveragePool", 1, kLatestOpset, global_pool_kernel(PoolKind::average), blocked);
  r.add("", "GlobalLpPool", 1, kLatestOpset, global_pool_kernel(PoolKind::lp));
  r.add("", "MaxUnpool", 9, kLatestOpset, max_unpool_kernel());
}

}  // namespace onnxkit::runtime::nn
