#pragma once
// Shared machinery of the neural-network family: the geometry of sliding
// windows (convolution and pooling share the rules of kernel_shape, strides,
// dilations, pads and auto_pad).

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/kernels/common.h"

namespace onnxkit::runtime::nn {

// Integer division rounding down / up, for negative numerators too (pads
// and offsets can make them negative).
inline int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
inline int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// Copies `values` into a new tensor of the floating-point `type`.
Tensor doubles_to_tensor(DataType type, Shape shape, const std::vector<double>& values);

// --- sliding windows ----------------------------------------------------------

enum class AutoPad { notset, same_upper, same_lower, valid };

Result<AutoPad> parse_auto_pad(const std::string& text);

// Attributes common to convolution and pooling, as written on the node
// (empty vectors: absent).
struct WindowAttributes {
  AutoPad auto_pad = AutoPad::notset;
  std::vector<int64_t> kernel_shape, strides, dilations, pads;
  bool ceil_mode = false;
};

// Reads auto_pad, kernel_shape, strides, dilations, pads and ceil_mode, and
// checks the values that need no shape: positive kernel, strides and
// dilations, non-negative pads, an even number of pads.
Result<WindowAttributes> read_window_attributes(const KernelInfo& info);

// The resolved geometry of a window sliding over `in` (spatial dims only).
struct WindowGeometry {
  std::vector<int64_t> in, kernel, strides, dilations, pads_begin, pads_end, out;
  size_t rank() const { return in.size(); }
  int64_t in_size() const;
  int64_t out_size() const;
  int64_t kernel_size() const;
};

// Resolves strides, dilations and pads (explicit or from auto_pad) and the
// output sizes, checking every list against the spatial rank. `kernel` is the
// kernel shape already chosen by the caller.
Result<WindowGeometry> resolve_window(const WindowAttributes& attrs, const std::vector<int64_t>& in,
                                      const std::vector<int64_t>& kernel);

// y = log_softmax(x) along n, with x and y (same type and size) seen as
// [outer, n, inner]; shared by LogSoftmax and SoftmaxCrossEntropyLoss.
Status log_softmax_along(const Tensor& x, int64_t outer, int64_t n, int64_t inner, Tensor& y);

// --- registration ---------------------------------------------------------------

void register_conv(KernelRegistry& registry);
void register_deform_conv(KernelRegistry& registry);
void register_pool(KernelRegistry& registry);
void register_normalization(KernelRegistry& registry);

// LayerNormalization (opset 17); with `residual`, of the sum of inputs 0 and
// 1 (Scale and B follow): the kernel the session runs in place of a residual
// Add -> LayerNormalization (runtime/fusion.h).
KernelFactory layer_norm_kernel(bool residual);
void register_softmax(KernelRegistry& registry);
void register_dropout(KernelRegistry& registry);
void register_loss(KernelRegistry& registry);

}  // namespace onnxkit::runtime::nn
