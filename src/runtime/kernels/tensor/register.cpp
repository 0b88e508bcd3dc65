#include "runtime/kernel.h"

namespace onnxkit::runtime {

void register_tensor_kernels(KernelRegistry& registry) { (void)registry; }

}  // namespace onnxkit::runtime
