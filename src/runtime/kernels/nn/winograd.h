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
//
// Grouped convolutions (RegNet's groups of 24 channels) run group by group,
// each its own products on its own filters, where every group is whole AVX
// registers (8 channels) of whole 8-channel blocks; output channels in 24s
// take panels of 24 columns, which panels of 16 would pad by a third.

#include <memory>
#include <mutex>
#include <vector>

#include "runtime/kernels/nn/conv.h"

namespace onnxkit::runtime::nn {

class WinogradConv {
 public:
  // Null unless the convolution is one this runs: 3x3 window, stride 1,
  // any dilation, float32 weights, on a CPU with AVX2 and FMA; one group, or
  // groups of whole multiples of 8 channels where blocks are 8 channels.
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
  WinogradConv(int64_t groups, int64_t in_channels, int64_t out_channels, FusedActivation activation);
  void transform_filters() const;  // from w_ and bias_in_ into filters_ and bias_

  int64_t groups_;
  int64_t in_channels_, out_channels_;  // of one group
  int64_t depth_;                       // a group's input channels padded to whole AVX registers (8)
  int64_t panel_;                       // columns of a register tile: 16, or 24 where that pads less
  int64_t rows_;                        // tiles of a register tile: 6 by 16 columns, 4 by 24
  int64_t columns_;                     // a group's output channels padded to whole panels
  FusedActivation activation_;
  // The transformed filters, per group, as 16 matrices [depth x columns],
  // each stored as panels: element (c, m) of point xi of group k at
  // (((k * 16 + xi) * columns / panel + m / panel) * depth + c) * panel + m % panel.
  // Zero where padded.
  mutable std::vector<float> filters_;
  mutable std::vector<float> bias_;  // columns_ values per group, zero where padded
  mutable std::once_flag filters_transformed_;
  std::shared_ptr<const Tensor> w_, bias_in_;  // the model's, until the filters are transformed
};

}  // namespace onnxkit::runtime::nn
