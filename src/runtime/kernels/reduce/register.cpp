#include "runtime/kernel.h"

namespace onnxkit::runtime {

void register_reduce_kernels(KernelRegistry& registry) { (void)registry; }

}  // namespace onnxkit::runtime
