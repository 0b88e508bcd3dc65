#pragma once
// What a Conv's kernel takes over from the nodes after it: Conv -> Relu or
// Clip with constant bounds (ReLU6), and Conv -> Add(residual) [-> Relu or
// Clip] when the residual has the Conv's shape and is computed before it
// (ResNet's blocks). The session finds these with find_conv_fusions; the
// Conv kernels (conv.cpp, blocked.cpp) read them with fused_activation.

#include <cstddef>
#include <unordered_set>
#include <vector>

#include "runtime/fusion.h"
#include "runtime/kernel.h"

namespace onnxkit::runtime::nn {

// Applied by the kernel to output 0; the fused nodes pass values through.
// With `add_residual`, a residual Add came first: the kernel reads one more
// input, input kResidualInput (after X, W and B, whether B is given or not),
// of output 0's shape and layout, and adds it before the activation (ResNet's
// conv -> add -> relu). Clip carries its bounds.
struct FusedActivation {
  static constexpr size_t kResidualInput = 3;
  enum class Kind { none, relu, clip };
  Kind kind = Kind::none;
  float min = 0, max = 0;  // clip's
  bool add_residual = false;
  // In the element's own precision; NaN goes through.
  template <class T>
  T apply(T v) const {
    if (kind == Kind::relu) return v < T(0) ? T(0) : v;
    if (kind == Kind::clip) return v < T(min) ? T(min) : (v > T(max) ? T(max) : v);
    return v;
  }
};

// What the session fused into the Conv `info` builds (KernelInfo::fusion);
// nothing for a Conv it fused nothing into.
FusedActivation fused_activation(const KernelInfo& info);

// The Conv fusions of `order` (one graph's nodes, topologically sorted). A
// Conv in `blocked` (runtime/layout.h) fuses an Add only when the Add is
// blocked too and the residual is produced blocked, so that it is at hand in
// the Conv's layout.
ProducerFusions find_conv_fusions(const std::vector<ir::Node*>& order, int64_t opset, const ConstantOf& constant_of,
                                  const IsReturned& is_returned, const SameShape& same_shape,
                                  const std::unordered_set<const ir::Node*>& blocked);

}  // namespace onnxkit::runtime::nn
