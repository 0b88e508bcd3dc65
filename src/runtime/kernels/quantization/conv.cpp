// ConvInteger and QLinearConv over a direct integer convolution: for every
// output map, each (channel, kernel tap) adds its weight times a shifted row
// of the input to rows of the output. The valid range of each row is worked
// out once per tap, so the inner loop is a plain multiply-add over
// contiguous memory when the stride is 1.

#include <fmt/format.h>

#include <algorithm>

#include "runtime/kernels/quantization/quantization.h"

namespace onnxkit::runtime::quantization {

ConvAttrs conv_attrs(const KernelInfo& info) {
  ConvAttrs a;
  a.auto_pad = info.attr_string("auto_pad", "NOTSET");
  a.dilations = info.attr_ints("dilations");
  a.kernel_shape = info.attr_ints("kernel_shape");
  a.pads = info.attr_ints("pads");
  a.strides = info.attr_ints("strides");
  a.group = info.attr_int("group", 1);
  return a;
}

Result<ConvGeometry> conv_geometry(const ConvAttrs& a, const Shape& x, const Shape& w, std::string_view x_name,
                                   std::string_view w_name) {
  if (x.size() < 3)
    return make_error("input {} must be [N, C, D1, ...] (rank >= 3), got shape {}", x_name, shape_to_string(x));
  if (w.size() != x.size())
    return make_error("input {} has shape {} but {} has rank {}: they need the same rank", w_name, shape_to_string(w),
                      x_name, x.size());
  const size_t spatial = x.size() - 2;
  ConvGeometry g;
  g.batch = x[0];
  g.channels = x[1];
  g.maps = w[0];
  g.group = a.group;
  if (g.group < 1) return make_error("attribute group must be positive, got {}", g.group);
  if (g.channels != w[1] * g.group)
    return make_error("input {} has {} channels but {} {} with group {} expects {}", x_name, g.channels, w_name,
                      shape_to_string(w), g.group, w[1] * g.group);
  if (g.maps % g.group != 0)
    return make_error("input {} has {} output maps, not a multiple of group {}", w_name, g.maps, g.group);
  g.in.assign(x.begin() + 2, x.end());
  g.kernel.assign(w.begin() + 2, w.end());
  if (!a.kernel_shape.empty() && a.kernel_shape != g.kernel)
    return make_error("attribute kernel_shape [{}] does not match {} {}", fmt::join(a.kernel_shape, ","), w_name,
                      shape_to_string(w));
  auto per_dim = [&](const std::vector<int64_t>& v, const char* name, size_t want,
                     int64_t fallback) -> Result<std::vector<int64_t>> {
    if (v.empty()) return std::vector<int64_t>(want, fallback);
    if (v.size() != want)
      return make_error("attribute {} has {} values, expected {} for {} spatial dims", name, v.size(), want, spatial);
    return v;
  };
  ONNXKIT_ASSIGN(g.strides, per_dim(a.strides, "strides", spatial, 1));
  ONNXKIT_ASSIGN(g.dilations, per_dim(a.dilations, "dilations", spatial, 1));
  ONNXKIT_ASSIGN(std::vector<int64_t> pads, per_dim(a.pads, "pads", 2 * spatial, 0));
  // Far beyond any real model, and small enough that no arithmetic on them
  // can overflow.
  constexpr int64_t kLimit = int64_t(1) << 32;
  for (size_t d = 0; d < spatial; ++d) {
    if (g.strides[d] < 1 || g.strides[d] > kLimit)
      return make_error("attribute strides has {}, out of range [1, 2^32]", g.strides[d]);
    if (g.dilations[d] < 1 || g.dilations[d] > kLimit)
      return make_error("attribute dilations has {}, out of range [1, 2^32]", g.dilations[d]);
    for (int64_t p : {pads[d], pads[d + spatial]})
      if (p < 0 || p > kLimit) return make_error("attribute pads has {}, out of range [0, 2^32]", p);
    if (g.kernel[d] < 1) return make_error("input {} has an empty kernel: shape {}", w_name, shape_to_string(w));
    if (static_cast<double>(g.kernel[d] - 1) * static_cast<double>(g.dilations[d]) > static_cast<double>(kLimit))
      return make_error("the dilated kernel along spatial dim {} ({} taps, dilation {}) is too large", d, g.kernel[d],
                        g.dilations[d]);
  }
  g.pad_begin.resize(spatial);
  g.out.resize(spatial);
  g.out_shape = {g.batch, g.maps};
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t extent = (g.kernel[d] - 1) * g.dilations[d] + 1;
    int64_t out;
    if (a.auto_pad == "NOTSET") {
      g.pad_begin[d] = pads[d];
      out = (g.in[d] + pads[d] + pads[d + spatial] - extent) / g.strides[d] + 1;
      if (g.in[d] + pads[d] + pads[d + spatial] < extent) out = 0;
    } else if (a.auto_pad == "VALID") {
      g.pad_begin[d] = 0;
      out = g.in[d] < extent ? 0 : (g.in[d] - extent) / g.strides[d] + 1;
    } else if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      out = (g.in[d] + g.strides[d] - 1) / g.strides[d];
      const int64_t total = std::max<int64_t>(0, (out - 1) * g.strides[d] + extent - g.in[d]);
      // The odd pixel of padding goes at the end for SAME_UPPER.
      g.pad_begin[d] = a.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    } else {
      return make_error("attribute auto_pad '{}' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", a.auto_pad);
    }
    if (out < 1)
      return make_error("the kernel (extent {} along spatial dim {}) does not fit input {} {} with its padding", extent,
                        d, x_name, shape_to_string(x));
    g.out[d] = out;
    g.out_shape.push_back(out);
  }
  ONNXKIT_TRY(checked_size(g.out_shape, "the output"));
  g.in_size = shape_size(g.in);
  g.kernel_size = shape_size(g.kernel);
  g.out_size = shape_size(g.out);
  return g;
}

