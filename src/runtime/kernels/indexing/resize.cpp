// Resize (opsets 10, 11, 13, 18, 19) and Upsample (7, 9).
//
// Each output coordinate maps, axis by axis, to a coordinate in the input
// (coordinate_transformation_mode), and the value there is read by nearest,
// linear or cubic interpolation. The maps are built once per call as tables
// of taps (input index, weight) per output position, so the loops that
// touch the data only gather and weigh. N-linear and N-cubic interpolation
// are separable, so the weight of an input element is the product of its
// per-axis weights.
//
// The image case (float32, only the last two axes resized) has its own
// loops over [planes, H, W], in parallel; everything else goes through one
// general N-D loop.

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "runtime/kernels/indexing/indexing.h"
#include "runtime/kernels/nn/blocked.h"
#include "runtime/parallel.h"

namespace onnxkit::runtime::indexing {
namespace {

enum class Mode { nearest, linear, cubic };
enum class Coord {
  half_pixel,
  half_pixel_symmetric,
  pytorch_half_pixel,
  align_corners,
  asymmetric,
  tf_half_pixel_for_nn,
  tf_crop_and_resize
};
// `simple` is how Upsample and Resize-10 (which have no nearest_mode) pick
// the nearest pixel, as the runtimes they were written against did: floor
// when upsampling, ceil when downsampling.
enum class Rounding { round_prefer_floor, round_prefer_ceil, floor, ceil, simple };
enum class AspectPolicy { stretch, not_larger, not_smaller };

struct Options {
  Mode mode = Mode::nearest;
  Coord coord = Coord::half_pixel;
  Rounding rounding = Rounding::round_prefer_floor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
  bool antialias = false;
  AspectPolicy policy = AspectPolicy::stretch;
  std::optional<std::vector<int64_t>> axes;
  // Where roi, scales and sizes come from (input index, -1: not an input).
  int roi_input = -1, scales_input = -1, sizes_input = -1;
  std::optional<std::vector<float>> scales_attribute;  // Upsample-7
};

Result<Mode> parse_mode(const std::string& text, bool cubic_allowed) {
  if (text == "nearest") return Mode::nearest;
  if (text == "linear") return Mode::linear;
  if (text == "cubic" && cubic_allowed) return Mode::cubic;
  return make_error("attribute 'mode' is '{}'; it must be nearest{}", text, cubic_allowed ? ", linear or cubic" : " or linear");
}

Result<Coord> parse_coord(const std::string& text, int64_t opset) {
  if (text == "half_pixel") return Coord::half_pixel;
  if (text == "pytorch_half_pixel") return Coord::pytorch_half_pixel;
  if (text == "align_corners") return Coord::align_corners;
  if (text == "asymmetric") return Coord::asymmetric;
  if (text == "tf_crop_and_resize") return Coord::tf_crop_and_resize;
  if (text == "tf_half_pixel_for_nn" && opset < 13) return Coord::tf_half_pixel_for_nn;
  if (text == "half_pixel_symmetric" && opset >= 19) return Coord::half_pixel_symmetric;
  return make_error("attribute 'coordinate_transformation_mode' is '{}', which opset {} does not define", text, opset);
}

Result<Rounding> parse_rounding(const std::string& text) {
  if (text == "round_prefer_floor") return Rounding::round_prefer_floor;
  if (text == "round_prefer_ceil") return Rounding::round_prefer_ceil;
  if (text == "floor") return Rounding::floor;
  if (text == "ceil") return Rounding::ceil;
  return make_error("attribute 'nearest_mode' is '{}'; it must be round_prefer_floor, round_prefer_ceil, floor or ceil", text);
}

Result<AspectPolicy> parse_policy(const std::string& text) {
  if (text == "stretch") return AspectPolicy::stretch;
  if (text == "not_larger") return AspectPolicy::not_larger;
  if (text == "not_smaller") return AspectPolicy::not_smaller;
  return make_error("attribute 'keep_aspect_ratio_policy' is '{}'; it must be stretch, not_larger or not_smaller", text);
}

// The options of Resize-11 and later.
Result<Options> resize_options(const KernelInfo& info) {
  const int64_t opset = info.opset();
  Options o;
  ONNXKIT_ASSIGN(o.mode, parse_mode(info.attr_string("mode", "nearest"), true));
  ONNXKIT_ASSIGN(o.coord, parse_coord(info.attr_string("coordinate_transformation_mode", "half_pixel"), opset));
  ONNXKIT_ASSIGN(o.rounding, parse_rounding(info.attr_string("nearest_mode", "round_prefer_floor")));
  o.cubic_a = info.attr_float("cubic_coeff_a", -0.75f);
  o.exclude_outside = info.attr_int("exclude_outside", 0) != 0;
  o.extrapolation = info.attr_float("extrapolation_value", 0.0f);
  if (opset >= 18) {
    o.antialias = info.attr_int("antialias", 0) != 0;
    ONNXKIT_ASSIGN(o.policy, parse_policy(info.attr_string("keep_aspect_ratio_policy", "stretch")));
    if (info.has_attr("axes")) o.axes = info.attr_ints("axes");
  }
  o.roi_input = 1;
  o.scales_input = 2;
  o.sizes_input = 3;
  return o;
}

// The options of Upsample and Resize-10: asymmetric coordinates, and
// nearest rounding down when upsampling, up when downsampling.
Result<Options> legacy_options(const KernelInfo& info) {
  Options o;
  ONNXKIT_ASSIGN(o.mode, parse_mode(info.attr_string("mode", "nearest"), false));
  o.coord = Coord::asymmetric;
  o.rounding = Rounding::simple;
  return o;
}

// --- geometry ------------------------------------------------------------------

// One axis: sizes, the scale the coordinate maps use, and the roi.
struct AxisGeometry {
  int64_t in = 1, out = 1;
  double scale = 1;
  // The output length the scale implies, fractional when it came from a
  // scale factor (half_pixel_symmetric and align_corners measure with it).
  double width = 1;
  double roi_start = 0, roi_end = 1;
};

Result<std::vector<double>> read_floats(const Tensor& t, std::string_view name) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < v.size(); ++i) {
    ONNXKIT_ASSIGN(v[i], numeric_at(t, static_cast<int64_t>(i), name));
  }
  return v;
}

