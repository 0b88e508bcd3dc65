// Two-input element-wise ops with numpy broadcasting, and Where.

#include <cmath>

#include "runtime/kernels/cpu_clones.h"
#include "runtime/kernels/elementwise/elementwise.h"

namespace onnxkit::runtime::elementwise {
namespace {

// Checks the inputs, allocates the broadcast output of `out_type` (the
// inputs' type when undefined) and hands both to `body`.
template <class Body> Status with_binary(KernelContext& ctx, DataType out_type, Body&& body) {
  ONNXKIT_ASSIGN(const Tensor* a, ctx.tensor(0));
  ONNXKIT_ASSIGN(const Tensor* b, ctx.tensor(1));
  if (a->dtype() != b->dtype())
    return make_error("inputs have different element types ({} and {})", to_string(a->dtype()), to_string(b->dtype()));
  ONNXKIT_ASSIGN(Shape shape, binary_shape(*a, *b));
  Tensor& out = ctx.output(0, out_type == DataType::undefined ? a->dtype() : out_type, std::move(shape));
  return body(*a, *b, out);
}

// out = whole * part over rows [first, last) of `inner` floats (a multiple
// of 8), part's row o / repeated scaling row o: a squeeze-excitation gate
// over blocked activations, whose rows are 8 or 16 channels. The generic
// broadcast loop runs a loop of unknown length per row, built for SSE, and
// took 2-3 times ONNX Runtime's Mul on EfficientNet's 8-channel blocks
// (AVX2); fixed 8-lane steps are one AVX2 multiply each.
ONNXKIT_AVX2_CLONES void multiply_rows(const float* whole, const float* part, float* out, int64_t first, int64_t last,
                                       int64_t repeated, int64_t inner) {
  for (int64_t row = first; row < last;) {
    const int64_t o = row / repeated, stop = std::min(last, (o + 1) * repeated);
    const float* g = part + o * inner;
    for (; row < stop; ++row) {
      const float* x = whole + row * inner;
      float* z = out + row * inner;
      for (int64_t i = 0; i < inner; i += 8) {
#pragma omp simd
        for (int64_t l = 0; l < 8; ++l) z[i + l] = x[i + l] * g[i + l];
      }
    }
  }
}

// Mul of float32 tensors where one is a gate broadcast over the middle dims
// of the other in rows of whole 8-float vectors (multiply_rows); false for
// any other Mul, which the generic map runs.
bool multiply_gated_rows(const Tensor& a, const Tensor& b, Tensor& out) {
  if (a.dtype() != DataType::float32) return false;
  const bool a_whole = a.numel() == out.numel();
  const Tensor& whole = a_whole ? a : b;
  const Tensor& part = a_whole ? b : a;
  if (whole.numel() != out.numel() || part.numel() == out.numel() || part.numel() == 0) return false;
  const std::optional<MiddleBroadcast> m = middle_broadcast(part.shape(), out.shape());
  if (!m || m->inner % 8 != 0) return false;
  const float* x = whole.data<float>();
  const float* g = part.data<float>();
  float* z = out.mutable_data<float>();
  parallel_ranges(m->outer * m->repeated, out.numel() >= kParallelBinaryElements,
                  [&](int64_t begin, int64_t end) { multiply_rows(x, g, z, begin, end, m->repeated, m->inner); });
  return true;
}

// A faster path for some operands: true when it computed `out`.
using SpecialCase = bool (*)(const Tensor& a, const Tensor& b, Tensor& out);

template <class F> void add_arithmetic(KernelRegistry& r, const char* op, F f, OpTraits traits, SpecialCase special = nullptr) {
  r.add("", op, 7, kLatestOpset, make_kernel([f, special](KernelContext& ctx) -> Status {
          return with_binary(ctx, DataType::undefined, [&](const Tensor& a, const Tensor& b, Tensor& out) {
            if (special != nullptr && special(a, b, out)) return Status();
            return dispatch_numeric(a.dtype(), [&]<class T>() -> Status {
              map_binary<T, T, T>(a, b, out, f);
              return {};
            });
          });
        }),
        traits);
}

// Integer division and modulo by zero would trap: refuse the input instead.
template <class T> Status check_no_zero_divisor(const Tensor& b) {
  if constexpr (std::is_integral_v<T>) {
    for (T v : b.values<T>())
      if (v == T(0)) return make_error("integer division by zero");
  }
  return {};
}

// x / y and x % y, where the one quotient that does not fit, the most
// negative value over -1, traps on x86 (SIGFPE) instead of wrapping. It
// wraps to the most negative value, as numpy's and as Neg's; the remainder
// is an exact 0.
template <class T> T divide(T x, T y) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
    if (y == T(-1)) return static_cast<T>(T(0) - static_cast<std::make_unsigned_t<T>>(x));
  return x / y;
}
template <class T> T remainder(T x, T y) {
  if constexpr (std::is_signed_v<T>)
    if (y == T(-1)) return T(0);
  return static_cast<T>(x % y);
}

template <class F> void add_comparison(KernelRegistry& r, const char* op, int64_t since, F f) {
  r.add("", op, since, kLatestOpset, make_kernel([f](KernelContext& ctx) -> Status {
          return with_binary(ctx, DataType::boolean, [&](const Tensor& a, const Tensor& b, Tensor& out) {
            if (a.dtype() == DataType::boolean) {
              map_binary<bool, bool, bool>(a, b, out, f);
              return Status();
            }
            if (a.dtype() == DataType::string) {
              map_binary<std::string, std::string, bool>(a, b, out, f);
              return Status();
            }
            return dispatch_numeric(a.dtype(), [&]<class T>() -> Status {
              map_binary<T, T, bool>(a, b, out, f);
              return {};
            });
          });
        }));
}

template <class F> void add_logical(KernelRegistry& r, const char* op, F f) {
  r.add("", op, 7, kLatestOpset, make_kernel([f](KernelContext& ctx) -> Status {
          return with_binary(ctx, DataType::boolean, [&](const Tensor& a, const Tensor& b, Tensor& out) -> Status {
            if (a.dtype() != DataType::boolean) return make_error("{} takes bool, got {}", "logical op", to_string(a.dtype()));
            map_binary<bool, bool, bool>(a, b, out, f);
            return {};
          });
        }));
}

template <class F> void add_bitwise(KernelRegistry& r, const char* op, int64_t since, F f) {
  r.add("", op, since, kLatestOpset, make_kernel([f](KernelContext& ctx) -> Status {
          return with_binary(ctx, DataType::undefined, [&](const Tensor& a, const Tensor& b, Tensor& out) {
            return dispatch_integer(a.dtype(), [&]<class T>() -> Status {
              map_binary<T, T, T>(a, b, out, [&](T x, T y) { return static_cast<T>(f(x, y)); });
              return {};
            });
          });
        }));
}

// Exponentiation by squaring: integer powers stay exact.
template <class T, class E> T integer_power(T base, E exponent) {
  if (exponent < 0) return base == T(1) ? T(1) : T(0);
  T result = 1;
  auto e = static_cast<uint64_t>(exponent);
  while (e) {
    if (e & 1) result = static_cast<T>(result * base);
    base = static_cast<T>(base * base);
    e >>= 1;
  }
  return result;
}

// Before opset 7, binary ops broadcast only when asked (broadcast=1), and
// then B lines up with A at `axis` (default: B's dims end A's dims).
class LegacyBroadcast final : public Kernel {
 public:
  LegacyBroadcast(std::unique_ptr<Kernel> modern, bool broadcast, std::optional<int64_t> axis)
      : modern_(std::move(modern)), broadcast_(broadcast), axis_(axis) {}

