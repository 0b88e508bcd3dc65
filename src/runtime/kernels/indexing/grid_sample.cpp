// GridSample, and AffineGrid which makes its grids.
//
// GridSample samples X at the normalized positions of `grid` (opset 16: 4-D
// with bilinear/nearest/bicubic; opset 20: any number of spatial dims with
// linear/nearest/cubic). The sampling follows torch.nn.functional.grid_sample,
// which the operator is defined after: the padding mode moves the sampling
// point back inside for nearest and linear, and each tap for cubic.

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "runtime/kernels/indexing/indexing.h"
#include "runtime/parallel.h"

namespace onnxkit::runtime::indexing {
namespace {

enum class SampleMode { nearest, linear, cubic };
enum class Padding { zeros, border, reflection };

struct SampleOptions {
  SampleMode mode = SampleMode::linear;
  Padding padding = Padding::zeros;
  bool align_corners = false;
  bool any_rank = false;  // opset 20: N-D; opset 16: 4-D only
};

Result<SampleOptions> sample_options(const KernelInfo& info) {
  SampleOptions o;
  o.any_rank = info.opset() >= 20;
  // Opset 20 renamed bilinear/bicubic to linear/cubic.
  const char* linear = o.any_rank ? "linear" : "bilinear";
  const char* cubic = o.any_rank ? "cubic" : "bicubic";
  const std::string mode = info.attr_string("mode", linear);
  if (mode == linear) o.mode = SampleMode::linear;
  else if (mode == cubic) o.mode = SampleMode::cubic;
  else if (mode == "nearest") o.mode = SampleMode::nearest;
  else return make_error("attribute 'mode' is '{}'; it must be {}, nearest or {}", mode, linear, cubic);
  const std::string padding = info.attr_string("padding_mode", "zeros");
  if (padding == "zeros") o.padding = Padding::zeros;
  else if (padding == "border") o.padding = Padding::border;
  else if (padding == "reflection") o.padding = Padding::reflection;
  else return make_error("attribute 'padding_mode' is '{}'; it must be zeros, border or reflection", padding);
  o.align_corners = info.attr_int("align_corners", 0) != 0;
  return o;
}

// Mirrors x at the bounds [low, high] until it lies between them.
double reflect(double x, double low, double high) {
  const double span = high - low;
  if (span <= 0) return low;
  const double distance = std::abs(x - low);
  const double flips = std::floor(distance / span);
  const double extra = std::fmod(distance, span);
  return std::fmod(flips, 2.0) == 0 ? low + extra : high - extra;
}

struct Axis {
  int64_t size;
  double low, high;  // the reflection bounds: pixel centers or pixel edges
};

// Moves a coordinate inside [0, size - 1] as the padding mode says (zeros
// leaves it: taps outside read 0).
double pad_coordinate(double x, const Axis& a, Padding padding) {
  if (padding == Padding::border) return std::clamp(x, 0.0, static_cast<double>(a.size - 1));
  if (padding == Padding::reflection) return std::clamp(reflect(x, a.low, a.high), 0.0, static_cast<double>(a.size - 1));
  return x;
}

// The index tap p reads, or -1 for a zero.
int64_t tap_index(int64_t p, const Axis& a, Padding padding) {
  if (p >= 0 && p < a.size) return p;
  if (padding == Padding::zeros) return -1;
  const double moved = pad_coordinate(static_cast<double>(p), a, padding);
  return std::clamp<int64_t>(static_cast<int64_t>(std::llround(moved)), 0, a.size - 1);
}

double cubic_weight(double d) {
  constexpr double a = -0.75;
  d = std::abs(d);
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

struct Tap {
  int64_t index;  // -1: reads zero
  double weight;
};

// The taps of one spatial axis for a sampling coordinate (already unnormalized).
void axis_taps(double x, const Axis& a, const SampleOptions& o, std::vector<Tap>& taps) {
  taps.clear();
  if (std::isnan(x)) return;
  if (o.mode != SampleMode::cubic) x = pad_coordinate(x, a, o.padding);
  if (std::isnan(x)) return;
  // Beyond two pixels outside every tap reads the same as at the limit
  // (zero, or the border); bounding x keeps the integer casts defined.
  // Reflection repeats with period 2 * span, so it shifts by whole periods.
  const double size = static_cast<double>(a.size);
  const double period = 2 * (a.high - a.low);
  if (o.padding == Padding::reflection && o.mode == SampleMode::cubic && period > 0) {
    if (!std::isfinite(x)) return;
    x -= period * std::floor((x - a.low) / period);
  } else {
    x = std::clamp(x, -4.0, size + 3.0);
  }
  switch (o.mode) {
    case SampleMode::nearest: {
      const int64_t p = static_cast<int64_t>(std::nearbyint(x));  // ties to even, as torch
      taps.push_back({tap_index(p, a, o.padding), 1.0});
      break;
    }
    case SampleMode::linear: {
      const double f = std::floor(x);
      const int64_t p = static_cast<int64_t>(f);
      taps.push_back({tap_index(p, a, o.padding), 1 - (x - f)});
      taps.push_back({tap_index(p + 1, a, o.padding), x - f});
      break;
    }
    case SampleMode::cubic: {
      const double f = std::floor(x);
      const int64_t p = static_cast<int64_t>(f);
      for (int64_t k = -1; k <= 2; ++k)
        taps.push_back({tap_index(p + k, a, o.padding), cubic_weight(x - static_cast<double>(p + k))});
      break;
    }
  }
}

// Numbers in, the element type out: floats convert, integers truncate toward
// zero and saturate (the spec's "cast to integer at the end").
template <class T> T cast_result(double v) {
  if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return T(0);
    return from_double<T>(std::trunc(v));
  } else {
    return from_double<T>(v);
  }
}

Status grid_sample(KernelContext& ctx, const SampleOptions& o) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  ONNXKIT_ASSIGN(const Tensor* grid, ctx.tensor(1));
  const size_t rank = x->rank();
  if (o.any_rank ? rank < 3 : rank != 4)
    return make_error("X must be {}, got shape {}", o.any_rank ? "(N, C, D1, ..., Dr) with r >= 1" : "4-D (N, C, H, W)",
                      shape_to_string(x->shape()));
  const DataType type = x->dtype();
  if (o.mode != SampleMode::nearest && (type == DataType::string || type == DataType::boolean))
    return make_error("{} sampling needs numbers, got X of type {}", o.mode == SampleMode::linear ? "linear" : "cubic",
                      to_string(type));
  const size_t spatial = rank - 2;
  if (grid->rank() != rank || grid->dim(0) != x->dim(0) || grid->dim(rank - 1) != static_cast<int64_t>(spatial))
    return make_error("grid has shape {}; for X of shape {} it must be (N={}, D1_out, ..., {})", shape_to_string(grid->shape()),
                      shape_to_string(x->shape()), x->dim(0), spatial);
  std::vector<double> g(static_cast<size_t>(grid->numel()));
  {
    Status s = dispatch_float(grid->dtype(), [&]<class G>() -> Status {
      const G* p = grid->data<G>();
      for (size_t i = 0; i < g.size(); ++i) g[i] = static_cast<double>(p[i]);
      return {};
    });
    if (!s.ok()) return s.error().in("grid");
  }

