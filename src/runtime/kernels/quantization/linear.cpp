// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear.
//
// Arithmetic is in float whatever the element types (16-bit float scales
// and inputs included), which covers every precision these types hold.

#include <fmt/format.h>

#include <algorithm>

#include "runtime/kernels/quantization/quantization.h"

namespace onnxkit::runtime::quantization {
namespace {

struct LinearAttrs {
  int64_t axis = 1;
  int64_t block_size = 0;
  DataType output_dtype = DataType::undefined;
  bool per_axis_allowed = true;
  bool saturate = true;  // float8 outputs only (opset 19)
};

Result<LinearAttrs> linear_attrs(const KernelInfo& info) {
  LinearAttrs a;
  a.axis = info.attr_int("axis", 1);
  a.block_size = info.attr_int("block_size", 0);
  a.output_dtype = static_cast<DataType>(info.attr_int("output_dtype", 0));
  a.per_axis_allowed = info.opset() >= 13;
  a.saturate = info.attr_int("saturate", 1) != 0;
  if (a.block_size < 0) return make_error("attribute block_size must be positive, got {}", a.block_size);
  return a;
}

// Calls body(o, a, first) for every row (o, a) of x seen as [outer,
// axis_dim, inner], `first` being the row's first element; in parallel when
// large.
template <class Body> void for_each_row(const Granularity& g, int64_t numel, Body&& body) {
  const int64_t rows = g.outer * g.axis_dim;
#pragma omp parallel for if (rows > 1 && numel >= kParallelWork) schedule(static)
  for (int64_t r = 0; r < rows; ++r) body(r / g.axis_dim, r % g.axis_dim, r * g.inner);
}

// One element of QuantizeLinear, v being x / scale. Integers round v before
// adding the zero point (see round_saturate); float8 and float4 have no
// separate rounding step, the sum is converted as Cast would.
template <class Q> Q quantize_value(float v, float zero_point, bool saturate) {
  if constexpr (is_small_float_v<Q>) return Q(v + zero_point, saturate);
  else return round_saturate<Q>(v, zero_point);
}

// One row of x, with one scale and zero point (step 0) or one per element
// (step 1, blocks). The pointers are restrict and the scalars local so that
// 8-bit stores, which may alias anything, do not stop vectorization.
template <class X, class Q>
void quantize_row(const X* __restrict x, Q* __restrict y, int64_t n, const float* __restrict scale, const float* __restrict zero,
                  int64_t step, bool saturate) {
  if (step == 0) {
    const float s = scale[0], z = zero[0];
    for (int64_t i = 0; i < n; ++i) y[i] = quantize_value<Q>(static_cast<float>(x[i]) / s, z, saturate);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = quantize_value<Q>(static_cast<float>(x[i]) / scale[i], zero[i], saturate);
  }
}

template <class X, class Y>
void dequantize_row(const X* __restrict x, Y* __restrict y, int64_t n, const float* __restrict scale,
                    const float* __restrict zero, int64_t step) {
  if (step == 0) {
    const float s = scale[0], z = zero[0];
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<Y>((static_cast<float>(x[i]) - z) * s);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<Y>((static_cast<float>(x[i]) - zero[i]) * scale[i]);
  }
}

// How `scale` and the optional `zero` point apply to `x` (checked), and
// their values: zeros when there is no zero point. The names are the
// inputs' in errors (y_scale, y_zero_point).
struct ScaleAndZero {
  Granularity g;
  std::vector<float> scales, zeros;
};
Result<ScaleAndZero> scale_and_zero(const Tensor& x, const Tensor& scale, const Tensor* zero, const LinearAttrs& attrs,
                                    std::string_view scale_name, std::string_view zero_name) {
  ScaleAndZero p;
  ONNXKIT_ASSIGN(p.g, granularity(x.shape(), scale.shape(), zero ? &zero->shape() : nullptr, attrs.axis, attrs.block_size,
                                  attrs.per_axis_allowed, scale_name, zero_name));
  ONNXKIT_ASSIGN(p.scales, floats_of(scale, scale_name));
  p.zeros.assign(p.scales.size(), 0.0f);
  if (zero != nullptr) {
    ONNXKIT_ASSIGN(p.zeros, zero_points_of(*zero, zero_name));
  }
  return p;
}

Status compute_quantize(KernelContext& ctx, const LinearAttrs& attrs) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  ONNXKIT_ASSIGN(const Tensor* scale, ctx.tensor(1));
  const Tensor* zero = nullptr;
  if (ctx.has_input(2)) {
    ONNXKIT_ASSIGN(zero, ctx.tensor(2));
  }
  DataType out_type = attrs.output_dtype != DataType::undefined ? attrs.output_dtype : DataType::uint8;
  if (zero != nullptr) {
    if (attrs.output_dtype != DataType::undefined && zero->dtype() != attrs.output_dtype)
      return make_error("input y_zero_point is {} but attribute output_dtype asks for {}", to_string(zero->dtype()),
                        to_string(attrs.output_dtype));
    out_type = zero->dtype();
  }
  if (!is_quantized_type(out_type))
    return make_error(
        "quantizing to {} is not supported (int8, uint8, int16, uint16, int4, uint4, int2, uint2, float8, float4e2m1)",
        to_string(out_type));
  ONNXKIT_ASSIGN(const ScaleAndZero sz, scale_and_zero(*x, *scale, zero, attrs, "y_scale", "y_zero_point"));
  const Granularity& g = sz.g;
  Tensor& y = ctx.output(0, out_type, x->shape());
  auto run = [&]<class X>() -> Status {
    return dispatch_quantized(out_type, [&]<class Q>() -> Status {
      const X* px = x->data<X>();
      Q* py = y.mutable_data<Q>();
      for_each_row(g, x->numel(), [&](int64_t o, int64_t a, int64_t first) {
        const int64_t base = g.row_base(o, a);
        quantize_row(px + first, py + first, g.inner, sz.scales.data() + base, sz.zeros.data() + base, g.step(), attrs.saturate);
      });
      return {};
    });
  };
  switch (x->dtype()) {
    case DataType::float32: return run.template operator()<float>();
    case DataType::float16: return run.template operator()<Float16>();
    case DataType::bfloat16: return run.template operator()<BFloat16>();
    case DataType::int32: return run.template operator()<int32_t>();
    default: return make_error("input x must be float, float16, bfloat16 or int32, got {}", to_string(x->dtype()));
  }
}

Status compute_dequantize(KernelContext& ctx, const LinearAttrs& attrs) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  ONNXKIT_ASSIGN(const Tensor* scale, ctx.tensor(1));
  const Tensor* zero = nullptr;
  if (ctx.has_input(2)) {
    ONNXKIT_ASSIGN(zero, ctx.tensor(2));
    if (zero->dtype() != x->dtype())
      return make_error("input x_zero_point is {} but x is {}: they must match", to_string(zero->dtype()), to_string(x->dtype()));
  }
  if (!is_quantized_type(x->dtype()) && x->dtype() != DataType::int32)
    return make_error("input x must be int8, uint8, int16, uint16, int4, uint4, int2, uint2, float8, float4e2m1 or int32, got {}",
                      to_string(x->dtype()));
  const DataType out_type = attrs.output_dtype != DataType::undefined ? attrs.output_dtype : scale->dtype();
  if (out_type != DataType::float32 && out_type != DataType::float16 && out_type != DataType::bfloat16)
    return make_error("dequantizing to {} is not supported (float, float16, bfloat16)", to_string(out_type));
  ONNXKIT_ASSIGN(const ScaleAndZero sz, scale_and_zero(*x, *scale, zero, attrs, "x_scale", "x_zero_point"));
  const Granularity& g = sz.g;
  Tensor& y = ctx.output(0, out_type, x->shape());
  auto run = [&]<class X>() -> Status {
    return dispatch_float(out_type, [&]<class Y>() -> Status {
      const X* px = x->data<X>();
      Y* py = y.mutable_data<Y>();
      for_each_row(g, x->numel(), [&](int64_t o, int64_t a, int64_t first) {
        const int64_t base = g.row_base(o, a);
        dequantize_row(px + first, py + first, g.inner, sz.scales.data() + base, sz.zeros.data() + base, g.step());
      });
      return {};
    });
  };
  if (x->dtype() == DataType::int32) return run.template operator()<int32_t>();
  return dispatch_quantized(x->dtype(), run);
}

