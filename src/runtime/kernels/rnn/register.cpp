#include "runtime/kernel.h"

namespace onnxkit::runtime {

void register_rnn_kernels(KernelRegistry& registry) { (void)registry; }

}  // namespace onnxkit::runtime
