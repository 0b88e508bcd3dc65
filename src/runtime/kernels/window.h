#pragma once
// The geometry of windows sliding over the spatial dims of an image:
// convolution (Conv, ConvTranspose, DeformConv, ConvInteger, QLinearConv),
// pooling and Col2Im share the rules of kernel_shape, strides, dilations,
// pads and auto_pad.

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/kernels/common.h"

namespace onnxkit::runtime {

// Integer division rounding down / up, for negative numerators too (pads
// and offsets can make them negative).
inline int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
inline int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// Whether every entry is 1 (true for none): strides or dilations that change nothing.
inline bool all_ones(const std::vector<int64_t>& v) {
  for (int64_t d : v)
    if (d != 1) return false;
  return true;
}

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
  friend bool operator==(const WindowGeometry&, const WindowGeometry&) = default;
};

// Resolves strides, dilations and pads (explicit or from auto_pad) and the
// output sizes, checking every list against the spatial rank. `kernel` is the
// kernel shape already chosen by the caller.
Result<WindowGeometry> resolve_window(const WindowAttributes& attrs, const std::vector<int64_t>& in,
                                      const std::vector<int64_t>& kernel);

// --- convolution -----------------------------------------------------------------

// The geometry of one convolution: X [N, C, in...] and W [M, C / group,
// kernel...] give Y [N, M, out...].
struct ConvParams {
  int64_t batch = 0;
  int64_t in_channels = 0;   // C
  int64_t out_channels = 0;  // M
  int64_t group = 1;
  WindowGeometry window;  // spatial dims: input, kernel, strides, dilations, pads, output

  Shape x_shape() const;  // [N, C, in...]
  Shape w_shape() const;  // [M, C / group, kernel...]
  Shape y_shape() const;  // [N, M, out...]
  friend bool operator==(const ConvParams&, const ConvParams&) = default;
};

// Conv's attributes as parsed at build time.
struct ConvAttributes {
  WindowAttributes window;
  int64_t group = 1;
};

Result<ConvAttributes> read_conv_attributes(const KernelInfo& info);

// X and W of a convolution or its transpose: [N, C, D1, ...] and a filter of
// the same rank, no negative dims.
Status check_image_and_filter(const Shape& x, const Shape& w);

// Checks X and W against each other and the attributes, and resolves the
// output shape. kernel_shape defaults to W's spatial dims.
Result<ConvParams> make_conv_params(const ConvAttributes& attrs, const Shape& x, const Shape& w);

}  // namespace onnxkit::runtime