Status compute_dynamic_quantize(KernelContext& ctx) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  if (x->dtype() != DataType::float32) return make_error("input x must be float, got {}", to_string(x->dtype()));
  const float* px = x->data<float>();
  const int64_t n = x->numel();
  // The range always includes 0, so that 0 is exactly representable.
  float lo = 0.0f, hi = 0.0f;
#pragma omp parallel for reduction(min : lo) reduction(max : hi) if (n >= kParallelWork) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, px[i]);
    hi = std::max(hi, px[i]);
  }
  const float scale = (hi - lo) / 255.0f;
  // An all-zero input has no range: everything quantizes to 0.
  const uint8_t zero = scale == 0.0f ? uint8_t(0) : round_saturate<uint8_t>((0.0f - lo) / scale);
  Tensor& y = ctx.output(0, DataType::uint8, x->shape());
  uint8_t* py = y.mutable_data<uint8_t>();
#pragma omp parallel for if (n >= kParallelWork) schedule(static)
  for (int64_t i = 0; i < n; ++i) py[i] = scale == 0.0f ? zero : round_saturate<uint8_t>(px[i] / scale, zero);
  if (ctx.num_outputs() > 1) ctx.output(1, DataType::float32, {}).mutable_data<float>()[0] = scale;
  if (ctx.num_outputs() > 2) ctx.output(2, DataType::uint8, {}).mutable_data<uint8_t>()[0] = zero;
  return {};
}

}  // namespace

void register_linear(KernelRegistry& r) {
  const OpTraits quantization{.quantization = true};
  r.add("", "QuantizeLinear", 10, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          ONNXKIT_ASSIGN(LinearAttrs a, linear_attrs(info));
          return ComputeFn([a](KernelContext& ctx) { return compute_quantize(ctx, a); });
        }),
        quantization);
  r.add("", "DequantizeLinear", 10, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          ONNXKIT_ASSIGN(LinearAttrs a, linear_attrs(info));
          return ComputeFn([a](KernelContext& ctx) { return compute_dequantize(ctx, a); });
        }),
        quantization);
  r.add("", "DynamicQuantizeLinear", 11, kLatestOpset, make_kernel(compute_dynamic_quantize), quantization);
}

}  // namespace onnxkit::runtime::quantization
