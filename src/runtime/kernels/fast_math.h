#pragma once
// exp, erf and tanh for float, written so that the compiler vectorizes loops over
// them (no tables, no branches: every lane computes every form and selects;
// the file using them needs -fno-trapping-math for GCC to if-convert the
// selects), within a few float ulps of the C library. Softmax and GELU spend
// most of their time here otherwise: on the benchmark machine's AVX2, GELU
// with bias takes 0.7 ns an element (the C library's erff alone 13 ns). The
// constants are fitted by scripts/fit_fast_math.py, which prints them and
// their error.

#include <cmath>
#include <cstdint>
#include <cstring>

namespace onnxkit::runtime {

namespace fast_math_constants {
// scripts/fit_fast_math.py; largest relative errors: exp 2.0e-08, erf 5.9e-08, tanh 8.1e-09
inline constexpr float kExp[7] = {1.000000000e+00f, 1.000000038e+00f, 5.000000047e-01f, 1.666641551e-01f,
                                  4.166635290e-02f, 8.375126398e-03f, 1.394110847e-03f};
inline constexpr float kErfNumerator[6] = {1.128379146e+00f, 1.904067215e-01f, 5.274875263e-02f,
                                           3.765626197e-03f, 2.848825915e-04f, 2.050080762e-06f};
inline constexpr float kErfDenominator[6] = {1.000000000e+00f, 5.020763044e-01f, 1.141092129e-01f,
                                             1.496923619e-02f, 1.162537082e-03f, 3.809164121e-05f};
inline constexpr float kErfLast = 3.92f;
inline constexpr float kTanh[6] = {9.999999960e-01f,  -3.333325986e-01f, 1.333111406e-01f,
                                   -5.372010766e-02f, 2.058819147e-02f,  -5.657135192e-03f};
inline constexpr float kTanhSmall = 0.625f;
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
  const float p = ((kExp[0] + kExp[1] * r) + (r * r) * (kExp[2] + kExp[3] * r)) +
                  (r * r) * (r * r) * ((kExp[4] + kExp[5] * r) + (r * r) * kExp[6]);
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  const int32_t scale_bits = (bits - 0x4b400000 + 127) << 23;  // 2^n
  float scale;
  std::memcpy(&scale, &scale_bits, sizeof scale);
  return underflows ? 0.0f : p * scale;
}

// erf(x) = x N(x^2) / D(x^2) up to 3.92, from where erf is 1 in float:
// exact in relative terms near 0, no exp, no branch.
inline float fast_erf(float x) {
  using namespace fast_math_constants;
  const float a = std::fabs(x);
  const float c = a < kErfLast ? a : kErfLast;
  const float u = c * c;
  float numerator = kErfNumerator[5], denominator = kErfDenominator[5];
  for (int i = 4; i >= 0; --i) {
    numerator = numerator * u + kErfNumerator[i];
    denominator = denominator * u + kErfDenominator[i];
  }
  const float quotient = c * numerator / denominator;
  const float y = quotient < 1.0f ? quotient : 1.0f;
  return x != x ? x : std::copysign(y, x);
}

// tanh(x): x T(x^2) below 0.625, where 1 - 2 / (e^2|x| + 1) would lose
// the digits of small x to cancellation, that form above; NaN goes through.
inline float fast_tanh(float x) {
  using namespace fast_math_constants;
  const float a = std::fabs(x);
  const float u = a * a;
  const float small =
      a * (((kTanh[0] + kTanh[1] * u) + (u * u) * (kTanh[2] + kTanh[3] * u)) + (u * u) * (u * u) * (kTanh[4] + kTanh[5] * u));
  // fast_exp saturates at e^88.7, so that large |x| gives exactly 1.
  const float large = 1.0f - 2.0f / (fast_exp(2.0f * a) + 1.0f);
  const float y = a < kTanhSmall ? small : large;
  return x != x ? x : std::copysign(y, x);
}

// Over arrays, built for AVX2 and FMA as well where the compiler can,
// picked at load time by the CPU (fast_math.cpp).

// y[i] = fast_erf(x[i]).
void erf_floats(const float* x, float* y, int64_t n);

// y[i] = 1 / (1 + e^-x[i]), from e^-|x| so that no exp overflows. y may be x.
void sigmoid_floats(const float* x, float* y, int64_t n);

// y[i] = fast_tanh(x[i]). y may be x.
void tanh_floats(const float* x, float* y, int64_t n);

// y[i] = clamp(alpha x[i] + beta, 0, 1), HardSigmoid, times x[i] when
// `times_x` (HardSwish: alpha 1/6, beta 1/2). NaN goes through. y may be x.
void hard_sigmoid_floats(const float* x, float* y, int64_t n, float alpha, float beta, bool times_x);

// y[i] = x[i] / (1 + e^(-alpha x[i])), Swish (SiLU when alpha is 1). y may be x.
void swish_floats(const float* x, float* y, int64_t n, float alpha);

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

// The steps of a softmax kept online over tiles (Attention): the largest of
// x (-inf when n is 0), and y = exp(x - shift) returning the sum of y (an
// x of -inf gives 0). y may be x.
float max_floats(const float* x, int64_t n);
float exp_sum_floats(const float* x, float* y, int64_t n, float shift);

// A product of one row with n rows of d floats, row j at rows + j * stride,
// which a gemm call costs more to set up than to do (Attention's decoding
// step): y[j] = x . row j, and y += sum_j w[j] row j.
void dot_rows_floats(const float* x, const float* rows, int64_t stride, int64_t n, int64_t d, float* y);
void add_weighted_rows_floats(const float* w, const float* rows, int64_t stride, int64_t n, int64_t d, float* y);

// y = alpha x op(B) + beta y (y only written when beta is 0) for one row x
// of k floats, op(B) k x n: B k x n row-major with its rows ldb apart, or
// n x k with trans_b. The one-row product of a decoding step's MatMul or a
// classifier's Gemm, which sgemm costs more to set up than to do: B is
// read once, four rows at a time into a block of sums kept in cache, or
// with trans_b row by row, each in four interleaved sums.
void row_product_floats(bool trans_b, const float* x, const float* b, int64_t ldb, int64_t k, int64_t n, float alpha, float beta,
                        float* y);

}  // namespace onnxkit::runtime
