// The packed recurrent product (recurrent_product.h).

#include "runtime/kernels/rnn/recurrent_product.h"

#include <algorithm>
#include <cstring>

#include "runtime/kernels/cpu_clones.h"
#include "runtime/parallel.h"

// The product is compiled for AVX2 with FMA, picked at run time, since the
// library itself targets the baseline instruction set; a plain loop serves
// CPUs without them. (AVX-512 adds nothing here: a step at batch 1 is bound
// by how fast R streams from L2.)
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define ONNXKIT_RNN_AVX2 __attribute__((target("arch=x86-64-v3")))
#define ONNXKIT_RNN_HAS_AVX2 1
#else
#define ONNXKIT_RNN_AVX2
#define ONNXKIT_RNN_HAS_AVX2 0
#endif
#define ONNXKIT_RNN_INLINE inline __attribute__((always_inline))

namespace onnxkit::runtime::rnn {
namespace {

// An AVX2 register of sums, spelled as a vector (a GCC/Clang extension) so
// that the sums stay in registers across the whole depth: left to the
// vectorizer, or spelled 64 bytes wide, they went through the stack.
template <class C> struct VecOf;
template <> struct VecOf<float> { typedef float type __attribute__((vector_size(32))); };
template <> struct VecOf<double> { typedef double type __attribute__((vector_size(32))); };
template <class C> using Vec = typename VecOf<C>::type;
constexpr int kVecs = 4;  // per panel row: 128 bytes

// One row of one panel of out: the row of a times the panel, of which the
// first `width` columns are stored. Four vectors of sums are four chains of
// multiply-adds, too few to cover the latency of each: a second set takes
// the odd depths.
template <class C> ONNXKIT_RNN_INLINE void panel_row(int64_t depth, const C* a, const C* panel, C* out, int64_t width) {
  constexpr int64_t kWidth = PackedColumns<C>::kWidth;
  constexpr int64_t kLanes = static_cast<int64_t>(sizeof(Vec<C>) / sizeof(C));
  static_assert(kWidth == kVecs * kLanes);
  Vec<C> even[kVecs] = {}, odd[kVecs] = {};
  auto accumulate = [&](Vec<C> * sums, int64_t p) __attribute__((always_inline)) {
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) {
      Vec<C> b;
      std::memcpy(&b, panel + p * kWidth + v * kLanes, sizeof b);
      sums[v] += a[p] * b;
    }
  };
  int64_t p = 0;
  for (; p + 2 <= depth; p += 2) {
    accumulate(even, p);
    accumulate(odd, p + 1);
  }
  if (p < depth) accumulate(even, p);
#pragma GCC unroll 4
  for (int v = 0; v < kVecs; ++v) even[v] += odd[v];
  if (width == kWidth) {
    std::memcpy(out, even, sizeof even);
  } else {
    C all[kWidth];
    std::memcpy(all, even, sizeof even);
    std::copy_n(all, width, out);
  }
}

// Panels [first, last) of the product, every row, the last panel first
// when `backwards`.
template <class C>
ONNXKIT_RNN_INLINE void vector_panels(int64_t rows, const C* a, int64_t lda, const PackedColumns<C>& b, C* out, int64_t ldo,
                                      int64_t first, int64_t last, bool backwards) {
  constexpr int64_t kWidth = PackedColumns<C>::kWidth;
  for (int64_t k = first; k < last; ++k) {
    const int64_t q = backwards ? first + last - 1 - k : k;
    const int64_t j0 = q * kWidth, width = std::min(kWidth, b.columns() - j0);
    for (int64_t i = 0; i < rows; ++i) panel_row(b.depth(), a + i * lda, b.panel(q), out + i * ldo + j0, width);
  }
}

// The same, one row and one panel at a time, in plain loops the compiler
// vectorizes for whatever the baseline has.
template <class C>
void plain_panels(int64_t rows, const C* a, int64_t lda, const PackedColumns<C>& b, C* out, int64_t ldo, int64_t first,
                  int64_t last, bool backwards) {
  constexpr int64_t kWidth = PackedColumns<C>::kWidth;
  for (int64_t k = first; k < last; ++k) {
    const int64_t q = backwards ? first + last - 1 - k : k;
    const int64_t j0 = q * kWidth, width = std::min(kWidth, b.columns() - j0);
    const C* panel = b.panel(q);
    for (int64_t i = 0; i < rows; ++i) {
      C sums[kWidth] = {};
      for (int64_t p = 0; p < b.depth(); ++p) {
        const C x = a[i * lda + p];
        for (int64_t j = 0; j < kWidth; ++j) sums[j] += x * panel[p * kWidth + j];
      }
      std::copy_n(sums, width, out + i * ldo + j0);
    }
  }
}

template <class C>
ONNXKIT_RNN_AVX2 void avx2_panels(int64_t rows, const C* a, int64_t lda, const PackedColumns<C>& b, C* out, int64_t ldo,
                                  int64_t first, int64_t last, bool backwards) {
  vector_panels(rows, a, lda, b, out, ldo, first, last, backwards);
}

bool has_avx2() {
#if ONNXKIT_RNN_HAS_AVX2
  return cpu_has_avx2_fma();
#else
  return false;
#endif
}

template <class C>
void product(int64_t rows, const C* a, int64_t lda, const PackedColumns<C>& b, C* out, int64_t ldo, bool backwards, bool avx2) {
  auto panels = [&](int64_t first, int64_t last, bool back) {
    if (avx2) return avx2_panels(rows, a, lda, b, out, ldo, first, last, back);
    plain_panels(rows, a, lda, b, out, ldo, first, last, back);
  };
  const double macs = static_cast<double>(rows) * static_cast<double>(b.columns()) * static_cast<double>(b.depth());
  if (macs < kParallelMacs || available_threads() == 1) return panels(0, b.panels(), backwards);
  parallel_for(b.panels(), true, [&](int64_t q) { panels(q, q + 1, false); });
}

}  // namespace

