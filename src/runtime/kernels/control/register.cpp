#include "runtime/kernel.h"

namespace onnxkit::runtime {

void register_control_kernels(KernelRegistry& registry) { (void)registry; }

}  // namespace onnxkit::runtime
