#pragma once
// The product of a recurrent step, h * R^T for every gate at once, with R^T
// packed once, when the kernel is built, into panels of a few columns.
//
// A step of a small recurrent layer at batch 1 multiplies one row by a
// matrix of a few hundred KiB that lives in L2: the step is bound by how fast
// that matrix streams into the core. Packed, each panel is one contiguous run
// of memory the loop reads front to back, and the row's sums stay in
// registers from the first element of the depth to the last; read in place,
// R^T's rows are a stride apart and the sums go through memory. Rows are
// taken one at a time: more rows make a GEMM, for which sgemm does better.

#include <cstdint>
#include <vector>

namespace onnxkit::runtime::rnn {

// Columns of a matrix of `depth` rows, in panels of kPanelBytes / sizeof(C)
// columns (32 floats, 16 doubles): element (p, j) of panel q is at
// q * depth * width + p * width + (j - q * width). The last panel is padded
// with zeros.
template <class C> class PackedColumns {
 public:
  static constexpr int64_t kPanelBytes = 128;
  static constexpr int64_t kWidth = kPanelBytes / static_cast<int64_t>(sizeof(C));

  PackedColumns() = default;
  // The depth x n matrix whose column j is row j of `rows`: n rows of
  // `depth` elements, ld apart (R's rows of some gates are R^T's columns).
  PackedColumns(const C* rows, int64_t ld, int64_t depth, int64_t n);

  int64_t depth() const { return depth_; }
  int64_t columns() const { return columns_; }
  int64_t panels() const { return (columns_ + kWidth - 1) / kWidth; }
  // Panel q, aligned to a cache line.
  const C* panel(int64_t q) const { return data() + q * depth_ * kWidth; }

 private:
  const C* data() const;

  int64_t depth_ = 0, columns_ = 0;
  std::vector<C> storage_;  // the panels, from the first cache-line boundary in it
};

// out[i][j] = sum_p a[i][p] * b(p, j) for i < rows, j < b.columns(): rows of
// a are lda apart, rows of out ldo apart. Shared among the threads by panels
// when the product is large enough to pay for them. On one thread the panels
// go last to first when `backwards`: steps that alternate find the panels
// the step before read last still in L1.
void packed_product(int64_t rows, const float* a, int64_t lda, const PackedColumns<float>& b, float* out, int64_t ldo,
                    bool backwards = false);
void packed_product(int64_t rows, const double* a, int64_t lda, const PackedColumns<double>& b, double* out, int64_t ldo,
                    bool backwards = false);

// Panels [first, last) of the same product, on the calling thread: a
// thread's share of a step the threads split among themselves.
void packed_panels(int64_t rows, const float* a, int64_t lda, const PackedColumns<float>& b, float* out, int64_t ldo,
                   int64_t first, int64_t last, bool backwards);

// The same in plain loops, which CPUs without AVX2 and FMA run; callable on
// any CPU, so that tests check it there too.
void packed_product_portable(int64_t rows, const float* a, int64_t lda, const PackedColumns<float>& b, float* out, int64_t ldo,
                             bool backwards = false);
void packed_product_portable(int64_t rows, const double* a, int64_t lda, const PackedColumns<double>& b, double* out, int64_t ldo,
                             bool backwards = false);

}  // namespace onnxkit::runtime::rnn
