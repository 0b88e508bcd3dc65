#pragma once
// A 1-D Conv whose filters are a windowed Fourier basis: the STFT that
// Silero VAD, Tacotron 2 / WaveGlow-style STFT modules and their kin write
// as Conv1d(1 -> 2K, kernel N, stride hop), with W built in double precision
// from the DFT of the identity (np.fft.fft(np.eye(N))) times a window w:
//   row k       w[n] cos(2 pi k n / N)       k = 0 .. K-1, K <= N/2 + 1
//   row K + k   -w[n] sin(2 pi k n / N)      (the imaginary part; +sin too)
// For N a power of two, each frame runs as one real FFT, N/2 log(N/2)
// butterflies instead of 2 K N multiply-adds: Silero's 258 x 256 filters
// over a second of audio took 105 us as matrix products at 2 threads, a
// third of the model.

#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/kernels/window.h"
#include "runtime/tensor.h"

namespace onnxkit::runtime::nn {

class FourierConv {
 public:
  // W [2K, 1, N] as such a basis, if it is one to within a few units in the
  // last place of the window's largest value (the rounding of a basis made
  // in double precision): the FFT then differs from the stored filters by
  // no more than their own rounding. nullopt for anything else, a learned
  // filterbank or a basis computed from float32 angles included.
  static std::optional<FourierConv> recognize(const Tensor& w);

  // Whether a convolution of geometry `p` with these filters runs here:
  // 1-D, one input channel, no dilation.
  static bool fits(const ConvParams& p);

  // y [batch, 2K, out] = conv(x [batch, 1, in], W) + bias (2K values, or
  // null), for a geometry that fits; pads read as zeros.
  void run(const ConvParams& p, const float* x, const float* bias, float* y) const;

 private:
  int64_t length_ = 0;        // N
  int64_t bins_ = 0;          // K
  float imaginary_sign_ = 1;  // rows K.. hold imaginary_sign_ * Im X[k]
  std::vector<float> window_;
  std::vector<int32_t> bit_reversed_;           // of the N/2-point complex FFT
  std::vector<float> twiddle_re_, twiddle_im_;  // exp(-2 pi i j / (N/2)), j < N/4
  std::vector<float> split_re_, split_im_;      // exp(-2 pi i k / N), k <= N/2
};

}  // namespace onnxkit::runtime::nn
