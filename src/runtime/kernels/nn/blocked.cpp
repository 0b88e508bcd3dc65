#include "runtime/kernels/nn/blocked.h"

#include <oneapi/dnnl/dnnl.hpp>

#if defined(__SSE__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>

#include "runtime/kernels/cpu_clones.h"
#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/indexing/indexing.h"
#include "runtime/kernels/nn/conv.h"
#include "runtime/kernels/nn/conv_dnnl.h"
#include "runtime/kernels/nn/depthwise.h"
#include "runtime/kernels/nn/nn.h"
#include "runtime/kernels/nn/winograd.h"
#include "runtime/kernels/tensor/tensor.h"
#include "runtime/parallel.h"
#include "runtime/session.h"

namespace onnxkit::runtime::nn {
namespace {

int64_t blocks(int64_t c) { return ceil_div(c, channel_block()); }

// The logical [N, C, H, W] of a blocked tensor with C channels.
Result<Shape> logical_shape(const Tensor& t, int64_t channels) {
  if (t.rank() != 5 || t.dim(4) != channel_block() || t.dim(1) != blocks(channels))
    return make_error("expected a blocked tensor of {} channels, got {}", channels, shape_to_string(t.shape()));
  return Shape{t.dim(0), channels, t.dim(2), t.dim(3)};
}

// A plain activation [N, channels, H, W] of float32, or an error saying what it is.
Status check_plain_activation(const Tensor& x, int64_t channels) {
  if (x.rank() == 4 && x.dim(1) == channels && x.dtype() == DataType::float32) return {};
  return make_error("X must be float32 [N, {}, H, W] ({} = W's input channels per group times group), got {} {}", channels,
                    channels, to_string(x.dtype()), shape_to_string(x.shape()));
}

// What a convolution needs to run as a matrix times a vector (see
// BlockedConv::is_vector_product): float weights [M, C, 1, 1], the bias, the
// activation fused into it; w is null for any other convolution.
struct VectorProduct {
  std::shared_ptr<const Tensor> w, bias;
  FusedActivation activation;
};

// The depthwise convolution a 1x1 one runs after itself (FusedDepthwise).
struct DepthwiseAfter {
  ConvAttributes attrs;
  Shape w_shape;
  std::shared_ptr<DnnlConvCache> pair;   // both as one primitive (DepthwiseStage); null on a plain input
  std::shared_ptr<DnnlConvCache> alone;  // the depthwise one on the 1x1's output, where the pair has no primitive
};

class BlockedConv final : public Kernel {
 public:
  BlockedConv(ConvAttributes attrs, Shape w_shape, std::shared_ptr<DnnlConvCache> engine,
              std::shared_ptr<const WinogradConv> winograd, std::unique_ptr<const DepthwiseConv> own_depthwise, bool plain_input,
              std::optional<size_t> residual_input, VectorProduct vector_product, std::optional<DepthwiseAfter> depthwise)
      : attrs_(std::move(attrs)),
        w_shape_(std::move(w_shape)),
        engine_(std::move(engine)),
        winograd_(std::move(winograd)),
        own_depthwise_(std::move(own_depthwise)),
        in_channels_(w_shape_[1] * attrs_.group),
        plain_input_(plain_input),
        residual_input_(residual_input),
        vector_product_(std::move(vector_product)),
        depthwise_(std::move(depthwise)) {}

  Status compute(KernelContext& ctx) const override {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    const int threads = available_threads();
    std::shared_ptr<const Resolved> r;
    {
      std::lock_guard lock(mutex_);
      r = last_;
    }
    if (r == nullptr || r->threads != threads || x->dtype() != DataType::float32 || r->x != x->shape()) {
      ONNXKIT_ASSIGN(r, resolve(*x, threads));
      std::lock_guard lock(mutex_);
      last_ = r;
    }
    Tensor& out = ctx.output(0, DataType::float32, r->y);
    const Tensor* residual = nullptr;
    if (residual_input_) {
      ONNXKIT_ASSIGN(residual, ctx.tensor(*residual_input_));
    }
    if (!depthwise_) return run_own(*r, *x, out, residual);
    if (r->pair != nullptr) return r->pair->run(*x, out);
    Tensor own(DataType::float32, r->own_y);
    ONNXKIT_TRY(run_own(*r, *x, own, residual));
    return r->depthwise->run(own, out);
  }

 private:
  // What an input shape resolves to at a thread count. A model's runs see
  // the same shapes every time, and resolving them (the parameters, the
  // primitive cache's lookup) took 5% of MobileNetV3-small's run, so the
  // last one is kept.
  struct Resolved {
    Shape x;      // as given: blocked, or plain with plain_input_
    int threads;  // available_threads() when resolved
    ConvParams params;
    Shape y;  // blocked
    bool winograd;
    bool vector;                           // run_vector_product's case
    bool own_depthwise;                    // own_depthwise_ runs it
    std::shared_ptr<const DnnlConv> conv;  // null with winograd, vector or own_depthwise
    // With depthwise_: the 1x1's own output (blocked), and either the pair's
    // primitive or the depthwise convolution's alone (never neither).
    Shape own_y;
    std::shared_ptr<const DnnlConv> pair, depthwise;
  };

  // This convolution's own work, into `y` of its own output's shape.
  Status run_own(const Resolved& r, const Tensor& x, Tensor& y, const Tensor* residual) const {
    if (r.vector) return run_vector_product(r.params, x, y);
    if (r.winograd) return winograd_->run(r.params, x, y, residual);
    if (r.own_depthwise) return own_depthwise_->run(r.params, x, y);
    if (r.conv == nullptr) return make_error("oneDNN has no blocked convolution for input {}", shape_to_string(x.shape()));
    return r.conv->run(x, y, residual);
  }

  // A 1x1 convolution on a 1x1 map of one image (squeeze-excitation's fully
  // connected layers) is a matrix times a vector: its blocked input and
  // output are the channel vectors themselves, padded to whole blocks. Its
  // time is reading the weights, which two threads do in half the time;
  // oneDNN's 1x1 kernel shares it among threads no faster than on one (a
  // 576 -> 144 layer: 7.4 us on one, 7.6 on two).
  bool is_vector_product(const ConvParams& p) const {
    const WindowGeometry& g = p.window;
    return vector_product_.w != nullptr && !plain_input_ && !residual_input_ && p.batch == 1 && p.group == 1 &&
           g.in == std::vector<int64_t>{1, 1} && g.kernel == std::vector<int64_t>{1, 1} && g.out == std::vector<int64_t>{1, 1} &&
           g.pads_begin == std::vector<int64_t>{0, 0};  // else the output reads padding
  }

