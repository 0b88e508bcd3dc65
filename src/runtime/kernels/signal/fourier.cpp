// FourierPlan: a radix-2 FFT for powers of two, Bluestein's algorithm for
// every other length.
//
// Bluestein: with k t = (k^2 + t^2 - (k - t)^2) / 2 the DFT becomes
//   X[k] = c[k] * sum_t (x[t] c[t]) conj(c[k - t]),   c[j] = exp(-pi i j^2 / n),
// a convolution of x*c with conj(c) (symmetric in j), done by FFTs of a power
// of two m >= 2n - 1 so that the circular wrap cannot mix terms.

#include <bit>
#include <numbers>

#include "runtime/kernels/signal/signal.h"

namespace onnxkit::runtime::signal {

FourierPlan::FourierPlan(size_t n) : n_(n), fft_size_(std::has_single_bit(n) ? n : std::bit_ceil(2 * n - 1)) {
  const double pi = std::numbers::pi;
  twiddles_.resize(fft_size_ / 2);
  for (size_t k = 0; k < twiddles_.size(); ++k)
    twiddles_[k] = std::polar(1.0, -2 * pi * static_cast<double>(k) / static_cast<double>(fft_size_));
  if (fft_size_ == n_) return;

  chirp_.resize(n_);
  for (size_t k = 0; k < n_; ++k) {
    // k^2 mod 2n keeps the angle small: exp(-pi i k^2 / n) has period 2n in k^2.
    const uint64_t phase = (static_cast<uint64_t>(k) * k) % (2 * static_cast<uint64_t>(n_));
    chirp_[k] = std::polar(1.0, -pi * static_cast<double>(phase) / static_cast<double>(n_));
  }
  filter_spectrum_.assign(fft_size_, Complex(0));
  filter_spectrum_[0] = std::conj(chirp_[0]);
  for (size_t k = 1; k < n_; ++k) filter_spectrum_[k] = filter_spectrum_[fft_size_ - k] = std::conj(chirp_[k]);
  fft_pow2(filter_spectrum_);
  work_.resize(fft_size_);
}

void FourierPlan::transform(std::vector<Complex>& line, bool inverse) {
  // The inverse transform is the forward one conjugated on both sides.
  if (inverse)
    for (Complex& v : line) v = std::conj(v);
  if (fft_size_ == n_) fft_pow2(line);
  else bluestein(line);
  if (inverse)
    for (Complex& v : line) v = std::conj(v);
}

void FourierPlan::fft_pow2(std::vector<Complex>& data) const {
  const size_t m = data.size();
  // Bit-reversal permutation, then butterflies of doubling span.
  for (size_t i = 1, j = 0; i < m; ++i) {
    size_t bit = m >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(data[i], data[j]);
  }
  for (size_t span = 2; span <= m; span <<= 1) {
    const size_t half = span / 2, twiddle_step = m / span;
    for (size_t start = 0; start < m; start += span)
      for (size_t k = 0; k < half; ++k) {
        const Complex even = data[start + k];
        const Complex odd = data[start + k + half] * twiddles_[k * twiddle_step];
        data[start + k] = even + odd;
        data[start + k + half] = even - odd;
      }
  }
}

void FourierPlan::bluestein(std::vector<Complex>& line) {
  std::fill(work_.begin(), work_.end(), Complex(0));
  for (size_t k = 0; k < n_; ++k) work_[k] = line[k] * chirp_[k];
  fft_pow2(work_);
  // Multiply the spectra, then come back with the conjugation trick; the
  // 1/m of that inverse FFT is folded into the final scaling.
  for (size_t k = 0; k < fft_size_; ++k) work_[k] = std::conj(work_[k] * filter_spectrum_[k]);
  fft_pow2(work_);
  const double scale = 1.0 / static_cast<double>(fft_size_);
  for (size_t k = 0; k < n_; ++k) line[k] = std::conj(work_[k]) * scale * chirp_[k];
}

}  // namespace onnxkit::runtime::signal
