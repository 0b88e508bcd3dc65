#pragma once
// The signal family: window functions, DFT, STFT and MelWeightMatrix.
//
// Complex values travel as a trailing dim of 2 (real, imaginary); a trailing
// dim of 1 is a real signal. Transforms compute in double whatever the
// element type.

#include <complex>
#include <string_view>
#include <vector>

#include "runtime/kernels/common.h"

namespace onnxkit::runtime::signal {

void register_windows(KernelRegistry& registry);  // HannWindow, HammingWindow, BlackmanWindow (opset 17)
void register_dft(KernelRegistry& registry);      // DFT (opsets 17 and 20), STFT (opset 17)
void register_mel(KernelRegistry& registry);      // MelWeightMatrix (opset 17)

// An error unless `type` is a number type a generator op can emit
// (output_datatype of the windows and MelWeightMatrix).
Status check_numeric_output(DataType type);

// Copies `values` into `out` (any number type; integers truncate toward 0).
void write_numbers(const std::vector<double>& values, Tensor& out);

using Complex = std::complex<double>;

// The DFT of one length n, prepared once and applied to many lines:
//   X[k] = sum_t x[t] exp(-2 pi i k t / n).
// A power of two goes through a radix-2 FFT; any other length through
// Bluestein's rewrite of the DFT as a convolution of power-of-two size, so
// every length costs O(n log n). A plan holds scratch space: one per thread.
class FourierPlan {
 public:
  explicit FourierPlan(size_t n);  // n >= 1
  size_t size() const { return n_; }
  // Transforms `line` (size() values) in place. `inverse` flips the sign of
  // the exponent; it does not divide by n.
  void transform(std::vector<Complex>& line, bool inverse);

 private:
  void fft_pow2(std::vector<Complex>& data) const;  // forward, in place; data.size() == fft_size_
  void bluestein(std::vector<Complex>& line);

  size_t n_;
  size_t fft_size_;                       // the radix-2 size: n, or Bluestein's power of two >= 2n - 1
  std::vector<Complex> twiddles_;         // exp(-2 pi i k / fft_size_), k < fft_size_ / 2
  std::vector<Complex> chirp_;            // Bluestein: exp(-pi i k^2 / n), k < n
  std::vector<Complex> filter_spectrum_;  // Bluestein: FFT of the conjugate chirp, wrapped to fft_size_
  std::vector<Complex> work_;             // Bluestein: the convolution, fft_size_ values
};

}  // namespace onnxkit::runtime::signal