  Status run_vector_product(const ConvParams& p, const Tensor& x, Tensor& y) const {
    const int64_t m = p.out_channels, c = p.in_channels;
    const float* w = vector_product_.w->data<float>();
    const float* bias = vector_product_.bias != nullptr ? vector_product_.bias->data<float>() : nullptr;
    const float* xv = x.data<float>();
    float* yv = y.mutable_data<float>();
    // Below this many weights one thread reads them before a second wakes.
    constexpr int64_t kParallelWeights = 16384;
    constexpr int64_t kLine = 16;
    parallel_ranges((m + kLine - 1) / kLine, m * c >= kParallelWeights, [&](int64_t first_line, int64_t last_line) {
      const int64_t first = first_line * kLine, last = std::min(m, last_line * kLine);
      row_product_floats(true, xv, w + first * c, c, c, last - first, 1.0f, 0.0f, yv + first);
      for (int64_t o = first; o < last; ++o) yv[o] = vector_product_.activation.apply(yv[o] + (bias != nullptr ? bias[o] : 0.0f));
    });
    std::fill(yv + m, yv + y.numel(), 0.0f);  // the last block's padded channels
    return {};
  }

  Result<std::shared_ptr<const Resolved>> resolve(const Tensor& x, int threads) const {
    Shape shape = x.shape();
    if (plain_input_) {
      ONNXKIT_TRY(check_plain_activation(x, in_channels_));
    } else {
      ONNXKIT_ASSIGN(shape, logical_shape(x, in_channels_));
    }
    auto r = std::make_shared<Resolved>();
    r->x = x.shape();
    r->threads = threads;
    ONNXKIT_ASSIGN(r->params, make_conv_params(attrs_, shape, w_shape_));
    const Shape y = r->params.y_shape();
    r->y = blocked_shape(y[0], y[1], y[2], y[3]);
    if (depthwise_) {
      r->own_y = r->y;
      ONNXKIT_ASSIGN(const ConvParams depthwise, make_conv_params(depthwise_->attrs, y, depthwise_->w_shape));
      const Shape z = depthwise.y_shape();
      r->y = blocked_shape(z[0], z[1], z[2], z[3]);
      if (depthwise_->pair != nullptr) r->pair = depthwise_->pair->get(r->params);
      if (r->pair != nullptr) return std::shared_ptr<const Resolved>(std::move(r));
      r->depthwise = depthwise_->alone->get(depthwise);
      if (r->depthwise == nullptr)
        return make_error("oneDNN has no blocked convolution for the depthwise input {}", shape_to_string(y));
    }
    r->vector = is_vector_product(r->params);
    r->winograd = !r->vector && winograd_ != nullptr && winograd_->pays_off(r->params);
    r->own_depthwise = own_depthwise_ != nullptr && own_depthwise_->fits(r->params);
    if (!r->winograd && !r->vector && !r->own_depthwise) r->conv = engine_->get(r->params);
    return std::shared_ptr<const Resolved>(std::move(r));
  }

  ConvAttributes attrs_;
  Shape w_shape_;
  std::shared_ptr<DnnlConvCache> engine_;
  std::shared_ptr<const WinogradConv> winograd_;        // null where it does not apply
  std::unique_ptr<const DepthwiseConv> own_depthwise_;  // the same
  int64_t in_channels_;
  bool plain_input_;
  std::optional<size_t> residual_input_;  // see FusedActivation::add_residual
  VectorProduct vector_product_;
  std::optional<DepthwiseAfter> depthwise_;
  mutable std::mutex mutex_;
  mutable std::shared_ptr<const Resolved> last_;
};

enum class PoolKind { max, average };

class BlockedPool final : public Kernel {
 public:
  BlockedPool(PoolKind kind, bool global, WindowAttributes window, bool include_pad, int64_t channels)
      : kind_(kind), global_(global), window_(std::move(window)), include_pad_(include_pad), channels_(channels) {}

  Status compute(KernelContext& ctx) const override {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    ONNXKIT_ASSIGN(Shape shape, logical_shape(*x, channels_));
    const int64_t planes = shape[0] * blocks(channels_);
    if (kind_ == PoolKind::average && global_) {
      Tensor& y = ctx.output(0, DataType::float32, blocked_shape(shape[0], shape[1], 1, 1));
      global_average_blocked(x->data<float>(), y.mutable_data<float>(), planes, shape[2] * shape[3], channel_block());
      return {};
    }
    WindowAttributes window = window_;
    if (global_) window.kernel_shape = {shape[2], shape[3]};  // a GlobalMaxPool: one window over the map
    ONNXKIT_ASSIGN(WindowGeometry g, resolve_window(window, {shape[2], shape[3]}, window.kernel_shape));
    Tensor& y = ctx.output(0, DataType::float32, blocked_shape(shape[0], shape[1], g.out[0], g.out[1]));
    if (kind_ == PoolKind::max) max_pool_blocked(x->data<float>(), y.mutable_data<float>(), planes, g, channel_block());
    else average_pool_blocked(x->data<float>(), y.mutable_data<float>(), planes, g, include_pad_, channel_block());
    return {};
  }

 private:
  PoolKind kind_;
  bool global_;
  WindowAttributes window_;
  bool include_pad_;
  int64_t channels_;
};

// y = min(max(x * a + b, lo), hi) lane by lane over `pixels` pixels of
// `lanes` channels (8 or 16) that share a and b, 8 lanes at a time; NaN
// goes through, as in Relu and Clip. Built for AVX2 too, where it is twice
// as wide as the baseline's SSE.
ONNXKIT_AVX2_CLONES void scale_shift_clamp(const float* x, float* y, int64_t pixels, int64_t lanes, const float* a,
                                           const float* b, float lo, float hi) {
  for (int64_t p = 0; p < pixels; ++p)
    for (int64_t l0 = 0; l0 < lanes; l0 += 8) {
      const float* in = x + p * lanes + l0;
      float* out = y + p * lanes + l0;
#pragma omp simd
      for (int64_t l = 0; l < 8; ++l) {
        float v = in[l] * a[l0 + l] + b[l0 + l];
        v = v < lo ? lo : v;
        out[l] = v > hi ? hi : v;
      }
    }
}

// Inference BatchNormalization on blocked activations, y = x * a + b per
// channel (a = scale / sqrt(var + epsilon), b = B - mean * a, in float as
// the plain kernel has them), then the activation fused after it: a
// DenseNet layer's BN -> ReLU before its conv, on its growing Concat, which
// otherwise went to the plain layout and back every layer (18% of the
// run). The padded channels get a = b = 0 and stay zero.
class BlockedBatchNorm final : public Kernel {
 public:
  BlockedBatchNorm(std::vector<float> a, std::vector<float> b, FusedActivation activation, int64_t channels)
      : a_(std::move(a)), b_(std::move(b)), activation_(activation), channels_(channels) {}

