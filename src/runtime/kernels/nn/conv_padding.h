#pragma once
// A convolution's padding done by copying its input into a zero-bordered
// buffer, so the convolution itself runs with no pads. oneDNN 2.6 has only
// its reference kernel ("ref:any", ~1000x slower) for some dilated
// convolutions with wide pads: 256->256 channels 3x3 at dilation 12 with pads
// 12 on 65x65 (DeepLabV3's ASPP at 520x520). The same convolution on the
// padded copy with pads 0 runs its JIT kernels; the copy costs ~1% of it.

#include <optional>

#include "runtime/kernels/window.h"

namespace onnxkit::runtime::nn {

// `p` on an input grown by its pads, with no pads; nullopt when it has none.
std::optional<ConvParams> pads_in_input(const ConvParams& p);

// Copies `x`, the input of `p`, into `padded`, the input of pads_in_input(p),
// writing zeros in the border. Both are laid out in memory as
// [outer, spatial..., inner]: outer = N * C and inner = 1 for plain tensors,
// outer = N * C/B and inner = B for blocked ones (blocked.h).
void pad_input(const ConvParams& p, int64_t outer, int64_t inner, const float* x, float* padded);

}  // namespace onnxkit::runtime::nn
