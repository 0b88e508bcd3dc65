// TopK: the k largest (or smallest) elements along an axis and their
// indices. Equal values keep their order (the lower index first), as the
// spec asks, and NaN counts as larger than any number, as in numpy's sort.

#include <algorithm>
#include <cmath>

#include "runtime/kernels/math/math.h"

namespace onnxkit::runtime::math {
namespace {

struct TopKAttrs {
  int64_t axis = -1;
  int64_t k = -1;  // the attribute of opset 1; -1 when k is an input
  bool largest = true;
};

template <class C> bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) return std::isnan(v);
  else return false;
}

template <class T>
void topk(const T* x, T* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner, int64_t k, bool largest) {
  using C = compute_t<T>;
  struct Entry {
    C v;
    int64_t i;
  };
  // Total orders with NaN on top; ties go to the lower index.
  auto before = [largest](const Entry& a, const Entry& b) {
    const bool na = is_nan(a.v), nb = is_nan(b.v);
    if (na || nb) {
      if (na && nb) return a.i < b.i;
      return largest ? na : nb;
    }
    if (a.v != b.v) return largest ? a.v > b.v : a.v < b.v;
    return a.i < b.i;
  };
  const int64_t lines = outer * inner;
  parallel_ranges(lines, lines * n >= (1 << 15), [&](int64_t first, int64_t last) {
    std::vector<Entry> entries(static_cast<size_t>(n));  // one per range, not per line
    for (int64_t line = first; line < last; ++line) {
      const int64_t o = line / inner, j = line % inner;
      const T* src = x + o * n * inner + j;
      for (int64_t i = 0; i < n; ++i) entries[i] = {static_cast<C>(src[i * inner]), i};
      std::partial_sort(entries.begin(), entries.begin() + k, entries.end(), before);
      T* vdst = values + o * k * inner + j;
      int64_t* idst = indices + o * k * inner + j;
      for (int64_t r = 0; r < k; ++r) {
        vdst[r * inner] = static_cast<T>(entries[r].v);
        idst[r * inner] = entries[r].i;
      }
    }
  });
}

Result<ComputeFn> build_topk(const KernelInfo& info) {
  TopKAttrs a;
  a.axis = info.attr_int("axis", -1);
  a.largest = info.attr_int("largest", 1) != 0;
  if (info.opset() < 10) {
    if (!info.has_attr("k")) return make_error("attribute 'k' is missing (opset {} takes k as an attribute)", info.opset());
    a.k = info.attr_int("k", -1);
    if (a.k < 0) return make_error("attribute 'k' must be non-negative, got {}", a.k);
  }
  return ComputeFn([a](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    int64_t k = a.k;
    if (k < 0) {
      ONNXKIT_ASSIGN(const Tensor* kt, ctx.tensor(1));
      if (kt->numel() != 1 || kt->rank() > 1)
        return make_error("input K must hold one value, got shape {}", shape_to_string(kt->shape()));
      if (kt->dtype() != DataType::int64) return make_error("input K must be int64, got {}", to_string(kt->dtype()));
      k = kt->data<int64_t>()[0];
    }
    const int64_t rank = static_cast<int64_t>(x->rank());
    if (rank == 0) return make_error("input X must have rank >= 1, got a scalar");
    ONNXKIT_ASSIGN(int64_t axis, normalize_axis(a.axis, rank, "axis"));
    const Shape& s = x->shape();
    const int64_t n = s[axis];
    if (k < 0 || k > n)
      return make_error("k = {} is out of range: axis {} of X {} has {} elements", k, axis, shape_to_string(s), n);
    Shape out_shape = s;
    out_shape[axis] = k;
    const int64_t outer = shape_size(Shape(s.begin(), s.begin() + axis));
    const int64_t inner = shape_size(Shape(s.begin() + axis + 1, s.end()));
    Tensor& values = ctx.output(0, x->dtype(), out_shape);
    Tensor indices_own(DataType::int64, out_shape);
    Tensor& indices = ctx.num_outputs() > 1 ? ctx.output(1, DataType::int64, out_shape) : indices_own;
    return dispatch_numeric(x->dtype(), [&]<class T>() -> Status {
      topk<T>(x->data<T>(), values.mutable_data<T>(), indices.mutable_data<int64_t>(), outer, n, inner, k, a.largest);
      return {};
    });
  });
}

}  // namespace

void register_topk(KernelRegistry& r) { r.add("", "TopK", 1, kLatestOpset, make_kernel(build_topk)); }

}  // namespace onnxkit::runtime::math
