#pragma once
// Shared machinery of the neural-network family. Convolution and pooling
// share the geometry of sliding windows (kernels/window.h).

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/kernels/common.h"
#include "runtime/kernels/window.h"

namespace onnxkit::runtime::nn {

// Copies `values` into a new tensor of the floating-point `type`.
Tensor doubles_to_tensor(DataType type, Shape shape, const std::vector<double>& values);

// y = log_softmax(x) along n, with x and y (same type and size) seen as
// [outer, n, inner]; shared by LogSoftmax and SoftmaxCrossEntropyLoss.
Status log_softmax_along(const Tensor& x, int64_t outer, int64_t n, int64_t inner, Tensor& y);

// GlobalAveragePool of blocked activations (blocked.h): y[q, l] = the mean
// of x[q, pixel, l] over `pixels` pixels, for `planes` planes of `lanes`
// channels (8 or 16). Zeros in padded channels give zeros. oneDNN's AVX2
// pooling kernel took twice ONNX Runtime's time on EfficientNet's gates.
void global_average_blocked(const float* x, float* y, int64_t planes, int64_t pixels, int64_t lanes);

// MaxPool of blocked activations over 2-d windows `g`: each output pixel of
// each of `planes` planes of `lanes` channels (8 or 16) is the lane-wise
// maximum of the input pixels its window covers; padding is never the
// maximum, and a NaN input never wins, as in the plain kernel.
void max_pool_blocked(const float* x, float* y, int64_t planes, const WindowGeometry& g, int64_t lanes);

// AveragePool of blocked activations, the same way: the lane-wise mean of
// the window's input pixels, over its taps inside the padded input with
// `count_include_pad` (ceil_mode's last window may reach past it), else
// over those inside the input (0 for none).
void average_pool_blocked(const float* x, float* y, int64_t planes, const WindowGeometry& g, bool count_include_pad,
                          int64_t lanes);

// A Pad of zeros on H and W that the AveragePool reading it takes over
// (runtime/fusion.h): the session gives the pool the Pad's input and this
// through KernelInfo::fusion; the pads [top, left, bottom, right] add to
// the pool's own, and count in its means as the Pad's zeros did.
struct PadsBefore {
  std::array<int64_t, 4> pads;
};

// Whether `pool` can take over a Pad of zeros before it: a 2-D AveragePool
// with explicit pads (no auto_pad) and no ceil_mode, whose own pads, if
// any, count in its means too.
bool average_pool_takes_pads(const ir::Node& pool);

// The window and count_include_pad of a pool built with `info`, with the
// pads of a PadsBefore the session fused into it added.
void add_pads_before(const KernelInfo& info, WindowAttributes& window, bool& count_include_pad);

// --- registration ---------------------------------------------------------------

void register_conv(KernelRegistry& registry);
void register_causal_conv(KernelRegistry& registry);
void register_deform_conv(KernelRegistry& registry);
void register_pool(KernelRegistry& registry);
void register_normalization(KernelRegistry& registry);

// LayerNormalization (opset 17); with `residual`, of the sum of inputs 0 and
// 1 (Scale and B follow): the kernel the session runs in place of a residual
// Add -> LayerNormalization (runtime/fusion.h).
KernelFactory layer_norm_kernel(bool residual);
// LayerNormalization over the last axis of Transpose(X, [0, 2, ..., 1]): X
// [N, C, spatial...] normalized over C at each position and written as
// [N, spatial..., C] (ConvNeXt's NCHW -> NHWC before its LayerNorm), in one
// pass that reads X where it lies. Float32, Scale and B one per channel.
KernelFactory channels_last_layer_norm_kernel();
void register_softmax(KernelRegistry& registry);
void register_rotary_embedding(KernelRegistry& registry);
void register_linear_attention(KernelRegistry& registry);
void register_attention(KernelRegistry& registry);
// Attention's fused kernel over 4-D Q (batch, q heads, q length, head size),
// K and V (batch, kv heads, kv length, head or v head size) of one float
// type, without mask, cache or causal frontier: y = softmax(Q K^T * scale) V,
// in float (double for double inputs); y is of Q's type and shape (batch,
// q heads, q length, v head size).
Status fused_attention_4d(const Tensor& q, const Tensor& k, const Tensor& v, double scale, Tensor& y);
void register_flex_attention(KernelRegistry& registry);  // FlexAttention (ai.onnx.preview, opset 1)
void register_dropout(KernelRegistry& registry);
void register_loss(KernelRegistry& registry);

}  // namespace onnxkit::runtime::nn
