// The random family: RandomUniform, RandomNormal, their -Like forms, Bernoulli
// and Multinomial.
//
// Each node owns one generator. With a `seed` attribute it starts from that
// seed, so a session's sequence of draws is reproducible (run 1, run 2, ...
// give the same values in every new session), as in ONNX Runtime; without
// one it starts from std::random_device. Runs from several threads take
// turns on the generator. The draws are onnxkit's own (64-bit Mersenne
// twister, Box-Muller): no implementation reproduces another's numbers.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <numbers>
#include <random>

#include "runtime/kernels/common.h"

namespace onnxkit::runtime {
namespace {

class Generator {
 public:
  explicit Generator(const KernelInfo& info)
      : engine_(info.has_attr("seed") ? seed_from(info.attr_float("seed", 0)) : std::random_device{}()) {}

  // Calls fill(draw) under the lock; draw() is uniform in [0, 1) with 53 random bits.
  template <class F> void with_draws(F&& fill) {
    std::lock_guard lock(mutex_);
    auto draw = [this] { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; };
    fill(draw);
  }

 private:
  // The spec makes the seed a float; its bits, not its truncation, pick the
  // stream, so 0.5 and 0.25 differ.
  static uint64_t seed_from(float seed) {
    uint32_t bits = 0;
    std::memcpy(&bits, &seed, sizeof bits);
    return bits;
  }

  std::mutex mutex_;
  std::mt19937_64 engine_;
};

// A standard normal from two uniforms (Box-Muller); 1 - u keeps log's argument in (0, 1].
template <class Draw> double standard_normal(Draw& draw) {
  const double radius = std::sqrt(-2.0 * std::log(1.0 - draw()));
  return radius * std::cos(2.0 * std::numbers::pi * draw());
}

Result<DataType> float_type(int64_t dtype, std::string_view what) {
  auto type = static_cast<DataType>(dtype);
  if (!is_floating(type)) return make_error("{} must be a floating-point type, got {}", what, to_string(type));
  return type;
}

// RandomUniform and RandomNormal; `like` takes the shape (and by default the
// type) from input 0 instead of the `shape` and `dtype` attributes.
KernelFactory distribution_kernel(bool normal, bool like) {
  return make_kernel([=](const KernelInfo& info) -> Result<ComputeFn> {
    const double low = info.attr_float(normal ? "mean" : "low", 0.0f);
    const double high_or_scale = info.attr_float(normal ? "scale" : "high", 1.0f);
    const bool has_dtype = info.has_attr("dtype");
    std::optional<DataType> type;
    if (has_dtype || !like) {
      ONNXKIT_ASSIGN(DataType t, float_type(info.attr_int("dtype", 1), "attribute 'dtype'"));
      type = t;
    }
    Shape shape;
    if (!like) {
      if (!info.has_attr("shape")) return make_error("attribute 'shape' is required");
      for (int64_t d : info.attr_ints("shape")) {
        if (d < 0) return make_error("attribute 'shape' has a negative dim {}", d);
        shape.push_back(d);
      }
    }
    auto generator = std::make_shared<Generator>(info);
    return ComputeFn([=](KernelContext& ctx) -> Status {
      DataType out_type = DataType::float32;
      Shape out_shape = shape;
      if (like) {
        ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
        out_shape = x->shape();
        if (type) {
          out_type = *type;
        } else {
          ONNXKIT_ASSIGN(out_type, float_type(static_cast<int64_t>(x->dtype()), "the input's type (without 'dtype')"));
        }
      } else {
        out_type = *type;
      }
      Tensor& y = ctx.output(0, out_type, out_shape);
      return dispatch_float(out_type, [&]<class T>() -> Status {
        T* p = y.mutable_data<T>();
        generator->with_draws([&](auto& draw) {
          for (int64_t i = 0; i < y.numel(); ++i)
            p[i] = static_cast<T>(normal ? low + high_or_scale * standard_normal(draw) : low + (high_or_scale - low) * draw());
        });
        return {};
      });
    });
  });
}

// y = 1 with probability x, else 0, in the type of `dtype` (default: x's).
KernelFactory bernoulli_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    const std::optional<DataType> type =
        info.has_attr("dtype") ? std::optional(static_cast<DataType>(info.attr_int("dtype", 1))) : std::nullopt;
    auto generator = std::make_shared<Generator>(info);
    return ComputeFn([=](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
      ONNXKIT_ASSIGN(std::vector<double> probability, read_doubles(*x, "input"));
      for (double p : probability)
        if (!(p >= 0 && p <= 1)) return make_error("probability {} is outside [0, 1]", p);
      const DataType out_type = type.value_or(x->dtype());
      Tensor& y = ctx.output(0, out_type, x->shape());
      auto fill = [&]<class T>() -> Status {
        T* out = y.mutable_data<T>();
        generator->with_draws([&](auto& draw) {
          for (size_t i = 0; i < probability.size(); ++i) out[i] = static_cast<T>(draw() < probability[i] ? 1 : 0);
        });
        return {};
      };
      if (out_type == DataType::boolean) return fill.template operator()<bool>();
      return dispatch_numeric(out_type, fill);
    });
  });
}

