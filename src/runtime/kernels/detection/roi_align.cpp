// RoiAlign: each region of interest is cut into output_height x
// output_width bins; each bin averages (or takes the max of) X bilinearly
// interpolated at a regular grid of sample points, sampling_ratio per axis
// or ceil(bin size) when it is 0.
//
// Interpolation follows Mask R-CNN as torchvision implements it: a sample
// more than one pixel outside X reads 0, one less than a pixel outside is
// moved onto the border. In max mode the bin takes the largest interpolated
// sample (the spec's wording); ONNX Runtime instead takes the largest of the
// four weighted corner terms, which is not an interpolation.
//
// Sample positions are separable: per output row (column) the vertical
// (horizontal) taps are worked out once per region and shared by every
// channel. So is an average of bilinear samples: each sample's four corner
// weights are its vertical weight times its horizontal one, so a bin's
// average is sum over rows r of wy[r] * sum over columns c of wx[c] * X[r, c],
// with wy (wx) the weights all the bin's samples put on each row (column).
// Avg mode works that way, a row combination shared by the output row's
// bins, then one short dot product per bin; max mode needs each sample.

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>

#include "runtime/kernels/detection/detection.h"
#include "runtime/parallel.h"

namespace onnxkit::runtime::detection {
namespace {

enum Input : size_t { kX = 0, kRois, kBatchIndices };

// Output sizes above this are refused, so index arithmetic cannot overflow.
constexpr int64_t kMaxOutputSide = int64_t{1} << 20;
// Beyond this many samples per bin and axis only those that can land inside
// X are visited (an adaptive grid on a huge region would be endless); it is
// also the largest sampling_ratio taken.
constexpr double kFullGrid = 1024;
// Elements of output below which the regions stay on one thread.
constexpr int64_t kParallelSampleWork = 1 << 12;
// Channels of a region a thread takes at a time.
constexpr int64_t kChannelBlock = 32;

struct Options {
  bool max_mode = false;
  int64_t height = 1, width = 1;
  int64_t sampling_ratio = 0;
  double spatial_scale = 1;
  bool half_pixel = false;  // shift the input coordinates by -0.5
};

Result<Options> read_options(const KernelInfo& info) {
  Options o;
  const std::string mode = info.attr_string("mode", "avg");
  if (mode == "max") o.max_mode = true;
  else if (mode != "avg") return make_error("attribute 'mode' is '{}'; it must be avg or max", mode);
  o.height = info.attr_int("output_height", 1);
  o.width = info.attr_int("output_width", 1);
  for (auto [v, name] : {std::pair{o.height, "output_height"}, std::pair{o.width, "output_width"}})
    if (v < 1 || v > kMaxOutputSide) return make_error("attribute '{}' is {}; it must be in [1, {}]", name, v, kMaxOutputSide);
  o.sampling_ratio = info.attr_int("sampling_ratio", 0);
  if (o.sampling_ratio < 0 || o.sampling_ratio > static_cast<int64_t>(kFullGrid))
    return make_error("attribute 'sampling_ratio' is {}; it must be 0 (adaptive) or a count up to {}", o.sampling_ratio,
                      static_cast<int64_t>(kFullGrid));
  o.spatial_scale = info.attr_float("spatial_scale", 1.0f);
  if (!std::isfinite(o.spatial_scale)) return make_error("attribute 'spatial_scale' is {}", o.spatial_scale);
  // Opset 16 added the attribute, and its default is not what opset 10 did.
  const std::string transform =
      info.opset() >= 16 ? info.attr_string("coordinate_transformation_mode", "half_pixel") : std::string("output_half_pixel");
  if (transform == "half_pixel") o.half_pixel = true;
  else if (transform != "output_half_pixel")
    return make_error("attribute 'coordinate_transformation_mode' is '{}'; it must be half_pixel or output_half_pixel",
                      transform);
  return o;
}

// One sample position along an axis: the two pixels it reads and their weights.
template <class C> struct Tap {
  int64_t low, high;
  C w_low, w_high;
};

// The taps of the samples of bin `bin` along an axis of `size` pixels
// (size >= 1); samples more than a pixel outside are left out (they read 0).
template <class C> void axis_taps(C start, C bin_size, int64_t bin, double grid, int64_t size, std::vector<Tap<C>>& taps) {
  taps.clear();
  if (!(grid >= 1)) return;
  const C count = static_cast<C>(grid);
  double first = 0;
  int64_t n = static_cast<int64_t>(std::min(grid, kFullGrid));
  if (grid > kFullGrid) {
    // Sample i sits at start + bin * bin_size + (i + 0.5) * bin_size / grid,
    // about a pixel from the next one (the adaptive grid is ceil(bin_size)):
    // bound i to those within [-1, size], with a margin for rounding (each
    // is checked exactly below anyway).
    const double step = static_cast<double>(bin_size) / grid;
    const double origin = static_cast<double>(start) + static_cast<double>(bin) * static_cast<double>(bin_size);
    double a = (-1 - origin) / step - 0.5, b = (static_cast<double>(size) - origin) / step - 0.5;
    if (a > b) std::swap(a, b);
    first = std::max(0.0, std::floor(a) - 2);
    const double last = std::min(grid - 1, std::ceil(b) + 2);
    n = last >= first ? static_cast<int64_t>(std::min(last - first + 1, 2.0 * static_cast<double>(size) + 16)) : 0;
  }
  for (int64_t k = 0; k < n; ++k) {
    const C i = static_cast<C>(first + static_cast<double>(k));
    C y = start + static_cast<C>(bin) * bin_size + (i + C(0.5)) * bin_size / count;
    if (!(y >= C(-1) && y <= static_cast<C>(size))) continue;  // NaN too
    if (y < C(0)) y = C(0);
    int64_t low = static_cast<int64_t>(y), high;
    if (low >= size - 1) {
      low = high = size - 1;
      y = static_cast<C>(low);
    } else {
      high = low + 1;
    }
    const C frac = y - static_cast<C>(low);
    taps.push_back({low, high, C(1) - frac, frac});
  }
}

// What the samples of each bin along one axis put on each pixel: bin b
// reads pixels first[b] .. first[b] + count[b] - 1 with the summed weights
// weights[offset[b]] ...; every bin's pixels lie in [lo, hi).
template <class C> struct AxisWeights {
  std::vector<int64_t> first, count, offset;
  std::vector<C> weights;
  int64_t lo = 0, hi = 0;
};

template <class C>
void axis_weights(C start, C bin_size, int64_t bins, double grid, int64_t size, std::vector<Tap<C>>& taps, AxisWeights<C>& w) {
  w.first.assign(static_cast<size_t>(bins), 0);
  w.count.assign(static_cast<size_t>(bins), 0);
  w.offset.assign(static_cast<size_t>(bins), 0);
  w.weights.clear();
  w.lo = size;
  w.hi = 0;
  for (int64_t b = 0; b < bins; ++b) {
    axis_taps(start, bin_size, b, grid, size, taps);
    const auto i = static_cast<size_t>(b);
    w.offset[i] = static_cast<int64_t>(w.weights.size());
    if (taps.empty()) continue;
    int64_t low = size, high = 0;
    for (const Tap<C>& t : taps) {
      low = std::min(low, t.low);
      high = std::max(high, t.high);
    }
    w.first[i] = low;
    w.count[i] = high - low + 1;
    w.weights.resize(w.weights.size() + static_cast<size_t>(high - low + 1), C(0));
    C* bin = w.weights.data() + w.offset[i];
    for (const Tap<C>& t : taps) {
      bin[t.low - low] += t.w_low;
      bin[t.high - low] += t.w_high;
    }
    w.lo = std::min(w.lo, low);
    w.hi = std::max(w.hi, high + 1);
  }
  for (size_t i = 0; i < w.first.size(); ++i)
    if (w.count[i] == 0) w.first[i] = w.lo;  // reads nothing, from inside [lo, hi) when any bin reads
}

// Where a region lies in X's pixels, its bins and its sampling grid.
template <class C> struct Region {
  const C* image;  // X's planes for the region's batch index
  C x1, y1, bin_w, bin_h;
  double grid_w, grid_h;  // samples per bin along each axis (may be 0)
};

template <class C>
Result<std::vector<Region<C>>> make_regions(const Tensor& x, const C* in, const Tensor& rois_t, const Tensor& index_t,
                                            const Options& o) {
  const int64_t num_rois = rois_t.dim(0);
  if (index_t.rank() != 1 || index_t.dim(0) != num_rois)
    return make_error("batch_indices has shape {}; it must be [num_rois] = [{}]", shape_to_string(index_t.shape()), num_rois);
  if (index_t.dtype() != DataType::int64 && index_t.dtype() != DataType::int32)
    return make_error("batch_indices has element type {}; it must be int64", to_string(index_t.dtype()));
  ONNXKIT_ASSIGN(std::vector<int64_t> batch_index, read_int64s(index_t));
  ONNXKIT_ASSIGN(std::vector<double> rois, read_doubles(rois_t, "rois"));
  const int64_t batches = x.dim(0), image = x.dim(1) * x.dim(2) * x.dim(3);
  const C scale = static_cast<C>(o.spatial_scale);
  const C offset = o.half_pixel ? C(0.5) : C(0);
  std::vector<Region<C>> regions(static_cast<size_t>(num_rois));
  for (int64_t r = 0; r < num_rois; ++r) {
    const int64_t n = batch_index[static_cast<size_t>(r)];
    if (n < 0 || n >= batches)
      return make_error("batch_indices[{}] is {}, outside [0, {}) (the batch size of X {})", r, n, batches,
                        shape_to_string(x.shape()));
    const double* roi = rois.data() + r * 4;
    Region<C>& g = regions[static_cast<size_t>(r)];
    g.image = in + n * image;
    g.x1 = static_cast<C>(roi[0]) * scale - offset;
    g.y1 = static_cast<C>(roi[1]) * scale - offset;
    C roi_w = static_cast<C>(roi[2]) * scale - offset - g.x1;
    C roi_h = static_cast<C>(roi[3]) * scale - offset - g.y1;
    if (!std::isfinite(g.x1) || !std::isfinite(g.y1) || !std::isfinite(roi_w) || !std::isfinite(roi_h))
      return make_error("rois[{}] = [{}, {}, {}, {}] scaled by {} is not a finite region", r, roi[0], roi[1], roi[2], roi[3],
                        o.spatial_scale);
    // Without the half-pixel shift regions are at least a pixel wide, as
    // in the original Mask R-CNN code that mode keeps.
    if (!o.half_pixel) {
      roi_w = std::max(roi_w, C(1));
      roi_h = std::max(roi_h, C(1));
    }
    g.bin_h = roi_h / static_cast<C>(o.height);
    g.bin_w = roi_w / static_cast<C>(o.width);
    const auto adaptive = [](C bin) { return std::max(0.0, static_cast<double>(std::ceil(bin))); };
    g.grid_h = o.sampling_ratio > 0 ? static_cast<double>(o.sampling_ratio) : adaptive(g.bin_h);
    g.grid_w = o.sampling_ratio > 0 ? static_cast<double>(o.sampling_ratio) : adaptive(g.bin_w);
  }
  return regions;
}

// Per thread: the taps of each output row and column, and what avg mode
// makes of them.
template <class C> struct Scratch {
  std::vector<std::vector<Tap<C>>> y_taps, x_taps;
  AxisWeights<C> rows, cols;
  std::vector<C> combined;  // one output row's row combination, per column
};

// The bins of one region, channels first..last, each sample apart (max mode).
template <class C>
void pool_region(const Region<C>& g, int64_t first, int64_t last, int64_t height, int64_t width, const Options& o,
                 Scratch<C>& scratch, C* dst) {
  const int64_t oh = o.height, ow = o.width, plane = height * width;
  std::vector<Tap<C>>* y_taps = scratch.y_taps.data();
  std::vector<Tap<C>>* x_taps = scratch.x_taps.data();
  for (int64_t p = 0; p < oh; ++p) axis_taps(g.y1, g.bin_h, p, g.grid_h, height, y_taps[p]);
  for (int64_t p = 0; p < ow; ++p) axis_taps(g.x1, g.bin_w, p, g.grid_w, width, x_taps[p]);
  // Samples outside X read zero: they count in the average all the same,
  // and in max mode they take part as zeros.
  const double samples = g.grid_h * g.grid_w;
  const double divisor = std::max(samples, 1.0);
  for (int64_t c = first; c < last; ++c) {
    const C* src = g.image + c * plane;
    for (int64_t ph = 0; ph < oh; ++ph) {
      const std::vector<Tap<C>>& ty = y_taps[ph];
      for (int64_t pw = 0; pw < ow; ++pw) {
        const std::vector<Tap<C>>& tx = x_taps[pw];
        C sum = 0;
        C best = -std::numeric_limits<C>::infinity();
        for (const Tap<C>& a : ty) {
          const C* row_low = src + a.low * width;
          const C* row_high = src + a.high * width;
          for (const Tap<C>& b : tx) {
            const C v = a.w_low * (b.w_low * row_low[b.low] + b.w_high * row_low[b.high]) +
                        a.w_high * (b.w_low * row_high[b.low] + b.w_high * row_high[b.high]);
            sum += v;
            best = std::max(best, v);
          }
        }
        C& result = dst[(c * oh + ph) * ow + pw];
        if (!o.max_mode) {
          result = static_cast<C>(static_cast<double>(sum) / divisor);
        } else {
          const double inside = static_cast<double>(ty.size()) * static_cast<double>(tx.size());
          if (inside < samples || inside == 0) best = std::max(best, C(0));
          result = best;
        }
      }
    }
  }
}

// The bins of one region, channels first..last, in avg mode.
template <class C>
void average_region(const Region<C>& g, int64_t first, int64_t last, int64_t height, int64_t width, const Options& o,
                    Scratch<C>& scratch, C* dst) {
  const int64_t oh = o.height, ow = o.width, plane = height * width;
  std::vector<Tap<C>>& taps = scratch.y_taps[0];
  AxisWeights<C>& rows = scratch.rows;
  AxisWeights<C>& cols = scratch.cols;
  axis_weights(g.y1, g.bin_h, oh, g.grid_h, height, taps, rows);
  axis_weights(g.x1, g.bin_w, ow, g.grid_w, width, taps, cols);
  // Samples outside X read zero: they count in the average all the same.
  const double divisor = std::max(g.grid_h * g.grid_w, 1.0);
  const int64_t lo = cols.lo, span = std::max<int64_t>(cols.hi - cols.lo, 0);
  scratch.combined.resize(static_cast<size_t>(span));
  C* combined = scratch.combined.data();
  for (int64_t c = first; c < last; ++c) {
    const C* src = g.image + c * plane + lo;
    for (int64_t ph = 0; ph < oh; ++ph) {
      C* out = dst + (c * oh + ph) * ow;
      const auto row_bin = static_cast<size_t>(ph);
      const int64_t row_count = rows.count[row_bin];
      if (row_count == 0 || span == 0) {
        std::fill_n(out, ow, C(0));
        continue;
      }
      const C* wy = rows.weights.data() + rows.offset[row_bin];
      const C* row = src + rows.first[row_bin] * width;
      for (int64_t x = 0; x < span; ++x) combined[x] = wy[0] * row[x];
      for (int64_t r = 1; r < row_count; ++r) {
        const C w = wy[r];
        const C* next = row + r * width;
        for (int64_t x = 0; x < span; ++x) combined[x] += w * next[x];
      }
      for (int64_t pw = 0; pw < ow; ++pw) {
        const auto col_bin = static_cast<size_t>(pw);
        const C* wx = cols.weights.data() + cols.offset[col_bin];
        const C* z = combined + (cols.first[col_bin] - lo);
        C sum = 0;
        for (int64_t j = 0; j < cols.count[col_bin]; ++j) sum += wx[j] * z[j];
        out[pw] = static_cast<C>(static_cast<double>(sum) / divisor);
      }
    }
  }
}

template <class C> Status roi_align(KernelContext& ctx, const Options& o) {
  const Tensor& x = ctx.input(kX);
  ONNXKIT_ASSIGN(const Tensor* rois_t, ctx.tensor(kRois));
  ONNXKIT_ASSIGN(const Tensor* index_t, ctx.tensor(kBatchIndices));
  if (x.rank() != 4) return make_error("X must be 4-D [N, C, H, W], got shape {}", shape_to_string(x.shape()));
  if (rois_t->rank() != 2 || rois_t->dim(1) != 4)
    return make_error("rois must be [num_rois, 4], got shape {}", shape_to_string(rois_t->shape()));
  std::vector<C> x_copy, y_copy;
  const C* in = nullptr;
  if (x.dtype() == data_type_of<C>()) {
    in = x.data<C>();
  } else {
    x_copy.resize(static_cast<size_t>(x.numel()));
    (void)dispatch_float(x.dtype(), [&]<class T>() -> Status {
      const T* p = x.data<T>();
      for (size_t i = 0; i < x_copy.size(); ++i) x_copy[i] = static_cast<C>(p[i]);
      return {};
    });
    in = x_copy.data();
  }
  ONNXKIT_ASSIGN(std::vector<Region<C>> regions, make_regions<C>(x, in, *rois_t, *index_t, o));
  const int64_t num_rois = rois_t->dim(0), channels = x.dim(1), height = x.dim(2), width = x.dim(3);
  const int64_t oh = o.height, ow = o.width;
  Tensor& y = ctx.output(0, x.dtype(), {num_rois, channels, oh, ow});
  if (y.numel() == 0) return {};
  C* out = nullptr;
  if (y.dtype() == data_type_of<C>()) {
    out = y.mutable_data<C>();
  } else {
    y_copy.resize(static_cast<size_t>(y.numel()));
    out = y_copy.data();
  }
  if (height == 0 || width == 0) {
    std::fill_n(out, y.numel(), C(0));  // nothing to sample: every sample is outside
  } else {
    // Threads take a region's channels a block at a time, so that a few
    // regions still keep every thread busy; each block works out its
    // region's sample weights again, a small cost next to its channels'.
    const int64_t blocks = (channels + kChannelBlock - 1) / kChannelBlock, tasks = num_rois * blocks;
    const bool parallel = tasks > 1 && channels * oh * ow * num_rois >= kParallelSampleWork;
    bool out_of_memory = false;
#pragma omp parallel num_threads(available_threads()) if (parallel)
    {
      Scratch<C> scratch;
#pragma omp for schedule(dynamic)
      for (int64_t t = 0; t < tasks; ++t) {
        const int64_t r = t / blocks, first = (t % blocks) * kChannelBlock, last = std::min(channels, first + kChannelBlock);
        C* dst = out + r * channels * oh * ow;
        // The scratch grows as needed, and nothing may leave a parallel region by throwing.
        try {
          scratch.y_taps.resize(static_cast<size_t>(oh));
          scratch.x_taps.resize(static_cast<size_t>(ow));
          if (o.max_mode) pool_region(regions[static_cast<size_t>(r)], first, last, height, width, o, scratch, dst);
          else average_region(regions[static_cast<size_t>(r)], first, last, height, width, o, scratch, dst);
        } catch (const std::bad_alloc&) {
#pragma omp atomic write
          out_of_memory = true;
        }
      }
    }
    if (out_of_memory) return make_error("out of memory while pooling the regions");
  }
  if (!y_copy.empty()) {
    (void)dispatch_float(y.dtype(), [&]<class T>() -> Status {
      T* p = y.mutable_data<T>();
      for (size_t i = 0; i < y_copy.size(); ++i) p[i] = static_cast<T>(y_copy[i]);
      return {};
    });
  }
  return {};
}

}  // namespace

void register_roi_align(KernelRegistry& registry) {
  auto kernel = make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    ONNXKIT_ASSIGN(Options o, read_options(info));
    return ComputeFn([o](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(kX));
      try {
        if (x->dtype() == DataType::float64) return roi_align<double>(ctx, o);
        if (!is_floating(x->dtype()))
          return make_error("X has element type {}; RoiAlign takes float16, bfloat16, float or double", to_string(x->dtype()));
        return roi_align<float>(ctx, o);
      } catch (const std::bad_alloc&) {
        return make_error("out of memory while pooling the regions");
      }
    });
  });
  registry.add("", "RoiAlign", 10, 15, kernel);
  registry.add("", "RoiAlign", 16, kLatestOpset, kernel);
}

}  // namespace onnxkit::runtime::detection
