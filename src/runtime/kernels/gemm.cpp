// The blocked gemm behind gemm.h. C is cut into tiles that threads take
// independently; within a tile, slices of A and B that fit the L2 cache are
// packed into contiguous panels, from which a register tile of kMr x kNr
// outputs is accumulated. On x86-64 the hot functions are also compiled for
// AVX2/FMA and picked at load time, since the library itself targets the
// baseline instruction set.

#include "runtime/kernels/gemm.h"

#include <oneapi/dnnl/dnnl.h>

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/kernels/cpu_clones.h"
#include "runtime/kernels/fast_math.h"
#include "runtime/parallel.h"

#define ONNXKIT_MATH_INLINE inline __attribute__((always_inline))

namespace onnxkit::runtime {
namespace {

// The register tile: kMr rows by two vector registers of columns, 12
// accumulators of the 16 AVX registers, leaving room for the operands.
constexpr int kMr = 6;
template <class T> constexpr int kNr = 64 / static_cast<int>(sizeof(T));
// A kc-deep slice of B panels (kc x nc) stays in L2 while the A panels
// stream through it; one A panel (kMr x kc) and one B panel (kc x kNr) sit in L1.
constexpr int64_t kKc = 256;
constexpr int64_t kMc = 72;
template <class T> constexpr int64_t kNc = (256 * 1024 / static_cast<int64_t>(sizeof(T))) / kKc;

template <class T> struct Problem {
  bool trans_a, trans_b;
  int64_t m, n, k;
  T alpha;
  const T* a;
  int64_t lda;
  const T* b;
  int64_t ldb;
  T beta;
  T* c;
  int64_t ldc;

  T at_a(int64_t i, int64_t p) const { return trans_a ? a[p * lda + i] : a[i * lda + p]; }
  T at_b(int64_t p, int64_t j) const { return trans_b ? b[j * ldb + p] : b[p * ldb + j]; }
};

// Rows i0..i0+mc, depth p0..p0+kc of op(A) as panels of kMr rows: element
// (r, q) of a panel at q * kMr + r. Rows past mc are left unset: the kernel
// for a short panel never reads them.
template <class T> ONNXKIT_MATH_INLINE void pack_a(const Problem<T>& pr, int64_t i0, int64_t mc, int64_t p0, int64_t kc, T* dst) {
  for (int64_t ir = 0; ir < mc; ir += kMr) {
    const int64_t mr = std::min<int64_t>(kMr, mc - ir);
    T* panel = dst + ir * kc;
    if (!pr.trans_a) {
      for (int64_t r = 0; r < mr; ++r) {
        const T* src = pr.a + (i0 + ir + r) * pr.lda + p0;
        for (int64_t q = 0; q < kc; ++q) panel[q * kMr + r] = src[q];
      }
    } else {
      for (int64_t q = 0; q < kc; ++q) {
        const T* src = pr.a + (p0 + q) * pr.lda + i0 + ir;
        for (int64_t r = 0; r < mr; ++r) panel[q * kMr + r] = src[r];
      }
    }
  }
}

// Depth p0..p0+kc, columns j0..j0+nc of op(B) as panels of kNr columns,
// zero-padded: the kernel always computes full panels.
template <class T> ONNXKIT_MATH_INLINE void pack_b(const Problem<T>& pr, int64_t p0, int64_t kc, int64_t j0, int64_t nc, T* dst) {
  constexpr int nr_full = kNr<T>;
  for (int64_t jr = 0; jr < nc; jr += nr_full) {
    const int64_t nr = std::min<int64_t>(nr_full, nc - jr);
    T* panel = dst + jr * kc;
    if (!pr.trans_b) {
      for (int64_t q = 0; q < kc; ++q) {
        const T* src = pr.b + (p0 + q) * pr.ldb + j0 + jr;
        T* row = panel + q * nr_full;
        for (int64_t j = 0; j < nr; ++j) row[j] = src[j];
        for (int64_t j = nr; j < nr_full; ++j) row[j] = T(0);
      }
    } else {
      for (int64_t j = 0; j < nr; ++j) {
        const T* src = pr.b + (j0 + jr + j) * pr.ldb + p0;
        for (int64_t q = 0; q < kc; ++q) panel[q * nr_full + j] = src[q];
      }
      for (int64_t q = 0; q < kc && nr < nr_full; ++q)
        for (int64_t j = nr; j < nr_full; ++j) panel[q * nr_full + j] = T(0);
    }
  }
}

// R rows (R <= kMr) by kNr columns of C from one A panel and one B panel;
// only the first nr columns are stored. The accumulators are spelled as
// vectors (a GCC/Clang extension, lowered to whatever registers the target
// has): left to itself the vectorizer spills this loop nest to the stack.
template <class T> struct VecOf;
template <> struct VecOf<float> { typedef float type __attribute__((vector_size(32))); };
template <> struct VecOf<double> { typedef double type __attribute__((vector_size(32))); };
template <class T> using Vec = typename VecOf<T>::type;

template <class T, int R>
ONNXKIT_MATH_INLINE void micro_kernel(int64_t kc, const T* ap, const T* bp, T alpha, T beta, T* c, int64_t ldc, int64_t nr) {
  constexpr int N = kNr<T>;
  constexpr int W = static_cast<int>(32 / sizeof(T));
  static_assert(N == 2 * W);
  Vec<T> acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = Vec<T>{};
  for (int64_t q = 0; q < kc; ++q) {
    Vec<T> b0, b1;
    std::memcpy(&b0, bp + q * N, sizeof b0);
    std::memcpy(&b1, bp + q * N + W, sizeof b1);
    const T* aq = ap + q * kMr;
    for (int r = 0; r < R; ++r) {
      const T av = aq[r];
      acc[r][0] += b0 * av;
      acc[r][1] += b1 * av;
    }
  }
  for (int r = 0; r < R; ++r) {
    T row[N];
    std::memcpy(row, &acc[r][0], sizeof acc[r][0]);
    std::memcpy(row + W, &acc[r][1], sizeof acc[r][1]);
    T* cr = c + r * ldc;
    if (beta == T(0)) {
      for (int64_t j = 0; j < nr; ++j) cr[j] = alpha * row[j];
    } else {
      for (int64_t j = 0; j < nr; ++j) cr[j] = alpha * row[j] + beta * cr[j];
    }
  }
}

// One mc x nc tile of C, through the whole depth.
template <class T>
ONNXKIT_MATH_INLINE void compute_tile(const Problem<T>& pr, int64_t i0, int64_t mc, int64_t j0, int64_t nc, T* abuf, T* bbuf) {
  constexpr int nr_full = kNr<T>;
  for (int64_t p0 = 0; p0 < pr.k; p0 += kKc) {
    const int64_t kc = std::min(kKc, pr.k - p0);
    pack_a(pr, i0, mc, p0, kc, abuf);
    pack_b(pr, p0, kc, j0, nc, bbuf);
    // Later depth slices add to what the first one stored.
    const T beta = p0 == 0 ? pr.beta : T(1);
    for (int64_t jr = 0; jr < nc; jr += nr_full) {
      const int64_t nr = std::min<int64_t>(nr_full, nc - jr);
      const T* bp = bbuf + jr * kc;
      for (int64_t ir = 0; ir < mc; ir += kMr) {
        const T* ap = abuf + ir * kc;
        T* c = pr.c + (i0 + ir) * pr.ldc + j0 + jr;
        switch (std::min<int64_t>(kMr, mc - ir)) {
          case 6: micro_kernel<T, 6>(kc, ap, bp, pr.alpha, beta, c, pr.ldc, nr); break;
          case 5: micro_kernel<T, 5>(kc, ap, bp, pr.alpha, beta, c, pr.ldc, nr); break;
          case 4: micro_kernel<T, 4>(kc, ap, bp, pr.alpha, beta, c, pr.ldc, nr); break;
          case 3: micro_kernel<T, 3>(kc, ap, bp, pr.alpha, beta, c, pr.ldc, nr); break;
          case 2: micro_kernel<T, 2>(kc, ap, bp, pr.alpha, beta, c, pr.ldc, nr); break;
          default: micro_kernel<T, 1>(kc, ap, bp, pr.alpha, beta, c, pr.ldc, nr); break;
        }
      }
    }
  }
}

ONNXKIT_AVX2_CLONES void tile_float(const Problem<float>& pr, int64_t i0, int64_t mc, int64_t j0, int64_t nc, float* abuf,
                                    float* bbuf) {
  compute_tile(pr, i0, mc, j0, nc, abuf, bbuf);
}

ONNXKIT_AVX2_CLONES void tile_double(const Problem<double>& pr, int64_t i0, int64_t mc, int64_t j0, int64_t nc, double* abuf,
                                     double* bbuf) {
  compute_tile(pr, i0, mc, j0, nc, abuf, bbuf);
}

void run_tile(const Problem<float>& pr, int64_t i0, int64_t mc, int64_t j0, int64_t nc, float* abuf, float* bbuf) {
  tile_float(pr, i0, mc, j0, nc, abuf, bbuf);
}
void run_tile(const Problem<double>& pr, int64_t i0, int64_t mc, int64_t j0, int64_t nc, double* abuf, double* bbuf) {
  tile_double(pr, i0, mc, j0, nc, abuf, bbuf);
}

// Sum of x[p] * y[p], in sixteen partial sums so the loop vectorizes
// without reassociating one running sum.
template <class T> ONNXKIT_MATH_INLINE T dot(const T* x, const T* y, int64_t k) {
  constexpr int L = 16;
  T part[L] = {};
  int64_t p = 0;
  for (; p + L <= k; p += L)
    for (int l = 0; l < L; ++l) part[l] += x[p + l] * y[p + l];
  T sum = 0;
  for (; p < k; ++p) sum += x[p] * y[p];
  for (int l = 0; l < L; ++l) sum += part[l];
  return sum;
}

// out[i * out_stride] = alpha * (row i of `rows`) . v + beta * out[...], for
// i in first..last: rows read one by one (rows are contiguous).
template <class T>
ONNXKIT_MATH_INLINE void rows_dot_vector(const T* rows, int64_t ld, const T* v, int64_t k, int64_t first, int64_t last, T alpha,
                                         T beta, T* out, int64_t out_stride) {
  for (int64_t i = first; i < last; ++i) {
    T& o = out[i * out_stride];
    const T s = alpha * dot(rows + i * ld, v, k);
    o = beta == T(0) ? s : s + beta * o;
  }
}

// The same where `cols` holds the vector's k coefficients' columns as rows
// (element (p, i) at cols[p * ld + i]): streamed row by row into `acc`.
template <class T>
ONNXKIT_MATH_INLINE void cols_times_vector(const T* cols, int64_t ld, const T* v, int64_t k, int64_t first, int64_t last, T alpha,
                                           T beta, T* acc, T* out, int64_t out_stride) {
  std::fill(acc, acc + (last - first), T(0));
  for (int64_t p = 0; p < k; ++p) {
    const T* row = cols + p * ld + first;
    const T vp = v[p];
    for (int64_t i = 0; i < last - first; ++i) acc[i] += row[i] * vp;
  }
  for (int64_t i = first; i < last; ++i) {
    T& o = out[i * out_stride];
    const T s = alpha * acc[i - first];
    o = beta == T(0) ? s : s + beta * o;
  }
}

// Products with one row or one column: the register tile would be mostly
// padding, so these stream A or B once instead.
template <class T> ONNXKIT_MATH_INLINE void vector_product(const Problem<T>& pr, int64_t first, int64_t last, T* scratch) {
  // scratch holds k contiguous elements of the vector operand, then the
  // accumulators of outputs first..last when needed.
  T* v = scratch;
  if (pr.n == 1) {
    for (int64_t p = 0; p < pr.k; ++p) v[p] = pr.at_b(p, 0);
    if (!pr.trans_a) rows_dot_vector(pr.a, pr.lda, v, pr.k, first, last, pr.alpha, pr.beta, pr.c, pr.ldc);
    else cols_times_vector(pr.a, pr.lda, v, pr.k, first, last, pr.alpha, pr.beta, scratch + pr.k, pr.c, pr.ldc);
    return;
  }
  // m == 1: columns first..last of the single row.
  for (int64_t p = 0; p < pr.k; ++p) v[p] = pr.at_a(0, p);
  if (pr.trans_b) rows_dot_vector(pr.b, pr.ldb, v, pr.k, first, last, pr.alpha, pr.beta, pr.c, int64_t{1});
  else cols_times_vector(pr.b, pr.ldb, v, pr.k, first, last, pr.alpha, pr.beta, scratch + pr.k, pr.c, int64_t{1});
}

ONNXKIT_AVX2_CLONES void vector_float(const Problem<float>& pr, int64_t first, int64_t last, float* scratch) {
  vector_product(pr, first, last, scratch);
}
ONNXKIT_AVX2_CLONES void vector_double(const Problem<double>& pr, int64_t first, int64_t last, double* scratch) {
  vector_product(pr, first, last, scratch);
}
void run_vector(const Problem<float>& pr, int64_t first, int64_t last, float* scratch) { vector_float(pr, first, last, scratch); }
void run_vector(const Problem<double>& pr, int64_t first, int64_t last, double* scratch) {
  vector_double(pr, first, last, scratch);
}

int usable_threads(double work) { return work < kParallelMacs ? 1 : available_threads(); }

template <class T> void gemm_blocked(const Problem<T>& pr) {
  if (pr.m <= 0 || pr.n <= 0) return;
  if (pr.k <= 0 || pr.alpha == T(0)) {
    // Nothing to multiply: C = beta * C, without reading C when beta is 0.
    for (int64_t i = 0; i < pr.m; ++i) {
      T* row = pr.c + i * pr.ldc;
      for (int64_t j = 0; j < pr.n; ++j) row[j] = pr.beta == T(0) ? T(0) : pr.beta * row[j];
    }
    return;
  }
  const double work = static_cast<double>(pr.m) * static_cast<double>(pr.n) * static_cast<double>(pr.k);
  const int threads = usable_threads(work);

  if (pr.m == 1 || pr.n == 1) {
    const int64_t outputs = pr.m == 1 ? pr.n : pr.m;
    const int64_t chunks = std::min<int64_t>(threads, outputs);
    const int64_t per = (outputs + chunks - 1) / chunks;
    std::vector<T> scratch(static_cast<size_t>(chunks * (pr.k + per)));
    for_each_chunk(chunks, [&](int64_t t) {
      const int64_t first = t * per, last = std::min(outputs, first + per);
      if (first < last) run_vector(pr, first, last, scratch.data() + t * (pr.k + per));
    });
    return;
  }

  // Smaller tiles when the default ones would leave threads idle.
  int64_t mc = kMc, nc = kNc<T>;
  auto tiles = [&] { return ((pr.m + mc - 1) / mc) * ((pr.n + nc - 1) / nc); };
  while (threads > 1 && tiles() < 4 * threads && (nc > kNr<T> || mc > kMr)) {
    if (nc > kNr<T> && (nc >= 2 * mc || mc <= kMr)) {
      nc = std::max<int64_t>(kNr<T>, (nc / 2 + kNr<T> - 1) / kNr<T> * kNr<T>);
    } else {
      mc = std::max<int64_t>(kMr, (mc / 2 + kMr - 1) / kMr * kMr);
    }
  }
  const int64_t tiles_m = (pr.m + mc - 1) / mc, tiles_n = (pr.n + nc - 1) / nc;
  const int64_t count = tiles_m * tiles_n;
  const int workers = static_cast<int>(std::min<int64_t>(threads, count));
  const int64_t kc = std::min(kKc, pr.k);
  const int64_t a_size = (mc + kMr) * kc, b_size = (nc + kNr<T>)*kc;
  std::vector<T> buffers(static_cast<size_t>(workers * (a_size + b_size)));
#pragma omp parallel num_threads(workers) if (workers > 1)
  {
    const int me = workers > 1 ? omp_get_thread_num() : 0;
    T* abuf = buffers.data() + me * (a_size + b_size);
    T* bbuf = abuf + a_size;
#pragma omp for schedule(dynamic)
    for (int64_t t = 0; t < count; ++t) {
      const int64_t i0 = (t / tiles_n) * mc, j0 = (t % tiles_n) * nc;
      run_tile(pr, i0, std::min(mc, pr.m - i0), j0, std::min(nc, pr.n - j0), abuf, bbuf);
    }
  }
}

// Integer dot products over int16 operands with int32 sums: the widening
// multiply-add the vector units have for exactly this.
ONNXKIT_AVX2_CLONES void integer_rows(int64_t first, int64_t last, int64_t n, int64_t k, const int16_t* a, const int16_t* bt,
                                      int32_t* c, int64_t ldc) {
  for (int64_t i = first; i < last; ++i) {
    const int16_t* row = a + i * k;
    for (int64_t j = 0; j < n; ++j) {
      const int16_t* col = bt + j * k;
      int32_t sum = 0;
      for (int64_t p = 0; p < k; ++p) sum += static_cast<int32_t>(row[p]) * static_cast<int32_t>(col[p]);
      c[i * ldc + j] = sum;
    }
  }
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
          int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  const int threads = usable_threads(static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k));
  if (m == 1 && !trans_a && k > 0 && alpha != 0.0f) {
    // One row: the threads split the columns, in whole cache lines.
    constexpr int64_t kLine = 16;
    const int64_t lines = (n + kLine - 1) / kLine;
    const int64_t chunks = std::min<int64_t>(threads, lines);
    for_each_chunk(chunks, [&](int64_t t) {
      const int64_t first = std::min(n, lines * t / chunks * kLine), last = std::min(n, lines * (t + 1) / chunks * kLine);
      if (first < last)
        row_product_floats(trans_b, a, b + (trans_b ? first * ldb : first), ldb, k, last - first, alpha, beta, c + first);
    });
    return;
  }
  // oneDNN's JIT kernels; its sgemm is row-major, like ours. It shares even
  // the smallest product among all the threads it may use (an LSTM step's
  // 1 x 512 x 128 took twice as long on two threads as on one).
  const ThreadLimit limit(threads);
  if (dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) == dnnl_success) return;
  gemm_portable(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  gemm_portable(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm_portable(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                   const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  gemm_blocked(Problem<float>{trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc});
}

void gemm_portable(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
                   const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  gemm_blocked(Problem<double>{trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc});
}

template <class A, class B>
void gemm_integer(int64_t m, int64_t n, int64_t k, const A* a, int64_t lda, const int32_t* a_zero, const B* b, int64_t ldb,
                  const int32_t* b_zero, int32_t* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  // Both 8-bit operands minus an 8-bit zero point fit int16; B is stored by
  // column so every output is a contiguous dot product.
  std::vector<int16_t> as(static_cast<size_t>(m * k)), bt(static_cast<size_t>(n * k));
  for (int64_t i = 0; i < m; ++i) {
    const int32_t z = a_zero ? a_zero[i] : 0;
    for (int64_t p = 0; p < k; ++p) as[i * k + p] = static_cast<int16_t>(static_cast<int32_t>(a[i * lda + p]) - z);
  }
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j)
      bt[j * k + p] = static_cast<int16_t>(static_cast<int32_t>(b[p * ldb + j]) - (b_zero ? b_zero[j] : 0));
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const int64_t chunks = std::min<int64_t>(usable_threads(work), m);
  const int64_t per = (m + chunks - 1) / chunks;
  for_each_chunk(chunks,
                 [&](int64_t t) { integer_rows(t * per, std::min(m, (t + 1) * per), n, k, as.data(), bt.data(), c, ldc); });
}

template void gemm_integer<uint8_t, uint8_t>(int64_t, int64_t, int64_t, const uint8_t*, int64_t, const int32_t*, const uint8_t*,
                                             int64_t, const int32_t*, int32_t*, int64_t);
template void gemm_integer<uint8_t, int8_t>(int64_t, int64_t, int64_t, const uint8_t*, int64_t, const int32_t*, const int8_t*,
                                            int64_t, const int32_t*, int32_t*, int64_t);
template void gemm_integer<int8_t, uint8_t>(int64_t, int64_t, int64_t, const int8_t*, int64_t, const int32_t*, const uint8_t*,
                                            int64_t, const int32_t*, int32_t*, int64_t);
template void gemm_integer<int8_t, int8_t>(int64_t, int64_t, int64_t, const int8_t*, int64_t, const int32_t*, const int8_t*,
                                           int64_t, const int32_t*, int32_t*, int64_t);

}  // namespace onnxkit::runtime