// A tensor input that is given and not empty (an empty one means "absent").
Result<const Tensor*> optional_input(KernelContext& ctx, int index) {
  if (index < 0 || !ctx.has_input(static_cast<size_t>(index))) return static_cast<const Tensor*>(nullptr);
  ONNXKIT_ASSIGN(const Tensor* t, ctx.tensor(static_cast<size_t>(index)));
  return t->numel() > 0 ? t : nullptr;
}

int64_t floor_to_int(double v) { return static_cast<int64_t>(std::floor(v)); }

// `x`: the input's shape (logical, for a blocked input).
Result<std::vector<AxisGeometry>> geometry(KernelContext& ctx, const Shape& x, const Options& o) {
  const size_t rank = x.size();
  std::vector<AxisGeometry> g(rank);
  for (size_t d = 0; d < rank; ++d) {
    g[d].in = g[d].out = x[d];
    g[d].width = static_cast<double>(x[d]);
  }
  // The axes that roi, scales and sizes list.
  std::vector<size_t> axes;
  if (o.axes) {
    std::set<int64_t> seen;
    for (int64_t a : *o.axes) {
      ONNXKIT_ASSIGN(int64_t axis, existing_axis(a, rank));
      if (!seen.insert(axis).second) return make_error("attribute 'axes' lists axis {} twice", a);
      axes.push_back(static_cast<size_t>(axis));
    }
  } else {
    for (size_t d = 0; d < rank; ++d) axes.push_back(d);
  }

  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (o.scales_attribute) {
    scales.assign(o.scales_attribute->begin(), o.scales_attribute->end());
  } else {
    ONNXKIT_ASSIGN(const Tensor* scales_t, optional_input(ctx, o.scales_input));
    ONNXKIT_ASSIGN(const Tensor* sizes_t, optional_input(ctx, o.sizes_input));
    if (scales_t && sizes_t) return make_error("both scales and sizes are given; give only one");
    if (!scales_t && !sizes_t) {
      if (o.sizes_input >= 0) return make_error("neither scales nor sizes is given (or both are empty)");
      return make_error("scales is missing or empty");
    }
    if (scales_t) {
      if (scales_t->dtype() != DataType::float32) return make_error("scales must be float, got {}", to_string(scales_t->dtype()));
      ONNXKIT_ASSIGN(scales, read_floats(*scales_t, "scales"));
    } else {
      ONNXKIT_ASSIGN(sizes, read_index_tensor(*sizes_t, "sizes"));
    }
  }
  const char* listed = scales.empty() ? "sizes" : "scales";
  const size_t count = scales.empty() ? sizes.size() : scales.size();
  if (count != axes.size())
    return make_error("{} has {} values for {} {}", listed, count, axes.size(),
                      o.axes ? "axes" : fmt::format("dims of the input (shape {})", shape_to_string(x)));

  if (o.coord == Coord::tf_crop_and_resize) {
    ONNXKIT_ASSIGN(const Tensor* roi_t, optional_input(ctx, o.roi_input));
    if (roi_t) {
      ONNXKIT_ASSIGN(std::vector<double> roi, read_floats(*roi_t, "roi"));
      if (roi.size() != 2 * axes.size())
        return make_error("roi has {} values; tf_crop_and_resize needs {} (a start and an end per axis)", roi.size(),
                          2 * axes.size());
      for (size_t i = 0; i < axes.size(); ++i) {
        g[axes[i]].roi_start = roi[i];
        g[axes[i]].roi_end = roi[i + axes.size()];
      }
    }
  }

  if (!scales.empty()) {
    if (o.policy != AspectPolicy::stretch) return make_error("keep_aspect_ratio_policy applies to sizes, but scales were given");
    for (size_t i = 0; i < axes.size(); ++i) {
      AxisGeometry& a = g[axes[i]];
      const double s = scales[i];
      if (!(s > 0) || !std::isfinite(s)) return make_error("scales element {} is {}; scales must be positive", i, s);
      const double span = o.coord == Coord::tf_crop_and_resize ? a.roi_end - a.roi_start : 1.0;
      const double out = std::floor(static_cast<double>(a.in) * span * s);
      if (!(out >= 0) || out > 9.0e15)
        return make_error("scales element {} ({}) gives axis {} an output size of {}", i, s, axes[i], out);
      a.scale = s;
      a.out = static_cast<int64_t>(out);
      a.width = s * static_cast<double>(a.in);
    }
  } else {
    for (size_t i = 0; i < axes.size(); ++i)
      if (sizes[i] < 0) return make_error("sizes element {} is {}; sizes must not be negative", i, sizes[i]);
    if (o.policy == AspectPolicy::stretch) {
      for (size_t i = 0; i < axes.size(); ++i) {
        AxisGeometry& a = g[axes[i]];
        a.out = sizes[i];
        a.width = static_cast<double>(a.out);
        a.scale = a.in > 0 ? static_cast<double>(a.out) / static_cast<double>(a.in) : 1.0;
      }
    } else {
      // One scale for every listed axis: the largest that fits (not_larger)
      // or the smallest that covers (not_smaller).
      double s = o.policy == AspectPolicy::not_larger ? INFINITY : 0.0;
      for (size_t i = 0; i < axes.size(); ++i) {
        const double in = static_cast<double>(g[axes[i]].in);
        if (in == 0) continue;
        const double r = static_cast<double>(sizes[i]) / in;
        s = o.policy == AspectPolicy::not_larger ? std::min(s, r) : std::max(s, r);
      }
      if (!std::isfinite(s)) s = 1.0;  // every listed axis is empty
      for (size_t i = 0; i < axes.size(); ++i) {
        AxisGeometry& a = g[axes[i]];
        a.scale = s;
        a.width = s * static_cast<double>(a.in);
        if (a.width > 9.0e15) return make_error("sizes give axis {} an output size of {}", axes[i], a.width);
        a.out = floor_to_int(a.width + 0.5);
      }
    }
  }
  for (size_t d = 0; d < rank; ++d)
    if (g[d].in == 0 && g[d].out > 0) return make_error("axis {} of the input is empty; it cannot be resized to {}", d, g[d].out);
  return g;
}

