#include "runtime/kernel.h"

namespace onnxkit::runtime {

void register_detection_kernels(KernelRegistry& registry) { (void)registry; }

}  // namespace onnxkit::runtime
