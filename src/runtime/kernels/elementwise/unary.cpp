// One-input element-wise ops without attributes.

#include <cmath>

#include "runtime/kernels/elementwise/elementwise.h"

namespace onnxkit::runtime::elementwise {
namespace {

enum class Types { floats, numbers, signed_numbers };

template <Types kTypes, class F> Status dispatch(DataType t, F&& f) {
  if constexpr (kTypes == Types::floats) {
    return dispatch_float(t, std::forward<F>(f));
  } else {
    if (kTypes == Types::signed_numbers && is_integer(t) && !is_signed(t))
      return make_error("element type {} is not supported here (signed types only)", to_string(t));
    return dispatch_numeric(t, std::forward<F>(f));
  }
}

// Registers `op` as y = f(x), same type, for every opset from `since`.
template <Types kTypes, class F> void add_unary(KernelRegistry& r, const char* op, int64_t since, F f, OpTraits traits = {}) {
  r.add("", op, since, kLatestOpset, make_kernel([f](KernelContext& ctx) -> Status {
          ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
          Tensor& y = ctx.output(0, x->dtype(), x->shape());
          return dispatch<kTypes>(x->dtype(), [&]<class T>() -> Status {
            map_unary<T, T>(*x, y, [&](compute_t<T> v) { return f(v); });
            return {};
          });
        }),
        traits);
}

}  // namespace

void register_unary(KernelRegistry& r) {
  add_unary<Types::numbers>(
      r, "Abs", 1,
      [](auto v) {
        if constexpr (std::is_unsigned_v<decltype(v)>) return v;
        else return static_cast<decltype(v)>(v < 0 ? -v : v);
      },
      kBlockedUnaryZeroPreserving);
  add_unary<Types::signed_numbers>(
      r, "Neg", 1, [](auto v) { return static_cast<decltype(v)>(-v); }, kBlockedUnaryZeroPreserving);
  add_unary<Types::numbers>(r, "Sign", 9, [](auto v) {
    using T = decltype(v);
    return static_cast<T>(v > T(0) ? 1 : (v < T(0) ? -1 : 0));
  });
  add_unary<Types::signed_numbers>(
      r, "Relu", 1, [](auto v) { return v > decltype(v)(0) ? v : decltype(v)(0); }, kBlockedUnaryZeroPreserving);
  add_unary<Types::floats>(r, "Floor", 1, [](auto v) { return std::floor(v); });
  add_unary<Types::floats>(r, "Ceil", 1, [](auto v) { return std::ceil(v); });
  add_unary<Types::floats>(r, "Round", 11, [](auto v) { return std::nearbyint(v); });  // half to even
  add_unary<Types::floats>(r, "Sqrt", 1, [](auto v) { return std::sqrt(v); });
  add_unary<Types::floats>(r, "Reciprocal", 1, [](auto v) { return decltype(v)(1) / v; });
  add_unary<Types::floats>(
      r, "Exp", 1, [](auto v) { return std::exp(v); }, kBlockedUnary);
  add_unary<Types::floats>(r, "Log", 1, [](auto v) { return std::log(v); });
  add_unary<Types::floats>(r, "Sin", 7, [](auto v) { return std::sin(v); });
  add_unary<Types::floats>(r, "Cos", 7, [](auto v) { return std::cos(v); });
  add_unary<Types::floats>(r, "Tan", 7, [](auto v) { return std::tan(v); });
  add_unary<Types::floats>(r, "Asin", 7, [](auto v) { return std::asin(v); });
  add_unary<Types::floats>(r, "Acos", 7, [](auto v) { return std::acos(v); });
  add_unary<Types::floats>(r, "Atan", 7, [](auto v) { return std::atan(v); });
  add_unary<Types::floats>(r, "Sinh", 9, [](auto v) { return std::sinh(v); });
  add_unary<Types::floats>(r, "Cosh", 9, [](auto v) { return std::cosh(v); });
  add_unary<Types::floats>(r, "Asinh", 9, [](auto v) { return std::asinh(v); });
  add_unary<Types::floats>(r, "Acosh", 9, [](auto v) { return std::acosh(v); });
  add_unary<Types::floats>(r, "Atanh", 9, [](auto v) { return std::atanh(v); });
  add_unary<Types::floats>(r, "Softsign", 1, [](auto v) { return v / (decltype(v)(1) + std::abs(v)); });
  add_unary<Types::floats>(
      r, "Softplus", 1,
      [](auto v) {
        using T = decltype(v);
        return v > T(0) ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
      },
      kBlockedUnary);

  r.add("", "Not", 1, kLatestOpset, make_kernel([](KernelContext& ctx) -> Status {
          ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
          if (x->dtype() != DataType::boolean) return make_error("Not takes bool, got {}", to_string(x->dtype()));
          Tensor& y = ctx.output(0, DataType::boolean, x->shape());
          map_unary<bool, bool>(*x, y, [](bool v) { return !v; });
          return {};
        }));
  r.add("", "BitwiseNot", 18, kLatestOpset, make_kernel([](KernelContext& ctx) -> Status {
          ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
          Tensor& y = ctx.output(0, x->dtype(), x->shape());
          return dispatch_integer(x->dtype(), [&]<class T>() -> Status {
            map_unary<T, T>(*x, y, [](T v) { return static_cast<T>(~v); });
            return {};
          });
        }));
  r.add("", "IsNaN", 9, kLatestOpset, make_kernel([](KernelContext& ctx) -> Status {
          ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
          Tensor& y = ctx.output(0, DataType::boolean, x->shape());
          return dispatch_float(x->dtype(), [&]<class T>() -> Status {
            map_unary<T, bool>(*x, y, [](compute_t<T> v) { return std::isnan(v); });
            return {};
          });
        }));
  r.add("", "IsInf", 10, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          bool positive = info.attr_int("detect_positive", 1) != 0;
          bool negative = info.attr_int("detect_negative", 1) != 0;
          return ComputeFn([=](KernelContext& ctx) -> Status {
            ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
            Tensor& y = ctx.output(0, DataType::boolean, x->shape());
            return dispatch_float(x->dtype(), [&]<class T>() -> Status {
              map_unary<T, bool>(*x, y,
                                 [=](compute_t<T> v) { return std::isinf(v) && ((v > 0 && positive) || (v < 0 && negative)); });
              return {};
            });
          });
        }));
}

}  // namespace onnxkit::runtime::elementwise
