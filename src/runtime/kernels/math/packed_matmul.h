#pragma once
// Products with a constant float weight matrix on oneDNN's matmul
// primitive (AVX-512), or its 1x1 convolution where the matmul has no
// blocked kernel (AVX2), the weights reordered once into the blocked layout
// the primitive reads. gemm() (oneDNN's sgemm) packs B again on every call: for
// a few dozen rows against a large weight (a detection head's fully
// connected layers over the regions it pooled, 12544 x 1024) that pass over
// all of B costs as much as the multiplication. The layout oneDNN picks for
// the weights does not depend on the number of rows, so one reordered copy
// serves the primitives made for each row count the runs meet. Tested
// through Gemm against a plain loop (tests/runtime/math_test.cpp).

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "runtime/tensor.h"
#include "util/result.h"

namespace onnxkit::runtime::math {

class PackedMatMul {
 public:
  // B is [K, N], or [N, K] read transposed when `trans_b`; float32. Null
  // when oneDNN has no primitive for it reading blocked weights (no JIT
  // kernels): sgemm is as fast then, without the copy.
  static std::unique_ptr<PackedMatMul> create(const Tensor& b, bool trans_b);
  ~PackedMatMul();

  int64_t k() const { return k_; }
  int64_t n() const { return n_; }

  // y = a * B (+ bias, one value per column, when not null), then GELU
  // (the erf form) when `gelu`, with a [m, K] and y [m, N] row-major and
  // contiguous. False when oneDNN makes no primitive for this m reading the
  // weights as they were reordered: the caller then multiplies another way.
  // Thread-safe.
  Result<bool> run(int64_t m, const float* a, const float* bias, float* y, bool gelu = false) const;

  struct State;
  struct Primitive;

 private:
  PackedMatMul(int64_t k, int64_t n, std::unique_ptr<State> state);
  // The primitive for m rows on `threads` threads, made on first use; null
  // when there is none.
  std::shared_ptr<const Primitive> primitive_for(int64_t m, bool bias, bool gelu, int threads) const;

  // Beyond this many (rows, bias, gelu, threads) the cache starts over: a
  // detection head meets as many row counts as it keeps regions.
  static constexpr size_t kMaxPrimitives = 64;
  int64_t k_, n_;
  std::unique_ptr<State> state_;
  mutable std::mutex mutex_;
  mutable std::map<std::tuple<int64_t, bool, bool, int>, std::shared_ptr<const Primitive>> primitives_;
};

// A constant B packed when a product first needs it: a model that only ever
// multiplies one row by it (which gemm() does reading B where it lies)
// keeps a single copy of its weights.
class PackedOnFirstUse {
 public:
  explicit PackedOnFirstUse(bool trans_b) : trans_b_(trans_b) {}
  // B packed (from `b`, the constant, the first time), or null when oneDNN
  // has no primitive for it. Thread-safe.
  const PackedMatMul* get(const Tensor& b);

 private:
  bool trans_b_;
  std::once_flag once_;
  std::unique_ptr<PackedMatMul> packed_;
};

}  // namespace onnxkit::runtime::math
