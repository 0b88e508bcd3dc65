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

ONNXKIT_VECTOR_CLONES void exp_floats(const float* __restrict x, float shift, float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fast_exp(x[i] - shift);
}

}  // namespace onnxkit::runtime::elementwise
