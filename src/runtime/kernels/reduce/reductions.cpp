// ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1,
// ReduceL2, ReduceLogSum, ReduceLogSumExp and ReduceSumSquare.
//
// Each is a fold (init, step, merge) and a finish. The 16-bit floats fold in
// float; integer sums and products fold in uint64_t, where overflow wraps
// exactly like the narrower type would (and is defined); the logarithmic
// ones fold integers in double.

#include <fmt/format.h>

#include <limits>

#include "runtime/kernels/reduce/reduce.h"

namespace onnxkit::runtime::reduce {
namespace {

// The folds run once per element inside the engine's loops, which are big
// enough that the compiler would otherwise stop inlining them (and then
// stop vectorizing).
#define FOLD_INLINE inline __attribute__((always_inline))

enum class Kind { sum, mean, max, min, prod, l1, l2, log_sum, log_sum_exp, sum_square };

constexpr bool folds_in_double(Kind k) { return k == Kind::l2 || k == Kind::log_sum || k == Kind::log_sum_exp; }

template <class T, Kind K> struct AccOf { using type = compute_t<T>; };
template <class T, Kind K>
requires(std::is_integral_v<T> && !std::is_same_v<T, bool>) struct AccOf<T, K> {
  using type = std::conditional_t<K == Kind::max || K == Kind::min, T, std::conditional_t<folds_in_double(K), double, uint64_t>>;
};

// A double result stored in an integer type: saturated, NaN as 0, instead
// of the undefined behaviour of casting what does not fit.
template <class T> T store(double v) {
  if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return T(0);
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

template <class T, Kind K> struct Reducer {
  using Acc = typename AccOf<T, K>::type;
  int64_t count = 1;
  const Acc* shift = nullptr;  // per-output maximum, for log_sum_exp

  static constexpr bool kFloat = std::is_floating_point_v<Acc>;

  FOLD_INLINE Acc init() const {
    if constexpr (K == Kind::prod) {
      return Acc(1);
    } else if constexpr (K == Kind::max) {
      if constexpr (kFloat) return -std::numeric_limits<Acc>::infinity();
      else return std::numeric_limits<Acc>::lowest();
    } else if constexpr (K == Kind::min) {
      if constexpr (kFloat) return std::numeric_limits<Acc>::infinity();
      else return std::numeric_limits<Acc>::max();
    } else {
      return Acc(0);
    }
  }

  FOLD_INLINE Acc step(Acc acc, T x, int64_t o) const {
    // Integers widen through their own signedness first (-1 becomes
    // 2^64 - 1 in a uint64_t sum, which wraps back correctly).
    const Acc v = static_cast<Acc>(static_cast<compute_t<T>>(x));
    if constexpr (K == Kind::max || K == Kind::min) {
      return step_same(acc, v);
    } else if constexpr (K == Kind::prod) {
      return acc * v;
    } else if constexpr (K == Kind::l1) {
      if constexpr (!std::is_unsigned_v<Acc>) return acc + std::abs(v);
      else if constexpr (std::is_signed_v<T>) return acc + (x < 0 ? Acc(0) - v : v);
      else return acc + v;
    } else if constexpr (K == Kind::l2 || K == Kind::sum_square) {
      return acc + v * v;
    } else if constexpr (K == Kind::log_sum_exp) {
      return acc + std::exp(v - shift[o]);
    } else {
      return acc + v;
    }
  }

  FOLD_INLINE Acc merge(Acc a, Acc b) const {
    if constexpr (K == Kind::max || K == Kind::min) return step_same(a, b);
    else if constexpr (K == Kind::prod) return a * b;
    else return a + b;
  }
  // b replaces a when more extreme, or NaN (which then sticks). Written
  // without short-circuits so that the comparison vectorizes as a blend.
  FOLD_INLINE Acc step_same(Acc a, Acc b) const {
    bool take = K == Kind::max ? b > a : b < a;
    if constexpr (kFloat) take = take | (b != b);
    return take ? b : a;
  }

  FOLD_INLINE T finish(Acc acc, int64_t o) const {
    if constexpr (K == Kind::mean) {
      if constexpr (kFloat) {
        return static_cast<T>(acc / static_cast<Acc>(count));
      } else if constexpr (std::is_signed_v<T>) {
        return static_cast<T>(static_cast<int64_t>(acc) / count);
      } else {
        return static_cast<T>(acc / static_cast<uint64_t>(count));
      }
    } else if constexpr (K == Kind::l2) {
      return store<T>(std::sqrt(static_cast<double>(acc)));
    } else if constexpr (K == Kind::log_sum) {
      return store<T>(std::log(static_cast<double>(acc)));
    } else if constexpr (K == Kind::log_sum_exp) {
      // An infinite or NaN maximum is the answer itself (and would turn the
      // shifted sum into NaN).
      if (!std::isfinite(shift[o])) return store<T>(static_cast<double>(shift[o]));
      return store<T>(static_cast<double>(std::log(acc) + shift[o]));
    } else {
      return static_cast<T>(acc);
    }
  }
};

template <class T, Kind K> Status reduce_typed(const Tensor& x, const Layout& L, Tensor& y) {
  using R = Reducer<T, K>;
  R op;
  op.count = L.count;
  if constexpr (K == Kind::mean && std::is_integral_v<T>) {
    if (L.count == 0 && L.outputs > 0)
      return make_error("ReduceMean of an empty set has no {} value", to_string(data_type_of<T>()));
  }
  std::vector<typename R::Acc> shift;
  if constexpr (K == Kind::log_sum_exp) {
    // The maximum first, so that the exponentials cannot overflow.
    shift.resize(static_cast<size_t>(L.outputs));
    struct MaxOf {
      using Acc = typename R::Acc;
      Reducer<T, Kind::max> inner;
      Acc init() const { return static_cast<Acc>(inner.init()); }
      Acc step(Acc a, T x, int64_t o) const {
        const Acc v = static_cast<Acc>(static_cast<compute_t<T>>(x));
        return (v > a || v != v) ? v : a;
      }
      Acc merge(Acc a, Acc b) const { return (b > a || b != b) ? b : a; }
      Acc finish(Acc a, int64_t) const { return a; }
    };
    MaxOf max_of;
    run(L, x.data<T>(), shift.data(), max_of);
    op.shift = shift.data();
  }
  run(L, x.data<T>(), y.mutable_data<T>(), op);
  return {};
}

template <Kind K> Status reduce(const Tensor& x, const Layout& L, Tensor& y) {
  if constexpr (K == Kind::max || K == Kind::min) {
    if (x.dtype() == DataType::boolean) return reduce_typed<bool, K>(x, L, y);
  }
  return dispatch_numeric(x.dtype(), [&]<class T>() -> Status { return reduce_typed<T, K>(x, L, y); });
}

template <Kind K> void add_reduction(KernelRegistry& r, const char* op, int64_t axes_input_since) {
  auto build = [](bool from_input) {
    return make_kernel([from_input](const KernelInfo& info) -> Result<ComputeFn> {
      AxesSpec spec;
      spec.from_input = from_input;
      spec.keepdims = info.attr_int("keepdims", 1) != 0;
      if (from_input) spec.noop_with_empty_axes = info.attr_int("noop_with_empty_axes", 0) != 0;
      else spec.attribute = info.attr_ints("axes");
      return ComputeFn([spec](KernelContext& ctx) -> Status {
        ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
        ONNXKIT_ASSIGN(std::vector<bool> mask, reduced_axes(ctx, spec, static_cast<int64_t>(x->rank())));
        const Layout L = make_layout(x->shape(), mask, spec.keepdims);
        Tensor& y = ctx.output(0, x->dtype(), L.out_shape);
        return reduce<K>(*x, L, y);
      });
    });
  };
  r.add("", op, 1, axes_input_since - 1, build(false));
  r.add("", op, axes_input_since, kLatestOpset, build(true));
}

}  // namespace

void register_reductions(KernelRegistry& r) {
  add_reduction<Kind::sum>(r, "ReduceSum", 13);
  add_reduction<Kind::mean>(r, "ReduceMean", 18);
  add_reduction<Kind::max>(r, "ReduceMax", 18);
  add_reduction<Kind::min>(r, "ReduceMin", 18);
  add_reduction<Kind::prod>(r, "ReduceProd", 18);
  add_reduction<Kind::l1>(r, "ReduceL1", 18);
  add_reduction<Kind::l2>(r, "ReduceL2", 18);
  add_reduction<Kind::log_sum>(r, "ReduceLogSum", 18);
  add_reduction<Kind::log_sum_exp>(r, "ReduceLogSumExp", 18);
  add_reduction<Kind::sum_square>(r, "ReduceSumSquare", 18);
}

}  // namespace onnxkit::runtime::reduce