namespace {

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define ONNXKIT_CONV_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define ONNXKIT_CONV_CLONES
#endif

// Output map m of image n. Compiled twice on x86-64 (baseline and AVX2),
// picked at load time: the library targets the baseline instruction set.
ONNXKIT_CONV_CLONES void convolve_map(const ConvGeometry& g, const int16_t* x, const int16_t* w, int32_t* out,
                                      int64_t n, int64_t m) {
  const size_t spatial = g.in.size();
  const size_t last = spatial - 1;
  const int64_t group_channels = g.channels / g.group, group_maps = g.maps / g.group;
  const int64_t out_row = g.out[last], in_row = g.in[last];
  const int64_t rows = g.out_size / out_row;  // output rows per map
  const int64_t stride = g.strides[last];
  const int64_t first_channel = (m / group_maps) * group_channels;
  std::fill(out, out + g.out_size, 0);
  std::vector<int64_t> tap(spatial), row(spatial);
  for (int64_t c = 0; c < group_channels; ++c) {
    const int16_t* plane = x + (n * g.channels + first_channel + c) * g.in_size;
    const int16_t* weights = w + (m * group_channels + c) * g.kernel_size;
    std::fill(tap.begin(), tap.end(), 0);
    for (int64_t t = 0; t < g.kernel_size; ++t) {
      const int32_t wv = weights[t];
      if (wv != 0) {
        // Along the last dim: outputs lo..hi read inside the input.
        const int64_t shift = tap[last] * g.dilations[last] - g.pad_begin[last];
        const int64_t lo = shift >= 0 ? 0 : (-shift + stride - 1) / stride;
        const int64_t hi = std::min(out_row, in_row - shift <= 0 ? 0 : (in_row - shift - 1) / stride + 1);
        std::fill(row.begin(), row.end(), 0);
        for (int64_t r = 0; r < rows && lo < hi; ++r) {
          // The input row of output row r at this tap, if inside.
          int64_t offset = 0;
          bool inside = true;
          for (size_t d = 0; d < last && inside; ++d) {
            const int64_t i = row[d] * g.strides[d] + tap[d] * g.dilations[d] - g.pad_begin[d];
            inside = i >= 0 && i < g.in[d];
            offset = offset * g.in[d] + i;
          }
          if (inside) {
            const int16_t* src = plane + offset * in_row;
            int32_t* dst = out + r * out_row;
            if (stride == 1) {
              for (int64_t o = lo; o < hi; ++o) dst[o] += wv * src[o + shift];
            } else {
              for (int64_t o = lo; o < hi; ++o) dst[o] += wv * src[o * stride + shift];
            }
          }
          for (size_t d = last; d-- > 0;) {
            if (++row[d] < g.out[d]) break;
            row[d] = 0;
          }
        }
      }
      for (size_t d = spatial; d-- > 0;) {
        if (++tap[d] < g.kernel[d]) break;
        tap[d] = 0;
      }
    }
  }
}

}  // namespace

