// The signal family: window functions, DFT, STFT and MelWeightMatrix.

#include "runtime/kernels/signal/signal.h"

namespace onnxkit::runtime {

void register_signal_kernels(KernelRegistry& registry) {
  signal::register_windows(registry);
  signal::register_dft(registry);
  signal::register_mel(registry);
}

}  // namespace onnxkit::runtime
