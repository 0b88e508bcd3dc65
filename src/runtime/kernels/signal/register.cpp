// The signal family: window functions, DFT, STFT and MelWeightMatrix.

#include "runtime/kernels/common.h"

namespace onnxkit::runtime {

void register_signal_kernels(KernelRegistry& registry) { (void)registry; }

}  // namespace onnxkit::runtime