  Status compute(KernelContext& ctx) const override {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    ONNXKIT_TRY(logical_shape(*x, channels_));
    Tensor& y = ctx.output(0, DataType::float32, x->shape());
    using Kind = FusedActivation::Kind;
    const Kind kind = activation_.kind;
    const bool clamps = kind == Kind::none || kind == Kind::relu || kind == Kind::clip;
    const float inf = std::numeric_limits<float>::infinity();
    const float lo = kind == Kind::relu ? 0.0f : kind == Kind::clip ? activation_.min : -inf;
    const float hi = kind == Kind::clip ? activation_.max : inf;
    const int64_t B = channel_block(), blocks_per_image = x->dim(1), pixels = x->dim(2) * x->dim(3);
    const float* src = x->data<float>();
    float* dst = y.mutable_data<float>();
    // Pixels [begin, end) of the whole tensor, plane by plane (a plane shares a and b).
    parallel_ranges(x->dim(0) * blocks_per_image * pixels, x->numel() >= kParallelWork, [&](int64_t begin, int64_t end) {
      for (int64_t at = begin; at < end;) {
        const int64_t plane = at / pixels, stop = std::min(end, (plane + 1) * pixels);
        const float* a = a_.data() + (plane % blocks_per_image) * B;
        const float* b = b_.data() + (plane % blocks_per_image) * B;
        if (clamps) {
          scale_shift_clamp(src + at * B, dst + at * B, stop - at, B, a, b, lo, hi);
        } else {
          for (int64_t i = at * B; i < stop * B; ++i) dst[i] = activation_.apply(src[i] * a[i % B] + b[i % B]);
        }
        at = stop;
      }
    });
    return {};
  }

 private:
  std::vector<float> a_, b_;  // one per channel, padded with zeros to whole blocks
  FusedActivation activation_;
  int64_t channels_;
};

// Zero padding of H and W on blocked planes: the Pad torch exports before an
// AveragePool that counts its padding (Inception's pool branches) or with
// no pads at all (DenseNet's transitions), which otherwise sent the whole
// activation to the plain layout and back around it.
class BlockedPad final : public Kernel {
 public:
  BlockedPad(std::array<int64_t, 4> pads, int64_t channels) : pads_(pads), channels_(channels) {}

  Status compute(KernelContext& ctx) const override {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    ONNXKIT_TRY(logical_shape(*x, channels_));
    // Named, not a structured binding: clang 14 (the fuzz build) lets no
    // lambda capture one.
    const int64_t top = pads_[0], left = pads_[1], bottom = pads_[2], right = pads_[3];
    if (top == 0 && left == 0 && bottom == 0 && right == 0) {
      ctx.set_output(0, ctx.input_value(0));
      return {};
    }
    const int64_t B = channel_block(), planes = x->dim(0) * x->dim(1), ih = x->dim(2), iw = x->dim(3);
    const int64_t oh = ih + top + bottom, ow = iw + left + right;
    Tensor& y = ctx.output(0, DataType::float32, {x->dim(0), x->dim(1), oh, ow, B});
    const float* src = x->data<float>();
    float* dst = y.mutable_data<float>();
    parallel_for(planes, planes * oh * ow * B >= kParallelWork, [&](int64_t plane) {
      const float* in = src + plane * ih * iw * B;
      float* out = dst + plane * oh * ow * B;
      std::fill_n(out, top * ow * B, 0.0f);
      for (int64_t r = 0; r < ih; ++r) {
        float* row = out + (top + r) * ow * B;
        std::fill_n(row, left * B, 0.0f);
        std::memcpy(row + left * B, in + r * iw * B, iw * B * sizeof(float));
        std::fill_n(row + (left + iw) * B, right * B, 0.0f);
      }
      std::fill_n(out + (top + ih) * ow * B, bottom * ow * B, 0.0f);
    });
    return {};
  }

 private:
  std::array<int64_t, 4> pads_;  // top, left, bottom, right
  int64_t channels_;
};

// Reorders out of the blocked layout go by tiles of 64 pixels of one channel
// block (4 KiB with blocks of 16), which stay in L1 while their channels
// are written out: body(image, block, first, end) for each, the pixels
// [first, end) of `block` of `image`. Each thread takes a contiguous run of
// blocks, as oneDNN's convolutions share them out, so it reads what its own
// core wrote: shared tile by tile, ConvNeXt-T's channels-last Transposes read
// the other core's cache and took 2.4 ms at 2 threads against 1.6 at 1 (1.4
// by runs).
template <class Body> void for_each_pixel_tile(int64_t images, int64_t blocks, int64_t pixels, bool worth_threads, Body&& body) {
  constexpr int64_t kPixelTile = 64;
  const int64_t tiles = (pixels + kPixelTile - 1) / kPixelTile;
  parallel_ranges(images * blocks * tiles, worth_threads, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t first = t % tiles * kPixelTile;
      body(t / tiles / blocks, t / tiles % blocks, first, std::min(pixels, first + kPixelTile));
    }
  });
}

class ToBlocked final : public Kernel {
 public:
  explicit ToBlocked(int64_t channels) : channels_(channels) {}
  Status compute(KernelContext& ctx) const override {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    ONNXKIT_TRY(check_plain_activation(*x, channels_));
    const int64_t n = x->dim(0), c = channels_, hw = x->dim(2) * x->dim(3), cb = blocks(c), B = channel_block();
    Tensor& y = ctx.output(0, DataType::float32, blocked_shape(n, c, x->dim(2), x->dim(3)));
    const float* src = x->data<float>();
    float* dst = y.mutable_data<float>();
    // By tiles of pixels, each channel's run read whole (see ToPlain): pixel
    // by pixel, 16 channels at a time, a DBNet head's 96 x 160 x 160 input
    // took 3.2 ms; element by element within the tiles, a 32-channel 112 x
    // 112 map took 250 us (ONNX Runtime's reorder 59), by squares in
    // registers 62.
    for_each_pixel_tile(n, cb, hw, n * cb * hw >= (1 << 14), [&](int64_t i, int64_t b, int64_t first, int64_t end) {
      float* out = dst + (i * cb + b) * hw * B;
      const int64_t lanes = std::min(B, c - b * B);
      transpose_floats(src + (i * c + b * B) * hw + first, hw, out + first * B, B, end - first, lanes);
      if (lanes < B)
        for (int64_t p = first; p < end; ++p) std::fill(out + p * B + lanes, out + (p + 1) * B, 0.0f);
    });
    return {};
  }