void conv_integer(const ConvGeometry& g, const int16_t* x, const int16_t* w, int32_t* y) {
  const int64_t jobs = g.batch * g.maps;
  const double work =
      static_cast<double>(jobs) * static_cast<double>(g.channels / g.group * g.kernel_size * g.out_size);
#pragma omp parallel for if (jobs > 1 && work >= (1 << 18)) schedule(dynamic)
  for (int64_t job = 0; job < jobs; ++job) convolve_map(g, x, w, y + job * g.out_size, job / g.maps, job % g.maps);
}

namespace {

bool is_8bit(DataType t) { return t == DataType::int8 || t == DataType::uint8; }

// An 8-bit tensor minus its zero point(s), which fits int16: one zero
// point, or one per slice of `slice` elements (per output map of W).
std::vector<int16_t> shifted(const Tensor& t, const std::vector<int32_t>& zero, int64_t slice) {
  std::vector<int16_t> out(static_cast<size_t>(t.numel()));
  auto fill = [&]<class T>() {
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i)
      out[i] = static_cast<int16_t>(static_cast<int32_t>(p[i]) -
                                    zero[zero.size() == 1 ? 0 : static_cast<size_t>(i / slice)]);
  };
  if (t.dtype() == DataType::uint8) fill.template operator()<uint8_t>();
  else fill.template operator()<int8_t>();
  return out;
}

// A zero point: absent (0), one value, or (when allowed) one per map.
Result<std::vector<int32_t>> zero_point(const KernelContext& ctx, size_t index, const char* name, DataType type,
                                        int64_t maps) {
  if (!ctx.has_input(index)) return std::vector<int32_t>{0};
  ONNXKIT_ASSIGN(const Tensor* z, ctx.tensor(index));
  if (z->dtype() != type)
    return make_error("input {} is {} but its operand is {}", name, to_string(z->dtype()), to_string(type));
  const bool scalar = z->numel() == 1 && z->rank() <= 1;
  if (!scalar && !(maps > 0 && z->rank() == 1 && z->dim(0) == maps))
    return make_error("input {} has shape {}: expected a scalar{}", name, shape_to_string(z->shape()),
                      maps > 0 ? fmt::format(" or [{}] (one per output map)", maps) : std::string());
  return ints_of(*z, name);
}

// The int32 convolution of x and w with their zero points taken off.
Result<Tensor> convolve(const ConvGeometry& g, const Tensor& x, const Tensor& w, const std::vector<int32_t>& x_zero,
                        const std::vector<int32_t>& w_zero) {
  const std::vector<int16_t> xs = shifted(x, x_zero, std::max<int64_t>(1, x.numel()));
  const std::vector<int16_t> ws = shifted(w, w_zero, std::max<int64_t>(1, w.numel() / std::max<int64_t>(1, g.maps)));
  Tensor y(DataType::int32, g.out_shape);
  conv_integer(g, xs.data(), ws.data(), y.mutable_data<int32_t>());
  return y;
}

Result<ComputeFn> build_conv_integer(const KernelInfo& info) {
  const ConvAttrs attrs = conv_attrs(info);
  return ComputeFn([attrs](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    ONNXKIT_ASSIGN(const Tensor* w, ctx.tensor(1));
    if (!is_8bit(x->dtype())) return make_error("input x must be int8 or uint8, got {}", to_string(x->dtype()));
    if (!is_8bit(w->dtype())) return make_error("input w must be int8 or uint8, got {}", to_string(w->dtype()));
    ONNXKIT_ASSIGN(ConvGeometry g, conv_geometry(attrs, x->shape(), w->shape(), "x", "w"));
    ONNXKIT_ASSIGN(std::vector<int32_t> xz, zero_point(ctx, 2, "x_zero_point", x->dtype(), 0));
    ONNXKIT_ASSIGN(std::vector<int32_t> wz, zero_point(ctx, 3, "w_zero_point", w->dtype(), g.maps));
    ONNXKIT_ASSIGN(Tensor y, convolve(g, *x, *w, xz, wz));
    ctx.set_output(0, std::move(y));
    return {};
  });
}

