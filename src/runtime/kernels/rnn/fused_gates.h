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

// Both take `units` consecutive hidden units of one row. Gate q of unit j
// is at g[q * g_stride + j] in h R^T and at x[q * x_stride + j] in the
// input's part (X W^T + B): strides of hidden for a row laid out gate by
// gate, or the width of a block of units when the product writes its
// columns unit block by unit block (recurrent.cpp).

// An LSTM step with activations Sigmoid, Tanh, Tanh, no peepholes and no
// input_forget, gates i, o, f, c: their sums, bounded to [-clip, clip]
// (pass infinity for no clip), go through the activations; c is updated in
// place and the new h written to h.
void lstm_default_gates(int64_t units, const float* g, int64_t g_stride, const float* x, int64_t x_stride, float clip, float* c,
                        float* h);

// A GRU step under linear_before_reset with activations Sigmoid, Tanh, gates
// z, r, h, `reset_bias` the hidden gate's Rb: h~ = tanh(x_h + r * (g_h +
// Rb_h)), and the new h, (1 - z) h~ + z h_in, goes to h_out (which may be
// h_in). Every activation's input is bounded to [-clip, clip].
void gru_default_gates(int64_t units, const float* g, int64_t g_stride, const float* x, int64_t x_stride,
                       const float* reset_bias, float clip, const float* h_in, float* h_out);

}  // namespace onnxkit::runtime::rnn
