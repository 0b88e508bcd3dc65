#include "runtime/kernels/indexing/indexing.h"

#include <fmt/format.h>

namespace onnxkit::runtime {
namespace indexing {

Result<int64_t> existing_axis(int64_t axis, size_t rank) {
  if (rank == 0) return make_error("axis {} does not exist in a scalar", axis);
  return normalize_axis(axis, static_cast<int64_t>(rank));
}

Result<std::vector<int64_t>> read_index_tensor(const Tensor& t, std::string_view name) {
  if (t.dtype() != DataType::int64 && t.dtype() != DataType::int32)
    return make_error("{} must be int32 or int64, got {}", name, to_string(t.dtype()));
  return read_int64s(t);
}

Status wrap_indices(std::vector<int64_t>& indices, int64_t bound, std::string_view name, std::string_view what) {
  for (size_t i = 0; i < indices.size(); ++i) {
    int64_t v = indices[i];
    if (v < -bound || v >= bound)
      return make_error("{} element {} is {}, out of range [{}, {}) for {} of size {}", name, i, v, -bound, bound, what,
                        bound);
    if (v < 0) indices[i] = v + bound;
  }
  return {};
}

Status check_output_shape(const Shape& shape, std::string_view what) {
  // Far beyond any real tensor, and small enough that the byte count of
  // the product cannot overflow.
  constexpr int64_t kMaxElements = int64_t{1} << 40;
  int64_t total = 1;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0) return make_error("{} would have a negative dim: {}", what, shape_to_string(shape));
    if (d == 0) empty = true;
  }
  if (empty) return {};
  for (int64_t d : shape) {
    if (d > kMaxElements / total) return make_error("{} would be too large to allocate: {}", what, shape_to_string(shape));
    total *= d;
  }
  return {};
}

Result<double> numeric_at(const Tensor& t, int64_t i, std::string_view name) {
  double v = 0;
  Status s = dispatch_numeric(t.dtype(), [&]<class T>() -> Status {
    v = static_cast<double>(t.data<T>()[i]);
    return {};
  });
  if (!s.ok()) return s.error().in(name);
  return v;
}

}  // namespace indexing

void register_indexing_kernels(KernelRegistry& registry) {
  indexing::register_gather(registry);
  indexing::register_scatter(registry);
  indexing::register_pad(registry);
  indexing::register_resize(registry);
  indexing::register_grid_sample(registry);
  indexing::register_select(registry);
}

}  // namespace onnxkit::runtime
