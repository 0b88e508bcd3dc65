// Element-wise activations with attributes, PRelu, SwiGLU and Clip.

#include <cmath>
#include <functional>
#include <limits>

#include "runtime/kernels/elementwise/elementwise.h"
#include "runtime/kernels/fast_math.h"

namespace onnxkit::runtime::elementwise {
namespace {

// A kernel applying f to every element of a float input, in the element's
// compute precision (float for float32 and the halves, double for double):
// `f` is generic over it. `floats`, when given, does float32 arrays instead
// (fast_math.h's vectorized forms).
using FloatsFn = std::function<void(const float*, float*, int64_t)>;

template <class F> ComputeFn map_activation(F f, FloatsFn floats = nullptr) {
  return ComputeFn([f, floats](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    Tensor& y = ctx.output(0, x->dtype(), x->shape());
    if (floats && x->dtype() == DataType::float32) {
      map_chunks(x->numel(), [&](int64_t begin, int64_t end) {
        floats(x->data<float>() + begin, y.mutable_data<float>() + begin, end - begin);
      });
      return {};
    }
    return dispatch_float(x->dtype(), [&]<class T>() -> Status {
      map_unary<T, T>(*x, y, [&](compute_t<T> v) { return f(v); });
      return {};
    });
  });
}

// Registers a float activation whose attributes are read once at build:
// `make(info)` returns the per-element function, or a pair of it and the
// float32 array form.
template <class Make> void add_activation(KernelRegistry& r, const char* op, int64_t since, Make make, OpTraits traits = {}) {
  r.add("", op, since, kLatestOpset, make_kernel([make](const KernelInfo& info) -> Result<ComputeFn> {
          auto made = make(info);
          if constexpr (requires { made.second; }) return map_activation(made.first, made.second);
          else return map_activation(made);
        }),
        traits);
}

// v limited to [0, 1], NaN going through as in hard_sigmoid_floats.
template <class C> C unit_clamp(C v) { return v < C(0) ? C(0) : (v > C(1) ? C(1) : v); }

// The bound of Clip: an input (opset 11+) when given, else the attribute.
template <class T> Result<T> clip_bound(KernelContext& ctx, size_t index, T fallback) {
  if (!ctx.has_input(index)) return fallback;
  ONNXKIT_ASSIGN(const Tensor* t, ctx.tensor(index));
  if (t->numel() != 1) return make_error("Clip bound {} must be a scalar, got shape {}", index, shape_to_string(t->shape()));
  if (t->dtype() != data_type_of<T>())
    return make_error("Clip bound {} has type {}, input has {}", index, to_string(t->dtype()), to_string(data_type_of<T>()));
  return t->data<T>()[0];
}

}  // namespace

KernelFactory gelu_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    const std::string form = info.attr_string("approximate", "none");
    if (form != "none" && form != "tanh") return make_error("attribute 'approximate' is '{}'; it must be none or tanh", form);
    const bool tanh_form = form == "tanh";
    auto f = [tanh_form](auto v) {
      using C = decltype(v);
      if (tanh_form) return C(0.5) * v * (C(1) + std::tanh(C(0.7978845608028654) * (v + C(0.044715) * v * v * v)));
      return C(0.5) * v * (C(1) + std::erf(v * C(0.7071067811865476)));
    };
    if (tanh_form)
      return map_activation(f, [](const float* x, float* y, int64_t n) {
        for (int64_t i = 0; i < n; ++i) y[i] = 0.7978845608028654f * (x[i] + 0.044715f * x[i] * x[i] * x[i]);
        tanh_floats(y, y, n);
        for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + y[i]);
      });
    return map_activation(f, [](const float* x, float* y, int64_t n) { gelu_floats(x, nullptr, y, n); });
  });
}