 private:
  int64_t channels_;
};

class ToPlain final : public Kernel {
 public:
  explicit ToPlain(int64_t channels) : channels_(channels) {}
  Status compute(KernelContext& ctx) const override {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    ONNXKIT_ASSIGN(Shape shape, logical_shape(*x, channels_));
    const int64_t n = shape[0], c = channels_, hw = shape[2] * shape[3], cb = blocks(c), B = channel_block();
    Tensor& y = ctx.output(0, DataType::float32, shape);
    const float* src = x->data<float>();
    float* dst = y.mutable_data<float>();
    // By tiles: channel by channel over a whole map, a 56x56 one
    // (ConvNeXt's first stage) read each cache line sixteen times from L2:
    // 1.53 -> 0.98 ms for ConvNeXt-T's 22 reorders at 1 thread.
    for_each_pixel_tile(n, cb, hw, n * cb * hw >= (1 << 14), [&](int64_t i, int64_t b, int64_t first, int64_t end) {
      const float* in = src + (i * cb + b) * hw * B;
      const int64_t lanes = std::min(B, c - b * B);
      transpose_floats(in + first * B, B, dst + (i * c + b * B) * hw + first, hw, lanes, end - first);
    });
    return {};
  }

 private:
  int64_t channels_;
};

// Channel blocks [first_block, first_block + C / B) of a blocked
// [1, blocks, H, W, B] buffer: where a Concat's input goes in its output.
class ChannelBlocks final : public BufferPart {
 public:
  ChannelBlocks(int64_t blocks, int64_t first_block) : blocks_(blocks), first_block_(first_block) {}
  std::optional<Tensor> place(Tensor& buffer, DataType type, const Shape& shape) const override {
    if (type != DataType::float32 || shape.size() != 5 || shape[0] != 1 || first_block_ + shape[1] > blocks_) return std::nullopt;
    if (!buffer.defined()) buffer = Tensor(type, {1, blocks_, shape[2], shape[3], shape[4]});
    if (buffer.dim(2) != shape[2] || buffer.dim(3) != shape[3] || buffer.dim(4) != shape[4]) return std::nullopt;
    return buffer.part(first_block_ * shape[2] * shape[3] * shape[4], shape);
  }

 private:
  int64_t blocks_;
  int64_t first_block_;
};

class BlockedConcat final : public Kernel {
 public:
  Status compute(KernelContext& ctx) const override {
    const int64_t B = channel_block();
    std::vector<const Tensor*> xs;
    int64_t total_blocks = 0;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      ONNXKIT_ASSIGN(const Tensor* t, ctx.tensor(i));
      if (t->rank() != 5 ||
          (!xs.empty() && (t->dim(0) != xs[0]->dim(0) || t->dim(2) != xs[0]->dim(2) || t->dim(3) != xs[0]->dim(3))))
        return make_error("input {} has shape {}, which does not concatenate", i, shape_to_string(t->shape()));
      xs.push_back(t);
      total_blocks += t->dim(1);
    }
    const int64_t n = xs[0]->dim(0), plane = xs[0]->dim(2) * xs[0]->dim(3) * B;
    Tensor& y = ctx.output(0, DataType::float32, {n, total_blocks, xs[0]->dim(2), xs[0]->dim(3), B});
    float* dst = y.mutable_data<float>();
    for (int64_t i = 0; i < n; ++i) {
      int64_t at = 0;
      for (const Tensor* t : xs) {
        const int64_t chunk = t->dim(1) * plane;
        float* to = dst + (i * total_blocks + at) * plane;
        const float* from = t->data<float>() + i * chunk;
        if (from != to) std::memcpy(to, from, chunk * sizeof(float));  // else its producer wrote it here (InPlaceWrites)
        at += t->dim(1);
      }
    }
    return {};
  }
};

// The lanes of one output block that one input block gives: lane l takes
// lane index[l] of block `block` of input `input` where bit l of mask is set.
struct BlockPiece {
  size_t input;
  int64_t block;
  uint32_t mask;
  std::array<int32_t, 16> index;
};

// Pieces that fill output block `out_block` of a gather (ChannelMove), its
// padded lanes left out (zero).
std::vector<BlockPiece> block_pieces(const std::vector<ChannelMove::Source>& from, int64_t out_block) {
  const int64_t B = channel_block();
  std::vector<BlockPiece> pieces;
  for (int64_t l = 0; l < B && out_block * B + l < static_cast<int64_t>(from.size()); ++l) {
    const ChannelMove::Source& s = from[static_cast<size_t>(out_block * B + l)];
    auto it = std::find_if(pieces.begin(), pieces.end(),
                           [&](const BlockPiece& p) { return p.input == s.input && p.block == s.channel / B; });
    if (it == pieces.end()) it = pieces.insert(pieces.end(), BlockPiece{s.input, s.channel / B, 0, {}});
    it->mask |= 1u << l;
    it->index[static_cast<size_t>(l)] = static_cast<int32_t>(s.channel % B);
  }
  return pieces;
}

// Output block planes of `pixels` pixels from the pieces' input planes
// src[i]: lane by lane here, below one masked permute per piece and pixel.
void gather_plane_scalar(const float* const* src, const std::vector<BlockPiece>& pieces, float* out, int64_t pixels) {
  const int64_t B = channel_block();
  std::fill_n(out, pixels * B, 0.0f);
  for (size_t i = 0; i < pieces.size(); ++i)
    for (int64_t l = 0; l < B; ++l)
      if (pieces[i].mask >> l & 1u)
        for (int64_t p = 0; p < pixels; ++p) out[p * B + l] = src[i][p * B + pieces[i].index[static_cast<size_t>(l)]];
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ONNXKIT_GATHER_X86 1
__attribute__((target("avx512f"))) void gather_plane_avx512(const float* const* src, const std::vector<BlockPiece>& pieces,
                                                            float* out, int64_t pixels) {
  __m512i index[16];
  for (size_t i = 0; i < pieces.size(); ++i) index[i] = _mm512_loadu_si512(pieces[i].index.data());
  for (int64_t p = 0; p < pixels; ++p) {
    __m512 acc = _mm512_setzero_ps();
    for (size_t i = 0; i < pieces.size(); ++i)
      acc = _mm512_mask_permutexvar_ps(acc, static_cast<__mmask16>(pieces[i].mask), index[i], _mm512_loadu_ps(src[i] + p * 16));
    _mm512_storeu_ps(out + p * 16, acc);
  }
}

__attribute__((target("avx2"))) void gather_plane_avx2(const float* const* src, const std::vector<BlockPiece>& pieces, float* out,
                                                       int64_t pixels) {
  __m256i index[8];
  __m256 mask[8];
  for (size_t i = 0; i < pieces.size(); ++i) {
    index[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pieces[i].index.data()));
    alignas(32) std::array<int32_t, 8> bits{};
    for (size_t l = 0; l < 8; ++l) bits[l] = (pieces[i].mask >> l & 1u) ? -1 : 0;
    mask[i] = _mm256_castsi256_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(bits.data())));
  }
  for (int64_t p = 0; p < pixels; ++p) {
    __m256 acc = _mm256_setzero_ps();
    for (size_t i = 0; i < pieces.size(); ++i)
      acc = _mm256_blendv_ps(acc, _mm256_permutevar8x32_ps(_mm256_loadu_ps(src[i] + p * 8), index[i]), mask[i]);
    _mm256_storeu_ps(out + p * 8, acc);
  }
}
#endif

