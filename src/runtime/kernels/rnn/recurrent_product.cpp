// The packed recurrent product (recurrent_product.h).

#include "runtime/kernels/rnn/recurrent_product.h"

#include <algorithm>
#include <cstring>

#include "runtime/parallel.h"

// The product is compiled for AVX-512 and AVX2 as well, picked at load time,
// since the library itself targets the baseline instruction set.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define ONNXKIT_RNN_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ONNXKIT_RNN_CLONES
#endif
#define ONNXKIT_RNN_INLINE inline __attribute__((always_inline))

namespace onnxkit::runtime::rnn {
namespace {

// Half a panel's row: the sums are spelled as vectors (a GCC/Clang extension,
// lowered to whatever registers the target has, one AVX-512 register or two
// AVX2 ones) so that they stay in registers across the whole depth.
template <class C> struct VecOf;
template <> struct VecOf<float> { typedef float type __attribute__((vector_size(64))); };
template <> struct VecOf<double> { typedef double type __attribute__((vector_size(64))); };
template <class C> using Vec = typename VecOf<C>::type;

// A panel's row (by reference: a 64-byte vector returned by value would
// change the calling convention between the clones).
template <class C> ONNXKIT_RNN_INLINE void load_row(const C* row, Vec<C>& b0, Vec<C>& b1) {
  std::memcpy(&b0, row, sizeof b0);
  std::memcpy(&b1, row + sizeof b0 / sizeof(C), sizeof b1);
}

// Rows of one panel of out: R rows of a (R <= kRows) times the panel, of
// which the first `width` columns are stored.
constexpr int kRows = 3;  // 3 rows x 2 half-rows: 12 AVX2 registers of sums
template <class C, int R>
ONNXKIT_RNN_INLINE void panel_rows(int64_t depth, const C* a, int64_t lda, const C* panel, C* out, int64_t ldo, int64_t width) {
  constexpr int64_t kWidth = PackedColumns<C>::kWidth;
  constexpr int64_t kLanes = static_cast<int64_t>(sizeof(Vec<C>) / sizeof(C));
  static_assert(kWidth == 2 * kLanes);
  // A row alone has two chains of sums, too few to keep the multiply-add
  // units busy for the latency of each: a second set takes the odd depths.
  constexpr int kSets = R == 1 ? 2 : 1;
  Vec<C> acc[kSets][R][2];
  for (int s = 0; s < kSets; ++s)
    for (int r = 0; r < R; ++r) acc[s][r][0] = acc[s][r][1] = Vec<C>{};
  int64_t p = 0;
  for (; p + kSets <= depth; p += kSets) {
    for (int s = 0; s < kSets; ++s) {
      Vec<C> b0, b1;
      load_row(panel + (p + s) * kWidth, b0, b1);
      for (int r = 0; r < R; ++r) {
        const C x = a[r * lda + p + s];
        acc[s][r][0] += x * b0;
        acc[s][r][1] += x * b1;
      }
    }
  }
  for (; p < depth; ++p) {
    Vec<C> b0, b1;
    load_row(panel + p * kWidth, b0, b1);
    for (int r = 0; r < R; ++r) {
      const C x = a[r * lda + p];
      acc[0][r][0] += x * b0;
      acc[0][r][1] += x * b1;
    }
  }
  for (int r = 0; r < R; ++r) {
    Vec<C> sums[2] = {acc[0][r][0], acc[0][r][1]};
    if constexpr (kSets == 2) {
      sums[0] += acc[1][r][0];
      sums[1] += acc[1][r][1];
    }
    C* o = out + r * ldo;
    if (width == kWidth) {
      std::memcpy(o, sums, sizeof sums);
    } else {
      C all[kWidth];
      std::memcpy(all, sums, sizeof sums);
      std::copy_n(all, width, o);
    }
  }
}

// Panels [first, last) of the product, every row, the last panel first
// when `backwards`.
template <class C>
ONNXKIT_RNN_INLINE void product_panels(int64_t rows, const C* a, int64_t lda, const PackedColumns<C>& b, C* out, int64_t ldo,
                                       int64_t first, int64_t last, bool backwards) {
  constexpr int64_t kWidth = PackedColumns<C>::kWidth;
  for (int64_t k = first; k < last; ++k) {
    const int64_t q = backwards ? first + last - 1 - k : k;
    const int64_t j0 = q * kWidth, width = std::min(kWidth, b.columns() - j0);
    const C* panel = b.panel(q);
    int64_t i = 0;
    for (; i + kRows <= rows; i += kRows)
      panel_rows<C, kRows>(b.depth(), a + i * lda, lda, panel, out + i * ldo + j0, ldo, width);
    if (rows - i == 2) panel_rows<C, 2>(b.depth(), a + i * lda, lda, panel, out + i * ldo + j0, ldo, width);
    if (rows - i == 1) panel_rows<C, 1>(b.depth(), a + i * lda, lda, panel, out + i * ldo + j0, ldo, width);
  }
}

ONNXKIT_RNN_CLONES void product_panels_floats(int64_t rows, const float* a, int64_t lda, const PackedColumns<float>& b,
                                              float* out, int64_t ldo, int64_t first, int64_t last, bool backwards) {
  product_panels(rows, a, lda, b, out, ldo, first, last, backwards);
}

ONNXKIT_RNN_CLONES void product_panels_doubles(int64_t rows, const double* a, int64_t lda, const PackedColumns<double>& b,
                                               double* out, int64_t ldo, int64_t first, int64_t last, bool backwards) {
  product_panels(rows, a, lda, b, out, ldo, first, last, backwards);
}

template <class C, class Panels>
void product(int64_t rows, const C* a, int64_t lda, const PackedColumns<C>& b, C* out, int64_t ldo, bool backwards,
             Panels&& panels) {
  const double macs = static_cast<double>(rows) * static_cast<double>(b.columns()) * static_cast<double>(b.depth());
  if (macs < kParallelMacs || available_threads() == 1) return panels(rows, a, lda, b, out, ldo, 0, b.panels(), backwards);
  parallel_for(b.panels(), true, [&](int64_t q) { panels(rows, a, lda, b, out, ldo, q, q + 1, false); });
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
  product(rows, a, lda, b, out, ldo, backwards, product_panels_floats);
}

void packed_product(int64_t rows, const double* a, int64_t lda, const PackedColumns<double>& b, double* out, int64_t ldo,
                    bool backwards) {
  product(rows, a, lda, b, out, ldo, backwards, product_panels_doubles);
}

}  // namespace onnxkit::runtime::rnn
