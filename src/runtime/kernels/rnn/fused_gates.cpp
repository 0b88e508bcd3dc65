// The fused gate arithmetic (fused_gates.h).

#include "runtime/kernels/rnn/fused_gates.h"

#include <cmath>

#include "runtime/kernels/cpu_clones.h"
#include "runtime/kernels/fast_math.h"

namespace onnxkit::runtime::rnn {
namespace {

// sigmoid_floats' form: from e^-|v|, so that no exp overflows.
inline float sigmoid(float v) {
  const float e = fast_exp(-std::fabs(v));
  const float s = 1.0f / (1.0f + e);
  return v >= 0.0f ? s : e * s;
}

// Written as selects that a NaN fails, so that it goes through.
inline float bound(float v, float clip) {
  v = v < -clip ? -clip : v;
  return v > clip ? clip : v;
}

}  // namespace

ONNXKIT_AVX512_CLONES void lstm_default_gates(int64_t units, const float* __restrict g, int64_t g_stride,
                                              const float* __restrict x, int64_t x_stride, float clip, float* __restrict c,
                                              float* __restrict h) {
  const int64_t G = g_stride, X = x_stride;
  for (int64_t j = 0; j < units; ++j) {
    const float i = sigmoid(bound(g[j] + x[j], clip));
    const float o = sigmoid(bound(g[G + j] + x[X + j], clip));
    const float f = sigmoid(bound(g[2 * G + j] + x[2 * X + j], clip));
    const float candidate = fast_tanh(bound(g[3 * G + j] + x[3 * X + j], clip));
    const float cell = f * c[j] + i * candidate;
    c[j] = cell;
    h[j] = o * fast_tanh(cell);
  }
}

ONNXKIT_AVX512_CLONES void gru_default_gates(int64_t units, const float* __restrict g, int64_t g_stride,
                                             const float* __restrict x, int64_t x_stride, const float* __restrict reset_bias,
                                             float clip, const float* h_in, float* h_out) {
  const int64_t G = g_stride, X = x_stride;
  for (int64_t j = 0; j < units; ++j) {
    const float z = sigmoid(bound(g[j] + x[j], clip));
    const float r = sigmoid(bound(g[G + j] + x[X + j], clip));
    const float candidate = fast_tanh(bound(x[2 * X + j] + r * (g[2 * G + j] + reset_bias[j]), clip));
    h_out[j] = (1.0f - z) * candidate + z * h_in[j];
  }
}

}  // namespace onnxkit::runtime::rnn