void gather_plane(const float* const* src, const std::vector<BlockPiece>& pieces, float* out, int64_t pixels) {
  const int64_t B = channel_block();
  // A whole block as it is: a copy (the blocks of a Concat's whole-block inputs).
  if (pieces.size() == 1 && pieces[0].mask == (1u << B) - 1) {
    bool identity = true;
    for (int64_t l = 0; l < B; ++l) identity = identity && pieces[0].index[static_cast<size_t>(l)] == l;
    if (identity) {
      std::memcpy(out, src[0], static_cast<size_t>(pixels * B) * sizeof(float));
      return;
    }
  }
#if defined(ONNXKIT_GATHER_X86)
  // B is 16 only where oneDNN runs AVX-512 (channel_block).
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (B == 16) return gather_plane_avx512(src, pieces, out, pixels);
  if (B == 8 && avx2) return gather_plane_avx2(src, pieces, out, pixels);
#endif
  gather_plane_scalar(src, pieces, out, pixels);
}

// The run-time checks of a ChannelMove's node: its shape input must give
// what the plan proved from the model's shapes.
struct MoveAttributes {
  bool allowzero = false;  // a Reshape's
  bool slice = false;      // a Slice with its bounds as inputs (opset 10)
  int64_t start = 0;       // a Shape's
  std::optional<int64_t> end;
};

Status check_move_inputs(const MoveAttributes& attrs, const ChannelMove& move, KernelContext& ctx, const Shape& logical) {
  if (!move.reshape_in.empty()) {
    ONNXKIT_ASSIGN(const Tensor* target, ctx.tensor(1));
    ONNXKIT_ASSIGN(std::vector<int64_t> dims, read_int64s(*target));
    auto around = [&](const std::vector<int64_t>& middle) {
      Shape s{logical[0]};
      s.insert(s.end(), middle.begin(), middle.end());
      s.insert(s.end(), {logical[2], logical[3]});
      return s;
    };
    ONNXKIT_ASSIGN(Shape out, tensor_ops::reshape_target(around(move.reshape_in), dims, attrs.allowzero));
    if (out != around(move.reshape_out))
      return make_error("shape {} is not the channel shuffle planned for the blocked layout ({})", shape_to_string(out),
                        shape_to_string(around(move.reshape_out)));
  }
  if (attrs.slice) {
    std::vector<std::vector<int64_t>> args;
    for (size_t i = 1; i < 5; ++i) {
      if (!ctx.has_input(i)) break;
      ONNXKIT_ASSIGN(std::vector<int64_t> v, read_int64s(ctx.input(i)));
      args.push_back(std::move(v));
    }
    args.resize(4);
    const std::optional<std::pair<int64_t, int64_t>> range = channel_slice(logical[1], args[0], args[1], args[2], args[3]);
    const int64_t first = move.from.empty() ? 0 : move.from.front().channel;
    if (!range || range->first != first || range->second != first + static_cast<int64_t>(move.from.size()))
      return make_error("starts, ends, axes and steps do not slice the channels planned for the blocked layout");
  }
  return {};
}

// A ChannelMove's kernel: Shape, a view, or a gather into a new blocked tensor.
class BlockedChannelMove final : public Kernel {
 public:
  BlockedChannelMove(MoveAttributes attrs, ChannelMove move) : attrs_(std::move(attrs)), move_(std::move(move)) {
    if (move_.kind != ChannelMove::Kind::gather) return;
    for (int64_t b = 0; b < blocks(static_cast<int64_t>(move_.from.size())); ++b) pieces_.push_back(block_pieces(move_.from, b));
  }

  Status compute(KernelContext& ctx) const override {
    std::vector<const Tensor*> xs;
    Shape logical;
    for (size_t i = 0; i < move_.in_channels.size(); ++i) {
      ONNXKIT_ASSIGN(const Tensor* t, ctx.tensor(i));
      ONNXKIT_ASSIGN(Shape s, logical_shape(*t, move_.in_channels[i]));
      if (i > 0 && (s[0] != logical[0] || s[2] != logical[2] || s[3] != logical[3]))
        return make_error("input {} has shape {}, which does not concatenate", i, shape_to_string(s));
      if (i == 0) logical = s;
      xs.push_back(t);
    }
    ONNXKIT_TRY(check_move_inputs(attrs_, move_, ctx, logical));
    if (move_.kind == ChannelMove::Kind::shape) return shape(ctx, logical);
    if (move_.kind == ChannelMove::Kind::channels_last) return channels_last(ctx, *xs[0], logical);
    if (move_.kind == ChannelMove::Kind::view) {
      ctx.set_output(0, ctx.input_value(0));
      return {};
    }
    const int64_t n = logical[0], pixels = logical[2] * logical[3], B = channel_block();
    const int64_t out_blocks = static_cast<int64_t>(pieces_.size());
    Tensor& y =
        ctx.output(0, DataType::float32, blocked_shape(n, static_cast<int64_t>(move_.from.size()), logical[2], logical[3]));
    float* dst = y.mutable_data<float>();
    parallel_for(n * out_blocks, y.numel() >= kParallelWork, [&](int64_t plane) {
      const int64_t image = plane / out_blocks;
      const std::vector<BlockPiece>& pieces = pieces_[static_cast<size_t>(plane % out_blocks)];
      std::array<const float*, 16> src{};
      for (size_t i = 0; i < pieces.size(); ++i) {
        const Tensor& x = *xs[pieces[i].input];
        src[i] = x.data<float>() + ((image * x.dim(1) + pieces[i].block) * pixels) * B;
      }
      gather_plane(src.data(), pieces, dst + plane * pixels * B, pixels);
    });
    return {};
  }

