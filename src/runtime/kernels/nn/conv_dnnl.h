#pragma once
// Convolution on oneDNN (Debian libdnnl), float32: the engine real models
// run on. Weights are reordered once into the layout the primitive prefers;
// activations stay plain N,C,spatial so neighbouring kernels see ordinary
// tensors. Tested against conv_reference.

#include <memory>

#include "runtime/kernels/nn/conv.h"

namespace onnxkit::runtime::nn {

// An activation oneDNN applies to the convolution's output in place.
enum class FusedActivation { none, relu };

class DnnlConv {
 public:
  // Null when oneDNN has no primitive for these parameters.
  static std::unique_ptr<DnnlConv> create(const ConvParams& params, const Tensor& w, const Tensor* bias,
                                          FusedActivation activation = FusedActivation::none);
  ~DnnlConv();

  // y (allocated, of params.y_shape()) = act(conv(x) + bias). Thread-safe.
  Status run(const Tensor& x, Tensor& y) const;

  struct State;

 private:
  explicit DnnlConv(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace onnxkit::runtime::nn
