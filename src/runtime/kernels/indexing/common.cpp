// Helpers shared by the indexing kernels.

#include "runtime/kernels/indexing/indexing.h"

#include <algorithm>

namespace onnxkit::runtime::indexing {

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
      return make_error("{} element {} is {}, out of range [{}, {}) for {} of size {}", name, i, v, -bound, bound, what, bound);
    if (v < 0) indices[i] = v + bound;
  }
  return {};
}

Result<WrappedIndices> WrappedIndices::read(const Tensor& t, int64_t bound, std::string_view name, std::string_view what) {
  WrappedIndices wrapped;
  if (t.dtype() == DataType::int64) {
    const int64_t* values = t.data<int64_t>();
    if (std::all_of(values, values + t.numel(), [bound](int64_t v) { return v >= 0 && v < bound; })) {
      wrapped.values_ = values;
      return wrapped;
    }
  }
  ONNXKIT_ASSIGN(wrapped.copy_, read_index_tensor(t, name));
  ONNXKIT_TRY(wrap_indices(wrapped.copy_, bound, name, what));
  wrapped.values_ = wrapped.copy_.data();
  return wrapped;
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

}  // namespace onnxkit::runtime::indexing
