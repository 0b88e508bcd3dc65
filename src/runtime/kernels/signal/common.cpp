// Helpers shared by the signal kernels.

#include "runtime/kernels/signal/signal.h"

namespace onnxkit::runtime::signal {

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

}  // namespace onnxkit::runtime::signal
