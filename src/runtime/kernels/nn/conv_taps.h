#pragma once
// A 2-D convolution as one matrix product per kernel tap, each over only the
// outputs whose read through that tap lands inside the input. A dilated
// convolution on a map not much larger than its reach reads padding through
// most of its taps: DeepLabV3's ASPP at dilation 12 on a 14x14 map has 1.6
// live taps of 9 per output, at 24 on 28x28 1.7. oneDNN's direct kernels
// skip such reads with AVX-512 only; elsewhere it runs these convolutions
// as im2col and a product over all nine taps (5x the work at 14x14), or its
// reference kernel. On channels-last activations, a tap's product for one
// output row reads one contiguous run of input pixels and writes one of
// output pixels, so it needs no copy.

#include <memory>
#include <vector>

#include "runtime/kernels/nn/conv.h"
#include "runtime/kernels/nn/conv_fusion.h"

namespace onnxkit::runtime::nn {

class TapProducts {
 public:
  // Null unless `p` is a 2-D float convolution of one group. `w` is
  // [M, C, kh, kw], `bias` M values or null.
  static std::unique_ptr<TapProducts> create(const ConvParams& p, const float* w, const float* bias, FusedActivation activation);

  // Of the kernel's taps over all outputs, the share that reads inside the
  // input: the work done here, relative to a product over every tap.
  double live_share() const;
  // The convolution it computes.
  const ConvParams& params() const { return p_; }

  // y = act(conv(x) + bias), x [N, H, W, C] and y [N, OH, OW, M]
  // (channels-last), on up to `threads` threads.
  void run(const float* x, float* y, int threads) const;

 private:
  // The outputs along one spatial dim that read inside the input through
  // one tap, and the input index the first of them reads.
  struct LiveRange {
    int64_t begin = 0, end = 0, first_input = 0;
  };
  TapProducts(const ConvParams& p, FusedActivation activation);
  LiveRange live_range(size_t dim, int64_t tap) const;

  ConvParams p_;
  FusedActivation activation_;
  std::vector<float> taps_;  // [kh * kw][C][M]: W's tap (i, j) as a C x M matrix
  std::vector<float> bias_;  // M values, zeros without a bias
};

}  // namespace onnxkit::runtime::nn
