// The frames of a block are transformed side by side, one per vector lane:
// the work arrays hold, for each of the N/2 complex points, kLanes values,
// and every butterfly is a few whole-vector operations. Consecutive frames
// are consecutive outputs of a row of Y, so the results are stored as
// vectors too. A real frame v of N samples is transformed as the N/2-point
// complex FFT Z of z[m] = v[2m] + i v[2m+1], then split:
//   X[k] = E[k] + exp(-2 pi i k / N) O[k],
//   E[k] = (Z[k] + conj(Z[N/2-k])) / 2,  O[k] = -i (Z[k] - conj(Z[N/2-k])) / 2
// (indices mod N/2), E and O being the DFTs of the even and odd samples.

#include "runtime/kernels/nn/fourier_conv.h"

#include <bit>
#include <cmath>
#include <limits>
#include <numbers>

#include "runtime/kernels/cpu_clones.h"
#include "runtime/parallel.h"

namespace onnxkit::runtime::nn {
namespace {

constexpr int64_t kLanes = 16;  // frames per block
constexpr int64_t kShortest = 8, kLongest = 8192;

struct Tables {
  int64_t half, bins;
  float imaginary_sign;
  const float* window;
  const int32_t* bit_reversed;
  const float *twiddle_re, *twiddle_im, *split_re, *split_im;
};

// Frames `first_start`, + stride, ... of x (`frames` <= kLanes of them, the
// rest of the block zeros) into y's columns 0 .. frames-1, rows `y_row` apart.
ONNXKIT_AVX2_CLONES void transform_block(const Tables& t, const float* x, int64_t in, int64_t first_start, int64_t stride,
                                         int64_t frames, const float* bias, float* y, int64_t y_row, float* __restrict re,
                                         float* __restrict im) {
  const int64_t half = t.half, length = 2 * half;
  for (int64_t j = 0; j < kLanes; ++j) {
    const int64_t start = first_start + j * stride;
    if (j >= frames) {
      for (int64_t m = 0; m < half; ++m) re[m * kLanes + j] = im[m * kLanes + j] = 0;
    } else if (start >= 0 && start + length <= in) {
      const float* s = x + start;
      for (int64_t m = 0; m < half; ++m) {
        const int64_t at = t.bit_reversed[m] * kLanes + j;
        re[at] = s[2 * m] * t.window[2 * m];
        im[at] = s[2 * m + 1] * t.window[2 * m + 1];
      }
    } else {  // the frame reaches into the pads
      auto sample = [&](int64_t i) { return i >= 0 && i < in ? x[i] : 0.0f; };
      for (int64_t m = 0; m < half; ++m) {
        const int64_t at = t.bit_reversed[m] * kLanes + j;
        re[at] = sample(start + 2 * m) * t.window[2 * m];
        im[at] = sample(start + 2 * m + 1) * t.window[2 * m + 1];
      }
    }
  }
  for (int64_t span = 1, step = half / 2; span < half; span *= 2, step /= 2)
    for (int64_t start = 0; start < half; start += 2 * span)
      for (int64_t q = 0; q < span; ++q) {
        const float wr = t.twiddle_re[q * step], wi = t.twiddle_im[q * step];
        float* __restrict ar = re + (start + q) * kLanes;
        float* __restrict ai = im + (start + q) * kLanes;
        float* __restrict br = re + (start + q + span) * kLanes;
        float* __restrict bi = im + (start + q + span) * kLanes;
        for (int64_t j = 0; j < kLanes; ++j) {
          const float pr = br[j] * wr - bi[j] * wi, pi = br[j] * wi + bi[j] * wr;
          br[j] = ar[j] - pr;
          bi[j] = ai[j] - pi;
          ar[j] += pr;
          ai[j] += pi;
        }
      }
  for (int64_t k = 0; k < t.bins; ++k) {
    const float* zr = re + (k % half) * kLanes;
    const float* zi = im + (k % half) * kLanes;
    const float* mr = re + ((half - k) % half) * kLanes;
    const float* mi = im + ((half - k) % half) * kLanes;
    const float c = t.split_re[k], d = t.split_im[k];
    float xr[kLanes], xi[kLanes];
    for (int64_t j = 0; j < kLanes; ++j) {
      const float er = 0.5f * (zr[j] + mr[j]), ei = 0.5f * (zi[j] - mi[j]);
      const float odd_r = 0.5f * (zi[j] + mi[j]), odd_i = 0.5f * (mr[j] - zr[j]);
      xr[j] = er + c * odd_r - d * odd_i;
      xi[j] = t.imaginary_sign * (ei + c * odd_i + d * odd_r);
    }
    const float real_bias = bias != nullptr ? bias[k] : 0.0f, imaginary_bias = bias != nullptr ? bias[t.bins + k] : 0.0f;
    float* real_row = y + k * y_row;
    float* imaginary_row = y + (t.bins + k) * y_row;
    if (frames == kLanes) {
      for (int64_t j = 0; j < kLanes; ++j) real_row[j] = xr[j] + real_bias;
      for (int64_t j = 0; j < kLanes; ++j) imaginary_row[j] = xi[j] + imaginary_bias;
    } else {
      for (int64_t j = 0; j < frames; ++j) real_row[j] = xr[j] + real_bias;
      for (int64_t j = 0; j < frames; ++j) imaginary_row[j] = xi[j] + imaginary_bias;
    }
  }
}

}  // namespace

std::optional<FourierConv> FourierConv::recognize(const Tensor& w) {
  if (w.dtype() != DataType::float32 || w.rank() != 3 || w.dim(1) != 1) return std::nullopt;
  const int64_t rows = w.dim(0), length = w.dim(2), half = length / 2;
  if (rows < 2 || rows % 2 != 0 || length < kShortest || length > kLongest ||
      !std::has_single_bit(static_cast<uint64_t>(length)) || rows / 2 > half + 1)
    return std::nullopt;
  const int64_t bins = rows / 2;
  const float* f = w.data<float>();
  double largest = 0;
  for (int64_t n = 0; n < length; ++n) largest = std::max(largest, std::abs(static_cast<double>(f[n])));
  if (!(largest > 0) || !std::isfinite(largest)) return std::nullopt;
  const double tolerance = 2 * std::numeric_limits<float>::epsilon() * largest;
  auto near = [&](float stored, double exact) {
    return std::abs(static_cast<double>(stored) - exact) <= tolerance;
  };  // false for NaN
  // At n = 0 every real row holds the window's first value and every
  // imaginary row zero: learned filters fail here, before the tables.
  for (int64_t k = 0; k < bins; ++k)
    if (!near(f[k * length], f[0]) || !near(f[(bins + k) * length], 0.0)) return std::nullopt;

  // cos and sin of 2 pi k n / N depend on k n mod N only.
  std::vector<double> cosine(static_cast<size_t>(length)), sine(static_cast<size_t>(length));
  for (int64_t j = 0; j < length; ++j) {
    const double angle = 2 * std::numbers::pi * static_cast<double>(j) / static_cast<double>(length);
    cosine[static_cast<size_t>(j)] = std::cos(angle);
    sine[static_cast<size_t>(j)] = std::sin(angle);
  }
  auto matches = [&](double sign) {  // rows K.. = -sign w sin
    for (int64_t k = 0; k < bins; ++k)
      for (int64_t n = 0; n < length; ++n) {
        const auto j = static_cast<size_t>((k * n) % length);
        const double window = f[n];
        if (!near(f[k * length + n], window * cosine[j]) || !near(f[(bins + k) * length + n], -sign * window * sine[j]))
          return false;
      }
    return true;
  };
  FourierConv conv;
  if (matches(1)) conv.imaginary_sign_ = 1;
  else if (matches(-1)) conv.imaginary_sign_ = -1;
  else return std::nullopt;

  conv.length_ = length;
  conv.bins_ = bins;
  conv.window_.assign(f, f + length);
  const int bits = std::countr_zero(static_cast<uint64_t>(half));
  conv.bit_reversed_.resize(static_cast<size_t>(half));
  for (int64_t m = 0; m < half; ++m) {
    uint64_t reversed = 0;
    for (int b = 0; b < bits; ++b) reversed |= ((static_cast<uint64_t>(m) >> b) & 1) << (bits - 1 - b);
    conv.bit_reversed_[static_cast<size_t>(m)] = static_cast<int32_t>(reversed);
  }
  // exp(-2 pi i j / (N/2)) = exp(-2 pi i 2j / N).
  for (int64_t j = 0; j < half / 2; ++j) {
    conv.twiddle_re_.push_back(static_cast<float>(cosine[static_cast<size_t>(2 * j)]));
    conv.twiddle_im_.push_back(static_cast<float>(-sine[static_cast<size_t>(2 * j)]));
  }
  for (int64_t k = 0; k <= half; ++k) {
    conv.split_re_.push_back(static_cast<float>(cosine[static_cast<size_t>(k)]));
    conv.split_im_.push_back(static_cast<float>(-sine[static_cast<size_t>(k)]));
  }
  return conv;
}

bool FourierConv::fits(const ConvParams& p) {
  return p.window.rank() == 1 && p.in_channels == 1 && p.group == 1 && p.window.dilations[0] == 1;
}

void FourierConv::run(const ConvParams& p, const float* x, const float* bias, float* y) const {
  const int64_t in = p.window.in[0], out = p.window.out[0], stride = p.window.strides[0], pad = p.window.pads_begin[0];
  const int64_t blocks = (out + kLanes - 1) / kLanes, items = p.batch * blocks, half = length_ / 2;
  const Tables tables{half,
                      bins_,
                      imaginary_sign_,
                      window_.data(),
                      bit_reversed_.data(),
                      twiddle_re_.data(),
                      twiddle_im_.data(),
                      split_re_.data(),
                      split_im_.data()};
  constexpr int64_t kFewestShared = 2;  // blocks per thread
  parallel_ranges(items, items >= 2 * kFewestShared, [&](int64_t from, int64_t to) {
    thread_local std::vector<float> work;
    work.resize(static_cast<size_t>(2 * half * kLanes));
    for (int64_t item = from; item < to; ++item) {
      const int64_t n = item / blocks, first = item % blocks * kLanes;
      transform_block(tables, x + n * in, in, first * stride - pad, stride, std::min(kLanes, out - first), bias,
                      y + n * 2 * bins_ * out + first, out, work.data(), work.data() + half * kLanes);
    }
  });
}

}  // namespace onnxkit::runtime::nn
