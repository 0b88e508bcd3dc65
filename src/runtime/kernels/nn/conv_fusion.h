#pragma once
// What a Conv's kernel takes over from the nodes after it: Conv -> Relu,
// Clip with constant bounds (ReLU6), HardSwish, HardSigmoid or Sigmoid
// (MobileNetV3's and EfficientNet's activations and squeeze-excitation
// gates); Conv -> Sigmoid -> Mul(the Conv's output) (SiLU, as torch exports
// it: the Conv's output read by both); and Conv -> Add(residual) [-> Relu or
// Clip] when the residual has the Conv's shape and is computed before it
// (ResNet's blocks); and a 1x1 Conv -> [activation] -> depthwise 3x3 Conv
// [-> activation], blocked (FusedDepthwise). A BatchNormalization that runs
// blocked takes over the activation after it as well, and a ConvTranspose
// the inference BatchNormalization and activation after it
// (FusedBatchNorm). The session finds these with find_conv_fusions; the
// kernels (conv.cpp, blocked.cpp) read them with fused_activation.

#include <cmath>
#include <cstddef>
#include <tuple>
#include <unordered_set>
#include <utility>
#include <vector>

#include "runtime/fusion.h"
#include "runtime/kernel.h"

namespace onnxkit::runtime::nn {

// Applied by the kernel to output 0; the fused nodes pass values through.
// With `add_residual`, a residual Add came first: the kernel reads one more
// input, input kResidualInput (after X, W and B, whether B is given or not),
// of output 0's shape and layout, and adds it before the activation (ResNet's
// conv -> add -> relu). Clip carries its bounds, HardSigmoid its alpha and
// beta; HardSwish is x * HardSigmoid(x) with alpha 1/6 and beta 1/2, swish
// x * Sigmoid(x).
struct FusedActivation {
  static constexpr size_t kResidualInput = 3;
  enum class Kind { none, relu, clip, hard_sigmoid, hard_swish, sigmoid, swish };
  Kind kind = Kind::none;
  float min = 0, max = 0;     // clip's
  float alpha = 0, beta = 0;  // hard_sigmoid's
  bool add_residual = false;
  // Everything above, to compare or order activations by.
  auto fields() const { return std::tuple(kind, min, max, alpha, beta, add_residual); }
  // {bound, after}: Relu and Clip bound a kernel's outputs as it stores
  // them, the other activations follow in a pass over them; the one this is
  // not is none.
  std::pair<FusedActivation, FusedActivation> split_bound() const {
    if (kind == Kind::relu || kind == Kind::clip) return {*this, FusedActivation{}};
    return {FusedActivation{}, *this};
  }
  // In the element's own precision; NaN goes through.
  template <class T> T apply(T v) const {
    switch (kind) {
      case Kind::none: return v;
      case Kind::relu: return v < T(0) ? T(0) : v;
      case Kind::clip: return v < T(min) ? T(min) : (v > T(max) ? T(max) : v);
      case Kind::hard_sigmoid: return unit_clamp(T(alpha) * v + T(beta));
      case Kind::hard_swish: return v * unit_clamp(v / T(6) + T(0.5));
      case Kind::sigmoid: return logistic(v);
      case Kind::swish: return v * logistic(v);
    }
    return v;
  }

 private:
  template <class T> static T unit_clamp(T v) { return v < T(0) ? T(0) : (v > T(1) ? T(1) : v); }
  template <class T> static T logistic(T v) {  // never exp of a large positive number
    return v >= T(0) ? T(1) / (T(1) + std::exp(-v)) : std::exp(v) / (T(1) + std::exp(v));
  }
};

// `a` (without a residual) over y[0, n) in place, in vectors: as the
// standalone activation ops compute float32.
void activate_floats(const FusedActivation& a, float* y, int64_t n);
// The same over a whole output, in pieces shared by up to `threads` threads.
void activate_floats_shared(const FusedActivation& a, float* y, int64_t n, int threads);

// A depthwise 3x3 Conv (pads 1, stride 1 or 2) reading alone what a 1x1
// Conv of stride 1 gives after its activation: MobileNet's expansion and
// depthwise layers. Both run blocked; the 1x1's kernel runs the pair, as one
// oneDNN primitive where there is one (conv_dnnl.h), so the expanded map
// never goes out to memory and back; the depthwise node passes the value on.
// Its weights are the 1x1's input kWeightsInput, its bias (when it has one)
// input kBiasInput.
struct FusedDepthwise {
  static constexpr size_t kWeightsInput = 3, kBiasInput = 4;
  int64_t stride = 0;  // 0: none is fused
  bool has_bias = false;
  FusedActivation activation;  // the depthwise Conv's own
};

// An inference BatchNormalization with constant statistics after a
// ConvTranspose (a decoder's upsampling: DBNet's head, U-Nets), which its
// kernel folds into its weights and bias; the activation after it applies.
// Its scale, B, mean and var are the kernel's inputs kInput to kInput + 3.
struct FusedBatchNorm {
  static constexpr size_t kInput = 3;
  bool fused = false;
  float epsilon = 1e-5f;
};

// What the session fused into a Conv or ConvTranspose (KernelInfo::fusion).
struct ConvFusion {
  FusedActivation activation;
  FusedDepthwise depthwise;
  FusedBatchNorm batch_norm;  // ConvTranspose's
};

// What the session fused into the Conv `info` builds; nothing for a Conv it
// fused nothing into.
FusedActivation fused_activation(const KernelInfo& info);
FusedDepthwise fused_depthwise(const KernelInfo& info);
FusedBatchNorm fused_batch_norm(const KernelInfo& info);

// The Conv fusions of `order` (one graph's nodes, topologically sorted). A
// Conv in `blocked` (runtime/layout.h) fuses an Add only when the Add is
// blocked too and the residual is produced blocked, so that it is at hand in
// the Conv's layout.
ProducerFusions find_conv_fusions(const std::vector<ir::Node*>& order, int64_t opset, const ConstantOf& constant_of,
                                  const IsReturned& is_returned, const SameShape& same_shape,
                                  const std::unordered_set<const ir::Node*>& blocked);

}  // namespace onnxkit::runtime::nn