Result<ComputeFn> build_qlinear_conv(const KernelInfo& info) {
  const ConvAttrs attrs = conv_attrs(info);
  return ComputeFn([attrs](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    ONNXKIT_ASSIGN(const Tensor* x_scale, ctx.tensor(1));
    ONNXKIT_ASSIGN(const Tensor* w, ctx.tensor(3));
    ONNXKIT_ASSIGN(const Tensor* w_scale, ctx.tensor(4));
    ONNXKIT_ASSIGN(const Tensor* y_scale, ctx.tensor(6));
    if (!is_8bit(x->dtype())) return make_error("input x must be int8 or uint8, got {}", to_string(x->dtype()));
    if (!is_8bit(w->dtype())) return make_error("input w must be int8 or uint8, got {}", to_string(w->dtype()));
    ONNXKIT_ASSIGN(ConvGeometry g, conv_geometry(attrs, x->shape(), w->shape(), "x", "w"));
    // y_zero_point decides the output type (x's when it is absent).
    DataType out_type = x->dtype();
    if (ctx.has_input(7)) {
      ONNXKIT_ASSIGN(const Tensor* zy, ctx.tensor(7));
      out_type = zy->dtype();
    }
    if (!is_8bit(out_type)) return make_error("input y_zero_point must be int8 or uint8, got {}", to_string(out_type));
    ONNXKIT_ASSIGN(std::vector<int32_t> xz, zero_point(ctx, 2, "x_zero_point", x->dtype(), 0));
    ONNXKIT_ASSIGN(std::vector<int32_t> wz, zero_point(ctx, 5, "w_zero_point", w->dtype(), g.maps));
    ONNXKIT_ASSIGN(std::vector<int32_t> yz, zero_point(ctx, 7, "y_zero_point", out_type, 0));
    auto scale_of = [](const Tensor& t, const char* name, int64_t maps) -> Result<std::vector<float>> {
      const bool scalar = t.numel() == 1 && t.rank() <= 1;
      if (!scalar && !(maps > 0 && t.rank() == 1 && t.dim(0) == maps))
        return make_error("input {} has shape {}: expected a scalar{}", name, shape_to_string(t.shape()),
                          maps > 0 ? fmt::format(" or [{}] (one per output map)", maps) : std::string());
      return floats_of(t, name);
    };
    ONNXKIT_ASSIGN(std::vector<float> sx, scale_of(*x_scale, "x_scale", 0));
    ONNXKIT_ASSIGN(std::vector<float> sw, scale_of(*w_scale, "w_scale", g.maps));
    ONNXKIT_ASSIGN(std::vector<float> sy, scale_of(*y_scale, "y_scale", 0));
    std::vector<int32_t> bias(static_cast<size_t>(g.maps), 0);
    if (ctx.has_input(8)) {
      ONNXKIT_ASSIGN(const Tensor* b, ctx.tensor(8));
      if (b->dtype() != DataType::int32 || b->rank() != 1 || b->dim(0) != g.maps)
        return make_error("input B must be int32 [{}] (one per output map), got {}{}", g.maps, to_string(b->dtype()),
                          shape_to_string(b->shape()));
      bias.assign(b->data<int32_t>(), b->data<int32_t>() + g.maps);
    }
    ONNXKIT_ASSIGN(Tensor acc, convolve(g, *x, *w, xz, wz));
    Tensor& y = ctx.output(0, out_type, g.out_shape);
    const int32_t* pa = acc.data<int32_t>();
    const float zero = static_cast<float>(yz[0]);
    auto requantize = [&]<class Q>() {
      Q* py = y.mutable_data<Q>();
      for (int64_t job = 0; job < g.batch * g.maps; ++job) {
        const int64_t m = job % g.maps;
        // Grouped as the reference does: (x_scale * w_scale) / y_scale.
        const float multiplier = sx[0] * sw[sw.size() == 1 ? 0 : m] / sy[0];
        const int32_t* src = pa + job * g.out_size;
        Q* dst = py + job * g.out_size;
        for (int64_t i = 0; i < g.out_size; ++i)
          dst[i] = round_saturate<Q>(static_cast<float>(src[i] + bias[m]) * multiplier, zero);
      }
    };
    if (out_type == DataType::uint8) requantize.template operator()<uint8_t>();
    else requantize.template operator()<int8_t>();
    return {};
  });
}

}  // namespace

void register_conv(KernelRegistry& r) {
  r.add("", "ConvInteger", 10, kLatestOpset, make_kernel(build_conv_integer));
  r.add("", "QLinearConv", 10, kLatestOpset, make_kernel(build_qlinear_conv));
}

}  // namespace onnxkit::runtime::quantization
