// Recurrent layers: LSTM, GRU and RNN nodes as nn.LSTM / nn.GRU / nn.RNN.

#include <fmt/format.h>

#include "tools/pytorch/emitter.h"
#include "tools/pytorch/writer.h"

namespace onnxkit::tools::pytorch {

void add_rnn_emitters(EmitterTable&) {}

}  // namespace onnxkit::tools::pytorch
