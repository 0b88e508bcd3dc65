#include "runtime/kernel.h"

namespace onnxkit::runtime {

void register_nn_kernels(KernelRegistry& registry) { (void)registry; }

}  // namespace onnxkit::runtime
