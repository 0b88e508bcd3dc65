// The quantization family: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, QLinearMatMul, ConvInteger and QLinearConv
// (MatMulInteger lives with MatMul in the math family).

#include "runtime/kernels/quantization/quantization.h"

namespace onnxkit::runtime {

void register_quantization_kernels(KernelRegistry& registry) {
  register_each(registry, {quantization::register_linear, quantization::register_qlinear_matmul, quantization::register_conv});
}

}  // namespace onnxkit::runtime