  const int64_t n_batch = x->dim(0), channels = x->dim(1);
  std::vector<Axis> axes(spatial);
  int64_t plane = 1;
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t size = x->dim(d + 2);
    plane *= size;
    axes[d] =
        o.align_corners ? Axis{size, 0.0, static_cast<double>(size - 1)} : Axis{size, -0.5, static_cast<double>(size) - 0.5};
  }
  Shape out_shape{n_batch, channels};
  int64_t positions = 1;
  for (size_t d = 0; d < spatial; ++d) {
    out_shape.push_back(grid->dim(d + 1));
    positions *= grid->dim(d + 1);
  }
  Tensor& y = ctx.output(0, x->dtype(), out_shape);
  if (y.numel() == 0) return {};
  if (plane == 0)
    return make_error("X has an empty spatial dim (shape {}): there is nothing to sample", shape_to_string(x->shape()));
  std::vector<int64_t> strides(spatial);  // within one channel plane
  for (size_t d = spatial, s = 1; d-- > 0;) {
    strides[d] = static_cast<int64_t>(s);
    s *= static_cast<size_t>(axes[d].size);
  }

  // Per thread: the taps of each axis and their combinations, allocated
  // here because nothing may throw inside the parallel region.
  const size_t per_axis = o.mode == SampleMode::cubic ? 4 : o.mode == SampleMode::linear ? 2 : 1;
  size_t combos = 1;
  for (size_t d = 0; d < spatial; ++d) {
    combos *= per_axis;
    if (combos > (size_t{1} << 20))
      return make_error("{} spatial dims are too many for {} sampling", spatial,
                        o.mode == SampleMode::cubic ? "cubic" : "linear");
  }
  struct Scratch {
    std::vector<std::vector<Tap>> taps;
    std::vector<std::pair<int64_t, double>> combined, next;  // (offset in plane, weight)
  };
  const int threads = available_threads();
  std::vector<Scratch> scratch(static_cast<size_t>(threads));
  for (Scratch& sc : scratch) {
    sc.taps.assign(spatial, {});
    for (auto& t : sc.taps) t.reserve(per_axis);
    sc.combined.reserve(combos);
    sc.next.reserve(combos);
  }

