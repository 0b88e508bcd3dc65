// Dropout. Inference passes the data through with an all-keep mask; from
// opset 12 the training_mode input can ask for the random drop, scaled by
// 1 / (1 - ratio).

#include <random>

#include "runtime/kernels/nn/nn.h"

namespace onnxkit::runtime::nn {
namespace {

// The mask of an inference run: all ones, of type T before opset 10 and
// bool from 10.
Tensor keep_all_mask(DataType type, const Shape& shape) {
  Tensor mask(type, shape);
  if (type == DataType::boolean) {
    std::fill(mask.mutable_data<bool>(), mask.mutable_data<bool>() + mask.numel(), true);
  } else {
    (void)dispatch_float(type, [&]<class T>() -> Status {
      std::fill(mask.mutable_data<T>(), mask.mutable_data<T>() + mask.numel(), static_cast<T>(compute_t<T>(1)));
      return {};
    });
  }
  return mask;
}

// Opsets 1 to 11: the ratio is an attribute and the op never drops (there
// is no way to ask for training).
KernelFactory dropout_inference_kernel(bool bool_mask) {
  return make_kernel([bool_mask](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    if (!is_floating(x->dtype()))
      return make_error("element type {} is not supported here (floating point only)", to_string(x->dtype()));
    ctx.set_output(0, *x);  // tensors are immutable: the output shares the buffer
    if (ctx.wants_output(1)) ctx.set_output(1, keep_all_mask(bool_mask ? DataType::boolean : x->dtype(), x->shape()));
    return {};
  });
}

KernelFactory dropout_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    const bool seeded = info.has_attr("seed");
    const int64_t seed = info.attr_int("seed", 0);
    return ComputeFn([=](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
      if (!is_floating(x->dtype()))
        return make_error("element type {} is not supported here (floating point only)", to_string(x->dtype()));
      double ratio = 0.5;
      if (ctx.has_input(1)) {
        ONNXKIT_ASSIGN(const Tensor* r, ctx.tensor(1));
        if (r->numel() != 1) return make_error("ratio must be a scalar, got shape {}", shape_to_string(r->shape()));
        ONNXKIT_ASSIGN(std::vector<double> v, read_doubles(*r, "ratio"));
        ratio = v[0];
      }
      bool training = false;
      if (ctx.has_input(2)) {
        ONNXKIT_ASSIGN(const Tensor* t, ctx.tensor(2));
        if (t->dtype() != DataType::boolean || t->numel() != 1)
          return make_error("training_mode must be a bool scalar, got {}{}", to_string(t->dtype()), shape_to_string(t->shape()));
        training = t->data<bool>()[0];
      }
      if (!training || ratio == 0) {
        ctx.set_output(0, *x);
        if (ctx.wants_output(1)) ctx.set_output(1, keep_all_mask(DataType::boolean, x->shape()));
        return {};
      }
      if (!(ratio > 0 && ratio < 1)) return make_error("ratio is {}, must be in [0, 1)", ratio);
      // The draw is sequential so that a seed gives the same mask on any
      // number of threads.
      std::mt19937_64 engine(seeded ? static_cast<uint64_t>(seed) : std::random_device{}());
      std::uniform_real_distribution<double> uniform(0.0, 1.0);
      Tensor mask(DataType::boolean, x->shape());
      bool* keep = mask.mutable_data<bool>();
      for (int64_t i = 0; i < x->numel(); ++i) keep[i] = uniform(engine) >= ratio;
      Tensor& y = ctx.output(0, x->dtype(), x->shape());
      const double scale = 1.0 / (1.0 - ratio);
      Status scaled = dispatch_float(x->dtype(), [&]<class T>() -> Status {
        using C = compute_t<T>;
        const T* xp = x->data<T>();
        T* yp = y.mutable_data<T>();
        for (int64_t i = 0; i < x->numel(); ++i)
          yp[i] = static_cast<T>(keep[i] ? static_cast<C>(static_cast<double>(static_cast<C>(xp[i])) * scale) : C(0));
        return {};
      });
      if (!scaled.ok()) return scaled;
      if (ctx.wants_output(1)) ctx.set_output(1, std::move(mask));
      return {};
    });
  });
}

}  // namespace

void register_dropout(KernelRegistry& r) {
  // In training mode its mask is random.
  const OpTraits random{.random = true};
  r.add("", "Dropout", 1, 9, dropout_inference_kernel(false), random);
  r.add("", "Dropout", 10, 11, dropout_inference_kernel(true), random);
  r.add("", "Dropout", 12, kLatestOpset, dropout_kernel(), random);
}

}  // namespace onnxkit::runtime::nn