 private:
  // Shape's output: the logical dims, as the plain kernel gives them.
  Status shape(KernelContext& ctx, const Shape& logical) const {
    ctx.set_output(0, tensor_ops::shape_output(logical, attrs_.start, attrs_.end));
    return {};
  }

  // Plain [N, H, W, C]: a pixel's channels are its blocks one after the
  // other, the last one cut to the channels there are.
  Status channels_last(KernelContext& ctx, const Tensor& x, const Shape& logical) const {
    const int64_t n = logical[0], c = logical[1], pixels = logical[2] * logical[3], cb = blocks(c), B = channel_block();
    Tensor& y = ctx.output(0, DataType::float32, {n, logical[2], logical[3], c});
    const float* src = x.data<float>();
    float* dst = y.mutable_data<float>();
    for_each_pixel_tile(n, cb, pixels, y.numel() >= kParallelWork, [&](int64_t image, int64_t b, int64_t first, int64_t end) {
      const float* in = src + (image * cb + b) * pixels * B;
      float* out = dst + image * pixels * c + b * B;
      const int64_t lanes = std::min(B, c - b * B);
      for (int64_t p = first; p < end; ++p) std::copy_n(in + p * B, lanes, out + p * c);
    });
    return {};
  }

  MoveAttributes attrs_;
  ChannelMove move_;
  std::vector<std::vector<BlockPiece>> pieces_;  // per output block, for a gather
};

}  // namespace

int64_t channel_block() {
  static const int64_t block = [] {
    const auto avx512 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
    return (static_cast<unsigned>(dnnl::get_effective_cpu_isa()) & avx512) == avx512 ? 16 : 8;
  }();
  return block;
}

Shape blocked_shape(int64_t n, int64_t c, int64_t h, int64_t w) { return {n, blocks(c), h, w, channel_block()}; }

namespace {

bool conv_can_run_blocked(const ir::Node& node, const Tensor* w, const Tensor* bias) {
  if (!node.in_onnx_domain() || w == nullptr || w->dtype() != DataType::float32 || w->rank() != 4) return false;
  if (node.input(2) != nullptr && bias == nullptr) return false;
  // Any grouping: groups that split the channel blocks run on a copy in
  // another layout (conv_dnnl.h), still faster than plain with reorders.
  const int64_t group = node.attr_int("group", 1);
  return group > 0 && w->dim(0) % group == 0;
}

bool pool_can_run_blocked(const ir::Node& node) {
  if (!node.in_onnx_domain()) return false;
  const std::string& op = node.op_type();
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") return true;
  if (op != "MaxPool" && op != "AveragePool") return false;
  if (node.attr_ints("kernel_shape").size() != 2) return false;
  for (int64_t d : node.attr_ints("dilations"))
    if (d != 1) return false;
  if (op == "MaxPool" && node.output(1) != nullptr) return false;  // Indices are defined on the plain layout
  return node.attr_int("storage_order", 0) == 0;
}

// The depthwise convolution fused into the 1x1 one `info` builds, if any
// (FusedDepthwise).
Result<std::optional<DepthwiseAfter>> depthwise_after(const KernelInfo& info, const Tensor& w, const Tensor* b,
                                                      FusedActivation activation, bool plain_input) {
  const FusedDepthwise fused = fused_depthwise(info);
  if (fused.stride == 0) return std::optional<DepthwiseAfter>();
  const Tensor* dw = info.constant_input(FusedDepthwise::kWeightsInput);
  const Tensor* dw_bias = fused.has_bias ? info.constant_input(FusedDepthwise::kBiasInput) : nullptr;
  if (dw == nullptr || (fused.has_bias && dw_bias == nullptr))
    return make_error("the depthwise convolution fused into this one has no constant weights");
  DepthwiseAfter after;
  after.w_shape = dw->shape();
  after.attrs.group = dw->dim(0);
  after.attrs.window.kernel_shape = {3, 3};
  after.attrs.window.strides = {fused.stride, fused.stride};
  after.attrs.window.pads = {1, 1, 1, 1};
  const bool prepack = info.options().prepack_weights;
  after.alone = DnnlConvCache::shared(*dw, dw_bias, fused.activation, ActivationLayout::blocked, prepack);
  DepthwiseStage stage{std::make_shared<const Tensor>(*dw),
                       dw_bias != nullptr ? std::make_shared<const Tensor>(*dw_bias) : nullptr, fused.stride, fused.activation};
  if (!plain_input)
    after.pair = std::make_shared<DnnlConvCache>(std::make_shared<const Tensor>(w),
                                                 b != nullptr ? std::make_shared<const Tensor>(*b) : nullptr, activation,
                                                 ActivationLayout::blocked, prepack, std::move(stage));
  return std::optional<DepthwiseAfter>(std::move(after));
}

Result<std::unique_ptr<Kernel>> make_blocked_conv(const KernelInfo& info, bool plain_input) {
  ONNXKIT_ASSIGN(ConvAttributes attrs, read_conv_attributes(info));
  const Tensor* w = info.constant_input(1);
  const Tensor* b = info.has_input(2) ? info.constant_input(2) : nullptr;
  if (!conv_can_run_blocked(info.node(), w, b)) return make_error("cannot run in the blocked layout");
  const FusedActivation activation = fused_activation(info);
  auto engine =
      DnnlConvCache::shared(*w, b, activation, plain_input ? ActivationLayout::plain_to_blocked : ActivationLayout::blocked,
                            info.options().prepack_weights);
  std::optional<size_t> residual;
  if (activation.add_residual) residual = FusedActivation::kResidualInput;
  // Winograd runs on transformed weights, a copy beside the model's.
  std::shared_ptr<const WinogradConv> winograd =
      plain_input || !info.options().prepack_weights ? nullptr : WinogradConv::shared(attrs, *w, b, activation);
  VectorProduct vector_product;
  if (w->rank() == 4 && w->dim(2) == 1 && w->dim(3) == 1 && attrs.group == 1 &&
      (b == nullptr || b->dtype() == DataType::float32)) {
    vector_product.w = std::make_shared<const Tensor>(*w);  // shares the model's storage
    if (b != nullptr) vector_product.bias = std::make_shared<const Tensor>(*b);
    vector_product.activation = activation;
  }
  // Ours reads blocked inputs only (a first layer reading the plain input
  // is no depthwise one in the models we know).
  std::unique_ptr<const DepthwiseConv> own_depthwise = plain_input ? nullptr : DepthwiseConv::create(attrs, *w, b, activation);
  ONNXKIT_ASSIGN(std::optional<DepthwiseAfter> depthwise, depthwise_after(info, *w, b, activation, plain_input));
  return std::unique_ptr<Kernel>(std::make_unique<BlockedConv>(attrs, w->shape(), engine, std::move(winograd),
                                                               std::move(own_depthwise), plain_input, residual,
                                                               std::move(vector_product), std::move(depthwise)));
}

}  // namespace

