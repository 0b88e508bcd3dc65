// The signal family: window functions, DFT, STFT and MelWeightMatrix.

#include "runtime/kernels/signal/signal.h"

namespace onnxkit::runtime {
namespace signal {

Result<int64_t> read_int_scalar(KernelContext& ctx, size_t i, std::string_view name) {
  ONNXKIT_ASSIGN(const Tensor* t, ctx.tensor(i));
  if (t->numel() != 1) return make_error("{} must be a scalar, got shape {}", name, shape_to_string(t->shape()));
  Result<std::vector<int64_t>> v = read_int64s(*t);
  if (!v.ok()) return v.error().in(name);
  return v.value()[0];
}

Result<double> read_float_scalar(KernelContext& ctx, size_t i, std::string_view name) {
  ONNXKIT_ASSIGN(const Tensor* t, ctx.tensor(i));
  if (t->numel() != 1) return make_error("{} must be a scalar, got shape {}", name, shape_to_string(t->shape()));
  ONNXKIT_ASSIGN(std::vector<double> v, read_doubles(*t, name));
  return v[0];
}

Status check_numeric_output(DataType type) {
  if (is_floating(type) || is_integer(type)) return {};
  return make_error("output_datatype {} is not a number type", to_string(type));
}

void write_numbers(const std::vector<double>& values, Tensor& out) {
  (void)dispatch_numeric(out.dtype(), [&]<class T>() -> Status {
    T* p = out.mutable_data<T>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = static_cast<T>(values[i]);
    return {};
  });
}

}  // namespace signal

void register_signal_kernels(KernelRegistry& registry) {
  signal::register_windows(registry);
  signal::register_dft(registry);
  signal::register_mel(registry);
}

}  // namespace onnxkit::runtime