  return dispatch_all(type, [&]<class T>() -> Status {
    const T* in = x->data<T>();
    T* out = y.mutable_data<T>();
    const int64_t work = n_batch * positions;
    // Copying strings allocates, so they stay on one thread.
    const bool parallel = work > 1 && work * channels >= kParallelWork && !std::is_same_v<T, std::string>;
#pragma omp parallel num_threads(threads) if (parallel)
    {
      Scratch& sc = scratch[static_cast<size_t>(omp_get_thread_num())];
#pragma omp for schedule(static)
      for (int64_t w = 0; w < work; ++w) {
        const int64_t n = w / positions, pos = w % positions;
        const double* coords = g.data() + w * static_cast<int64_t>(spatial);
        // The grid lists coordinates innermost dim first (x, y, ...).
        for (size_t d = 0; d < spatial; ++d) {
          const Axis& a = axes[d];
          const double u = coords[spatial - 1 - d];
          const double size = static_cast<double>(a.size);
          const double px = o.align_corners ? (u + 1) / 2 * (size - 1) : ((u + 1) * size - 1) / 2;
          axis_taps(px, a, o, sc.taps[d]);
        }
        // Every combination of one tap per axis that reads a value.
        sc.combined.assign(1, {0, 1.0});
        for (size_t d = 0; d < spatial; ++d) {
          sc.next.clear();
          for (const auto& [offset, weight] : sc.combined)
            for (const Tap& t : sc.taps[d])
              if (t.index >= 0 && t.weight != 0) sc.next.push_back({offset + t.index * strides[d], weight * t.weight});
          sc.combined.swap(sc.next);
        }
        for (int64_t c = 0; c < channels; ++c) {
          const T* src = in + (n * channels + c) * plane;
          T& dst = out[(n * channels + c) * positions + pos];
          if constexpr (is_real_v<T>) {
            double sum = 0;
            for (const auto& [offset, weight] : sc.combined) sum += weight * static_cast<double>(src[offset]);
            dst = cast_result<T>(sum);
          } else if constexpr (is_complex_v<T>) {
            std::complex<double> sum = 0;
            for (const auto& [offset, weight] : sc.combined) sum += weight * std::complex<double>(src[offset]);
            dst = T(sum);
          } else {
            // bool and string: nearest only, so at most one tap (none: padding zeros).
            dst = sc.combined.empty() ? T() : src[sc.combined.front().first];
          }
        }
      }
    }
    return {};
  });
}