void register_activations(KernelRegistry& r) {
  // float32 through fast_math.h's vectorized forms.
  add_activation(r, "Erf", 9, [](const KernelInfo&) {
    return std::pair([](auto v) { return std::erf(v); }, FloatsFn(erf_floats));
  });
  add_activation(
      r, "Sigmoid", 1,
      [](const KernelInfo&) {
        auto f = [](auto v) {
          using C = decltype(v);
          // Stable on both sides: never exp of a large positive number.
          return v >= C(0) ? C(1) / (C(1) + std::exp(-v)) : std::exp(v) / (C(1) + std::exp(v));
        };
        return std::pair(f, FloatsFn(sigmoid_floats));
      },
      kBlockedUnary);
  add_activation(
      r, "Tanh", 1, [](const KernelInfo&) { return std::pair([](auto v) { return std::tanh(v); }, FloatsFn(tanh_floats)); },
      kBlockedUnaryZeroPreserving);
  add_activation(
      r, "LeakyRelu", 6,
      [](const KernelInfo& info) {
        float alpha = info.attr_float("alpha", 0.01f);
        return [alpha](auto v) { return v >= 0 ? v : decltype(v)(alpha) * v; };
      },
      kBlockedUnaryZeroPreserving);
  add_activation(
      r, "Elu", 6,
      [](const KernelInfo& info) {
        float alpha = info.attr_float("alpha", 1.0f);
        return [alpha](auto v) { return v >= 0 ? v : decltype(v)(alpha) * std::expm1(v); };
      },
      kBlockedUnaryZeroPreserving);
  add_activation(
      r, "Selu", 6,
      [](const KernelInfo& info) {
        float alpha = info.attr_float("alpha", 1.67326319217681884765625f);
        float gamma = info.attr_float("gamma", 1.05070102214813232421875f);
        return [alpha, gamma](auto v) {
          using C = decltype(v);
          return C(gamma) * (v > 0 ? v : C(alpha) * std::expm1(v));
        };
      },
      kBlockedUnary);
  add_activation(
      r, "Celu", 12,
      [](const KernelInfo& info) {
        float alpha = info.attr_float("alpha", 1.0f);
        return [alpha](auto v) {
          using C = decltype(v);
          return std::max(C(0), v) + std::min(C(0), C(alpha) * std::expm1(v / C(alpha)));
        };
      },
      kBlockedUnary);
  add_activation(
      r, "HardSigmoid", 6,
      [](const KernelInfo& info) {
        float alpha = info.attr_float("alpha", 0.2f), beta = info.attr_float("beta", 0.5f);
        auto f = [alpha, beta](auto v) {
          using C = decltype(v);
          return unit_clamp(C(alpha) * v + C(beta));
        };
        return std::pair(f, FloatsFn([alpha, beta](const float* x, float* y, int64_t n) {
                           hard_sigmoid_floats(x, y, n, alpha, beta, false);
                         }));
      },
      kBlockedUnary);
  add_activation(
      r, "HardSwish", 14,
      [](const KernelInfo&) {
        auto f = [](auto v) {
          using C = decltype(v);
          return v * unit_clamp(v / C(6) + C(0.5));
        };
        return std::pair(
            f, FloatsFn([](const float* x, float* y, int64_t n) { hard_sigmoid_floats(x, y, n, 1.0f / 6.0f, 0.5f, true); }));
      },
      kBlockedUnaryZeroPreserving);
  add_activation(r, "ThresholdedRelu", 10, [](const KernelInfo& info) {
    float alpha = info.attr_float("alpha", 1.0f);
    return [alpha](auto v) { return v > decltype(v)(alpha) ? v : decltype(v)(0); };
  });
  add_activation(r, "Shrink", 9, [](const KernelInfo& info) {
    float bias = info.attr_float("bias", 0.0f), lambd = info.attr_float("lambd", 0.5f);
    return [bias, lambd](auto v) {
      using C = decltype(v);
      return v < -C(lambd) ? v + C(bias) : (v > C(lambd) ? v - C(bias) : C(0));
    };
  });
  add_activation(
      r, "Mish", 18,
      [](const KernelInfo&) {
        return [](auto v) { return v * std::tanh(v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v))); };
      },
      kBlockedUnaryZeroPreserving);
  add_activation(
      r, "Swish", 24,
      [](const KernelInfo& info) {
        float alpha = info.attr_float("alpha", 1.0f);
        auto f = [alpha](auto v) {
          using C = decltype(v);
          return v / (C(1) + std::exp(-C(alpha) * v));
        };
        return std::pair(f, FloatsFn([alpha](const float* x, float* y, int64_t n) { swish_floats(x, y, n, alpha); }));
      },
      kBlockedUnaryZeroPreserving);
  r.add("", "Gelu", 20, kLatestOpset, gelu_kernel());
  // SwiGLU: Swish(A) * B, the gated feed-forward of LLaMA-style models; A and
  // B of one shape, no broadcasting.
  r.add("", "SwiGLU", 28, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          const float alpha = info.attr_float("alpha", 1.0f);
          return ComputeFn([alpha](KernelContext& ctx) -> Status {
            ONNXKIT_ASSIGN(const Tensor* a, ctx.tensor(0));
            ONNXKIT_ASSIGN(const Tensor* b, ctx.tensor(1));
            if (a->dtype() != b->dtype() || a->shape() != b->shape())
              return make_error("A ({} {}) and B ({} {}) must have one element type and one shape", to_string(a->dtype()),
                                shape_to_string(a->shape()), to_string(b->dtype()), shape_to_string(b->shape()));
            Tensor& y = ctx.output(0, a->dtype(), a->shape());
            return dispatch_float(a->dtype(), [&]<class T>() -> Status {
              map_binary<T, T, T>(*a, *b, y, [alpha](auto gate, auto value) {
                using C = decltype(gate);
                return gate / (C(1) + std::exp(-C(alpha) * gate)) * value;
              });
              return {};
            });
          });
        }));

  r.add("", "PRelu", 1, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          // Before opset 7 a 1-D slope holds one value per channel (axis 1).
          const bool per_channel = info.opset() < 7;
          return ComputeFn([per_channel](KernelContext& ctx) -> Status {
            ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
            ONNXKIT_ASSIGN(const Tensor* slope_in, ctx.tensor(1));
            if (x->dtype() != slope_in->dtype()) return make_error("X and slope have different element types");
            Tensor slope = *slope_in;
            if (per_channel && slope.rank() == 1 && x->rank() >= 2 && slope.dim(0) == x->dim(1) && slope.dim(0) != 1) {
              Shape s(x->rank() - 1, 1);
              s[0] = slope.dim(0);
              slope = slope.reshaped(s);
            }
            ONNXKIT_ASSIGN(Shape shape, binary_shape(*x, slope));
            if (shape != x->shape())
              return make_error("slope {} does not broadcast to X {}", shape_to_string(slope.shape()),
                                shape_to_string(x->shape()));
            Tensor& y = ctx.output(0, x->dtype(), std::move(shape));
            return dispatch_numeric(x->dtype(), [&]<class T>() -> Status {
              map_binary<T, T, T>(*x, slope, y, [](auto v, auto s) { return v < decltype(v)(0) ? v * s : v; });
              return {};
            });
          });
        }));

  // Clip before opset 11: bounds are attributes.
  r.add("", "Clip", 6, 10, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          float lo = info.attr_float("min", std::numeric_limits<float>::lowest());
          float hi = info.attr_float("max", std::numeric_limits<float>::max());
          return ComputeFn([lo, hi](KernelContext& ctx) -> Status {
            ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
            Tensor& y = ctx.output(0, x->dtype(), x->shape());
            return dispatch_float(x->dtype(), [&]<class T>() -> Status {
              using C = compute_t<T>;
              map_unary<T, T>(*x, y, [&](C v) { return std::min(std::max(v, C(lo)), C(hi)); });
              return {};
            });
          });
        }),
        kBlockedUnary);
  // From opset 11: optional min and max inputs.
  r.add("", "Clip", 11, kLatestOpset, make_kernel([](KernelContext& ctx) -> Status {
          ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
          Tensor& y = ctx.output(0, x->dtype(), x->shape());
          return dispatch_numeric(x->dtype(), [&]<class T>() -> Status {
            using C = compute_t<T>;
            T lowest, highest;
            if constexpr (is_half_v<T>) {
              lowest = T(-std::numeric_limits<float>::infinity());
              highest = T(std::numeric_limits<float>::infinity());
            } else {
              lowest = std::numeric_limits<T>::lowest();
              highest = std::numeric_limits<T>::max();
            }
            ONNXKIT_ASSIGN(T lo, clip_bound<T>(ctx, 1, lowest));
            ONNXKIT_ASSIGN(T hi, clip_bound<T>(ctx, 2, highest));
            C l = C(lo), h = C(hi);
            map_unary<T, T>(*x, y, [&](C v) { return std::min(std::max(v, l), h); });
            return {};
          });
        }),
        kBlockedUnary);
}

}  // namespace onnxkit::runtime::elementwise
