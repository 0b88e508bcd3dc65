#include "runtime/kernel.h"

namespace onnxkit::runtime {

void register_math_kernels(KernelRegistry& registry) { (void)registry; }

}  // namespace onnxkit::runtime
