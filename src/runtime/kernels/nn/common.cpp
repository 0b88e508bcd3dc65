// Helpers shared by the neural-network kernels.

#include <fmt/format.h>

#include "runtime/kernels/nn/nn.h"

namespace onnxkit::runtime::nn {

Tensor doubles_to_tensor(DataType type, Shape shape, const std::vector<double>& values) {
  Tensor t(type, std::move(shape));
  (void)dispatch_float(type, [&]<class T>() -> Status {
    T* p = t.mutable_data<T>();
    for (int64_t i = 0; i < t.numel() && i < static_cast<int64_t>(values.size()); ++i)
      p[i] = static_cast<T>(static_cast<compute_t<T>>(values[static_cast<size_t>(i)]));
    return {};
  });
  return t;
}

}  // namespace onnxkit::runtime::nn
