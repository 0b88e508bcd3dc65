#include "runtime/kernels/elementwise/fast_math.h"

// GCC builds these twice, for x86-64-v3 (AVX2, FMA) and for the baseline,
// and the loader picks one by the CPU. Compiled with -fno-trapping-math
// (CMakeLists.txt) so that the selects vectorize.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ONNXKIT_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define ONNXKIT_VECTOR_CLONES
#endif

namespace onnxkit::runtime::elementwise {

ONNXKIT_VECTOR_CLONES void erf_floats(const float* __restrict x, float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fast_erf(x[i]);
}

ONNXKIT_VECTOR_CLONES void gelu_floats(const float* x, const float* bias, float* y, int64_t n) {
  constexpr float kInvSqrt2 = 0.707106781186547524f;
  if (bias == nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + fast_erf(x[i] * kInvSqrt2));
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const float v = x[i] + bias[i];
      y[i] = 0.5f * v * (1.0f + fast_erf(v * kInvSqrt2));
    }
  }
}

ONNXKIT_VECTOR_CLONES void layer_norm_floats(const float* x, const float* add, const float* scale, const float* bias,
                                             float* y, int64_t n, float epsilon) {
  constexpr int kLanes = 8;
  auto value = [&](int64_t i) { return add != nullptr ? x[i] + add[i] : x[i]; };
  const int64_t whole = n / kLanes * kLanes;
  float lane_sum[kLanes] = {};
  for (int64_t i = 0; i < whole; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lane_sum[j] += value(i + j);
  float sum = 0;
  for (int j = 0; j < kLanes; ++j) sum += lane_sum[j];
  for (int64_t i = whole; i < n; ++i) sum += value(i);
  const float mean = sum / static_cast<float>(n);
  // The variance from the centred values: no cancellation for large means.
  float lane_sq[kLanes] = {};
  for (int64_t i = 0; i < whole; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      const float d = value(i + j) - mean;
      lane_sq[j] += d * d;
    }
  float sq = 0;
  for (int j = 0; j < kLanes; ++j) sq += lane_sq[j];
  for (int64_t i = whole; i < n; ++i) sq += (value(i) - mean) * (value(i) - mean);
  const float inv = 1.0f / std::sqrt(sq / static_cast<float>(n) + epsilon);
  for (int64_t i = 0; i < n; ++i) {
    const float v = (value(i) - mean) * inv * scale[i];
    y[i] = bias != nullptr ? v + bias[i] : v;
  }
}

ONNXKIT_VECTOR_CLONES void softmax_floats(const float* x, float* y, int64_t n) {
  constexpr int kLanes = 8;
  const int64_t whole = n / kLanes * kLanes;
  float lane_max[kLanes];
  for (int j = 0; j < kLanes; ++j) lane_max[j] = -INFINITY;
  for (int64_t i = 0; i < whole; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lane_max[j] = x[i + j] > lane_max[j] ? x[i + j] : lane_max[j];
  float max = -INFINITY;
  for (int j = 0; j < kLanes; ++j) max = lane_max[j] > max ? lane_max[j] : max;
  for (int64_t i = whole; i < n; ++i) max = x[i] > max ? x[i] : max;

  float lane_sum[kLanes] = {};
  for (int64_t i = 0; i < whole; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      const float e = fast_exp(x[i + j] - max);
      y[i + j] = e;
      lane_sum[j] += e;
    }
  float sum = 0;
  for (int j = 0; j < kLanes; ++j) sum += lane_sum[j];
  for (int64_t i = whole; i < n; ++i) {
    y[i] = fast_exp(x[i] - max);
    sum += y[i];
  }
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) y[i] *= inv;
}

}  // namespace onnxkit::runtime::elementwise
