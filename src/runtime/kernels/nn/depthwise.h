#pragma once
// Depthwise convolutions (one filter per channel) of stride 1 with square
// 3x3, 5x5 or 7x7 windows on blocked activations (blocked.h), with our own
// AVX2/FMA and AVX-512 kernels: MobileNet's and EfficientNet's depthwise
// layers that follow no 1x1 fused with them, ConvNeXt's 7x7s, PP-LCNet's.
//
// oneDNN 2.6's depthwise kernel is slow at the edges of large maps and
// shares the rows of a plane badly between two threads (ConvNeXt's 96
// channels at 56 x 56, 7x7: 520 us at 1 thread, 290 at 2; EfficientNet's
// 32 at 112 x 112: 180 and 140), and a Swish after it is a second pass over
// the output. Here each output row is made from the K input rows it reads,
// copied once into a ring of zero-padded rows (the pads left and right
// cost no branches, the rows of pads above and below no work),
// eight pixels at a time in eight accumulators; Relu and Clip bound the
// sums in registers, the other activations (Swish, HardSwish...) run on the
// row while it is in the L1 cache.

#include <memory>
#include <vector>

#include "runtime/kernels/nn/conv.h"

namespace onnxkit::runtime::nn {

class DepthwiseConv {
 public:
  // Null unless W is float32 [C, 1, K, K] with K 3, 5 or 7 and group = C,
  // strides and dilations 1, the bias (if any) float32 [C], the activation
  // zero at zero (so padded channels stay zero) with no residual, the CPU
  // has AVX2 and FMA, and GCC built this (Clang, the fuzz build, keeps
  // oneDNN's kernel).
  static std::unique_ptr<DepthwiseConv> create(const ConvAttributes& attrs, const Tensor& w, const Tensor* bias,
                                               FusedActivation activation);

  // Whether `p` is the convolution this was made for (the window and
  // strides may come from the input's shape through auto_pad).
  bool fits(const ConvParams& p) const;

  // y = act(conv(x) + bias); x and y blocked tensors of p's logical shapes, y
  // allocated by the caller (an error otherwise). Thread-safe.
  Status run(const ConvParams& p, const Tensor& x, Tensor& y) const;

  // One output row of one channel block, each value held to [bounds[0],
  // bounds[1]] (NaN stays NaN): `rows` are the K zero-padded input rows it
  // reads, each from the row's first output pixel on, null for a row of
  // the pads above or below the image.
  using RowKernel = void (*)(const float* const* rows, const float* w, const float* bias, const float bounds[2], float* out,
                             int64_t width);

 private:
  DepthwiseConv(int64_t channels, int64_t kernel, FusedActivation activation, RowKernel row);

  int64_t channels_, kernel_;
  FusedActivation activation_;
  float bounds_[2];  // Relu's or Clip's, else unbounded
  RowKernel row_;
  std::vector<float> weights_;  // per block of channels [K, K, block], zero in padded channels
  std::vector<float> bias_;     // per padded channel, zero where padded
};

}  // namespace onnxkit::runtime::nn
