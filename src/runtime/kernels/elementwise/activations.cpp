// Element-wise activations with attributes, PRelu, SwiGLU and Clip.

#include <cmath>
#include <limits>

#include "runtime/kernels/elementwise/elementwise.h"
#include "runtime/kernels/fast_math.h"

namespace onnxkit::runtime::elementwise {
namespace {

// A kernel applying f (double -> double) to every element of a float input.
template <class F>
ComputeFn map_activation(F f) {
  return ComputeFn([f](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    Tensor& y = ctx.output(0, x->dtype(), x->shape());
    return dispatch_float(x->dtype(), [&]<class T>() -> Status {
      map_unary<T, T>(*x, y, [&](compute_t<T> v) { return static_cast<compute_t<T>>(f(static_cast<double>(v))); });
      return {};
    });
  });
}

// Registers a float activation whose attributes are read once at build:
// `make(info)` returns the per-element function.
template <class Make>
void add_activation(KernelRegistry& r, const char* op, int64_t since, Make make, OpTraits traits = {}) {
  r.add("", op, since, kLatestOpset,
        make_kernel([make](const KernelInfo& info) -> Result<ComputeFn> { return map_activation(make(info)); }),
        traits);
}

// The bound of Clip: an input (opset 11+) when given, else the attribute.
template <class T>
Result<T> clip_bound(KernelContext& ctx, size_t index, T fallback) {
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
    ComputeFn in_double = map_activation([tanh_form](double v) {
      if (tanh_form) return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
      return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    });
    return ComputeFn([tanh_form, in_double](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
      if (x->dtype() != DataType::float32 || tanh_form) return in_double(ctx);
      Tensor& y = ctx.output(0, x->dtype(), x->shape());
      map_chunks(x->numel(), [&](int64_t begin, int64_t end) {
        gelu_floats(x->data<float>() + begin, nullptr, y.mutable_data<float>() + begin, end - begin);
      });
      return {};
    });
  });
}

void register_activations(KernelRegistry& r) {
  add_activation(r, "LeakyRelu", 6, [](const KernelInfo& info) {
    double alpha = info.attr_float("alpha", 0.01f);
    return [alpha](double v) { return v >= 0 ? v : alpha * v; };
  }, kBlockedUnaryZeroPreserving);
  add_activation(r, "Elu", 6, [](const KernelInfo& info) {
    double alpha = info.attr_float("alpha", 1.0f);
    return [alpha](double v) { return v >= 0 ? v : alpha * std::expm1(v); };
  }, kBlockedUnaryZeroPreserving);
  add_activation(r, "Selu", 6, [](const KernelInfo& info) {
    double alpha = info.attr_float("alpha", 1.67326319217681884765625f);
    double gamma = info.attr_float("gamma", 1.05070102214813232421875f);
    return [alpha, gamma](double v) { return gamma * (v > 0 ? v : alpha * std::expm1(v)); };
  }, kBlockedUnary);
  add_activation(r, "Celu", 12, [](const KernelInfo& info) {
    double alpha = info.attr_float("alpha", 1.0f);
    return [alpha](double v) { return std::max(0.0, v) + std::min(0.0, alpha * std::expm1(v / alpha)); };
  }, kBlockedUnary);
  add_activation(r, "HardSigmoid", 6, [](const KernelInfo& info) {
    double alpha = info.attr_float("alpha", 0.2f), beta = info.attr_float("beta", 0.5f);
    return [alpha, beta](double v) { return std::max(0.0, std::min(1.0, alpha * v + beta)); };
  }, kBlockedUnary);
  add_activation(r, "HardSwish", 14, [](const KernelInfo&) {
    return [](double v) { return v * std::max(0.0, std::min(1.0, v / 6.0 + 0.5)); };
  }, kBlockedUnaryZeroPreserving);
  add_activation(r, "ThresholdedRelu", 10, [](const KernelInfo& info) {
    double alpha = info.attr_float("alpha", 1.0f);
    return [alpha](double v) { return v > alpha ? v : 0.0; };
  });
  add_activation(r, "Shrink", 9, [](const KernelInfo& info) {
    double bias = info.attr_float("bias", 0.0f), lambd = info.attr_float("lambd", 0.5f);
    return [bias, lambd](double v) { return v < -lambd ? v + bias : (v > lambd ? v - bias : 0.0); };
  });
  add_activation(r, "Mish", 18, [](const KernelInfo&) {
    return [](double v) { return v * std::tanh(v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v))); };
  }, kBlockedUnaryZeroPreserving);
  add_activation(r, "Swish", 24, [](const KernelInfo& info) {
    double alpha = info.attr_float("alpha", 1.0f);
    return [alpha](double v) { return v / (1.0 + std::exp(-alpha * v)); };
  }, kBlockedUnaryZeroPreserving);
  r.add("", "Gelu", 20, kLatestOpset, gelu_kernel());
  // SwiGLU: Swish(A) * B, the gated feed-forward of LLaMA-style models; A and
  // B of one shape, no broadcasting.
  r.add("", "SwiGLU", 28, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          const double alpha = info.attr_float("alpha", 1.0f);
          return ComputeFn([alpha](KernelContext& ctx) -> Status {
            ONNXKIT_ASSIGN(const Tensor* a, ctx.tensor(0));
            ONNXKIT_ASSIGN(const Tensor* b, ctx.tensor(1));
            if (a->dtype() != b->dtype() || a->shape() != b->shape())
              return make_error("A ({} {}) and B ({} {}) must have one element type and one shape",
                                to_string(a->dtype()), shape_to_string(a->shape()), to_string(b->dtype()),
                                shape_to_string(b->shape()));
            Tensor& y = ctx.output(0, a->dtype(), a->shape());
            return dispatch_float(a->dtype(), [&]<class T>() -> Status {
              map_binary<T, T, T>(*a, *b, y, [alpha](auto gate, auto value) {
                const double g = static_cast<double>(gate);
                return static_cast<decltype(gate)>(g / (1.0 + std::exp(-alpha * g)) * static_cast<double>(value));
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