// --- per-axis tables -----------------------------------------------------------

struct AxisTable {
  int64_t taps = 1;            // per output position
  std::vector<int64_t> index;  // [out * taps] input indices, within [0, in)
  std::vector<double> weight;  // [out * taps]
  std::vector<char> outside;   // [out] tf_crop_and_resize: use the extrapolation value
  bool identity = false;       // output position o reads input o, weight 1
};

// The input coordinate output position `o` maps to.
double original_coordinate(int64_t o, const AxisGeometry& a, Coord coord) {
  const double x = static_cast<double>(o), in = static_cast<double>(a.in);
  switch (coord) {
    case Coord::half_pixel: return (x + 0.5) / a.scale - 0.5;
    case Coord::half_pixel_symmetric: {
      // Centers the output on the input when the output length was rounded.
      const double adjustment = static_cast<double>(a.out) / a.width;
      const double offset = in / 2 * (1 - adjustment);
      return offset + (x + 0.5) / a.scale - 0.5;
    }
    case Coord::pytorch_half_pixel: return a.out > 1 ? (x + 0.5) / a.scale - 0.5 : 0.0;
    case Coord::align_corners:
      // Measured with the fractional width, as ONNX's own test data is.
      return a.width == 1 ? 0.0 : x * (in - 1) / (a.width - 1);
    case Coord::asymmetric: return x / a.scale;
    case Coord::tf_half_pixel_for_nn: return (x + 0.5) / a.scale;
    case Coord::tf_crop_and_resize:
      if (a.out > 1) return a.roi_start * (in - 1) + x * (a.roi_end - a.roi_start) * (in - 1) / static_cast<double>(a.out - 1);
      return 0.5 * (a.roi_start + a.roi_end) * (in - 1);
  }
  return x;
}

int64_t nearest_position(double x, Rounding rounding, double scale) {
  const double down = std::floor(x);
  switch (rounding) {
    case Rounding::round_prefer_floor: return static_cast<int64_t>(x - down == 0.5 ? down : std::round(x));
    case Rounding::round_prefer_ceil: return static_cast<int64_t>(x - down == 0.5 ? std::ceil(x) : std::round(x));
    case Rounding::floor: return static_cast<int64_t>(down);
    case Rounding::ceil: return static_cast<int64_t>(std::ceil(x));
    case Rounding::simple: return static_cast<int64_t>(scale < 1 ? std::ceil(x) : down);
  }
  return static_cast<int64_t>(down);
}

double linear_kernel(double d) { return std::max(0.0, 1.0 - std::abs(d)); }

