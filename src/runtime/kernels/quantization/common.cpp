// Scale granularity checks and small-tensor conversions of the quantization
// family.

#include <fmt/format.h>

#include "runtime/kernels/quantization/quantization.h"

namespace onnxkit::runtime::quantization {

Result<std::vector<float>> floats_of(const Tensor& t, std::string_view name) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  Status s = dispatch_float(t.dtype(), [&]<class T>() -> Status {
    for (int64_t i = 0; i < t.numel(); ++i) out[i] = static_cast<float>(t.data<T>()[i]);
    return {};
  });
  if (!s.ok()) return make_error("input {} must be floating point, got {}", name, to_string(t.dtype()));
  return out;
}

Result<std::vector<int32_t>> ints_of(const Tensor& t, std::string_view name) {
  std::vector<int32_t> out(static_cast<size_t>(t.numel()));
  if (!is_integer(t.dtype()) || element_size(t.dtype()) > sizeof(int32_t))
    return make_error("input {} must be an integer type of at most 32 bits, got {}", name, to_string(t.dtype()));
  Status s = dispatch_integer(t.dtype(), [&]<class T>() -> Status {
    for (int64_t i = 0; i < t.numel(); ++i) out[i] = static_cast<int32_t>(t.data<T>()[i]);
    return {};
  });
  if (!s.ok()) return s.error();
  return out;
}

Result<std::vector<float>> zero_points_of(const Tensor& t, std::string_view name) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  auto read = [&]<class T>() -> Status {
    for (int64_t i = 0; i < t.numel(); ++i) out[i] = static_cast<float>(t.data<T>()[i]);
    return {};
  };
  Status s = t.dtype() == DataType::int32 ? read.template operator()<int32_t>() : dispatch_quantized(t.dtype(), read);
  if (!s.ok()) return make_error("input {} must be a quantized type or int32, got {}", name, to_string(t.dtype()));
  return out;
}

Result<Granularity> granularity(const Shape& x, const Shape& scale, const Shape* zero_point, int64_t axis, int64_t block_size,
                                bool per_axis_allowed, std::string_view scale_name, std::string_view zero_name) {
  const int64_t rank = static_cast<int64_t>(x.size());
  const int64_t count = shape_size(scale);
  if (zero_point != nullptr && *zero_point != scale &&
      !(shape_size(*zero_point) == 1 && count == 1 && zero_point->size() <= 1 && scale.size() <= 1))
    return make_error("input {} has shape {} but {} has shape {}: they must match", zero_name, shape_to_string(*zero_point),
                      scale_name, shape_to_string(scale));
  Granularity g;
  auto split_at = [&](int64_t given) -> Status {
    ONNXKIT_ASSIGN(const int64_t a, normalize_axis(given, rank, "axis", "input x"));
    g.outer = shape_size(Shape(x.begin(), x.begin() + a));
    g.axis_dim = x[a];
    g.inner = shape_size(Shape(x.begin() + a + 1, x.end()));
    axis = a;
    return {};
  };
  if (block_size < 0) return make_error("attribute block_size must be positive, got {}", block_size);
  if (block_size > 0) {
    if (static_cast<int64_t>(scale.size()) != rank)
      return make_error("blocked quantization (block_size {}) needs {} of the rank of x ({}), got shape {}", block_size,
                        scale_name, rank, shape_to_string(scale));
    ONNXKIT_TRY(split_at(axis));
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t want = d == axis ? (x[d] + block_size - 1) / block_size : x[d];
      if (scale[d] != want)
        return make_error("input {} has shape {}; with x {}, axis {} and block_size {} it must be {} along dim {}", scale_name,
                          shape_to_string(scale), shape_to_string(x), axis, block_size, want, d);
    }
    g.kind = Granularity::Kind::block;
    g.block = block_size;
    g.scale_dim = scale[axis];
    return g;
  }
  if (count == 1 && scale.size() <= 1) {
    g.inner = shape_size(x);
    return g;
  }
  if (scale.size() == 1) {
    if (!per_axis_allowed)
      return make_error("input {} has shape {}: this opset takes a single (per-tensor) scale", scale_name,
                        shape_to_string(scale));
    ONNXKIT_TRY(split_at(axis));
    if (scale[0] != g.axis_dim)
      return make_error("input {} has {} elements but axis {} of x {} has {}", scale_name, scale[0], axis, shape_to_string(x),
                        g.axis_dim);
    g.kind = Granularity::Kind::axis;
    return g;
  }
  return make_error("input {} has shape {}: expected a scalar (per tensor), a 1-D tensor (per axis){}", scale_name,
                    shape_to_string(scale), " or, with block_size, the rank of x (per block)");
}

}  // namespace onnxkit::runtime::quantization