std::optional<std::array<const Tensor*, 4>> batch_norm_params(const ir::Node& node, int64_t channels,
                                                              const InputConstant& constant) {
  if (!node.in_onnx_domain() || node.inputs().size() != 5 || node.outputs().size() != 1) return std::nullopt;
  if (node.attr_int("training_mode", 0) != 0 || node.attr_int("spatial", 1) != 1) return std::nullopt;
  std::array<const Tensor*, 4> params{};
  for (size_t i = 0; i < 4; ++i) {
    params[i] = constant(i + 1);
    if (params[i] == nullptr || params[i]->dtype() != DataType::float32 || params[i]->numel() != channels) return std::nullopt;
  }
  return params;
}

BatchNormAffine batch_norm_affine(const std::array<const Tensor*, 4>& params, double epsilon) {
  const auto [scale, shift, mean, var] = params;
  BatchNormAffine affine;
  for (int64_t c = 0; c < scale->numel(); ++c) {
    affine.a.push_back(scale->data<float>()[c] / std::sqrt(static_cast<double>(var->data<float>()[c]) + epsilon));
    affine.b.push_back(shift->data<float>()[c] - mean->data<float>()[c] * affine.a.back());
  }
  return affine;
}

std::optional<std::array<int64_t, 4>> spatial_zero_pads(const ir::Node& node, const InputConstant& constant) {
  if (!node.in_onnx_domain() || node.outputs().size() != 1 || node.attr_string("mode", "constant") != "constant")
    return std::nullopt;
  std::vector<int64_t> pads;
  if (node.inputs().size() == 1) {  // Pad-2 to Pad-10
    if (node.attr_float("value", 0.0f) != 0.0f) return std::nullopt;
    pads = node.attr_ints("pads");
  } else {
    if (node.inputs().size() > 3) return std::nullopt;  // axes
    const Tensor* p = constant(1);
    if (p == nullptr || p->dtype() != DataType::int64) return std::nullopt;
    pads.assign(p->data<int64_t>(), p->data<int64_t>() + p->numel());
    if (node.inputs().size() == 3 && node.input(2) != nullptr) {
      const Tensor* value = constant(2);
      if (value == nullptr || value->dtype() != DataType::float32 || value->numel() != 1 || value->data<float>()[0] != 0.0f)
        return std::nullopt;
    }
  }
  if (pads.size() != 8 || pads[0] != 0 || pads[1] != 0 || pads[4] != 0 || pads[5] != 0) return std::nullopt;
  for (int64_t p : pads)
    if (p < 0) return std::nullopt;
  return std::array<int64_t, 4>{pads[2], pads[3], pads[6], pads[7]};
}

namespace {

Result<std::unique_ptr<Kernel>> make_blocked_batch_norm(const KernelInfo& info, int64_t channels) {
  auto params = batch_norm_params(info.node(), channels, [&](size_t i) { return info.constant_input(i); });
  if (!params) return make_error("cannot run in the blocked layout");
  const BatchNormAffine affine = batch_norm_affine(*params, info.attr_float("epsilon", 1e-5f));
  std::vector<float> a(static_cast<size_t>(blocks(channels) * channel_block()), 0.0f), b(a.size(), 0.0f);
  std::copy(affine.a.begin(), affine.a.end(), a.begin());
  std::copy(affine.b.begin(), affine.b.end(), b.begin());
  return std::unique_ptr<Kernel>(
      std::make_unique<BlockedBatchNorm>(std::move(a), std::move(b), fused_activation(info), channels));
}

Result<std::unique_ptr<Kernel>> make_blocked_pool(const KernelInfo& info, int64_t channels) {
  const std::string& op = info.node().op_type();
  const bool global = op.rfind("Global", 0) == 0;
  const PoolKind kind = op.find("Max") != std::string::npos ? PoolKind::max : PoolKind::average;
  WindowAttributes window;
  if (!global) {
    ONNXKIT_ASSIGN(window, read_window_attributes(info));
  }
  bool include_pad = info.attr_int("count_include_pad", 0) != 0;
  if (kind == PoolKind::average && !global) add_pads_before(info, window, include_pad);
  return std::unique_ptr<Kernel>(std::make_unique<BlockedPool>(kind, global, window, include_pad, channels));
}

int64_t conv_output_channels(const ir::Node& node, const ConstantOf& constant) {
  const Tensor* w = constant(node.input(1));
  return node.outputs().size() == 1 && conv_can_run_blocked(node, w, constant(node.input(2))) ? w->dim(0) : -1;
}

// Along channels, of inputs whose C are whole blocks: the blocks follow one
// another.
int64_t concat_output_channels(const ir::Node& node, const ChannelsOf& channels_of) {
  const int64_t axis = node.attr_int("axis", 1);
  int64_t total = 0;
  bool whole_blocks = axis == 1 || axis == -3;
  for (const ir::Value* v : node.inputs()) {
    const int64_t c = channels_of(v);
    whole_blocks = whole_blocks && c > 0 && c % channel_block() == 0;
    total += c;
  }
  return whole_blocks ? total : -1;
}

}  // namespace

RegionEntry region_entry(const ir::Node& node, const ConstantOf& constant) {
  const Tensor& w = *constant(node.input(1));  // a Conv's, constant or it would not be blocked
  const int64_t group = node.attr_int("group", 1);
  return {group == 1 && w.rank() == 4 && w.dim(1) < channel_block(), w.dim(1) * group};
}

int64_t blocked_output_channels(const ir::Node& node, const ChannelsOf& channels_of, const ConstantOf& constant) {
  if (node.op_type() == "Conv") return conv_output_channels(node, constant);
  const int64_t in = channels_of(node.input(0));
  if (in < 0) return -1;
  if (node.op_type() == "Concat") return concat_output_channels(node, channels_of);
  if (node.op_type() == "Pad") return spatial_zero_pads(node, [&](size_t i) { return constant(node.input(i)); }) ? in : -1;
  if (node.op_type() == "Resize") return indexing::resize_runs_blocked(node, constant) ? in : -1;
  if (node.op_type() == "BatchNormalization")
    return batch_norm_params(node, in, [&](size_t i) { return constant(node.input(i)); }) ? in : -1;
  return pool_can_run_blocked(node) ? in : -1;
}