// Keys' cubic convolution kernel with coefficient a.
double cubic_kernel(double d, double a) {
  d = std::abs(d);
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

AxisTable axis_table(const AxisGeometry& a, const Options& o) {
  AxisTable t;
  const size_t out = static_cast<size_t>(a.out);
  t.outside.assign(out, 0);
  if (out == 0) return t;  // the scale may be 0 then; nothing to map
  // Taps cover the kernel's support, stretched by 1/scale when antialiasing
  // a downscale (more inputs reach each output).
  const double support = o.mode == Mode::linear ? 1.0 : 2.0;
  const double stretch = o.antialias && a.scale < 1 ? a.scale : 1.0;
  const int64_t reach = static_cast<int64_t>(std::ceil(support / stretch));
  // From this far outside every tap reads the edge; bounding coordinates
  // keeps the integer conversions below defined for any scale.
  const double limit = static_cast<double>(a.in + reach) + 4.0;
  auto coordinate = [&](int64_t i) {
    const double x = original_coordinate(i, a, o.coord);
    if (o.coord == Coord::tf_crop_and_resize && (x < 0 || x > static_cast<double>(a.in - 1)))
      t.outside[static_cast<size_t>(i)] = 1;
    return std::isnan(x) ? 0.0 : std::clamp(x, -limit, limit);
  };
  const int64_t last = std::max<int64_t>(a.in - 1, 0);

  if (o.mode == Mode::nearest) {
    t.taps = 1;
    t.index.resize(out);
    t.weight.assign(out, 1.0);
    for (size_t i = 0; i < out; ++i)
      t.index[i] = std::clamp<int64_t>(nearest_position(coordinate(static_cast<int64_t>(i)), o.rounding, a.scale), 0, last);
  } else {
    t.taps = 2 * reach;
    const size_t taps = static_cast<size_t>(t.taps);
    t.index.resize(out * taps);
    t.weight.resize(out * taps);
    for (size_t i = 0; i < out; ++i) {
      const double x = coordinate(static_cast<int64_t>(i));
      const int64_t first = static_cast<int64_t>(std::floor(x)) - reach + 1;
      double sum = 0;
      for (size_t k = 0; k < taps; ++k) {
        const int64_t p = first + static_cast<int64_t>(k);
        const double d = (static_cast<double>(p) - x) * stretch;
        double w = o.mode == Mode::linear ? linear_kernel(d) : cubic_kernel(d, o.cubic_a);
        if (o.exclude_outside && (p < 0 || p >= a.in)) w = 0;
        t.index[i * taps + k] = std::clamp<int64_t>(p, 0, last);
        t.weight[i * taps + k] = w;
        sum += w;
      }
      if ((o.antialias || o.exclude_outside) && sum != 0)
        for (size_t k = 0; k < taps; ++k) t.weight[i * taps + k] /= sum;
    }
  }

  t.identity = a.out == a.in;
  for (size_t i = 0; i < out && t.identity; ++i) {
    double own = 0;
    for (size_t k = 0; k < static_cast<size_t>(t.taps); ++k) {
      const double w = t.weight[i * static_cast<size_t>(t.taps) + k];
      if (w == 0) continue;
      if (t.index[i * static_cast<size_t>(t.taps) + k] != static_cast<int64_t>(i)) t.identity = false;
      own += w;
    }
    if (own != 1 || t.outside[i]) t.identity = false;
  }
  return t;
}

// --- interpolation -------------------------------------------------------------

// Any rank, any type: each output element sums over the product of its
// per-axis taps (one tap per axis in nearest mode, which just copies).
template <class T> void resize_generic(const Tensor& x, const std::vector<AxisTable>& tables, const Options& o, Tensor& y) {
  const size_t rank = x.rank();
  const std::vector<int64_t> in_strides = contiguous_strides(x.shape());
  std::vector<size_t> active;  // axes that are not an identity
  for (size_t d = 0; d < rank; ++d)
    if (!tables[d].identity) active.push_back(d);
  constexpr bool complex = is_complex_v<T>;
  using Acc = std::conditional_t<complex, std::complex<double>, double>;
  const T fill = from_double<T>(o.extrapolation);
  const T* in = x.data<T>();
  T* out = y.mutable_data<T>();
  const int64_t total = y.numel();

  // Per-thread odometers, allocated here: nothing may throw inside the region.
  const int max_threads = available_threads();
  std::vector<std::vector<int64_t>> indices(static_cast<size_t>(max_threads), std::vector<int64_t>(rank));
  std::vector<std::vector<int64_t>> taps(static_cast<size_t>(max_threads), std::vector<int64_t>(active.size()));
  // Copying strings allocates, so they stay on one thread.
  const bool parallel = total >= kParallelWork && !std::is_same_v<T, std::string>;
#pragma omp parallel num_threads(max_threads) if (parallel)
  {
    const int threads = omp_get_num_threads(), me = omp_get_thread_num();
    std::vector<int64_t>& index = indices[static_cast<size_t>(me)];
    std::vector<int64_t>& tap = taps[static_cast<size_t>(me)];
    const int64_t per = (total + threads - 1) / threads;
    const int64_t begin = std::min(total, me * per), end = std::min(total, begin + per);
    int64_t rest = begin;
    for (size_t d = rank; d-- > 0;) {
      index[d] = rest % y.dim(d);
      rest /= y.dim(d);
    }
    for (int64_t e = begin; e < end; ++e) {
      int64_t base = 0;
      bool outside = false;
      for (size_t d = 0; d < rank; ++d) {
        const AxisTable& t = tables[d];
        if (t.outside[static_cast<size_t>(index[d])]) outside = true;
        if (t.identity) base += index[d] * in_strides[d];
      }
      if (outside) {
        out[e] = fill;
      } else if (o.mode == Mode::nearest) {
        int64_t offset = base;
        for (size_t d : active) offset += tables[d].index[static_cast<size_t>(index[d])] * in_strides[d];
        out[e] = in[offset];
      } else if constexpr (is_real_v<T> || complex) {
        // Odometer over the taps of the active axes.
        std::fill(tap.begin(), tap.end(), 0);
        Acc sum = 0;
        while (true) {
          double w = 1;
          int64_t offset = base;
          for (size_t k = 0; k < active.size(); ++k) {
            const AxisTable& t = tables[active[k]];
            const size_t at = static_cast<size_t>(index[active[k]] * t.taps + tap[k]);
            w *= t.weight[at];
            offset += t.index[at] * in_strides[active[k]];
          }
          if (w != 0) {
            if constexpr (complex) sum += w * Acc(in[offset]);
            else sum += w * static_cast<double>(in[offset]);
          }
          size_t k = active.size();
          while (k-- > 0) {
            if (++tap[k] < tables[active[k]].taps) break;
            tap[k] = 0;
          }
          if (k == static_cast<size_t>(-1)) break;
        }
        if constexpr (complex) out[e] = T(sum);
        else out[e] = from_double<T>(sum);
      }
      for (size_t d = rank; d-- > 0;) {
        if (++index[d] < y.dim(d)) break;
        index[d] = 0;
      }
    }
  }
}

// float32 with only the last two axes resized, as [planes, H, W], in
// parallel. Nearest copies the previous output row when both read the same
// input row (integer upscales); see below for linear and the wider filters.
void resize_image(const Tensor& x, const std::vector<AxisTable>& tables, const Options& o, Tensor& y) {
  const size_t rank = x.rank();
  const int64_t in_h = rank >= 2 ? x.dim(rank - 2) : 1, in_w = x.dim(rank - 1);
  const int64_t out_h = rank >= 2 ? y.dim(rank - 2) : 1, out_w = y.dim(rank - 1);
  const int64_t planes = y.numel() / (out_h * out_w);
  AxisTable flat;  // the height axis of a 1-D input
  flat.index = {0};
  flat.weight = {1.0};
  flat.outside = {0};
  flat.identity = true;
  const AxisTable& th = rank >= 2 ? tables[rank - 2] : flat;
  const AxisTable& tw = tables[rank - 1];
  const float fill = static_cast<float>(o.extrapolation);
  const float* in = x.data<float>();
  float* out = y.mutable_data<float>();
  auto fill_outside_columns = [&](float* row) {
    for (int64_t ow = 0; ow < out_w; ++ow)
      if (tw.outside[static_cast<size_t>(ow)]) row[ow] = fill;
  };

  if (o.mode == Mode::nearest) {
    const int64_t work = planes * out_h;
    const bool any_outside = std::any_of(tw.outside.begin(), tw.outside.end(), [](char c) { return c != 0; });
    // An integer upscale of the width (FPN's 2x): each input element goes
    // to `factor` neighbours, a loop without the table's gather.
    int64_t factor = in_w > 0 && out_w % in_w == 0 ? out_w / in_w : 0;
    for (int64_t ow = 0; factor > 0 && ow < out_w; ++ow)
      if (tw.outside[static_cast<size_t>(ow)] || tw.index[static_cast<size_t>(ow)] != ow / factor) factor = 0;
    auto rows = [&](int64_t first, int64_t last) {
      for (int64_t r = first; r < last; ++r) {
        const int64_t p = r / out_h, oh = r % out_h;
        float* dst = out + r * out_w;
        if (th.outside[static_cast<size_t>(oh)]) {
          std::fill_n(dst, out_w, fill);
          continue;
        }
        const int64_t ih = th.index[static_cast<size_t>(oh)];
        if (r > first && oh > 0 && !th.outside[static_cast<size_t>(oh - 1)] && th.index[static_cast<size_t>(oh - 1)] == ih) {
          std::copy_n(dst - out_w, out_w, dst);
          continue;
        }
        const float* src = in + (p * in_h + ih) * in_w;
        if (factor == 2) {
          for (int64_t iw = 0; iw < in_w; ++iw) dst[2 * iw] = dst[2 * iw + 1] = src[iw];
        } else if (factor > 0) {
          for (int64_t iw = 0; iw < in_w; ++iw) std::fill_n(dst + iw * factor, factor, src[iw]);
        } else {
          for (int64_t ow = 0; ow < out_w; ++ow) dst[ow] = src[tw.index[static_cast<size_t>(ow)]];
          if (any_outside) fill_outside_columns(dst);
        }
      }
    };
    if (work < 2 || y.numel() < kParallelWork) {
      rows(0, work);
      return;
    }
    // Contiguous chunks, so each thread may reuse the row it wrote last.
#pragma omp parallel
    {
      const int64_t threads = omp_get_num_threads(), me = omp_get_thread_num();
      const int64_t per = (work + threads - 1) / threads;
      const int64_t first = std::min(work, me * per);
      rows(first, std::min(work, first + per));
    }
    return;
  }

  if (th.taps <= 2 && tw.taps <= 2) {
    // Linear: four taps per output read straight from the input; cheaper
    // than two passes when each output needs so few.
    struct Tap {
      int64_t i0, i1;
      float w0, w1;
    };
    auto pairs = [](const AxisTable& t) {
      std::vector<Tap> v(t.outside.size());
      for (size_t i = 0; i < v.size(); ++i) {
        const size_t k = i * static_cast<size_t>(t.taps);
        v[i] = t.taps == 1
                   ? Tap{t.index[k], t.index[k], static_cast<float>(t.weight[k]), 0.0f}
                   : Tap{t.index[k], t.index[k + 1], static_cast<float>(t.weight[k]), static_cast<float>(t.weight[k + 1])};
      }
      return v;
    };
    const std::vector<Tap> rows = pairs(th), cols = pairs(tw);
    // Across one input row: what every output row reading it starts from.
    auto across = [&](const float* row, float* t) {
      for (int64_t ow = 0; ow < out_w; ++ow) {
        const Tap& c = cols[static_cast<size_t>(ow)];
        t[ow] = c.w0 * row[c.i0] + c.w1 * row[c.i1];
      }
    };
    if (in_h < out_h) {
      // Upscaling (LRASPP's and DeepLabV3's last layer, 28x28 to 224x224):
      // each input row serves several output rows, so the gathers across
      // run once per input row, and each output row blends two of those
      // rows, a loop the compiler vectorizes: the same sums in the same
      // order as the direct loop below, at a third of its time.
      auto down = [&](int64_t p, const float* across_rows, int64_t oh) {
        float* dst = out + (p * out_h + oh) * out_w;
        if (th.outside[static_cast<size_t>(oh)]) {
          std::fill_n(dst, out_w, fill);
          return;
        }
        const Tap& h = rows[static_cast<size_t>(oh)];
        const float* t0 = across_rows + h.i0 * out_w;
        const float* t1 = across_rows + h.i1 * out_w;
        for (int64_t ow = 0; ow < out_w; ++ow) dst[ow] = h.w0 * t0[ow] + h.w1 * t1[ow];
        fill_outside_columns(dst);
      };
      const bool large = y.numel() >= kParallelWork;
      const int64_t threads = large ? available_threads() : 1;
      // Scratch for every thread up front: nothing may throw inside a region.
      std::vector<float> scratch(static_cast<size_t>((planes >= threads ? threads : 1) * in_h * out_w));
      if (planes >= threads) {
#pragma omp parallel num_threads(static_cast <int>(threads)) if (threads > 1)
        {
          float* mine = scratch.data() + omp_get_thread_num() * in_h * out_w;
#pragma omp for schedule(static)
          for (int64_t p = 0; p < planes; ++p) {
            for (int64_t ih = 0; ih < in_h; ++ih) across(in + (p * in_h + ih) * in_w, mine + ih * out_w);
            for (int64_t oh = 0; oh < out_h; ++oh) down(p, mine, oh);
          }
        }
      } else {
        for (int64_t p = 0; p < planes; ++p) {
          for (int64_t ih = 0; ih < in_h; ++ih) across(in + (p * in_h + ih) * in_w, scratch.data() + ih * out_w);
#pragma omp parallel for num_threads(static_cast <int>(threads)) schedule(static)
          for (int64_t oh = 0; oh < out_h; ++oh) down(p, scratch.data(), oh);
        }
      }
      return;
    }
    const int64_t work = planes * out_h;
#pragma omp parallel for if (work > 1 && y.numel() >= kParallelWork) schedule(static)
    for (int64_t r = 0; r < work; ++r) {
      const int64_t p = r / out_h, oh = r % out_h;
      float* dst = out + r * out_w;
      if (th.outside[static_cast<size_t>(oh)]) {
        std::fill_n(dst, out_w, fill);
        continue;
      }
      const Tap& h = rows[static_cast<size_t>(oh)];
      const float* r0 = in + (p * in_h + h.i0) * in_w;
      const float* r1 = in + (p * in_h + h.i1) * in_w;
      for (int64_t ow = 0; ow < out_w; ++ow) {
        const Tap& c = cols[static_cast<size_t>(ow)];
        dst[ow] = h.w0 * (c.w0 * r0[c.i0] + c.w1 * r0[c.i1]) + h.w1 * (c.w0 * r1[c.i0] + c.w1 * r1[c.i1]);
      }
      fill_outside_columns(dst);
    }
    return;
  }

  // Cubic and antialiased filters: a horizontal pass over the input rows
  // some output row reads (compacted into scratch rows), then a vertical
  // pass, K_h + K_w multiply-adds per output instead of K_h * K_w.
  const size_t kh = static_cast<size_t>(th.taps), kw = static_cast<size_t>(tw.taps);
  std::vector<int64_t> slot(static_cast<size_t>(in_h), -1), needed;
  for (size_t oh = 0; oh < static_cast<size_t>(out_h); ++oh)
    for (size_t k = 0; k < kh; ++k) {
      const int64_t ih = th.index[oh * kh + k];
      if (th.weight[oh * kh + k] != 0 && !th.outside[oh] && slot[static_cast<size_t>(ih)] < 0) {
        slot[static_cast<size_t>(ih)] = 0;
        needed.push_back(ih);
      }
    }
  std::sort(needed.begin(), needed.end());
  for (size_t k = 0; k < needed.size(); ++k) slot[static_cast<size_t>(needed[k])] = static_cast<int64_t>(k);
  const std::vector<float> col_weight(tw.weight.begin(), tw.weight.end());
  const std::vector<float> row_weight(th.weight.begin(), th.weight.end());
  const int64_t rows_needed = static_cast<int64_t>(needed.size());

  auto one_plane = [&](int64_t p, float* scratch, bool parallel) {
    const float* src = in + p * in_h * in_w;
    float* dst = out + p * out_h * out_w;
#pragma omp parallel for if (parallel) schedule(static)
    for (int64_t k = 0; k < rows_needed; ++k) {
      const float* row = src + needed[static_cast<size_t>(k)] * in_w;
      float* t = scratch + k * out_w;
      for (int64_t ow = 0; ow < out_w; ++ow) {
        const size_t at = static_cast<size_t>(ow) * kw;
        float sum = 0;
        for (size_t j = 0; j < kw; ++j) sum += col_weight[at + j] * row[tw.index[at + j]];
        t[ow] = sum;
      }
    }
#pragma omp parallel for if (parallel) schedule(static)
    for (int64_t oh = 0; oh < out_h; ++oh) {
      float* d = dst + oh * out_w;
      if (th.outside[static_cast<size_t>(oh)]) {
        std::fill_n(d, out_w, fill);
        continue;
      }
      bool first = true;
      for (size_t k = 0; k < kh; ++k) {
        const size_t at = static_cast<size_t>(oh) * kh + k;
        const float w = row_weight[at];
        if (w == 0) continue;
        const float* t = scratch + slot[static_cast<size_t>(th.index[at])] * out_w;
        if (first) {
          for (int64_t ow = 0; ow < out_w; ++ow) d[ow] = w * t[ow];
        } else {
          for (int64_t ow = 0; ow < out_w; ++ow) d[ow] += w * t[ow];
        }
        first = false;
      }
      if (first) std::fill_n(d, out_w, 0.0f);
      fill_outside_columns(d);
    }
  };
  const int64_t plane_work = (rows_needed + out_h) * out_w * static_cast<int64_t>(kh + kw);
  const bool large = planes * plane_work >= kParallelWork;
  const int64_t threads = available_threads();
  if (planes >= 2 * threads && large) {
    // Scratch for every thread up front: nothing may throw inside the region.
    std::vector<float> scratch(static_cast<size_t>(threads * rows_needed * out_w));
#pragma omp parallel num_threads(static_cast <int>(threads))
    {
      float* mine = scratch.data() + omp_get_thread_num() * rows_needed * out_w;
#pragma omp for schedule(static)
      for (int64_t p = 0; p < planes; ++p) one_plane(p, mine, false);
    }
  } else {
    std::vector<float> scratch(static_cast<size_t>(rows_needed * out_w));
    for (int64_t p = 0; p < planes; ++p) one_plane(p, scratch.data(), large && plane_work >= kParallelWork);
  }
}

Status resize(KernelContext& ctx, const Options& o) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  ONNXKIT_ASSIGN(std::vector<AxisGeometry> g, geometry(ctx, x->shape(), o));
  Shape out_shape(g.size());
  for (size_t d = 0; d < g.size(); ++d) out_shape[d] = g[d].out;
  ONNXKIT_TRY(checked_size(out_shape, "the resized output"));
  const DataType type = x->dtype();
  if (o.mode != Mode::nearest && (type == DataType::string || type == DataType::boolean))
    return make_error("{} interpolation needs numbers, got {}", o.mode == Mode::linear ? "linear" : "cubic", to_string(type));

  Tensor& y = ctx.output(0, type, std::move(out_shape));
  if (y.numel() == 0) return {};  // before the tables: an empty output may still have a huge dim
  std::vector<AxisTable> tables;
  tables.reserve(g.size());
  for (const AxisGeometry& a : g) tables.push_back(axis_table(a, o));

  const size_t rank = g.size();
  bool image = type == DataType::float32 && rank >= 1;
  for (size_t d = 0; d + 2 < rank && image; ++d)
    if (!tables[d].identity) image = false;
  if (image) {
    resize_image(*x, tables, o, y);
    return {};
  }
  return dispatch_all(type, [&]<class T>() -> Status {
    resize_generic<T>(*x, tables, o, y);
    return {};
  });
}

