#pragma once
// Convolution on oneDNN (Debian libdnnl), float32: the engine real models
// run on. Weights are reordered once into the layout the primitive prefers;
// activations stay plain N,C,spatial so neighbouring kernels see ordinary
// tensors. Tested against conv_reference.

#include <oneapi/dnnl/dnnl_types.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "runtime/kernels/nn/conv.h"

namespace dnnl {
struct engine;
struct stream;
}  // namespace dnnl

namespace onnxkit::runtime::nn {

// The CPU engine every oneDNN primitive of the runtime runs on.
dnnl::engine& cpu_engine();

// This thread's stream on cpu_engine(), and a scratchpad of at least `bytes`
// that it keeps for its next primitive: a run allocates neither, and runs
// on other threads have their own. Valid until the thread's next call.
dnnl::stream& thread_stream();
void* thread_scratchpad(size_t bytes);

// oneDNN's format of blocked activations (blocked.h): nChw16c or nChw8c, as
// channel_block() says.
dnnl_format_tag_t blocked_format();

// How activations are laid out in memory: plain [N, C, spatial...], or
// blocked (blocked.h) with zeros in the padded channels. A network's first
// layer, with fewer input channels than a block, reads plain and writes
// blocked: oneDNN has fast kernels for that and only a slow one for a padded
// blocked input. A grouped convolution whose groups split the blocks runs
// blocked on a copy in a layout oneDNN has fast kernels for.
enum class ActivationLayout { plain, blocked, plain_to_blocked };

// An error unless `residual` (FusedActivation::add_residual) is null or has
// y's type and shape.
Status check_residual(const Tensor* residual, const Tensor& y);

// A depthwise 3x3 convolution with pads of 1 that a 1x1 convolution's
// primitive applies to its own output as it makes it (oneDNN's depthwise
// post-op): the 1x1's output never goes out to memory. MobileNetV2's
// expanded maps are 4.8 MB; written by one primitive and read back by the
// next they cost the pair 20-30%, fused they stay in cache.
struct DepthwiseStage {
  std::shared_ptr<const Tensor> w, bias;  // [M, 1, 3, 3]; [M] or null
  int64_t stride = 1;                     // 1 or 2
  FusedActivation activation;             // after it
};

class DnnlConv {
 public:
  // Null when oneDNN has no primitive for these parameters. oneDNN splits
  // the work for the OpenMP threads there are when the primitive is made,
  // and uses that many on every run. `sibling`, made for the same
  // parameters and another thread count, lends its reordered weights where
  // the layouts agree. With `reorder_weights` false no copy of `w` is kept
  // (`w` must outlive the result): each run reorders it into a buffer, or
  // for a weight too large for that, reads it in its plain layout, unless
  // trimming dead taps made a new tensor anyway.
  // With `depthwise`, for a blocked 1x1 convolution, the primitive runs that
  // too and writes its output; null when oneDNN has no fast kernel for the
  // pair.
  static std::unique_ptr<DnnlConv> create(const ConvParams& params, const Tensor& w, const Tensor* bias,
                                          FusedActivation activation = {}, ActivationLayout layout = ActivationLayout::plain,
                                          const DnnlConv* sibling = nullptr, bool reorder_weights = true,
                                          const DepthwiseStage* depthwise = nullptr);
  ~DnnlConv();

  // y = act(conv(x) + bias [+ residual]), all in the layout the primitive
  // was made for and allocated by the caller; the residual is given exactly
  // when the primitive was made with add_residual. Thread-safe.
  Status run(const Tensor& x, Tensor& y, const Tensor* residual = nullptr) const;

  struct State;
  enum class Weights;

 private:
  explicit DnnlConv(std::unique_ptr<State> state);
  void swish_in_place(float* y, int64_t n) const;
  // The primitive for `p` with `weights` (W's layout, trimmed to p's kernel),
  // or null when oneDNN has none.
  // With a `staging` format the primitive runs in that layout on copies of
  // blocked activations (conv_dnnl.cpp's staging_formats).
  static std::unique_ptr<State> make_state(const ConvParams& p, const void* weights, const Tensor* bias,
                                           FusedActivation activation, ActivationLayout layout, const DnnlConv* sibling,
                                           Weights placement, dnnl_format_tag_t staging = dnnl_format_tag_undef,
                                           const DepthwiseStage* depthwise = nullptr);
  std::unique_ptr<State> state_;
};

// oneDNN primitives for the input shapes a Conv node has met, and the thread
// counts its runs have used (runtime/contention.h holds runs to one thread;
// a convolution too small to share gets one), built on first use. Shared
// by concurrent runs.
class DnnlConvCache {
 public:
  // `reorder_weights`: as DnnlConv::create (SessionOptions::prepack_weights).
  // With `depthwise` its primitives run that too (DnnlConv::create).
  DnnlConvCache(std::shared_ptr<const Tensor> w, std::shared_ptr<const Tensor> bias, FusedActivation activation,
                ActivationLayout layout, bool reorder_weights = true, std::optional<DepthwiseStage> depthwise = std::nullopt)
      : w_(std::move(w)),
        bias_(std::move(bias)),
        activation_(activation),
        layout_(layout),
        reorder_weights_(reorder_weights),
        depthwise_(std::move(depthwise)) {}

  // One cache for every node that reads these weights with these settings
  // (the nodes of a module applied to several inputs: an RPN head over each
  // FPN level), so that they share the reordered weights. It lives while a
  // node holds it.
  static std::shared_ptr<DnnlConvCache> shared(const Tensor& w, const Tensor* bias, FusedActivation activation,
                                               ActivationLayout layout, bool reorder_weights);

  // The primitive for `p`, or null when oneDNN cannot run it.
  std::shared_ptr<const DnnlConv> get(const ConvParams& p);

 private:
  static constexpr size_t kMaxShapes = 32;  // (geometry, threads) pairs, of all the nodes sharing it
  std::shared_ptr<const Tensor> w_, bias_;
  FusedActivation activation_;
  ActivationLayout layout_;
  bool reorder_weights_;
  std::optional<DepthwiseStage> depthwise_;
  std::mutex mutex_;
  // By geometry (input shape, strides, pads, dilations: nodes sharing
  // weights may differ in them) and threads.
  std::vector<std::pair<std::pair<ConvParams, int>, std::shared_ptr<const DnnlConv>>> cache_;
};

}  // namespace onnxkit::runtime::nn