  Status compute(KernelContext& ctx) const override {
    ONNXKIT_ASSIGN(const Tensor* a, ctx.tensor(0));
    ONNXKIT_ASSIGN(const Tensor* b, ctx.tensor(1));
    if (!broadcast_) {
      if (a->shape() != b->shape())
        return make_error("shapes {} and {} differ and broadcast=0", shape_to_string(a->shape()), shape_to_string(b->shape()));
      return modern_->compute(ctx);
    }
    const int64_t rank_a = static_cast<int64_t>(a->rank()), rank_b = static_cast<int64_t>(b->rank());
    int64_t axis = axis_.value_or(rank_a - rank_b);
    if (axis < 0) axis += rank_a;
    if (axis < 0 || axis + rank_b > rank_a)
      return make_error("B {} does not fit A {} at axis {}", shape_to_string(b->shape()), shape_to_string(a->shape()), axis);
    Shape aligned(static_cast<size_t>(rank_a), 1);
    for (int64_t i = 0; i < rank_b; ++i) aligned[static_cast<size_t>(axis + i)] = b->dim(static_cast<size_t>(i));
    Datum b_aligned(b->reshaped(aligned));
    KernelContext adapted = ctx.with_inputs({&ctx.input_value(0), &b_aligned});
    return modern_->compute(adapted);
  }

