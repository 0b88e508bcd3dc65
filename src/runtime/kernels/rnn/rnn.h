#pragma once
// The recurrent family: one layer of LSTM, GRU or RNN run over a whole
// sequence, forward, reverse or both ways (opsets 7 to 22).
//
// Everything computes in float (float32 and the 16-bit floats, converted on
// the way in and out) or double. The input projection X * W^T of every time
// step is one matrix product up front; each step then only multiplies the
// previous hidden state by R^T, for all the batch at once.

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/kernels/common.h"

namespace onnxkit::runtime::rnn {

enum class Cell { lstm, gru, rnn };

// One entry of the `activations` attribute with its alpha and beta settled.
struct Activation {
  enum class Kind {
    sigmoid,
    tanh,
    relu,
    affine,
    leaky_relu,
    thresholded_relu,
    scaled_tanh,
    hard_sigmoid,
    elu,
    softsign,
    softplus,
  };
  Kind kind = Kind::sigmoid;
  float alpha = 0;
  float beta = 0;

  // x[i] = f(x[i]) for i < n (defined for float and double).
  template <class T> void apply(T* x, int64_t n) const;
};

// The activations of every direction, in the attribute's order: `defaults`
// (one direction's list, as the spec names them) when the attribute is
// absent. alpha and beta are consumed in list order by the activations that
// take them; missing ones get the defaults of the corresponding operators.
// A list of one direction's length is repeated for the second direction.
Result<std::vector<Activation>> read_activations(const KernelInfo& info, const std::vector<std::string>& defaults,
                                                 int64_t num_directions);

// LSTM, GRU and RNN, every version from opset 7.
void register_recurrent(KernelRegistry& registry);

}  // namespace onnxkit::runtime::rnn
