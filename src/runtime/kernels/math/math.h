#pragma once
// Shared machinery of the math family: numpy-style batched matrix products
// (MatMul, MatMulInteger, and QLinearMatMul in the quantization family),
// conversions of the 16-bit floats.

#include <cmath>
#include <type_traits>
#include <vector>

#include "runtime/kernels/common.h"
#include "runtime/kernels/gemm.h"
#include "runtime/parallel.h"

namespace onnxkit::runtime::math {

// The elements of a 16-bit float tensor as floats (and back).
std::vector<float> to_float(const Tensor& t);
template <class T> void from_float(const float* src, T* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = T(src[i]);
}

// A numpy matmul of two shapes: 1-D operands are promoted (a vector on the
// left is one row, on the right one column) and the promoted dim dropped
// from the output; the dims before the last two broadcast.
struct MatMulPlan {
  Shape out;
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  // Element offset of each product's matrices in A and B, per batch entry.
  std::vector<int64_t> a_offset, b_offset;
  // Batch index of A's and B's own (unbroadcast) matrix, per batch entry.
  std::vector<int64_t> a_batch, b_batch;
  // True when B is one matrix for every entry and A's matrices are packed
  // back to back: the batch then folds into M as one product.
  bool foldable = false;
};

// `a_name`/`b_name` name the operands in errors ("A", "B").
Result<MatMulPlan> plan_matmul(const Shape& a, const Shape& b, std::string_view a_name = "A", std::string_view b_name = "B");

// Whether threads should take the batch's products one each (small and
// many, or larger ones that split evenly among them) rather than share each
// product. ViT-B/16's attention, 12 heads of 197 x 64 x 197 on two threads:
// 12.8 ms a run sharing each product, 9.2 ms taking six heads each.
inline bool batch_across_threads(const MatMulPlan& plan) {
  const double work = static_cast<double>(plan.m) * static_cast<double>(plan.n) * static_cast<double>(plan.k);
  if (plan.batch < 2 || work * static_cast<double>(plan.batch) < 64.0 * 64.0 * 64.0) return false;
  const int64_t threads = available_threads();
  return work < 128.0 * 128.0 * 128.0 || plan.batch % threads == 0 || plan.batch >= 4 * threads;
}

// Runs plan.batch products C_e = A_e * B_e with `product(e, a_off, b_off,
// c_off, rows)`: rows is m, or m * batch once when the plan is foldable (e is
// then 0). Threads go to the batch when the products are small and many,
// else to each product.
template <class Product> void for_each_matmul(const MatMulPlan& plan, Product&& product) {
  const int64_t mn = plan.m * plan.n;
  if (plan.batch == 0) return;
  if (plan.foldable || plan.batch == 1) {
    product(int64_t(0), plan.a_offset[0], plan.b_offset[0], int64_t(0), plan.m * (plan.foldable ? plan.batch : 1));
    return;
  }
  parallel_for(plan.batch, batch_across_threads(plan),
               [&](int64_t e) { product(e, plan.a_offset[e], plan.b_offset[e], e * mn, plan.m); });
}

// Family parts (register.cpp calls them).
void register_matmul(KernelRegistry& registry);

// What follows the bias of a fused MatMul+Add: nothing, GELU on every
// value, or a softmax along each row (the last axis).
enum class LinearThen { nothing, gelu, softmax };

// MatMul(A, weights) + bias, then `then`: weights a float matrix, bias one
// float per column of it; the kernel reads A only. The session runs it in
// place of a MatMul -> Add chain (runtime/fusion.h).
KernelFactory matmul_bias_kernel(Tensor weights, Tensor bias, LinearThen then);

// Y = transpose(alpha * transpose(A, a_perm) * transpose(B, b_perm), y_perm),
// an empty perm meaning no transpose there: the exporters' attention, whose
// heads are split and merged by Transposes and whose queries are scaled.
// The product reads the operands and writes the result in place, as strided
// matrices, without the copies; y_perm keeps the last dim last.
struct TransposedMatMul {
  std::vector<int64_t> a_perm, b_perm, y_perm;
  float alpha = 1;
};
KernelFactory transposed_matmul_kernel(TransposedMatMul spec);
void register_einsum(KernelRegistry& registry);
void register_cumsum(KernelRegistry& registry);
void register_topk(KernelRegistry& registry);
void register_det(KernelRegistry& registry);

}  // namespace onnxkit::runtime::math
