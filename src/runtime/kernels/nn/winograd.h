#pragma once
// 3x3 convolution by Winograd's minimal filtering F(2x2, 3x3) on blocked
// activations (blocked.h), with our own AVX2/FMA kernels (the products on
// AVX-512 where blocks are 16 channels). Each 2x2 block of
// outputs ("tile") comes from a 4x4 patch of the input: both the patch and
// the filter are transformed into 16 points, where the convolution becomes
// 16 independent matrix products [tiles x C] * [C x M]: 16 multiplies per
// tile and channel pair instead of the 36 of the direct sum, at the cost of
// adds in the transforms. Dilated, a tile's outputs and its patch's inputs
// are d apart: the same sums on a sparser grid. The filters are transformed
// once, by the first run (a model's small maps may never pay off, and most
// 3x3s of a detection head never run here). Machines without AVX2 and FMA
// keep oneDNN's direct convolution (the caller's path).

#include <memory>
#include <mutex>
#include <vector>

#include "runtime/kernels/nn/conv.h"

namespace onnxkit::runtime::nn {

class WinogradConv {
 public:
  // Null unless the convolution is one this runs: 3x3 window, stride 1,
  // any dilation, one group, float32 weights, on a CPU with AVX2 and FMA.
  static std::unique_ptr<WinogradConv> create(const ConvAttributes& attrs, const Tensor& w, const Tensor* bias,
                                              FusedActivation activation);
  // As create, but one for every node that reads these weights and bias with
  // this activation (DnnlConvCache::shared's reason), living while a node
  // holds it.
  static std::shared_ptr<const WinogradConv> shared(const ConvAttributes& attrs, const Tensor& w, const Tensor* bias,
                                                    FusedActivation activation);

  // Whether the input of `p` has enough tiles (two register tiles' worth;
  // where blocks are 16 channels, four and more than one block of channels)
  // for the transforms and the filters' 16/9 more floats to pay off, and,
  // dilated, few outputs of its tiles unused.
  bool pays_off(const ConvParams& p) const;

  // y = act(conv(x) + bias [+ residual]); x, y and the residual are blocked
  // tensors of p's logical shapes, y allocated by the caller (an error
  // otherwise). Thread-safe. The transformed filters take 16/9 of the
  // weights' memory.
  Status run(const ConvParams& p, const Tensor& x, Tensor& y, const Tensor* residual) const;

 private:
  WinogradConv(int64_t in_channels, int64_t out_channels, FusedActivation activation);
  void transform_filters() const;  // from w_ and bias_in_ into filters_ and bias_

  int64_t in_channels_, out_channels_;
  int64_t depth_;    // input channels padded to whole AVX registers (8)
  int64_t columns_;  // output channels padded to whole panels of 16
  FusedActivation activation_;
  // The transformed filters as 16 matrices [depth x columns], each stored as
  // panels of 16 columns: element (c, m) of point xi at
  // ((xi * columns / 16 + m / 16) * depth + c) * 16 + m % 16. Zero where padded.
  mutable std::vector<float> filters_;
  mutable std::vector<float> bias_;  // columns_ values, zero where padded
  mutable std::once_flag filters_transformed_;
  std::shared_ptr<const Tensor> w_, bias_in_;  // the model's, until the filters are transformed
};

}  // namespace onnxkit::runtime::nn
