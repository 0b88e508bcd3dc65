// Blocked matrix multiply: the k dimension is cut into slices that keep a
// packed panel of B in cache, A is packed in strips of kMr rows and B in
// strips of kNr columns, and a fixed-size kMr x kNr block of C is
// accumulated in registers (the compiler vectorizes the fixed loops).

#include "runtime/kernels/nn/gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace onnxkit::runtime::nn {
namespace {

constexpr int64_t kMr = 4;    // rows of C per micro block
constexpr int64_t kNr = 8;    // columns of C per micro block
constexpr int64_t kKc = 256;  // depth of one slice of k
constexpr int64_t kMc = 64;   // rows of A packed at once
constexpr int64_t kNc = 1024;  // columns of B packed at once

// A[0:mc, 0:kc] into strips of kMr rows, each stored k-major; rows past mc are zero.
template <class T>
void pack_a(const T* a, int64_t lda, int64_t mc, int64_t kc, T* out) {
  for (int64_t i0 = 0; i0 < mc; i0 += kMr) {
    const int64_t rows = std::min(kMr, mc - i0);
    for (int64_t p = 0; p < kc; ++p) {
      for (int64_t r = 0; r < rows; ++r) out[p * kMr + r] = a[(i0 + r) * lda + p];
      for (int64_t r = rows; r < kMr; ++r) out[p * kMr + r] = T(0);
    }
    out += kc * kMr;
  }
}

// B[0:kc, 0:nc] into strips of kNr columns, each stored k-major; columns past nc are zero.
template <class T>
void pack_b(const T* b, int64_t ldb, int64_t kc, int64_t nc, T* out) {
  for (int64_t j0 = 0; j0 < nc; j0 += kNr) {
    const int64_t cols = std::min(kNr, nc - j0);
    for (int64_t p = 0; p < kc; ++p) {
      const T* row = b + p * ldb + j0;
      if (cols == kNr) {
        for (int64_t j = 0; j < kNr; ++j) out[p * kNr + j] = row[j];
      } else {
        for (int64_t j = 0; j < cols; ++j) out[p * kNr + j] = row[j];
        for (int64_t j = cols; j < kNr; ++j) out[p * kNr + j] = T(0);
      }
    }
    out += kc * kNr;
  }
}

// C[0:rows, 0:cols] += Ap * Bp over a slice of depth kc.
template <class T>
void micro_kernel(int64_t kc, const T* __restrict ap, const T* __restrict bp, T* c, int64_t ldc, int64_t rows,
                  int64_t cols) {
  T acc[kMr][kNr] = {};
  for (int64_t p = 0; p < kc; ++p) {
    const T* a = ap + p * kMr;
    const T* b = bp + p * kNr;
    for (int64_t i = 0; i < kMr; ++i)
      for (int64_t j = 0; j < kNr; ++j) acc[i][j] += a[i] * b[j];
  }
  if (rows == kMr && cols == kNr) {
    for (int64_t i = 0; i < kMr; ++i)
      for (int64_t j = 0; j < kNr; ++j) c[i * ldc + j] += acc[i][j];
  } else {
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) c[i * ldc + j] += acc[i][j];
  }
}

}  // namespace

template <class T>
void gemm(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc,
          bool accumulate) {
  if (m <= 0 || n <= 0) return;
  if (!accumulate)
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
  if (k <= 0) return;

  thread_local std::vector<T> a_pack, b_pack;
  const int64_t kc_max = std::min(k, kKc);
  const int64_t mc_max = std::min(m, kMc);
  const int64_t nc_max = std::min(n, kNc);
  a_pack.resize(static_cast<size_t>(((mc_max + kMr - 1) / kMr) * kMr * kc_max));
  b_pack.resize(static_cast<size_t>(((nc_max + kNr - 1) / kNr) * kNr * kc_max));

  for (int64_t jc = 0; jc < n; jc += kNc) {
    const int64_t nc = std::min(kNc, n - jc);
    for (int64_t pc = 0; pc < k; pc += kKc) {
      const int64_t kc = std::min(kKc, k - pc);
      pack_b(b + pc * ldb + jc, ldb, kc, nc, b_pack.data());
      for (int64_t ic = 0; ic < m; ic += kMc) {
        const int64_t mc = std::min(kMc, m - ic);
        pack_a(a + ic * lda + pc, lda, mc, kc, a_pack.data());
        for (int64_t jr = 0; jr < nc; jr += kNr) {
          const T* bp = b_pack.data() + (jr / kNr) * kc * kNr;
          for (int64_t ir = 0; ir < mc; ir += kMr) {
            const T* ap = a_pack.data() + (ir / kMr) * kc * kMr;
            micro_kernel(kc, ap, bp, c + (ic + ir) * ldc + jc + jr, ldc, std::min(kMr, mc - ir),
                         std::min(kNr, nc - jr));
          }
        }
      }
    }
  }
}

template void gemm<float>(int64_t, int64_t, int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t,
                          bool);
template void gemm<double>(int64_t, int64_t, int64_t, const double*, int64_t, const double*, int64_t, double*, int64_t,
                           bool);

}  // namespace onnxkit::runtime::nn
