#pragma once
// Shared machinery of the quantization family: rounding and saturation,
// the granularity of scales (per tensor, per axis, per block), and a direct
// integer convolution.

#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "runtime/kernels/common.h"
#include "runtime/kernels/window.h"

namespace onnxkit::runtime::quantization {

// The types QuantizeLinear produces and DequantizeLinear reads (besides
// int32): 8- and 16-bit integers, the float8 formats (opset 19), int4 and
// uint4 (opset 21), float4e2m1 (opset 23), int2 and uint2 (opset 25); not
// float8e8m0, which is a scale type.
inline bool is_quantized_type(DataType t) {
  return t == DataType::int8 || t == DataType::uint8 || t == DataType::int16 || t == DataType::uint16 ||
         (is_low_precision(t) && t != DataType::float8e8m0);
}

// Round half to even, add the zero point, then saturate to Q; NaN becomes 0
// rather than an undefined conversion. The zero point comes after rounding:
// adding an odd one first would flip which way halves go.
//
// The rounding is the float adder's own (round to nearest even): adding and
// removing 1.5 * 2^23 leaves no fraction bits. Unlike a call to nearbyint,
// this vectorizes on the baseline instruction set. It is exact for
// |v| < 2^22; anything larger lands far outside Q and saturates anyway
// (bounding v first would be cleaner, but stops the vectorizer).
template <class Q> Q round_saturate(float v, float zero_point = 0.0f) {
  constexpr float kMagic = 12582912.0f;
  constexpr float lo = static_cast<float>(std::numeric_limits<Q>::lowest());
  constexpr float hi = static_cast<float>(std::numeric_limits<Q>::max());
  float r = (v + kMagic) - kMagic + zero_point;
  r = r < lo ? lo : (r > hi ? hi : r);
  return static_cast<Q>(v == v ? r : 0.0f);
}

// Calls f.template operator()<Q>() for a type is_quantized_type accepts.
template <class F> Status dispatch_quantized(DataType type, F&& f) {
  switch (type) {
    case DataType::int8: return f.template operator()<int8_t>();
    case DataType::uint8: return f.template operator()<uint8_t>();
    case DataType::int16: return f.template operator()<int16_t>();
    case DataType::uint16: return f.template operator()<uint16_t>();
    default: return dispatch_low_precision(type, std::forward<F>(f));
  }
}

// The elements of a small tensor as floats (scales), as ints (zero points
// of the integer kernels, at most 32 bits), or as floats again for the zero
// points of QuantizeLinear and DequantizeLinear (quantized types and int32).
Result<std::vector<float>> floats_of(const Tensor& t, std::string_view name);
Result<std::vector<int32_t>> ints_of(const Tensor& t, std::string_view name);
Result<std::vector<float>> zero_points_of(const Tensor& t, std::string_view name);

// How scales map onto the elements of x, seen as [outer, axis_dim, inner]:
// element (o, a, i) reads scale (o * scale_dim + a / block) * inner + i when
// blocked, a per axis, 0 per tensor.
struct Granularity {
  enum class Kind { tensor, axis, block } kind = Kind::tensor;
  int64_t outer = 1, axis_dim = 1, inner = 1;
  int64_t block = 1, scale_dim = 1;

  // The first scale of row (o, a) and the step of the scale index along i.
  int64_t row_base(int64_t o, int64_t a) const {
    switch (kind) {
      case Kind::axis: return a;
      case Kind::block: return (o * scale_dim + a / block) * inner;
      default: return 0;
    }
  }
  int64_t step() const { return kind == Kind::block ? 1 : 0; }
};

// Checks a scale of shape `scale` (and its zero point, when given) against x:
// `scale_name` and `zero_name` name them in errors. Per-axis needs
// `per_axis_allowed` (opset 13), blocks `block_size` > 0 (opset 21).
Result<Granularity> granularity(const Shape& x, const Shape& scale, const Shape* zero_point, int64_t axis, int64_t block_size,
                                bool per_axis_allowed, std::string_view scale_name, std::string_view zero_name);

// The convolution of ConvInteger and QLinearConv, whose geometry is Conv's
// (kernels/window.h):
// y[n, m, ...] = sum over the group's channels and the kernel of x * w, with
// x [N, C, in...] and w [M, C/group, kernel...] already shifted by their zero
// points (8-bit values minus 8-bit zero points fit int16); positions in the
// padding contribute nothing (they hold the zero point). y is [N, M, out...].
void conv_integer(const ConvParams& p, const int16_t* x, const int16_t* w, int32_t* y);

// Family parts (register.cpp calls them).
void register_linear(KernelRegistry& registry);
void register_qlinear_matmul(KernelRegistry& registry);
void register_conv(KernelRegistry& registry);

}  // namespace onnxkit::runtime::quantization
