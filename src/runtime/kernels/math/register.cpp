// The math family: matrix products (Gemm, MatMul, MatMulInteger, Einsum),
// CumSum, CumProd, TopK and Det.

#include "runtime/kernels/math/math.h"

namespace onnxkit::runtime {

void register_math_kernels(KernelRegistry& registry) {
  math::register_matmul(registry);
  math::register_einsum(registry);
  math::register_cumsum(registry);
  math::register_topk(registry);
  math::register_det(registry);
}

}  // namespace onnxkit::runtime