// Draws `sample_size` class indices per row of unnormalized log-probabilities.
KernelFactory multinomial_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    const int64_t samples = info.attr_int("sample_size", 1);
    if (samples < 0) return make_error("sample_size {} is negative", samples);
    const auto out_type = static_cast<DataType>(info.attr_int("dtype", static_cast<int64_t>(DataType::int32)));
    if (out_type != DataType::int32 && out_type != DataType::int64)
      return make_error("attribute 'dtype' must be int32 or int64, got {}", to_string(out_type));
    auto generator = std::make_shared<Generator>(info);
    return ComputeFn([=](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
      if (x->rank() != 2) return make_error("input must be [batch, classes], got {}", shape_to_string(x->shape()));
      const int64_t batch = x->dim(0), classes = x->dim(1);
      if (classes == 0 && samples > 0) return make_error("cannot draw from zero classes");
      ONNXKIT_ASSIGN(std::vector<double> logits, read_doubles(*x, "input"));
      Tensor& y = ctx.output(0, out_type, {batch, samples});
      std::vector<int64_t> drawn(static_cast<size_t>(batch * samples));
      std::vector<double> cumulative(static_cast<size_t>(classes));
      for (int64_t b = 0; b < batch; ++b) {
        const double* row = logits.data() + b * classes;
        // Softmax's normalization, shifted by the row's maximum for range.
        double peak = -std::numeric_limits<double>::infinity();
        for (int64_t c = 0; c < classes; ++c) peak = std::max(peak, row[c]);
        if (!std::isfinite(peak)) return make_error("row {} has no finite log-probability", b);
        double total = 0;
        for (int64_t c = 0; c < classes; ++c) cumulative[static_cast<size_t>(c)] = total += std::exp(row[c] - peak);
        generator->with_draws([&](auto& draw) {
          for (int64_t s = 0; s < samples; ++s) {
            const double target = draw() * total;
            auto it = std::upper_bound(cumulative.begin(), cumulative.end(), target);
            drawn[static_cast<size_t>(b * samples + s)] = std::min<int64_t>(it - cumulative.begin(), classes - 1);
          }
        });
      }
      for (size_t i = 0; i < drawn.size(); ++i) {
        if (out_type == DataType::int32) y.mutable_data<int32_t>()[i] = static_cast<int32_t>(drawn[i]);
        else y.mutable_data<int64_t>()[i] = drawn[i];
      }
      return {};
    });
  });
}

}  // namespace

void register_random_kernels(KernelRegistry& registry) {
  const OpTraits random{.random = true};
  registry.add("", "RandomUniform", 1, kLatestOpset, distribution_kernel(/*normal=*/false, /*like=*/false), random);
  registry.add("", "RandomNormal", 1, kLatestOpset, distribution_kernel(/*normal=*/true, /*like=*/false), random);
  registry.add("", "RandomUniformLike", 1, kLatestOpset, distribution_kernel(/*normal=*/false, /*like=*/true), random);
  registry.add("", "RandomNormalLike", 1, kLatestOpset, distribution_kernel(/*normal=*/true, /*like=*/true), random);
  registry.add("", "Bernoulli", 15, kLatestOpset, bernoulli_kernel(), random);
  registry.add("", "Multinomial", 7, kLatestOpset, multinomial_kernel(), random);
}

}  // namespace onnxkit::runtime