 private:
  std::unique_ptr<Kernel> modern_;
  bool broadcast_;
  std::optional<int64_t> axis_;
};

// Registers opsets 1-6 of `op` around its opset-7 kernel, with its traits.
void add_legacy_broadcast(KernelRegistry& r, const char* op) {
  const KernelDef& def = *r.find("", op, 7);
  KernelFactory modern = def.create;
  const OpTraits traits = def.traits;
  r.add(
      "", op, 1, 6,
      [modern](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
        ONNXKIT_ASSIGN(std::unique_ptr<Kernel> kernel, modern(info));
        std::optional<int64_t> axis;
        if (info.has_attr("axis")) axis = info.attr_int("axis", 0);
        return std::unique_ptr<Kernel>(
            std::make_unique<LegacyBroadcast>(std::move(kernel), info.attr_int("broadcast", 0) != 0, axis));
      },
      traits);
}

Status compute_div(KernelContext& ctx) {
  return with_binary(ctx, DataType::undefined, [&](const Tensor& a, const Tensor& b, Tensor& out) {
    return dispatch_numeric(a.dtype(), [&]<class T>() -> Status {
      ONNXKIT_TRY(check_no_zero_divisor<T>(b));
      map_binary<T, T, T>(a, b, out, [](auto x, auto y) { return divide(x, y); });
      return {};
    });
  });
}

Result<ComputeFn> build_mod(const KernelInfo& info) {
  bool fmod = info.attr_int("fmod", 0) != 0;
  return ComputeFn([fmod](KernelContext& ctx) -> Status {
    return with_binary(ctx, DataType::undefined, [&](const Tensor& a, const Tensor& b, Tensor& out) {
      return dispatch_numeric(a.dtype(), [&]<class T>() -> Status {
        ONNXKIT_TRY(check_no_zero_divisor<T>(b));
        map_binary<T, T, T>(a, b, out, [fmod](auto x, auto y) {
          using C = decltype(x);
          if constexpr (std::is_floating_point_v<C>) {
            C m = std::fmod(x, y);
            // Python's sign rule (sign of the divisor) unless fmod=1.
            if (!fmod && m != 0 && ((m < 0) != (y < 0))) m += y;
            return m;
          } else {
            C m = remainder(x, y);
            if constexpr (std::is_signed_v<C>)
              if (!fmod && m != 0 && ((m < 0) != (y < 0))) m = static_cast<C>(m + y);
            return m;
          }
        });
        return {};
      });
    });
  });
}

// The exponent may have a type of its own.
Status compute_pow(KernelContext& ctx) {
  ONNXKIT_ASSIGN(const Tensor* a, ctx.tensor(0));
  ONNXKIT_ASSIGN(const Tensor* b, ctx.tensor(1));
  ONNXKIT_ASSIGN(Shape shape, binary_shape(*a, *b));
  Tensor& out = ctx.output(0, a->dtype(), std::move(shape));
  return dispatch_numeric(a->dtype(), [&]<class T>() -> Status {
    return dispatch_numeric(b->dtype(), [&]<class E>() -> Status {
      map_binary<T, E, T>(*a, *b, out, [](auto x, auto y) {
        using C = decltype(x);
        if constexpr (std::is_integral_v<C> && std::is_integral_v<decltype(y)>) {
          return integer_power<C>(x, y);
        } else {
          return static_cast<C>(std::pow(static_cast<double>(x), static_cast<double>(y)));
        }
      });
      return {};
    });
  });
}

Result<ComputeFn> build_bit_shift(const KernelInfo& info) {
  std::string direction = info.attr_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    return make_error("attribute 'direction' must be LEFT or RIGHT, got '{}'", direction);
  bool left = direction == "LEFT";
  return ComputeFn([left](KernelContext& ctx) -> Status {
    return with_binary(ctx, DataType::undefined, [&](const Tensor& a, const Tensor& b, Tensor& out) {
      return dispatch_integer(a.dtype(), [&]<class T>() -> Status {
        // A shift by a negative amount or by the width or more
        // leaves what the sign extension alone gives (opset 28's
        // wording, and C++ leaves it undefined): -1 for a right
        // shift of a negative X, 0 otherwise.
        map_binary<T, T, T>(a, b, out, [left](T x, T y) {
          bool out_of_range = y >= static_cast<T>(sizeof(T) * 8);
          if constexpr (std::is_signed_v<T>) out_of_range = out_of_range || y < T(0);
          if (out_of_range) return !left && x < T(0) ? T(-1) : T(0);
          return static_cast<T>(left ? x << y : x >> y);
        });
        return {};
      });
    });
  });
}

}  // namespace

