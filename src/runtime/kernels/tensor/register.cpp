#include "runtime/kernels/tensor/tensor.h"

namespace onnxkit::runtime {

void register_tensor_kernels(KernelRegistry& registry) {
  register_each(registry, {tensor_ops::register_shape_ops, tensor_ops::register_cast, tensor_ops::register_layout_ops,
                           tensor_ops::register_generators});
}

}  // namespace onnxkit::runtime
