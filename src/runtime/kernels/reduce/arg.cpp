// ArgMax and ArgMin: the index of the extreme element along one axis. NaN
// counts as the extreme for both (as numpy does); ties go to the first
// index, or the last with select_last_index.

#include <cmath>

#include "runtime/kernels/reduce/reduce.h"

namespace onnxkit::runtime::reduce {
namespace {

struct ArgAttrs {
  int64_t axis = 0;
  bool keepdims = true;
  bool last = false;
  bool max = true;
};

template <class C> bool nan(C v) {
  if constexpr (std::is_floating_point_v<C>) return std::isnan(v);
  else return false;
}

// Whether v, met after the current best b, takes its place.
template <class C> bool replaces(C v, C b, bool max, bool last) {
  if (nan(b)) return last && nan(v);
  if (nan(v)) return true;
  if (max) return last ? v >= b : v > b;
  return last ? v <= b : v < b;
}

// The index along a contiguous line (n >= 1): first the extreme value and
// whether there is a NaN, in vectorizable lanes; then a search for it.
template <class T, bool kMax> int64_t arg_line(const T* p, int64_t n, bool last) {
  using C = compute_t<T>;
  constexpr bool kFloat = std::is_floating_point_v<C>;
  constexpr int kLanes = 16;
  auto better = [](C v, C b) { return kMax ? v > b : v < b; };
  C best = static_cast<C>(p[0]);
  bool any_nan = false;
  int64_t i = 0;
  if (n >= 2 * kLanes) {
    C lanes[kLanes];
    int nan[kLanes] = {};
    for (int l = 0; l < kLanes; ++l) lanes[l] = best;
    for (; i + kLanes <= n; i += kLanes) {
      // A loop, not unrolled: the loop vectorizer handles these selects.
#pragma GCC unroll 1
      for (int l = 0; l < kLanes; ++l) {
        const C v = static_cast<C>(p[i + l]);
        lanes[l] = better(v, lanes[l]) ? v : lanes[l];
        if constexpr (kFloat) nan[l] |= v != v;
      }
    }
    for (int l = 0; l < kLanes; ++l) {
      best = better(lanes[l], best) ? lanes[l] : best;
      any_nan = any_nan || nan[l];
    }
  }
  for (; i < n; ++i) {
    const C v = static_cast<C>(p[i]);
    best = better(v, best) ? v : best;
    if constexpr (kFloat) any_nan = any_nan || v != v;
  }
  auto hit = [&](int64_t j) {
    const C v = static_cast<C>(p[j]);
    if constexpr (kFloat)
      if (any_nan) return v != v;
    return v == best;
  };
  if (last) {
    for (int64_t j = n; j-- > 0;)
      if (hit(j)) return j;
  } else {
    for (int64_t j = 0; j < n; ++j)
      if (hit(j)) return j;
  }
  return 0;
}

template <class T> void arg(const T* x, int64_t* y, int64_t outer, int64_t n, int64_t inner, bool max, bool last) {
  using C = compute_t<T>;
  if (inner == 1) {
    parallel_ranges(outer, outer * n >= kParallelWork, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o)
        y[o] = max ? arg_line<T, true>(x + o * n, n, last) : arg_line<T, false>(x + o * n, n, last);
    });
    return;
  }
  parallel_ranges(outer, outer * n * inner >= kParallelWork, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const T* base = x + o * n * inner;
      std::vector<C> best(static_cast<size_t>(inner));
      int64_t* index = y + o * inner;
      for (int64_t j = 0; j < inner; ++j) {
        best[j] = static_cast<C>(base[j]);
        index[j] = 0;
      }
      for (int64_t i = 1; i < n; ++i) {
        const T* row = base + i * inner;
        for (int64_t j = 0; j < inner; ++j) {
          const C v = static_cast<C>(row[j]);
          if (replaces(v, best[j], max, last)) {
            best[j] = v;
            index[j] = i;
          }
        }
      }
    }
  });
}

Result<ComputeFn> build_arg(const KernelInfo& info, bool max) {
  ArgAttrs a;
  a.axis = info.attr_int("axis", 0);
  a.keepdims = info.attr_int("keepdims", 1) != 0;
  a.last = info.attr_int("select_last_index", 0) != 0;
  a.max = max;
  return ComputeFn([a](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    const int64_t rank = static_cast<int64_t>(x->rank());
    ONNXKIT_ASSIGN(const int64_t axis, normalize_axis(a.axis, rank, "axis", "input data"));
    const Shape& s = x->shape();
    const int64_t n = s[axis];
    const int64_t outer = shape_size(Shape(s.begin(), s.begin() + axis));
    const int64_t inner = shape_size(Shape(s.begin() + axis + 1, s.end()));
    Shape out_shape = s;
    if (a.keepdims) out_shape[axis] = 1;
    else out_shape.erase(out_shape.begin() + axis);
    if (n == 0 && outer * inner > 0)
      return make_error("axis {} of input data {} is empty: there is no index to return", axis, shape_to_string(s));
    Tensor& y = ctx.output(0, DataType::int64, out_shape);
    return dispatch_numeric(x->dtype(), [&]<class T>() -> Status {
      arg<T>(x->data<T>(), y.mutable_data<int64_t>(), outer, n, inner, a.max, a.last);
      return {};
    });
  });
}

}  // namespace

void register_arg(KernelRegistry& r) {
  r.add("", "ArgMax", 1, kLatestOpset, make_kernel([](const KernelInfo& info) { return build_arg(info, true); }));
  r.add("", "ArgMin", 1, kLatestOpset, make_kernel([](const KernelInfo& info) { return build_arg(info, false); }));
}

}  // namespace onnxkit::runtime::reduce