// Nearest Resize of H and W on blocked activations: each output pixel is
// the input pixel's vector of a block's channels, read where the plain
// kernel's tables say.
class BlockedResize final : public Kernel {
 public:
  BlockedResize(Options o, int64_t channels) : o_(std::move(o)), channels_(channels) {}

  Status compute(KernelContext& ctx) const override {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    const int64_t lanes = nn::channel_block();
    if (x->rank() != 5 || x->dim(4) != lanes || x->dim(1) != (channels_ + lanes - 1) / lanes)
      return make_error("expected blocked activations of {} channels, got shape {}", channels_, shape_to_string(x->shape()));
    const int64_t n = x->dim(0), blocks = x->dim(1), in_h = x->dim(2), in_w = x->dim(3);
    ONNXKIT_ASSIGN(std::vector<AxisGeometry> g, geometry(ctx, Shape{n, channels_, in_h, in_w}, o_));
    if (g[0].out != n || g[1].out != channels_)
      return make_error("the scales resize N or C; the blocked layout was planned for H and W only");
    const int64_t out_h = g[2].out, out_w = g[3].out;
    Tensor& y = ctx.output(0, DataType::float32, nn::blocked_shape(n, channels_, out_h, out_w));
    if (y.numel() == 0) return {};
    const AxisTable rows = axis_table(g[2], o_), columns = axis_table(g[3], o_);
    const float* in = x->data<float>();
    float* out = y.mutable_data<float>();
    const int64_t row_floats = out_w * lanes;
    parallel_ranges(n * blocks * out_h, y.numel() >= kParallelWork, [&](int64_t first, int64_t last) {
      for (int64_t r = first; r < last; ++r) {
        const int64_t plane = r / out_h, oh = r % out_h, ih = rows.index[static_cast<size_t>(oh)];
        float* dst = out + r * row_floats;
        if (r > first && oh > 0 && rows.index[static_cast<size_t>(oh - 1)] == ih) {  // an integer upscale's repeated row
          std::copy_n(dst - row_floats, row_floats, dst);
          continue;
        }
        const float* src = in + (plane * in_h + ih) * in_w * lanes;
        for (int64_t ow = 0; ow < out_w; ++ow)
          std::copy_n(src + columns.index[static_cast<size_t>(ow)] * lanes, lanes, dst + ow * lanes);
      }
    });
    return {};
  }

