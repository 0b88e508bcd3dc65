#pragma once
// Matrix multiplication for the whole runtime, behind one entry point so a
// faster engine can replace the loop nest without touching the kernels:
//
//   C = alpha * op(A) * op(B) + beta * C,   op(X) = X or X^T
//
// op(A) is m x k, op(B) is k x n, C is m x n; all row-major with leading
// dimensions lda, ldb, ldc (elements between rows as stored). When beta is 0,
// C is only written, never read, so it may be uninitialized.
//
// gemm() for float runs on oneDNN's sgemm (JIT kernels for the CPU at hand);
// gemm_portable() is our own cache-blocked loop nest, parallel (OpenMP) when
// large and vectorized by the compiler, the fallback and the double path;
// gemm_reference() is the plain triple loop every engine is checked against,
// and the path of the other element types.

#include <cstdint>
#include <type_traits>

namespace onnxkit::runtime {

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
          int64_t ldb, float beta, float* c, int64_t ldc);

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

void gemm_portable(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                   const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void gemm_portable(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
                   const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

namespace detail {
template <class T, bool = std::is_integral_v<T>> struct WrappingSum { using type = T; };
template <class T> struct WrappingSum<T, true> { using type = std::make_unsigned_t<T>; };
}  // namespace detail

// The definition of the product, one dot product per element, accumulated in
// Acc. Integer accumulation wraps (done in the unsigned type, so it is defined).
template <class T, class Acc = T>
void gemm_reference(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, Acc alpha, const T* a, int64_t lda, const T* b,
                    int64_t ldb, Acc beta, T* c, int64_t ldc) {
  using Sum = typename detail::WrappingSum<Acc>::type;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      Sum sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        const Acc x = static_cast<Acc>(trans_a ? a[p * lda + i] : a[i * lda + p]);
        const Acc y = static_cast<Acc>(trans_b ? b[j * ldb + p] : b[p * ldb + j]);
        sum = static_cast<Sum>(sum + static_cast<Sum>(x) * static_cast<Sum>(y));
      }
      T& out = c[i * ldc + j];
      const Sum prior =
          beta == Acc(0) ? Sum(0) : static_cast<Sum>(static_cast<Sum>(beta) * static_cast<Sum>(static_cast<Acc>(out)));
      out = static_cast<T>(static_cast<Acc>(static_cast<Sum>(static_cast<Sum>(alpha) * sum + prior)));
    }
  }
}

// Integer products with int32 accumulation, as the quantized operators define
// them: C[i][j] = sum_p (A[i][p] - a_zero[i]) * (B[p][j] - b_zero[j]).
// a_zero has m entries (one per row) and b_zero n (one per column); either may
// be null for zero. A is m x k (row-major, lda), B is k x n (ldb), C is m x n
// (ldc), never transposed. Parallel over rows when large.
template <class A, class B>
void gemm_integer(int64_t m, int64_t n, int64_t k, const A* a, int64_t lda, const int32_t* a_zero, const B* b, int64_t ldb,
                  const int32_t* b_zero, int32_t* c, int64_t ldc);

}  // namespace onnxkit::runtime
