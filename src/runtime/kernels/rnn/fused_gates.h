#pragma once
// The gate arithmetic of a step for the cells' default activations in
// float, in one pass: at batch 1 a small layer's step is a couple of
// microseconds, and a pass per gate and per operation (add, activate,
// combine) over arrays of a few hundred elements costs a fifth of it.
//
// The activations are fast_math.h's, as sigmoid_floats and tanh_floats
// compute them, so that the fused and the general path agree.

#include <cstdint>

namespace onnxkit::runtime::rnn {

// One row of an LSTM step with activations Sigmoid, Tanh, Tanh, no
// peepholes and no input_forget: `g` holds h R^T and `x` the input's part
// (X W^T + B) of the gates i, o, f, c, 4 * hidden each; their sums, bounded
// to [-clip, clip] (pass infinity for no clip), go through the activations;
// c and h (hidden each) are updated in place.
void lstm_default_gates(int64_t hidden, const float* g, const float* x, float clip, float* c, float* h);

// One row of a GRU step under linear_before_reset with activations Sigmoid,
// Tanh: `g` holds h R^T and `x` the input's part of the gates z, r, h,
// 3 * hidden each, `reset_bias` the hidden gate's Rb (hidden); h~ =
// tanh(x_h + r * (g_h + Rb_h)), and h (hidden) becomes (1 - z) h~ + z h.
// Every activation's input is bounded to [-clip, clip].
void gru_default_gates(int64_t hidden, const float* g, const float* x, const float* reset_bias, float clip, float* h);

}  // namespace onnxkit::runtime::rnn