std::vector<size_t> blocked_activation_inputs(const ir::Node& node) {
  if (node.op_type() != "Concat") return {0};
  std::vector<size_t> all(node.inputs().size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return all;
}

std::optional<std::pair<int64_t, int64_t>> channel_slice(int64_t channels, const std::vector<int64_t>& starts,
                                                         const std::vector<int64_t>& ends, const std::vector<int64_t>& axes,
                                                         const std::vector<int64_t>& steps) {
  if (starts.size() != 1 || ends.size() != 1 || axes.size() != 1 || (axes[0] != 1 && axes[0] != -3)) return std::nullopt;
  if (!steps.empty() && (steps.size() != 1 || steps[0] != 1)) return std::nullopt;
  auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + channels : v, int64_t{0}, channels); };
  const int64_t first = clamp(starts[0]), last = clamp(ends[0]);
  if (first >= last) return std::nullopt;  // an empty slice has no blocked form
  return std::pair{first, last};
}

std::vector<int64_t> shuffled_channels(const std::vector<int64_t>& factors, const std::vector<int64_t>& order) {
  const size_t k = factors.size();
  std::vector<int64_t> stride(k, 1);  // of each factor in the input's channel index
  for (size_t i = k - 1; i > 0; --i) stride[i - 1] = stride[i] * factors[i];
  int64_t total = 1;
  for (int64_t f : factors) total *= f;
  std::vector<int64_t> from(static_cast<size_t>(total));
  std::vector<int64_t> digit(k, 0);  // the output channel's index along each output axis
  for (int64_t c = 0; c < total; ++c) {
    int64_t rest = c, source = 0;
    for (size_t i = k; i-- > 0;) {
      const int64_t f = factors[static_cast<size_t>(order[i])];
      digit[i] = rest % f;
      rest /= f;
      source += digit[i] * stride[static_cast<size_t>(order[i])];
    }
    from[static_cast<size_t>(c)] = source;
  }
  return from;
}

Result<std::unique_ptr<Kernel>> make_blocked_kernel(const KernelInfo& info, bool plain_input, int64_t channels,
                                                    const ChannelMove* move) {
  const std::string& op = info.node().op_type();
  if (move != nullptr) {
    MoveAttributes attrs;
    attrs.allowzero = info.attr_int("allowzero", 0) != 0;
    attrs.slice = op == "Slice" && info.opset() >= 10;
    attrs.start = info.attr_int("start", 0);
    if (info.has_attr("end")) attrs.end = info.attr_int("end", 0);
    return std::unique_ptr<Kernel>(std::make_unique<BlockedChannelMove>(std::move(attrs), *move));
  }
  if (op == "Conv") return make_blocked_conv(info, plain_input);
  if (op == "Concat") return std::unique_ptr<Kernel>(std::make_unique<BlockedConcat>());
  if (op == "BatchNormalization") return make_blocked_batch_norm(info, channels);
  if (op == "Resize") return indexing::make_blocked_resize(info, channels);
  if (op == "Pad") {
    auto pads = spatial_zero_pads(info.node(), [&](size_t i) { return info.constant_input(i); });
    if (!pads) return make_error("cannot run in the blocked layout");
    return std::unique_ptr<Kernel>(std::make_unique<BlockedPad>(*pads, channels));
  }
  return make_blocked_pool(info, channels);
}

InPlaceWrites plan_in_place_writes(const std::vector<ir::Node*>& order, const std::unordered_set<const ir::Node*>& blocked,
                                   const ChannelsOf& channels_of, const ComputedBy& computed_by) {
  // Concats that share a buffer: each one's inputs begin with all of the
  // previous one's, so its output is a prefix of the next one's (channel
  // blocks lead at batch 1). DenseNet concatenates every feature map of a
  // block again for each layer: copied, that is quadratic in the layers.
  struct Shared {
    std::vector<const ir::Node*> concats;
    std::vector<std::pair<const ir::Node*, int64_t>> writers;  // with their first block
    int64_t blocks = 0;
  };
  std::vector<Shared> shared;
  std::unordered_set<const ir::Node*> writes_into_concat;
  auto extends = [](const ir::Node* concat, const ir::Node* before) {
    const auto& inputs = concat->inputs();
    const auto& prefix = before->inputs();
    return inputs.size() > prefix.size() && std::equal(prefix.begin(), prefix.end(), inputs.begin());
  };
  for (const ir::Node* concat : order) {
    if (!concat->is_onnx_op("Concat") || !blocked.count(concat) || computed_by(concat->output(0)) != concat) continue;
    if (concat_output_channels(*concat, channels_of) < 0) continue;  // a ChannelMove's gather, block by block
    auto it = std::find_if(shared.begin(), shared.end(), [&](const Shared& s) { return extends(concat, s.concats.back()); });
    Shared& buffer = it != shared.end() ? *it : shared.emplace_back();
    const size_t first_new = buffer.concats.empty() ? 0 : buffer.concats.back()->inputs().size();
    buffer.concats.push_back(concat);
    int64_t blocks = 0;
    for (size_t i = 0; i < concat->inputs().size(); ++i) {
      const ir::Value* v = concat->input(i);
      const ir::Node* writer = computed_by(v);
      // Convs and pools write their output where the buffer's part puts it.
      const bool writes = writer != nullptr && blocked.count(writer) &&
                          (writer->is_onnx_op("Conv") || writer->is_onnx_op("MaxPool") || writer->is_onnx_op("AveragePool"));
      if (i >= first_new && writes && writes_into_concat.insert(writer).second) buffer.writers.emplace_back(writer, blocks);
      blocks += channels_of(v) / channel_block();  // whole blocks, or the Concat would not be blocked
    }
    buffer.blocks = blocks;
  }
  InPlaceWrites plan;
  for (const Shared& buffer : shared) {
    if (buffer.writers.empty() && buffer.concats.size() == 1) continue;
    for (const auto& [writer, first_block] : buffer.writers)
      plan.writes.push_back({writer, plan.buffers, std::make_shared<ChannelBlocks>(buffer.blocks, first_block), false});
    // Each Concat's output is the buffer's first blocks; the last one holds the buffer after it.
    for (const ir::Node* concat : buffer.concats)
      plan.writes.push_back(
          {concat, plan.buffers, std::make_shared<ChannelBlocks>(buffer.blocks, 0), concat == buffer.concats.back()});
    ++plan.buffers;
  }
  return plan;
}

std::unique_ptr<Kernel> make_to_blocked(int64_t channels) { return std::make_unique<ToBlocked>(channels); }
std::unique_ptr<Kernel> make_to_plain(int64_t channels) { return std::make_unique<ToPlain>(channels); }

}  // namespace onnxkit::runtime::nn
