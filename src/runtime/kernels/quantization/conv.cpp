// ConvInteger and QLinearConv over a direct integer convolution: for every
// output map, each (channel, kernel tap) adds its weight times a shifted row
// of the input to rows of the output. The valid range of each row is worked
// out once per tap, so the inner loop is a plain multiply-add over
// contiguous memory when the stride is 1.

#include <fmt/format.h>

#include <algorithm>

#include "runtime/kernels/cpu_clones.h"
#include "runtime/kernels/quantization/quantization.h"

namespace onnxkit::runtime::quantization {

namespace {

// Output map m of image n. Compiled twice on x86-64 (baseline and AVX2),
// picked at load time: the library targets the baseline instruction set.
ONNXKIT_AVX2_CLONES void convolve_map(const ConvParams& p, const int16_t* x, const int16_t* w, int32_t* out, int64_t n,
                                      int64_t m) {
  const WindowGeometry& g = p.window;
  const size_t spatial = g.rank();
  const size_t last = spatial - 1;
  const int64_t group_channels = p.in_channels / p.group, group_maps = p.out_channels / p.group;
  const int64_t out_row = g.out[last], in_row = g.in[last];
  const int64_t in_size = g.in_size(), kernel_size = g.kernel_size(), out_size = g.out_size();
  const int64_t rows = out_size / out_row;  // output rows per map
  const int64_t stride = g.strides[last];
  const int64_t first_channel = (m / group_maps) * group_channels;
  std::fill(out, out + out_size, 0);
  std::vector<int64_t> tap(spatial), row(spatial);
  for (int64_t c = 0; c < group_channels; ++c) {
    const int16_t* plane = x + (n * p.in_channels + first_channel + c) * in_size;
    const int16_t* weights = w + (m * group_channels + c) * kernel_size;
    std::fill(tap.begin(), tap.end(), 0);
    for (int64_t t = 0; t < kernel_size; ++t) {
      const int32_t wv = weights[t];
      if (wv != 0) {
        // Along the last dim: outputs lo..hi read inside the input.
        const int64_t shift = tap[last] * g.dilations[last] - g.pads_begin[last];
        const int64_t lo = shift >= 0 ? 0 : (-shift + stride - 1) / stride;
        const int64_t hi = std::min(out_row, in_row - shift <= 0 ? 0 : (in_row - shift - 1) / stride + 1);
        std::fill(row.begin(), row.end(), 0);
        for (int64_t r = 0; r < rows && lo < hi; ++r) {
          // The input row of output row r at this tap, if inside.
          int64_t offset = 0;
          bool inside = true;
          for (size_t d = 0; d < last && inside; ++d) {
            const int64_t i = row[d] * g.strides[d] + tap[d] * g.dilations[d] - g.pads_begin[d];
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

void conv_integer(const ConvParams& p, const int16_t* x, const int16_t* w, int32_t* y) {
  const int64_t jobs = p.batch * p.out_channels, out_size = p.window.out_size();
  const double work =
      static_cast<double>(jobs) * static_cast<double>(p.in_channels / p.group * p.window.kernel_size() * out_size);
#pragma omp parallel for if (jobs > 1 && work >= (1 << 18)) schedule(dynamic)
  for (int64_t job = 0; job < jobs; ++job) convolve_map(p, x, w, y + job * out_size, job / p.out_channels, job % p.out_channels);
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
      out[i] = static_cast<int16_t>(static_cast<int32_t>(p[i]) - zero[zero.size() == 1 ? 0 : static_cast<size_t>(i / slice)]);
  };
  if (t.dtype() == DataType::uint8) fill.template operator()<uint8_t>();
  else fill.template operator()<int8_t>();
  return out;
}

// A zero point: absent (0), one value, or (when allowed) one per map.
Result<std::vector<int32_t>> zero_point(const KernelContext& ctx, size_t index, const char* name, DataType type, int64_t maps) {
  if (!ctx.has_input(index)) return std::vector<int32_t>{0};
  ONNXKIT_ASSIGN(const Tensor* z, ctx.tensor(index));
  if (z->dtype() != type) return make_error("input {} is {} but its operand is {}", name, to_string(z->dtype()), to_string(type));
  const bool scalar = z->numel() == 1 && z->rank() <= 1;
  if (!scalar && !(maps > 0 && z->rank() == 1 && z->dim(0) == maps))
    return make_error("input {} has shape {}: expected a scalar{}", name, shape_to_string(z->shape()),
                      maps > 0 ? fmt::format(" or [{}] (one per output map)", maps) : std::string());
  return ints_of(*z, name);
}

// The int32 convolution of x and w with their zero points taken off.
Result<Tensor> convolve(const ConvParams& p, const Tensor& x, const Tensor& w, const std::vector<int32_t>& x_zero,
                        const std::vector<int32_t>& w_zero) {
  const std::vector<int16_t> xs = shifted(x, x_zero, std::max<int64_t>(1, x.numel()));
  const std::vector<int16_t> ws = shifted(w, w_zero, std::max<int64_t>(1, w.numel() / std::max<int64_t>(1, p.out_channels)));
  Tensor y(DataType::int32, p.y_shape());
  conv_integer(p, xs.data(), ws.data(), y.mutable_data<int32_t>());
  return y;
}

Result<ComputeFn> build_conv_integer(const KernelInfo& info) {
  ONNXKIT_ASSIGN(const ConvAttributes attrs, read_conv_attributes(info));
  return ComputeFn([attrs](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    ONNXKIT_ASSIGN(const Tensor* w, ctx.tensor(1));
    if (!is_8bit(x->dtype())) return make_error("input x must be int8 or uint8, got {}", to_string(x->dtype()));
    if (!is_8bit(w->dtype())) return make_error("input w must be int8 or uint8, got {}", to_string(w->dtype()));
    ONNXKIT_ASSIGN(ConvParams p, make_conv_params(attrs, x->shape(), w->shape()));
    ONNXKIT_ASSIGN(std::vector<int32_t> xz, zero_point(ctx, 2, "x_zero_point", x->dtype(), 0));
    ONNXKIT_ASSIGN(std::vector<int32_t> wz, zero_point(ctx, 3, "w_zero_point", w->dtype(), p.out_channels));
    ONNXKIT_ASSIGN(Tensor y, convolve(p, *x, *w, xz, wz));
    ctx.set_output(0, std::move(y));
    return {};
  });
}

Result<ComputeFn> build_qlinear_conv(const KernelInfo& info) {
  ONNXKIT_ASSIGN(const ConvAttributes attrs, read_conv_attributes(info));
  return ComputeFn([attrs](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    ONNXKIT_ASSIGN(const Tensor* x_scale, ctx.tensor(1));
    ONNXKIT_ASSIGN(const Tensor* w, ctx.tensor(3));
    ONNXKIT_ASSIGN(const Tensor* w_scale, ctx.tensor(4));
    ONNXKIT_ASSIGN(const Tensor* y_scale, ctx.tensor(6));
    if (!is_8bit(x->dtype())) return make_error("input x must be int8 or uint8, got {}", to_string(x->dtype()));
    if (!is_8bit(w->dtype())) return make_error("input w must be int8 or uint8, got {}", to_string(w->dtype()));
    ONNXKIT_ASSIGN(ConvParams p, make_conv_params(attrs, x->shape(), w->shape()));
    const int64_t maps = p.out_channels, out_size = p.window.out_size();
    // y_zero_point decides the output type (x's when it is absent).
    DataType out_type = x->dtype();
    if (ctx.has_input(7)) {
      ONNXKIT_ASSIGN(const Tensor* zy, ctx.tensor(7));
      out_type = zy->dtype();
    }
    if (!is_8bit(out_type)) return make_error("input y_zero_point must be int8 or uint8, got {}", to_string(out_type));
    ONNXKIT_ASSIGN(std::vector<int32_t> xz, zero_point(ctx, 2, "x_zero_point", x->dtype(), 0));
    ONNXKIT_ASSIGN(std::vector<int32_t> wz, zero_point(ctx, 5, "w_zero_point", w->dtype(), maps));
    ONNXKIT_ASSIGN(std::vector<int32_t> yz, zero_point(ctx, 7, "y_zero_point", out_type, 0));
    auto scale_of = [](const Tensor& t, const char* name, int64_t maps) -> Result<std::vector<float>> {
      const bool scalar = t.numel() == 1 && t.rank() <= 1;
      if (!scalar && !(maps > 0 && t.rank() == 1 && t.dim(0) == maps))
        return make_error("input {} has shape {}: expected a scalar{}", name, shape_to_string(t.shape()),
                          maps > 0 ? fmt::format(" or [{}] (one per output map)", maps) : std::string());
      return floats_of(t, name);
    };
    ONNXKIT_ASSIGN(std::vector<float> sx, scale_of(*x_scale, "x_scale", 0));
    ONNXKIT_ASSIGN(std::vector<float> sw, scale_of(*w_scale, "w_scale", maps));
    ONNXKIT_ASSIGN(std::vector<float> sy, scale_of(*y_scale, "y_scale", 0));
    std::vector<int32_t> bias(static_cast<size_t>(maps), 0);
    if (ctx.has_input(8)) {
      ONNXKIT_ASSIGN(const Tensor* b, ctx.tensor(8));
      if (b->dtype() != DataType::int32 || b->rank() != 1 || b->dim(0) != maps)
        return make_error("input B must be int32 [{}] (one per output map), got {}{}", maps, to_string(b->dtype()),
                          shape_to_string(b->shape()));
      bias.assign(b->data<int32_t>(), b->data<int32_t>() + maps);
    }
    ONNXKIT_ASSIGN(Tensor acc, convolve(p, *x, *w, xz, wz));
    Tensor& y = ctx.output(0, out_type, p.y_shape());
    const int32_t* pa = acc.data<int32_t>();
    const float zero = static_cast<float>(yz[0]);
    auto requantize = [&]<class Q>() {
      Q* py = y.mutable_data<Q>();
      for (int64_t job = 0; job < p.batch * maps; ++job) {
        const int64_t m = job % maps;
        // Grouped as the reference does: (x_scale * w_scale) / y_scale.
        const float multiplier = sx[0] * sw[sw.size() == 1 ? 0 : m] / sy[0];
        const int32_t* src = pa + job * out_size;
        Q* dst = py + job * out_size;
        for (int64_t i = 0; i < out_size; ++i)
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