// AffineGrid (opset 20): theta [N, 2, 3] (or [N, 3, 4]) applied to the
// normalized positions of an [N, C, H, W] (or [N, C, D, H, W]) image, giving
// [N, H, W, 2] (or [N, D, H, W, 3]) with x first, as torch's affine_grid.
Status affine_grid(KernelContext& ctx, bool align_corners) {
  ONNXKIT_ASSIGN(const Tensor* theta, ctx.tensor(0));
  ONNXKIT_ASSIGN(const Tensor* size_input, ctx.tensor(1));
  ONNXKIT_ASSIGN(std::vector<int64_t> size, read_int64s(*size_input));
  if (size.size() != 4 && size.size() != 5)
    return make_error("size must hold 4 values (N, C, H, W) or 5 (N, C, D, H, W), got {}", size.size());
  const size_t spatial = size.size() - 2;
  for (int64_t d : size)
    if (d < 0) return make_error("size has a negative dim {}", d);
  const int64_t batch = size[0];
  if (theta->rank() != 3 || theta->dim(0) != batch || theta->dim(1) != static_cast<int64_t>(spatial) ||
      theta->dim(2) != static_cast<int64_t>(spatial) + 1)
    return make_error("theta must be [{}, {}, {}] for size {}, got {}", batch, spatial, spatial + 1,
                      shape_to_string(Shape(size.begin(), size.end())), shape_to_string(theta->shape()));
  // Normalized positions along each spatial axis, innermost (x) first.
  std::vector<std::vector<double>> positions(spatial);
  for (size_t a = 0; a < spatial; ++a) {
    const int64_t n = size[size.size() - 1 - a];
    for (int64_t i = 0; i < n; ++i) {
      double p = 0;  // a single pixel sits at the center, as in torch
      if (n > 1)
        p = align_corners ? -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(n - 1)
                          : -1.0 + (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(n);
      positions[a].push_back(p);
    }
  }
  Shape out_shape{batch};
  for (size_t a = 0; a < spatial; ++a) out_shape.push_back(size[2 + a]);
  out_shape.push_back(static_cast<int64_t>(spatial));
  Tensor& grid = ctx.output(0, theta->dtype(), out_shape);
  return dispatch_float(theta->dtype(), [&]<class T>() -> Status {
    const T* th = theta->data<T>();
    T* out = grid.mutable_data<T>();
    const int64_t points = grid.numel() / std::max<int64_t>(batch * static_cast<int64_t>(spatial), 1);
    std::vector<double> point(spatial);
    for (int64_t b = 0; b < batch; ++b) {
      const T* m = th + b * static_cast<int64_t>(spatial * (spatial + 1));
      for (int64_t p = 0; p < points; ++p) {
        int64_t rest = p;  // p enumerates (D,) H, W with W fastest, i.e. x fastest
        for (size_t a = 0; a < spatial; ++a) {
          const auto n = static_cast<int64_t>(positions[a].size());
          point[a] = positions[a][static_cast<size_t>(rest % n)];
          rest /= n;
        }
        for (size_t row = 0; row < spatial; ++row) {
          double v = static_cast<double>(m[row * (spatial + 1) + spatial]);
          for (size_t a = 0; a < spatial; ++a) v += static_cast<double>(m[row * (spatial + 1) + a]) * point[a];
          *out++ = static_cast<T>(v);
        }
      }
    }
    return {};
  });
}

}  // namespace

void register_grid_sample(KernelRegistry& r) {
  auto kernel = make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    ONNXKIT_ASSIGN(SampleOptions o, sample_options(info));
    return ComputeFn([o](KernelContext& ctx) { return grid_sample(ctx, o); });
  });
  r.add("", "GridSample", 16, 19, kernel);
  r.add("", "GridSample", 20, kLatestOpset, kernel);
  r.add("", "AffineGrid", 20, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          const bool align_corners = info.attr_int("align_corners", 0) != 0;
          return ComputeFn([align_corners](KernelContext& ctx) { return affine_grid(ctx, align_corners); });
        }));
}

}  // namespace onnxkit::runtime::indexing
