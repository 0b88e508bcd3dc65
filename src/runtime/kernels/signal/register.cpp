// The signal family: window functions, DFT, STFT and MelWeightMatrix.

#include "runtime/kernels/signal/signal.h"

namespace onnxkit::runtime {

void register_signal_kernels(KernelRegistry& registry) {
  register_each(registry, {signal::register_windows, signal::register_dft, signal::register_mel});
}

}  // namespace onnxkit::runtime
