// CumSum and CumProd (opset 26): running sums and products along one axis,
// forward or reversed, inclusive or exclusive of the current element.

#include "runtime/kernels/math/math.h"

namespace onnxkit::runtime::math {
namespace {

enum class Accumulate { sum, product };

template <Accumulate op, class C> C combine(C a, C b) {
  // Integer sums and products wrap instead of overflowing into undefined
  // behaviour: unsigned arithmetic, in unsigned int for the types narrower
  // than it (they would promote to int, whose products can overflow).
  if constexpr (std::is_integral_v<C>) {
    using U = std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned, std::make_unsigned_t<C>>;
    const U ua = static_cast<U>(static_cast<std::make_unsigned_t<C>>(a));
    const U ub = static_cast<U>(static_cast<std::make_unsigned_t<C>>(b));
    return static_cast<C>(static_cast<std::make_unsigned_t<C>>(op == Accumulate::sum ? ua + ub : ua * ub));
  } else {
    return op == Accumulate::sum ? a + b : a * b;
  }
}

// x viewed as [outer, n, inner]: every (outer, inner) line is accumulated
// along n; the inner index is the vectorized one.
template <Accumulate op, class T>
void accumulate(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool exclusive, bool reverse) {
  using C = compute_t<T>;
  const C identity = op == Accumulate::sum ? C(0) : C(1);
#pragma omp parallel for if (outer * n * inner >= (1 << 16) && outer > 1) schedule(static)
  for (int64_t o = 0; o < outer; ++o) {
    std::vector<C> running(static_cast<size_t>(inner), identity);
    for (int64_t s = 0; s < n; ++s) {
      const int64_t i = reverse ? n - 1 - s : s;
      const T* xi = x + (o * n + i) * inner;
      T* yi = y + (o * n + i) * inner;
      for (int64_t j = 0; j < inner; ++j) {
        const C next = combine<op>(running[j], static_cast<C>(xi[j]));
        yi[j] = static_cast<T>(exclusive ? running[j] : next);
        running[j] = next;
      }
    }
  }
}

template <Accumulate op> Result<ComputeFn> build_accumulate(const KernelInfo& info) {
  const bool exclusive = info.attr_int("exclusive", 0) != 0;
  const bool reverse = info.attr_int("reverse", 0) != 0;
  return ComputeFn([=](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    ONNXKIT_ASSIGN(const Tensor* axis_t, ctx.tensor(1));
    if (axis_t->numel() != 1 || axis_t->rank() > 1)
      return make_error("input axis must be a scalar, got shape {}", shape_to_string(axis_t->shape()));
    int64_t axis;
    if (axis_t->dtype() == DataType::int64) axis = axis_t->data<int64_t>()[0];
    else if (axis_t->dtype() == DataType::int32) axis = axis_t->data<int32_t>()[0];
    else return make_error("input axis must be int32 or int64, got {}", to_string(axis_t->dtype()));
    const int64_t rank = static_cast<int64_t>(x->rank());
    if (rank == 0) return make_error("input x must have rank >= 1, got a scalar");
    ONNXKIT_ASSIGN(axis, normalize_axis(axis, rank, "axis"));
    const Shape& s = x->shape();
    const int64_t n = s[axis];
    const int64_t outer = shape_size(Shape(s.begin(), s.begin() + axis));
    const int64_t inner = shape_size(Shape(s.begin() + axis + 1, s.end()));
    Tensor& y = ctx.output(0, x->dtype(), s);
    return dispatch_numeric(x->dtype(), [&]<class T>() -> Status {
      accumulate<op, T>(x->data<T>(), y.mutable_data<T>(), outer, n, inner, exclusive, reverse);
      return {};
    });
  });
}

}  // namespace

void register_cumsum(KernelRegistry& r) {
  r.add("", "CumSum", 11, kLatestOpset, make_kernel(build_accumulate<Accumulate::sum>));
  r.add("", "CumProd", 26, kLatestOpset, make_kernel(build_accumulate<Accumulate::product>));
}

}  // namespace onnxkit::runtime::math