template <class C>
PackedColumns<C>::PackedColumns(const C* rows, int64_t ld, int64_t depth, int64_t n) : depth_(depth), columns_(n) {
  constexpr int64_t kLine = 64 / static_cast<int64_t>(sizeof(C));
  storage_.assign(static_cast<size_t>(panels() * depth * kWidth + kLine), C(0));
  C* dst = const_cast<C*>(data());
  for (int64_t q = 0; q < panels(); ++q) {
    const int64_t j0 = q * kWidth, width = std::min(kWidth, n - j0);
    for (int64_t j = 0; j < width; ++j)
      for (int64_t p = 0; p < depth; ++p) dst[(q * depth + p) * kWidth + j] = rows[(j0 + j) * ld + p];
  }
}

template <class C> const C* PackedColumns<C>::data() const {
  const auto address = reinterpret_cast<uintptr_t>(storage_.data());
  const uintptr_t aligned = (address + 63) & ~uintptr_t{63};
  return storage_.data() + (aligned - address) / sizeof(C);
}

template class PackedColumns<float>;
template class PackedColumns<double>;

void packed_product(int64_t rows, const float* a, int64_t lda, const PackedColumns<float>& b, float* out, int64_t ldo,
                    bool backwards) {
  product(rows, a, lda, b, out, ldo, backwards, has_avx2());
}

void packed_product(int64_t rows, const double* a, int64_t lda, const PackedColumns<double>& b, double* out, int64_t ldo,
                    bool backwards) {
  product(rows, a, lda, b, out, ldo, backwards, has_avx2());
}

void packed_panels(int64_t rows, const float* a, int64_t lda, const PackedColumns<float>& b, float* out, int64_t ldo,
                   int64_t first, int64_t last, bool backwards) {
  if (has_avx2()) return avx2_panels(rows, a, lda, b, out, ldo, first, last, backwards);
  plain_panels(rows, a, lda, b, out, ldo, first, last, backwards);
}

void packed_product_portable(int64_t rows, const float* a, int64_t lda, const PackedColumns<float>& b, float* out, int64_t ldo,
                             bool backwards) {
  product(rows, a, lda, b, out, ldo, backwards, false);
}

void packed_product_portable(int64_t rows, const double* a, int64_t lda, const PackedColumns<double>& b, double* out, int64_t ldo,
                             bool backwards) {
  product(rows, a, lda, b, out, ldo, backwards, false);
}

}  // namespace onnxkit::runtime::rnn