 private:
  Options o_;
  int64_t channels_;
};

}  // namespace

bool resize_runs_blocked(const ir::Node& node, const ConstantOf& constant) {
  if (!node.is_onnx_op("Resize") || node.attr_string("mode", "nearest") != "nearest" ||
      node.attr_string("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize" ||
      node.attribute("axes") != nullptr)
    return false;
  // Resize-10: X, scales; later: X, roi, scales, sizes.
  const size_t count = node.inputs().size();
  if (count > 4 || (count == 4 && node.input(3) != nullptr)) return false;
  const Tensor* scales = constant(node.input(count == 2 ? 1 : 2));
  if (count < 2 || scales == nullptr || scales->dtype() != DataType::float32 || scales->numel() != 4) return false;
  const float* s = scales->data<float>();
  return s[0] == 1 && s[1] == 1 && s[2] > 0 && s[3] > 0;
}

Result<std::unique_ptr<Kernel>> make_blocked_resize(const KernelInfo& info, int64_t channels) {
  Options o;
  if (info.opset() >= 11) {
    ONNXKIT_ASSIGN(o, resize_options(info));
  } else {
    ONNXKIT_ASSIGN(o, legacy_options(info));
    o.scales_input = 1;
  }
  if (o.mode != Mode::nearest || o.coord == Coord::tf_crop_and_resize || o.axes)
    return make_error("only a nearest Resize of H and W runs on the blocked layout");
  return std::unique_ptr<Kernel>(std::make_unique<BlockedResize>(std::move(o), channels));
}

void register_resize(KernelRegistry& r) {
  r.add("", "Upsample", 7, 8, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          ONNXKIT_ASSIGN(Options o, legacy_options(info));
          if (!info.has_attr("scales")) return make_error("attribute 'scales' is required");
          o.scales_attribute = info.attr_floats("scales");
          return ComputeFn([o](KernelContext& ctx) { return resize(ctx, o); });
        }));
  auto legacy = make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    ONNXKIT_ASSIGN(Options o, legacy_options(info));
    o.scales_input = 1;
    return ComputeFn([o](KernelContext& ctx) { return resize(ctx, o); });
  });
  r.add("", "Upsample", 9, 9, legacy);
  // A nearest Resize of H and W runs on blocked activations (blocked.h).
  const OpTraits blocked{.blocked = OpTraits::Blocked::own_kernel};
  r.add("", "Resize", 10, 10, legacy, blocked);
  // 11: roi, sizes, coordinate modes, cubic; 13: tf_half_pixel_for_nn gone,
  // roi and scales optional; 18: antialias, axes, keep_aspect_ratio_policy;
  // 19: half_pixel_symmetric. resize_options reads what each opset defines.
  auto modern = make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    ONNXKIT_ASSIGN(Options o, resize_options(info));
    return ComputeFn([o](KernelContext& ctx) { return resize(ctx, o); });
  });
  r.add("", "Resize", 11, 12, modern, blocked);
  r.add("", "Resize", 13, 17, modern, blocked);
  r.add("", "Resize", 18, 18, modern, blocked);
  r.add("", "Resize", 19, kLatestOpset, modern, blocked);
}

}  // namespace onnxkit::runtime::indexing
