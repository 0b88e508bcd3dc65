// The quantization family: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, QLinearMatMul, ConvInteger and QLinearConv
// (MatMulInteger lives with MatMul in the math family).

#include "runtime/kernels/quantization/quantization.h"

namespace onnxkit::runtime {

void register_quantization_kernels(KernelRegistry& registry) {
  quantization::register_linear(registry);
  quantization::register_qlinear_matmul(registry);
  quantization::register_conv(registry);
}

}  // namespace onnxkit::runtime
