#include "runtime/kernels/window.h"

#include <algorithm>

namespace onnxkit::runtime {

Result<AutoPad> parse_auto_pad(const std::string& text) {
  if (text == "NOTSET" || text.empty()) return AutoPad::notset;
  if (text == "SAME_UPPER") return AutoPad::same_upper;
  if (text == "SAME_LOWER") return AutoPad::same_lower;
  if (text == "VALID") return AutoPad::valid;
  return make_error("auto_pad '{}' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", text);
}

Result<WindowAttributes> read_window_attributes(const KernelInfo& info) {
  WindowAttributes a;
  ONNXKIT_ASSIGN(a.auto_pad, parse_auto_pad(info.attr_string("auto_pad", "NOTSET")));
  a.kernel_shape = info.attr_ints("kernel_shape");
  a.strides = info.attr_ints("strides");
  a.dilations = info.attr_ints("dilations");
  a.pads = info.attr_ints("pads");
  a.ceil_mode = info.attr_int("ceil_mode", 0) != 0;
  for (int64_t k : a.kernel_shape)
    if (k < 1) return make_error("kernel_shape {} has a dim below 1", shape_to_string(a.kernel_shape));
  for (int64_t s : a.strides)
    if (s < 1) return make_error("strides {} has a value below 1", shape_to_string(a.strides));
  for (int64_t d : a.dilations)
    if (d < 1) return make_error("dilations {} has a value below 1", shape_to_string(a.dilations));
  for (int64_t p : a.pads)
    if (p < 0) return make_error("pads {} has a negative value", shape_to_string(a.pads));
  if (a.pads.size() % 2 != 0) return make_error("pads {} has an odd number of values", shape_to_string(a.pads));
  ONNXKIT_TRY(check_attribute_range(a.kernel_shape, "attribute kernel_shape"));
  ONNXKIT_TRY(check_attribute_range(a.strides, "attribute strides"));
  ONNXKIT_TRY(check_attribute_range(a.dilations, "attribute dilations"));
  ONNXKIT_TRY(check_attribute_range(a.pads, "attribute pads"));
  return a;
}

int64_t WindowGeometry::in_size() const { return shape_size(in); }
int64_t WindowGeometry::out_size() const { return shape_size(out); }
int64_t WindowGeometry::kernel_size() const { return shape_size(kernel); }

Result<WindowGeometry> resolve_window(const WindowAttributes& attrs, const std::vector<int64_t>& in,
                                      const std::vector<int64_t>& kernel) {
  const size_t rank = in.size();
  auto per_axis = [&](const std::vector<int64_t>& v, const char* name, int64_t fallback) -> Result<std::vector<int64_t>> {
    if (v.empty()) return std::vector<int64_t>(rank, fallback);
    if (v.size() != rank)
      return make_error("attribute {} has {} values ({}), the input has {} spatial dims", name, v.size(), shape_to_string(v),
                        rank);
    return v;
  };
  WindowGeometry g;
  g.in = in;
  g.kernel = kernel;
  if (kernel.size() != rank)
    return make_error("kernel_shape {} has {} dims, the input has {} spatial dims", shape_to_string(kernel), kernel.size(), rank);
  ONNXKIT_ASSIGN(g.strides, per_axis(attrs.strides, "strides", 1));
  ONNXKIT_ASSIGN(g.dilations, per_axis(attrs.dilations, "dilations", 1));
  g.pads_begin.assign(rank, 0);
  g.pads_end.assign(rank, 0);
  if (attrs.auto_pad == AutoPad::notset && !attrs.pads.empty()) {
    if (attrs.pads.size() != 2 * rank)
      return make_error("pads {} has {} values, expected {} (begin and end of {} spatial dims)", shape_to_string(attrs.pads),
                        attrs.pads.size(), 2 * rank, rank);
    for (size_t i = 0; i < rank; ++i) {
      g.pads_begin[i] = attrs.pads[i];
      g.pads_end[i] = attrs.pads[rank + i];
    }
  }
  g.out.assign(rank, 0);
  for (size_t i = 0; i < rank; ++i) {
    if (in[i] < 0) return make_error("spatial dim {} is negative ({})", i, in[i]);
    const int64_t extent = (kernel[i] - 1) * g.dilations[i] + 1;  // the dilated window
    const int64_t s = g.strides[i];
    switch (attrs.auto_pad) {
      case AutoPad::same_upper:
      case AutoPad::same_lower: {
        g.out[i] = ceil_div(in[i], s);
        const int64_t total = std::max<int64_t>(0, (g.out[i] - 1) * s + extent - in[i]);
        // The odd pixel goes to the end for SAME_UPPER, the beginning for SAME_LOWER.
        const int64_t small = total / 2, large = total - total / 2;
        g.pads_begin[i] = attrs.auto_pad == AutoPad::same_upper ? small : large;
        g.pads_end[i] = attrs.auto_pad == AutoPad::same_upper ? large : small;
        break;
      }
      case AutoPad::valid:
      case AutoPad::notset: {
        const int64_t span = in[i] + g.pads_begin[i] + g.pads_end[i] - extent;
        if (span < 0)
          return make_error("spatial dim {}: the window ({} with dilation) does not fit: it is larger than the padded input ({})",
                            i, extent, in[i] + g.pads_begin[i] + g.pads_end[i]);
        if (attrs.ceil_mode && attrs.auto_pad == AutoPad::notset) {
          g.out[i] = ceil_div(span, s) + 1;
          // A last window that would start in the end padding is dropped.
          if ((g.out[i] - 1) * s >= in[i] + g.pads_begin[i]) --g.out[i];
        } else {
          g.out[i] = span / s + 1;
        }
        break;
      }
    }
  }
  return g;
}

Shape ConvParams::x_shape() const {
  Shape s{batch, in_channels};
  s.insert(s.end(), window.in.begin(), window.in.end());
  return s;
}

Shape ConvParams::w_shape() const {
  Shape s{out_channels, group > 0 ? in_channels / group : 0};
  s.insert(s.end(), window.kernel.begin(), window.kernel.end());
  return s;
}

Shape ConvParams::y_shape() const {
  Shape s{batch, out_channels};
  s.insert(s.end(), window.out.begin(), window.out.end());
  return s;
}

Result<ConvAttributes> read_conv_attributes(const KernelInfo& info) {
  ConvAttributes a;
  ONNXKIT_ASSIGN(a.window, read_window_attributes(info));
  a.window.ceil_mode = false;  // not a Conv attribute
  a.group = info.attr_int("group", 1);
  if (a.group < 1) return make_error("group is {}, must be at least 1", a.group);
  return a;
}

Status check_image_and_filter(const Shape& x, const Shape& w) {
  if (x.size() < 3)
    return make_error("X must have shape [N, C, D1, ...] with at least one spatial dim, got {}", shape_to_string(x));
  if (w.size() != x.size())
    return make_error("W has rank {} ({}), X has rank {} ({}): they must match (the same rank)", w.size(), shape_to_string(w),
                      x.size(), shape_to_string(x));
  for (int64_t d : x)
    if (d < 0) return make_error("X has a negative dim: {}", shape_to_string(x));
  for (int64_t d : w)
    if (d < 0) return make_error("W has a negative dim: {}", shape_to_string(w));
  return {};
}

Result<ConvParams> make_conv_params(const ConvAttributes& attrs, const Shape& x, const Shape& w) {
  ONNXKIT_TRY(check_image_and_filter(x, w));
  ConvParams p;
  p.batch = x[0];
  p.in_channels = x[1];
  p.out_channels = w[0];
  p.group = attrs.group;
  if (p.in_channels % p.group != 0)
    return make_error("X has {} channels, which group {} does not divide", p.in_channels, p.group);
  if (p.out_channels % p.group != 0)
    return make_error("W has {} output channels (dim 0), not a multiple of group {}", p.out_channels, p.group);
  if (w[1] != p.in_channels / p.group)
    return make_error("W {} expects {} input channels per group, X {} has {} channels in {} group(s) ({} per group)",
                      shape_to_string(w), w[1], shape_to_string(x), p.in_channels, p.group, p.in_channels / p.group);
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  if (!attrs.window.kernel_shape.empty() && attrs.window.kernel_shape != kernel)
    return make_error("kernel_shape {} does not match the spatial dims of W {}", shape_to_string(attrs.window.kernel_shape),
                      shape_to_string(w));
  for (int64_t k : kernel)
    if (k < 1) return make_error("W {} has an empty kernel dim", shape_to_string(w));
  ONNXKIT_ASSIGN(p.window, resolve_window(attrs.window, std::vector<int64_t>(x.begin() + 2, x.end()), kernel));
  ONNXKIT_TRY(checked_size(p.y_shape(), "Y"));
  return p;
}

}  // namespace onnxkit::runtime
