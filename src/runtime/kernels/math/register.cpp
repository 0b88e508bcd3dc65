// The math family: matrix products (Gemm, MatMul, MatMulInteger, Einsum),
// CumSum, CumProd, TopK and Det.

#include "runtime/kernels/math/math.h"

namespace onnxkit::runtime {

void register_math_kernels(KernelRegistry& registry) {
  register_each(registry,
                {math::register_matmul, math::register_einsum, math::register_cumsum, math::register_topk, math::register_det});
}

}  // namespace onnxkit::runtime
