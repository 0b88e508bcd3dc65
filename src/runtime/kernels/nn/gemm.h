#pragma once
// A small blocked matrix multiply for the reference convolutions:
//   C[m x n] = A[m x k] * B[k x n]        (accumulate: C += A * B)
// all row-major with leading dimensions lda, ldb, ldc. It runs on the calling
// thread; callers split their work across threads (each call uses its own
// thread-local packing buffers, so concurrent calls are safe).

#include <cstdint>

namespace onnxkit::runtime::nn {

template <class T>
void gemm(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc,
          bool accumulate);

extern template void gemm<float>(int64_t, int64_t, int64_t, const float*, int64_t, const float*, int64_t, float*,
                                 int64_t, bool);
extern template void gemm<double>(int64_t, int64_t, int64_t, const double*, int64_t, const double*, int64_t, double*,
                                  int64_t, bool);

}  // namespace onnxkit::runtime::nn
