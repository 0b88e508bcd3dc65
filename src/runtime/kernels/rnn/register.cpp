// The recurrent family: LSTM, GRU and RNN.

#include "runtime/kernels/rnn/rnn.h"

namespace onnxkit::runtime {

void register_rnn_kernels(KernelRegistry& registry) { rnn::register_recurrent(registry); }

}  // namespace onnxkit::runtime
