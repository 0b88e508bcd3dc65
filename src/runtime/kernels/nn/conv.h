#pragma once
// The reference convolution. Conv's kernel resolves a ConvParams
// (kernels/window.h; once at
// build when the input shape is static and W is an initializer, else per
// run) and calls conv_reference. A faster engine is tested against this
// function, so it favours plain, checkable code: im2col over tiles of output
// positions, then a blocked matrix multiply per (image, group, tile).

#include <cstdint>
#include <vector>

#include "runtime/kernels/nn/conv_fusion.h"
#include "runtime/kernels/nn/nn.h"

namespace onnxkit::runtime::nn {

// The optional bias of Conv, ConvTranspose and DeformConv (input `index`):
// null when absent, else X's type and one value per output channel.
Result<const Tensor*> read_bias(KernelContext& ctx, size_t index, const Tensor& x, int64_t channels);

// y = conv(x, w) + bias, for float32, float64 and the 16-bit floats (computed
// through float32). x, w and y must have the shapes of `p` (y allocated by the
// caller) and the same element type; bias, when given, has M elements.
Status conv_reference(const ConvParams& p, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y);

// Adds the columns of `col` (rows: channel-major, then kernel offsets; columns:
// positions of the window grid `g.out`) back into images of `g.in` with
// `channels` channels. The inverse gather of im2col, shared by ConvTranspose
// and Col2Im. `image` is accumulated into, not cleared.
template <class T> void col2im(const T* col, int64_t channels, const WindowGeometry& g, T* image);

}  // namespace onnxkit::runtime::nn
