#pragma once
// exp and erf for float, written so that the compiler vectorizes loops over
// them (no tables, no branches: every lane computes every form and selects;
// the file using them needs -fno-trapping-math for GCC to if-convert the
// selects), within a few float ulps of the C library. Softmax and GELU spend
// most of their time here otherwise: erf_floats takes 1.4 ns an element on
// the benchmark machine's AVX2, the C library's erff 13 ns. The polynomials
// are fitted by scripts/fit_fast_math.py, which prints the constants below
// and their error.

#include <cmath>
#include <cstdint>
#include <cstring>

namespace onnxkit::runtime::elementwise {

namespace fast_math_constants {
// scripts/fit_fast_math.py; largest relative errors: exp 2.0e-08, erf below 1 5.5e-08, erf above 2.2e-08
inline constexpr float kExp[7] = {1.000000000e+00f, 1.000000038e+00f, 5.000000047e-01f, 1.666641551e-01f, 4.166635290e-02f, 8.375126398e-03f, 1.394110848e-03f};
inline constexpr float kErfSmall[6] = {1.128379126e+00f, -3.761234378e-01f, 1.128031665e-01f, -2.671505423e-02f, 4.921762028e-03f, -5.648059865e-04f};
inline constexpr float kErfSplit = 1.0f, kErfLast = 4.0f, kErfcxCentre = 2.50f;
inline constexpr float kErfcx[11] = {2.108063641e-01f, -7.434759370e-02f, 2.493805689e-02f, -7.999388865e-03f, 2.466508570e-03f, -7.389278863e-04f, 2.123135674e-04f, -5.362729453e-05f, 1.468955683e-05f, -6.377862275e-06f, 1.611890747e-06f};
}  // namespace fast_math_constants

// e^x for x <= 88.7 (callers pass x - max; larger x gives e^88.7). Below
// -87.3, where e^x is subnormal, the result is 0.
inline float fast_exp(float x) {
  using namespace fast_math_constants;
  const bool underflows = x < -87.3f;
  x = x > 88.7f ? 88.7f : x;
  x = underflows ? -87.3f : x;
  // n = round(x / ln 2) by the 1.5 * 2^23 trick; r = x - n ln 2 in two parts.
  constexpr float kRound = 12582912.0f;
  const float shifted = x * 1.44269504f + kRound;
  const float n = shifted - kRound;
  const float r = (x - n * 0.693145752f) - n * 1.42860677e-6f;
  const float p =
      ((kExp[0] + kExp[1] * r) + (r * r) * (kExp[2] + kExp[3] * r)) +
      (r * r) * (r * r) * ((kExp[4] + kExp[5] * r) + (r * r) * kExp[6]);
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  const int32_t scale_bits = (bits - 0x4b400000 + 127) << 23;  // 2^n
  float scale;
  std::memcpy(&scale, &scale_bits, sizeof scale);
  return underflows ? 0.0f : p * scale;
}

// erf(x): x * Q(x^2) below 1 (exact in relative terms near 0), and
// 1 - e^(-x^2) R(x) from 1 to 4, R being erfc(x) e^(x^2); erf is 1 in float
// from 4 on.
inline float fast_erf(float x) {
  using namespace fast_math_constants;
  const float a = std::fabs(x);
  const float u = a * a;
  const float u2 = u * u;
  const float q = (kErfSmall[0] + kErfSmall[1] * u) + u2 * ((kErfSmall[2] + kErfSmall[3] * u) +
                                                           u2 * (kErfSmall[4] + kErfSmall[5] * u));
  const float small = a * q;
  const float c = a < kErfLast ? a : kErfLast;
  const float t = c - kErfcxCentre;
  float r = kErfcx[10];
  for (int i = 9; i >= 0; --i) r = r * t + kErfcx[i];
  const float large = 1.0f - fast_exp(-(c * c)) * r;
  const float y = a < kErfSplit ? small : large;
  return x != x ? x : std::copysign(y, x);
}

// Over arrays, built for AVX2 and FMA as well where the compiler can,
// picked at load time by the CPU (fast_math.cpp).

// y[i] = fast_erf(x[i]).
void erf_floats(const float* x, float* y, int64_t n);

// y[i] = gelu(x[i] + bias[i]) (bias may be null), with the exact GELU
// x / 2 * (1 + erf(x / sqrt 2)). y may be x.
void gelu_floats(const float* x, const float* bias, float* y, int64_t n);

// One LayerNormalization row of v = x + add (add may be null):
// y = (v - mean) / sqrt(variance + epsilon) * scale + bias (bias may be
// null), the statistics in 8 float lanes. y may be x.
void layer_norm_floats(const float* x, const float* add, const float* scale, const float* bias, float* y, int64_t n,
                       float epsilon);

// One softmax row: y = exp(x - max x) / sum. The maximum and the sum are
// kept in 8 partial lanes so that they vectorize; y may be x.
void softmax_floats(const float* x, float* y, int64_t n);

}  // namespace onnxkit::runtime::elementwise
