// Sum, Mean, Max and Min over any number of broadcast inputs.

#include <cmath>

#include "runtime/kernels/elementwise/elementwise.h"

namespace onnxkit::runtime::elementwise {
namespace {

enum class Fold { sum, mean, max, min };

Status fold(KernelContext& ctx, Fold kind) {
  std::vector<const Tensor*> inputs;
  std::vector<const Shape*> shapes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    ONNXKIT_ASSIGN(const Tensor* t, ctx.tensor(i));
    if (!inputs.empty() && t->dtype() != inputs[0]->dtype())
      return make_error("inputs have different element types ({} and {})", to_string(inputs[0]->dtype()), to_string(t->dtype()));
    inputs.push_back(t);
    shapes.push_back(&t->shape());
  }
  if (inputs.empty()) return make_error("needs at least one input");
  ONNXKIT_ASSIGN(Shape shape, broadcast_shapes(shapes));
  return dispatch_numeric(inputs[0]->dtype(), [&]<class T>() -> Status {
    if (kind == Fold::mean && !is_float_v<T>)
      return make_error("Mean takes floating point, got {}", to_string(data_type_of<T>()));
    auto combine = [kind](auto x, auto y) {
      using C = decltype(x);
      switch (kind) {
        case Fold::max:
          if constexpr (std::is_floating_point_v<C>)
            if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<C>::quiet_NaN();
          return std::max(x, y);
        case Fold::min:
          if constexpr (std::is_floating_point_v<C>)
            if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<C>::quiet_NaN();
          return std::min(x, y);
        default: return static_cast<C>(x + y);
      }
    };
    // The first input stretched to the output shape, then each other folded in.
    Tensor acc(data_type_of<T>(), shape);
    Tensor zero(data_type_of<T>(), {});
    zero.mutable_data<T>()[0] = T(0);
    map_binary<T, T, T>(*inputs[0], zero, acc, [](auto x, auto) { return x; });
    for (size_t i = 1; i < inputs.size(); ++i) {
      Tensor next(data_type_of<T>(), shape);
      map_binary<T, T, T>(acc, *inputs[i], next, combine);
      acc = std::move(next);
    }
    if (kind == Fold::mean) {
      auto n = static_cast<compute_t<T>>(inputs.size());
      map_unary<T, T>(acc, acc, [n](auto v) { return v / n; });
    }
    ctx.set_output(0, std::move(acc));
    return {};
  });
}

}  // namespace

void register_variadic(KernelRegistry& r) {
  r.add("", "Sum", 1, kLatestOpset, make_kernel([](KernelContext& ctx) { return fold(ctx, Fold::sum); }));
  r.add("", "Mean", 1, kLatestOpset, make_kernel([](KernelContext& ctx) { return fold(ctx, Fold::mean); }));
  r.add("", "Max", 1, kLatestOpset, make_kernel([](KernelContext& ctx) { return fold(ctx, Fold::max); }));
  r.add("", "Min", 1, kLatestOpset, make_kernel([](KernelContext& ctx) { return fold(ctx, Fold::min); }));
}

}  // namespace onnxkit::runtime::elementwise

namespace onnxkit::runtime {

void register_elementwise_kernels(KernelRegistry& registry) {
  register_each(registry, {elementwise::register_unary, elementwise::register_binary, elementwise::register_activations,
                           elementwise::register_variadic});
}

}  // namespace onnxkit::runtime
