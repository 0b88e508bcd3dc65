#include "runtime/kernel.h"

namespace onnxkit::runtime {

void register_quantization_kernels(KernelRegistry& registry) { (void)registry; }

}  // namespace onnxkit::runtime
