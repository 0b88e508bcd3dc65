#include "runtime/kernels/tensor/tensor.h"

namespace onnxkit::runtime {

void register_tensor_kernels(KernelRegistry& registry) {
  tensor_ops::register_shape_ops(registry);
  tensor_ops::register_cast(registry);
  tensor_ops::register_layout_ops(registry);
  tensor_ops::register_generators(registry);
}

}  // namespace onnxkit::runtime