void register_binary(KernelRegistry& r) {
  add_arithmetic(
      r, "Add", [](auto x, auto y) { return x + y; }, kBlockedBinaryZeroPreserving);
  add_arithmetic(
      r, "Sub", [](auto x, auto y) { return x - y; }, kBlockedBinaryZeroPreserving);
  add_arithmetic(
      r, "Mul", [](auto x, auto y) { return x * y; }, kBlockedBinaryZeroPreserving, multiply_gated_rows);
  r.add("", "Div", 7, kLatestOpset, make_kernel(compute_div));
  r.add("", "Mod", 10, kLatestOpset, make_kernel(build_mod));
  r.add("", "Pow", 7, kLatestOpset, make_kernel(compute_pow));

  add_comparison(r, "Equal", 7, [](const auto& x, const auto& y) { return x == y; });
  add_comparison(r, "Less", 7, [](const auto& x, const auto& y) { return x < y; });
  add_comparison(r, "LessOrEqual", 12, [](const auto& x, const auto& y) { return x <= y; });
  add_comparison(r, "Greater", 7, [](const auto& x, const auto& y) { return x > y; });
  add_comparison(r, "GreaterOrEqual", 12, [](const auto& x, const auto& y) { return x >= y; });

  add_logical(r, "And", [](bool x, bool y) { return x && y; });
  add_logical(r, "Or", [](bool x, bool y) { return x || y; });
  add_logical(r, "Xor", [](bool x, bool y) { return x != y; });

  add_bitwise(r, "BitwiseAnd", 18, [](auto x, auto y) { return x & y; });
  add_bitwise(r, "BitwiseOr", 18, [](auto x, auto y) { return x | y; });
  add_bitwise(r, "BitwiseXor", 18, [](auto x, auto y) { return x ^ y; });
  r.add("", "BitShift", 11, kLatestOpset, make_kernel(build_bit_shift));

  r.add("", "Where", 9, kLatestOpset, make_kernel([](KernelContext& ctx) -> Status {
          ONNXKIT_ASSIGN(const Tensor* c, ctx.tensor(0));
          ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(1));
          ONNXKIT_ASSIGN(const Tensor* y, ctx.tensor(2));
          if (c->dtype() != DataType::boolean) return make_error("condition must be bool, got {}", to_string(c->dtype()));
          if (x->dtype() != y->dtype())
            return make_error("X and Y have different element types ({} and {})", to_string(x->dtype()), to_string(y->dtype()));
          ONNXKIT_ASSIGN(Shape shape, broadcast_shapes({&c->shape(), &x->shape(), &y->shape()}));
          Tensor& out = ctx.output(0, x->dtype(), std::move(shape));
          return dispatch_all(x->dtype(), [&]<class T>() -> Status {
            const bool* pc = c->data<bool>();
            const T* px = x->data<T>();
            const T* py = y->data<T>();
            T* po = out.mutable_data<T>();
            for_each_broadcast_run<3>(out.shape(), {&c->shape(), &x->shape(), &y->shape()},
                                      [&](int64_t o, const auto& off, const auto& step, int64_t n) {
                                        for (int64_t i = 0; i < n; ++i)
                                          po[o + i] =
                                              pc[off[0] + i * step[0]] ? px[off[1] + i * step[1]] : py[off[2] + i * step[2]];
                                      });
            return {};
          });
        }));
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Equal", "Less", "Greater", "And", "Or", "Xor"})
    add_legacy_broadcast(r, op);
}

}  // namespace onnxkit::runtime::elementwise
