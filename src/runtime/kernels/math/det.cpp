// Det: determinants of square matrices, by LU factorization with partial
// pivoting, in double whatever the element type.

#include <cmath>

#include "runtime/kernels/math/math.h"

namespace onnxkit::runtime::math {
namespace {

double determinant(std::vector<double>& a, int64_t n) {
  double det = 1.0;
  for (int64_t col = 0; col < n; ++col) {
    // The largest pivot keeps the elimination stable.
    int64_t pivot = col;
    for (int64_t r = col + 1; r < n; ++r)
      if (std::abs(a[r * n + col]) > std::abs(a[pivot * n + col])) pivot = r;
    const double p = a[pivot * n + col];
    if (p == 0.0) return 0.0;
    if (pivot != col) {
      for (int64_t j = 0; j < n; ++j) std::swap(a[pivot * n + j], a[col * n + j]);
      det = -det;
    }
    det *= p;
    for (int64_t r = col + 1; r < n; ++r) {
      const double f = a[r * n + col] / p;
      if (f == 0.0) continue;
      for (int64_t j = col + 1; j < n; ++j) a[r * n + j] -= f * a[col * n + j];
    }
  }
  return det;
}

Status compute_det(KernelContext& ctx) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  const Shape& s = x->shape();
  if (s.size() < 2 || s[s.size() - 1] != s[s.size() - 2])
    return make_error("input X must be square matrices [*, M, M], got shape {}", shape_to_string(s));
  const int64_t n = s.back();
  const Shape out_shape(s.begin(), s.end() - 2);
  const int64_t count = shape_size(out_shape);
  Tensor& y = ctx.output(0, x->dtype(), out_shape);
  return dispatch_float(x->dtype(), [&]<class T>() -> Status {
    const T* px = x->data<T>();
    T* py = y.mutable_data<T>();
#pragma omp parallel for if (count > 1 && count * n * n * n >= (1 << 18)) schedule(static)
    for (int64_t b = 0; b < count; ++b) {
      std::vector<double> a(static_cast<size_t>(n * n));
      for (int64_t i = 0; i < n * n; ++i) a[i] = static_cast<double>(px[b * n * n + i]);
      py[b] = static_cast<T>(determinant(a, n));
    }
    return {};
  });
}

}  // namespace

void register_det(KernelRegistry& r) { r.add("", "Det", 11, kLatestOpset, make_kernel(compute_det)); }

}  // namespace onnxkit::runtime::math
