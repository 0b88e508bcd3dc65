#include "runtime/kernels/nn/conv_dnnl.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "runtime/kernels/nn/blocked.h"
#include "runtime/kernels/nn/conv_padding.h"
#include "runtime/kernels/nn/conv_taps.h"
#include "runtime/parallel.h"

namespace onnxkit::runtime::nn {
dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

namespace {
struct ThreadResources {
  dnnl::stream stream{cpu_engine()};
  std::unique_ptr<std::byte, decltype(&std::free)> scratchpad{nullptr, &std::free};
  size_t scratchpad_bytes = 0;
};
ThreadResources& thread_resources() {
  thread_local ThreadResources resources;
  return resources;
}
}  // namespace

dnnl::stream& thread_stream() { return thread_resources().stream; }

void* thread_scratchpad(size_t bytes) {
  ThreadResources& r = thread_resources();
  if (bytes > r.scratchpad_bytes) {
    constexpr size_t kAlign = 64;  // oneDNN's own alignment for buffers it allocates
    const size_t size = (bytes + kAlign - 1) / kAlign * kAlign;
    r.scratchpad.reset(static_cast<std::byte*>(std::aligned_alloc(kAlign, size)));
    r.scratchpad_bytes = r.scratchpad ? size : 0;
  }
  return r.scratchpad.get();
}

dnnl_format_tag_t blocked_format() { return channel_block() == 16 ? dnnl_nChw16c : dnnl_nChw8c; }

namespace {

dnnl::memory::format_tag plain_tag(size_t rank) {
  using tag = dnnl::memory::format_tag;
  switch (rank) {
    case 3: return tag::abc;
    case 4: return tag::abcd;
    case 5: return tag::abcde;
    default: return tag::abcdef;
  }
}

dnnl::memory::dims dims_of(const Shape& shape) { return dnnl::memory::dims(shape.begin(), shape.end()); }

// The convolution without the kernel taps that read only padding, and its
// weights. Dilated convolutions on maps smaller than their reach (DeepLabV3's
// rates 24 and 36 on a 14x14 map) have taps that fall in the padding for
// every output; they add zeros, and oneDNN has only its reference kernel for
// padding that wide. Trimmed, such a 3x3 is the 1x1 it computes. The pads
// shrink by the taps removed, so the output and every live tap's reads stay
// the same; a dim is trimmed only as far as its pads stay non-negative.
struct TrimmedConv {
  ConvParams params;
  std::vector<float> weights;  // empty when no tap was removed
};

TrimmedConv trim_dead_taps(const ConvParams& p, const Tensor& w) {
  TrimmedConv trimmed{p, {}};
  WindowGeometry& g = trimmed.params.window;
  std::vector<int64_t> first(g.rank()), kept(g.rank());
  bool any = false;
  for (size_t i = 0; i < g.rank(); ++i) {
    const int64_t k = g.kernel[i], d = g.dilations[i], s = g.strides[i];
    auto live = [&](int64_t tap) {                      // some output reads inside the input through this tap
      const int64_t start = tap * d - g.pads_begin[i];  // the index output 0 reads
      const int64_t o = start >= 0 ? 0 : (-start + s - 1) / s;
      return o < g.out[i] && start + o * s < g.in[i];
    };
    int64_t lo = 0, hi = k - 1;
    while (lo < k && !live(lo)) ++lo;
    while (hi > lo && !live(hi)) --hi;
    if (lo == k) lo = hi = 0;  // every tap reads padding: keep one, the output is the bias
    lo = std::min(lo, g.pads_begin[i] / d);
    hi = std::max(hi, k - 1 - g.pads_end[i] / d);
    first[i] = lo;
    kept[i] = hi - lo + 1;
    any = any || kept[i] < k;
  }
  if (!any || w.dtype() != DataType::float32) return trimmed;
  for (size_t i = 0; i < g.rank(); ++i) {
    g.pads_begin[i] -= first[i] * g.dilations[i];
    g.pads_end[i] -= (g.kernel[i] - first[i] - kept[i]) * g.dilations[i];
    g.kernel[i] = kept[i];
  }
  // Copy the kept window of every [m, c] filter.
  const Shape from = p.w_shape(), to = trimmed.params.w_shape();
  trimmed.weights.resize(static_cast<size_t>(shape_size(to)));
  const float* src = w.data<float>();
  const int64_t filters = from[0] * from[1];
  const int64_t window = shape_size(to) / std::max<int64_t>(filters, 1);
  const int64_t from_window = shape_size(from) / std::max<int64_t>(filters, 1);
  for (int64_t f = 0; f < filters; ++f)
    for (int64_t j = 0; j < window; ++j) {
      int64_t rest = j, offset = 0, stride = 1;
      for (size_t i = g.rank(); i-- > 0;) {
        const int64_t at = rest % kept[i] + first[i];
        rest /= kept[i];
        offset += at * stride;
        stride *= from[i + 2];
      }
      trimmed.weights[static_cast<size_t>(f * window + j)] = src[f * from_window + offset];
    }
  return trimmed;
}

// True when the groups of a grouped convolution do not each cover whole
// blocks of the blocked layout (RegNetX's groups of 24 channels in blocks of
// 16): oneDNN has only its reference kernel for that, a thousand times slower.
bool groups_split_blocks(const ConvParams& p) {
  const int64_t block = channel_block();
  const bool depthwise = p.group == p.in_channels && p.group == p.out_channels;
  return p.group > 1 && !depthwise && ((p.in_channels / p.group) % block != 0 || (p.out_channels / p.group) % block != 0);
}

// The layouts such a convolution runs in instead, on a copy of its blocked
// input, fastest first on RegNetX's and ResNeXt's grouped 3x3s: blocks of 8
// where the groups are whole ones (oneDNN's JIT kernels), channels-last (its
// brgemm kernels, any group width), plain (its gemm, for every case; 2-3x
// slower than the others).
std::vector<dnnl_format_tag_t> staging_formats(const ConvParams& p) {
  std::vector<dnnl_format_tag_t> formats;
  if (channel_block() > 8 && (p.in_channels / p.group) % 8 == 0 && (p.out_channels / p.group) % 8 == 0)
    formats.push_back(dnnl_nChw8c);
  formats.push_back(dnnl_nhwc);
  formats.push_back(dnnl_nchw);
  return formats;
}

}  // namespace

// Where a primitive's weights are: reordered into its layout once (a copy
// kept beside the model's), reordered into a buffer for each run, or read
// in the model's plain layout where they lie.
enum class DnnlConv::Weights { reordered_once, reordered_per_run, in_place };

namespace {
// A weight reordered per run (SessionOptions::prepack_weights false) takes
// its size again while its node runs; above this it is read in place, on
// oneDNN's slower gemm. DeepLabV3-ResNet50's 18 MiB ASPP weights are: 13 MiB
// off simplify's peak (271 MiB, 1.5x its 151 MiB + 64 is 291), 10% slower.
constexpr size_t kMaxWeightsPerRun = size_t{16} << 20;
}  // namespace

struct DnnlConv::State {
  dnnl::convolution_forward primitive;
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::memory weights;  // in the primitive's layout (owned here), or W itself when not reordered
  // Set when `weights` is W and the primitive wants another layout: each run
  // reorders W into a buffer of its own (SessionOptions::prepack_weights false).
  std::optional<dnnl::reorder> weights_in_run;
  dnnl::memory bias;                               // empty when there is none
  dnnl::memory depthwise_weights, depthwise_bias;  // a DepthwiseStage's, in the primitive's layout; else empty
  dnnl::memory::desc src_md, dst_md, scratchpad_md;
  bool binary_residual = false;  // else run() copies the residual into y for a sum post-op
  bool blocked_input = false;
  std::optional<ConvParams> pads_in_run;  // the convolution whose pads run() adds to the input (conv_padding.h)
  bool swish_after = false;               // run() applies Swish to the output (see make_state)
  int threads = 1;                        // the primitive's, which the Swish pass uses too
  // Set when the primitive runs in a staging format (staging_formats, or
  // channels-last for a 1-D convolution): run() reorders the input (and
  // residual) from the session's layout into src_md (dst_md), and the
  // result back. oneDNN's reorders write zeros into the padded channels.
  struct Staging {
    dnnl::memory::desc given_src, given_dst;  // in the session's layout
    dnnl::reorder src_in, dst_out;
    dnnl::reorder residual_in;  // empty without add_residual
  };
  std::optional<Staging> staging;
  // Set when the convolution runs as products per kernel tap (conv_taps.h)
  // instead of a primitive, staged in channels-last (src_md, dst_md).
  std::shared_ptr<const TapProducts> taps;  // shared with siblings
};

namespace {
bool runs_reference(const DnnlConv::State& state) { return std::string(state.pd.impl_info_str()).rfind("ref", 0) == 0; }

// Whether the state's kernel multiplies the taps that read padding too:
// oneDNN's reference and im2col ("x64:gemm:jit") kernels, or any of its
// kernels on a padded copy of the input. Its direct JIT kernels skip them.
bool reads_padding(const DnnlConv::State& state) {
  const std::string impl = state.pd.impl_info_str();
  return impl.rfind("ref", 0) == 0 || impl.find("gemm:jit") != std::string::npos || state.pads_in_run.has_value();
}

// The convolution as per-tap products on channels-last copies, when it
// reads inside its input through at most this share of its taps.
constexpr double kMostLiveTaps = 0.9;

// The reorders between x and y in the session's layout and the state's
// src_md and dst_md, and of a residual into dst_md.
DnnlConv::State::Staging staging_for(const ConvParams& p, ActivationLayout layout, const DnnlConv::State& state, bool residual) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const tag blocked = static_cast<tag>(blocked_format()), plain = plain_tag(p.window.rank() + 2);
  DnnlConv::State::Staging s;
  s.given_src = dnnl::memory::desc(dims_of(p.x_shape()), dt::f32, layout == ActivationLayout::blocked ? blocked : plain);
  s.given_dst = dnnl::memory::desc(dims_of(p.y_shape()), dt::f32, layout == ActivationLayout::plain ? plain : blocked);
  dnnl::engine& engine = cpu_engine();
  s.src_in = dnnl::reorder(dnnl::reorder::primitive_desc(engine, s.given_src, engine, state.src_md));
  s.dst_out = dnnl::reorder(dnnl::reorder::primitive_desc(engine, state.dst_md, engine, s.given_dst));
  if (residual) s.residual_in = dnnl::reorder(dnnl::reorder::primitive_desc(engine, s.given_dst, engine, state.dst_md));
  return s;
}

// A state running `products`, staged in channels-last.
std::unique_ptr<DnnlConv::State> tap_products_state(const ConvParams& p, std::shared_ptr<const TapProducts> products,
                                                    ActivationLayout layout) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  auto state = std::make_unique<DnnlConv::State>();
  state->threads = std::max(1, omp_get_max_threads());
  state->src_md = dnnl::memory::desc(dims_of(p.x_shape()), dt::f32, tag::nhwc);
  state->dst_md = dnnl::memory::desc(dims_of(p.y_shape()), dt::f32, tag::nhwc);
  state->staging = staging_for(p, layout, *state, false);
  state->taps = std::move(products);
  return state;
}

std::unique_ptr<DnnlConv::State> tap_products_state(const ConvParams& p, const float* w, const Tensor* bias,
                                                    FusedActivation activation, ActivationLayout layout) {
  std::unique_ptr<TapProducts> products = TapProducts::create(p, w, bias != nullptr ? bias->data<float>() : nullptr, activation);
  if (products == nullptr || products->live_share() > kMostLiveTaps) return nullptr;
  return tap_products_state(p, std::move(products), layout);
}
}  // namespace

DnnlConv::DnnlConv(std::unique_ptr<State> state) : state_(std::move(state)) {}
DnnlConv::~DnnlConv() = default;

std::unique_ptr<DnnlConv> DnnlConv::create(const ConvParams& conv, const Tensor& w, const Tensor* bias,
                                           FusedActivation activation, ActivationLayout layout, const DnnlConv* sibling,
                                           bool reorder_weights, const DepthwiseStage* depthwise) {
  if (w.dtype() != DataType::float32 || conv.window.rank() < 1 || conv.window.rank() > 3) return nullptr;
  if (depthwise != nullptr) {
    // On weights reordered once, and not on oneDNN's reference kernel. Its
    // generic pair ("ref_fused_convolution", where it has no single kernel:
    // the two JIT primitives through a buffer of the scratchpad, which the
    // runs reuse and so find in cache) is welcome.
    if (layout != ActivationLayout::blocked || !reorder_weights) return nullptr;
    std::unique_ptr<State> state =
        make_state(conv, w.raw(), bias, activation, layout, nullptr, Weights::reordered_once, dnnl_format_tag_undef, depthwise);
    if (state == nullptr || std::string(state->pd.impl_info_str()).rfind("ref:", 0) == 0) return nullptr;
    return std::unique_ptr<DnnlConv>(new DnnlConv(std::move(state)));
  }
  const TrimmedConv trimmed = trim_dead_taps(conv, w);
  const ConvParams& p = trimmed.params;
  const void* weights = trimmed.weights.empty() ? w.raw() : trimmed.weights.data();
  // Trimmed weights are a local copy: the primitive needs its own.
  const Weights placement = reorder_weights || !trimmed.weights.empty() ? Weights::reordered_once
                            : w.nbytes() <= kMaxWeightsPerRun           ? Weights::reordered_per_run
                                                                        : Weights::in_place;
  std::unique_ptr<State> state;
  if (layout == ActivationLayout::blocked && (groups_split_blocks(p) || placement == Weights::in_place)) {
    // oneDNN runs blocked activations on plain weights with its reference
    // kernel only; its gemm takes them on a plain copy of the activations.
    const std::vector<dnnl_format_tag_t> formats =
        placement == Weights::in_place ? std::vector<dnnl_format_tag_t>{dnnl_nchw} : staging_formats(p);
    for (dnnl_format_tag_t format : formats) {
      state = make_state(p, weights, bias, activation, layout, sibling, placement, format);
      if (state != nullptr && !runs_reference(*state)) break;
    }
  } else if (layout == ActivationLayout::plain && p.window.rank() == 1 && placement != Weights::in_place) {
    // oneDNN runs a 1-D convolution on plain [N, C, W] as im2col and gemm,
    // on channels-last with its direct kernels: 1.6-2x faster for Silero-
    // style encoders (129 -> 64 channels, kernel 3, 126 frames), copies
    // included.
    state = make_state(p, weights, bias, activation, layout, sibling, placement, dnnl_nwc);
    if (state == nullptr || runs_reference(*state)) state = make_state(p, weights, bias, activation, layout, sibling, placement);
  } else {
    state = make_state(p, weights, bias, activation, layout, sibling, placement);
  }
  if (state == nullptr) return nullptr;
  // oneDNN's reference kernel for a dilated convolution with wide pads
  // (DeepLabV3's ASPP): blocked, its brgemm kernels run it on a
  // channels-last copy of the input; else its JIT kernels run the same
  // convolution on a padded copy (conv_padding.h), which for dilation 24 on
  // a 28x28 map is 7 times the input (DeepLabV3's peak: +47 MiB per image).
  const std::vector<int64_t>& dilations = p.window.dilations;
  const bool dilated = std::any_of(dilations.begin(), dilations.end(), [](int64_t d) { return d > 1; });
  if (dilated && runs_reference(*state) && !state->staging && layout == ActivationLayout::blocked) {
    std::unique_ptr<State> staged = make_state(p, weights, bias, activation, layout, sibling, placement, dnnl_nhwc);
    if (staged != nullptr && !runs_reference(*staged)) state = std::move(staged);
  }
  if (dilated && runs_reference(*state) && !state->staging)
    if (std::optional<ConvParams> padded = pads_in_input(p)) {
      std::unique_ptr<State> jit = make_state(*padded, weights, bias, activation, layout, sibling, placement);
      if (jit != nullptr && !runs_reference(*jit)) {
        jit->pads_in_run = p;
        state = std::move(jit);
      }
    }
  // Without a primitive that skips them, a convolution reading padding
  // through most of its taps does less work as one product per tap.
  // The products keep their own copy of the weights: not for sessions that
  // keep none (SessionOptions::prepack_weights false).
  if (dilated && reads_padding(*state) && placement == Weights::reordered_once && p.window.rank() == 2) try {
      if (sibling != nullptr && sibling->state_->taps && sibling->state_->taps->params() == p) {
        state = tap_products_state(p, sibling->state_->taps, layout);
      } else if (std::unique_ptr<State> taps =
                     tap_products_state(p, static_cast<const float*>(weights), bias, activation, layout)) {
        state = std::move(taps);
      }
    } catch (const dnnl::error&) {
      // no reorder between these layouts: keep the primitive
    }
  return std::unique_ptr<DnnlConv>(new DnnlConv(std::move(state)));
}

std::unique_ptr<DnnlConv::State> DnnlConv::make_state(const ConvParams& p, const void* weights, const Tensor* bias,
                                                      FusedActivation activation, ActivationLayout layout,
                                                      const DnnlConv* sibling, Weights placement, dnnl_format_tag_t staging,
                                                      const DepthwiseStage* depthwise) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  try {
    dnnl::engine& engine = cpu_engine();
    const size_t rank = p.window.rank() + 2;
    auto state = std::make_unique<State>();
    if (layout != ActivationLayout::plain && rank != 4) return nullptr;
    const tag blocked = static_cast<tag>(blocked_format());
    const bool staged = staging != dnnl_format_tag_undef;
    const tag src_tag = staged ? static_cast<tag>(staging) : layout == ActivationLayout::blocked ? blocked : plain_tag(rank);
    const tag dst_tag = staged ? static_cast<tag>(staging) : layout == ActivationLayout::plain ? plain_tag(rank) : blocked;
    state->src_md = dnnl::memory::desc(dims_of(p.x_shape()), dt::f32, src_tag);
    state->dst_md = dnnl::memory::desc(dims_of(p.y_shape()), dt::f32, dst_tag);
    // Grouped weights are [G, M/G, C/G, k...] to oneDNN.
    Shape w_shape = p.w_shape();
    dnnl::memory::desc user_w_md;
    if (p.group > 1) {
      Shape g{p.group, p.out_channels / p.group};
      g.insert(g.end(), w_shape.begin() + 1, w_shape.end());
      user_w_md = dnnl::memory::desc(dims_of(g), dt::f32, plain_tag(rank + 1));
      w_shape = g;
    } else {
      user_w_md = dnnl::memory::desc(dims_of(w_shape), dt::f32, plain_tag(rank));
    }
    // oneDNN picks the weights' layout unless they are read in place: its
    // fast kernels want their own, and a reorder on every run (a check's one
    // or two runs) costs what the copy made once would.
    const dnnl::memory::desc any_w_md =
        placement == Weights::in_place ? user_w_md : dnnl::memory::desc(dims_of(w_shape), dt::f32, tag::any);
    // oneDNN 2.6's 1x1 kernel with a depthwise stage reads the 1x1's bias
    // whether it was given one or not (a crash on MobileNet-sized maps, where
    // it picks that kernel over the generic pair): zeros stand in for none.
    const bool zero_bias = bias == nullptr && depthwise != nullptr;
    dnnl::memory::desc bias_md;
    if (bias != nullptr || zero_bias) bias_md = dnnl::memory::desc({p.out_channels}, dt::f32, tag::a);

    dnnl::memory::dims strides(p.window.strides.begin(), p.window.strides.end());
    dnnl::memory::dims dilations, pad_l(p.window.pads_begin.begin(), p.window.pads_begin.end()),
        pad_r(p.window.pads_end.begin(), p.window.pads_end.end());
    for (int64_t d : p.window.dilations) dilations.push_back(d - 1);  // oneDNN counts the gaps
    dnnl::convolution_forward::desc desc =
        bias != nullptr || zero_bias
            ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                              state->src_md, any_w_md, bias_md, state->dst_md, strides, dilations, pad_l, pad_r)
            : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                              state->src_md, any_w_md, state->dst_md, strides, dilations, pad_l, pad_r);
    // Applied by oneDNN to the output in place. The residual is read as a
    // binary post-op's second source (1-2% faster on resnet50 than copying it
    // into the output for a `sum`); `sum` remains for the cases oneDNN has
    // no binary post-op kernel for, or only its reference one.
    // Swish, the last activation only, is applied after the primitive:
    // oneDNN 2.6's swish post-op costs 2-3x our own pass over the output
    // (EfficientNet).
    if (activation.kind == FusedActivation::Kind::swish && depthwise != nullptr) return nullptr;
    state->swish_after = (depthwise != nullptr ? depthwise->activation : activation).kind == FusedActivation::Kind::swish;
    auto append_activation = [](dnnl::post_ops& ops, const FusedActivation& a) {
      using Kind = FusedActivation::Kind;
      using alg = dnnl::algorithm;
      switch (a.kind) {
        case Kind::none:
        case Kind::swish: break;
        case Kind::relu: ops.append_eltwise(1.0f, alg::eltwise_relu, 0.0f, 0.0f); break;
        case Kind::clip: ops.append_eltwise(1.0f, alg::eltwise_clip, a.min, a.max); break;
        case Kind::hard_swish: ops.append_eltwise(1.0f, alg::eltwise_hardswish, 0.0f, 0.0f); break;
        case Kind::sigmoid: ops.append_eltwise(1.0f, alg::eltwise_logistic, 0.0f, 0.0f); break;
        case Kind::hard_sigmoid:  // this oneDNN has no hardsigmoid: alpha x + beta, then [0, 1]
          ops.append_eltwise(1.0f, alg::eltwise_linear, a.alpha, a.beta);
          ops.append_eltwise(1.0f, alg::eltwise_clip, 0.0f, 1.0f);
          break;
      }
    };
    auto primitive_desc = [&](bool binary_residual) {
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // one scratchpad per run: runs may overlap
      dnnl::post_ops ops;
      if (activation.add_residual && binary_residual) ops.append_binary(dnnl::algorithm::binary_add, state->dst_md);
      if (activation.add_residual && !binary_residual) ops.append_sum(1.0f);
      append_activation(ops, activation);
      if (depthwise != nullptr) {
        ops.append_dw(dt::f32, dt::f32, dt::f32, 3, depthwise->stride, 1, 0, {});
        append_activation(ops, depthwise->activation);
      }
      attr.set_post_ops(ops);
      return dnnl::convolution_forward::primitive_desc(desc, attr, engine);
    };
    state->binary_residual = activation.add_residual && !staged;  // staged, the residual is reordered into dst
    if (state->binary_residual) {
      try {
        state->pd = primitive_desc(true);
        state->binary_residual = std::string(state->pd.impl_info_str()).rfind("ref", 0) != 0;
      } catch (const dnnl::error&) {
        state->binary_residual = false;
      }
    }
    if (!state->binary_residual) state->pd = primitive_desc(false);
    state->primitive = dnnl::convolution_forward(state->pd);
    state->scratchpad_md = state->pd.scratchpad_desc();
    if (depthwise != nullptr) {
      state->dst_md = state->pd.dst_desc();  // the depthwise convolution's output
      const int64_t channels = p.out_channels;
      dnnl::memory::desc user_md({channels, 1, 1, 3, 3}, dt::f32, tag::goihw);
      dnnl::memory user(user_md, engine, const_cast<void*>(depthwise->w->raw()));
      constexpr int kWeights = DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS, kBias = DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS;
      state->depthwise_weights = dnnl::memory(state->pd.query_md(dnnl::query::exec_arg_md, kWeights), engine);
      dnnl::stream stream(engine);
      dnnl::reorder(user, state->depthwise_weights).execute(stream, user, state->depthwise_weights);
      stream.wait();
      state->depthwise_bias = dnnl::memory(state->pd.query_md(dnnl::query::exec_arg_md, kBias), engine);
      float* bias_data = static_cast<float*>(state->depthwise_bias.get_data_handle());
      if (depthwise->bias != nullptr) {
        std::memcpy(bias_data, depthwise->bias->raw(), static_cast<size_t>(channels) * sizeof(float));
      } else {
        std::fill(bias_data, bias_data + channels, 0.0f);
      }
    }

    if (sibling != nullptr && !sibling->state_->taps && sibling->state_->pd.weights_desc() == state->pd.weights_desc()) {
      state->weights = sibling->state_->weights;  // a handle: the buffer is shared
      state->weights_in_run = sibling->state_->weights_in_run;
      state->bias = sibling->state_->bias;
    } else if (placement != Weights::reordered_once) {
      state->weights = dnnl::memory(user_w_md, engine, const_cast<void*>(weights));
      if (state->pd.weights_desc() != user_w_md)
        state->weights_in_run = dnnl::reorder(dnnl::reorder::primitive_desc(engine, user_w_md, engine, state->pd.weights_desc()));
      if (bias != nullptr) {
        state->bias = dnnl::memory(bias_md, engine);
        std::memcpy(state->bias.get_data_handle(), bias->raw(), bias->nbytes());
      }
    } else {
      dnnl::stream stream(engine);
      dnnl::memory user_w(user_w_md, engine, const_cast<void*>(weights));
      state->weights = dnnl::memory(state->pd.weights_desc(), engine);
      dnnl::reorder(user_w, state->weights).execute(stream, user_w, state->weights);
      if (bias != nullptr || zero_bias) {
        state->bias = dnnl::memory(bias_md, engine);
        if (zero_bias) {
          auto* zeros = static_cast<float*>(state->bias.get_data_handle());
          std::fill(zeros, zeros + p.out_channels, 0.0f);
        } else {
          std::memcpy(state->bias.get_data_handle(), bias->raw(), bias->nbytes());
        }
      }
      stream.wait();
    }
    state->blocked_input = layout == ActivationLayout::blocked;
    state->threads = std::max(1, omp_get_max_threads());  // the caller's ThreadLimit, as the primitive saw it
    if (staged) state->staging = staging_for(p, layout, *state, activation.add_residual);
    return state;
  } catch (const dnnl::error&) {
    return nullptr;  // no implementation for this case: the reference runs it
  }
}

Status check_residual(const Tensor* residual, const Tensor& y) {
  if (residual == nullptr || (residual->dtype() == y.dtype() && residual->shape() == y.shape())) return {};
  return make_error("the residual added to the convolution is {} {}, the output {} {}", to_string(residual->dtype()),
                    shape_to_string(residual->shape()), to_string(y.dtype()), shape_to_string(y.shape()));
}

// y = Swish(y) in chunks the primitive's threads share; zeros (the blocked
// layout's padded channels) stay zero.
void DnnlConv::swish_in_place(float* y, int64_t n) const {
  activate_floats_shared({FusedActivation::Kind::swish}, y, n, state_->threads);
}

Status DnnlConv::run(const Tensor& x, Tensor& y, const Tensor* residual) const {
  ONNXKIT_TRY(check_residual(residual, y));
  if (state_->binary_residual && residual == nullptr)
    return make_error("the convolution was built to add a residual, and none was given");
  const std::optional<State::Staging>& staging = state_->staging;
  if (residual != nullptr && !state_->binary_residual && !staging) std::memcpy(y.mutable_raw(), residual->raw(), y.nbytes());
  try {
    dnnl::engine& engine = cpu_engine();
    dnnl::stream& stream = thread_stream();
    const void* x_data = x.raw();
    void* y_data = y.mutable_raw();
    std::unique_ptr<float[]> padded, staged_x, staged_y;  // per run: runs may overlap
    if (staging) {
      staged_x = std::make_unique_for_overwrite<float[]>(state_->src_md.get_size() / sizeof(float));
      staged_y = std::make_unique_for_overwrite<float[]>(state_->dst_md.get_size() / sizeof(float));
      dnnl::memory from(staging->given_src, engine, const_cast<void*>(x_data));
      dnnl::memory to(state_->src_md, engine, staged_x.get());
      staging->src_in.execute(stream, from, to);
      if (residual != nullptr) {
        dnnl::memory sum_from(staging->given_dst, engine, const_cast<void*>(residual->raw()));
        dnnl::memory sum_to(state_->dst_md, engine, staged_y.get());
        staging->residual_in.execute(stream, sum_from, sum_to);
      }
      x_data = staged_x.get();
      y_data = staged_y.get();
    }
    if (state_->pads_in_run) {
      const ConvParams& p = *state_->pads_in_run;
      const int64_t inner = state_->blocked_input ? channel_block() : 1;
      const int64_t outer = p.batch * ((p.in_channels + inner - 1) / inner);
      padded = std::make_unique_for_overwrite<float[]>(state_->src_md.get_size() / sizeof(float));
      pad_input(p, outer, inner, x.data<float>(), padded.get());
      x_data = padded.get();
    }
    if (state_->taps) {
      stream.wait();
      state_->taps->run(static_cast<const float*>(x_data), static_cast<float*>(y_data), state_->threads);
    } else {
      dnnl::memory src(state_->src_md, engine, const_cast<void*>(x_data));
      dnnl::memory dst(state_->dst_md, engine, y_data);
      dnnl::memory scratch(state_->scratchpad_md, engine, thread_scratchpad(state_->scratchpad_md.get_size()));
      dnnl::memory weights = state_->weights;
      if (state_->weights_in_run) {
        weights = dnnl::memory(state_->pd.weights_desc(), engine);  // freed when the run ends
        state_->weights_in_run->execute(stream, state_->weights, weights);
      }
      // The C call takes the arguments as an array; the C++ one as a map,
      // built per run (six allocations, for each of a model's convolutions).
      std::array<dnnl_exec_arg_t, 8> args{};
      int count = 0;
      auto add = [&](int arg, const dnnl::memory& memory) { args[static_cast<size_t>(count++)] = {arg, memory.get()}; };
      add(DNNL_ARG_SRC, src);
      add(DNNL_ARG_WEIGHTS, weights);
      add(DNNL_ARG_DST, dst);
      add(DNNL_ARG_SCRATCHPAD, scratch);
      if (state_->bias) add(DNNL_ARG_BIAS, state_->bias);
      if (state_->depthwise_weights) {
        add(DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS, state_->depthwise_weights);
        add(DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS, state_->depthwise_bias);
      }
      dnnl::memory residual_memory;
      if (state_->binary_residual) {
        residual_memory = dnnl::memory(state_->dst_md, engine, const_cast<void*>(residual->raw()));
        add(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, residual_memory);
      }
      dnnl::error::wrap_c_api(dnnl_primitive_execute(state_->primitive.get(), stream.get(), count, args.data()),
                              "could not execute the convolution");
      if (state_->swish_after) {
        stream.wait();
        swish_in_place(static_cast<float*>(y_data), static_cast<int64_t>(state_->dst_md.get_size() / sizeof(float)));
      }
    }
    if (staging) {
      dnnl::memory from(state_->dst_md, engine, y_data), to(staging->given_dst, engine, y.mutable_raw());
      staging->dst_out.execute(stream, from, to);
    }
    stream.wait();
  } catch (const dnnl::error& e) {
    return make_error("oneDNN convolution failed: {}", e.what());
  }
  return {};
}

std::shared_ptr<DnnlConvCache> DnnlConvCache::shared(const Tensor& w, const Tensor* bias, FusedActivation activation,
                                                     ActivationLayout layout, bool reorder_weights) {
  // By the weights' address: while a cache holds them, no other tensor has it.
  using Key = std::tuple<const void*, Shape, const void*, decltype(activation.fields()), ActivationLayout, bool>;
  static std::mutex mutex;
  static std::map<Key, std::weak_ptr<DnnlConvCache>> caches;
  const Key key{w.raw(), w.shape(), bias != nullptr ? bias->raw() : nullptr, activation.fields(), layout, reorder_weights};
  std::lock_guard lock(mutex);
  if (std::shared_ptr<DnnlConvCache> made = caches[key].lock()) return made;
  std::erase_if(caches, [](const auto& entry) { return entry.second.expired(); });
  auto made = std::make_shared<DnnlConvCache>(std::make_shared<const Tensor>(w),
                                              bias != nullptr ? std::make_shared<const Tensor>(*bias) : nullptr, activation,
                                              layout, reorder_weights);
  caches[key] = made;
  return made;
}

std::shared_ptr<const DnnlConv> DnnlConvCache::get(const ConvParams& p) {
  const double macs = static_cast<double>(shape_size(p.y_shape())) * static_cast<double>(shape_size(p.w_shape())) /
                      static_cast<double>(std::max<int64_t>(p.out_channels, 1));
  const int threads = macs < kParallelMacs ? 1 : available_threads();
  std::lock_guard lock(mutex_);
  for (const auto& [key, made] : cache_)
    if (key.second == threads && key.first == p) return made;
  if (cache_.size() >= kMaxShapes) return nullptr;
  // Another primitive's reordered weights, where its layout for them is
  // this one's: likeliest for the same geometry.
  const DnnlConv* sibling = nullptr;
  for (const auto& [key, made] : cache_)
    if (made != nullptr && (sibling == nullptr || key.first == p)) sibling = made.get();
  const ThreadLimit limit(threads);
  std::shared_ptr<const DnnlConv> conv =
      DnnlConv::create(p, *w_, bias_.get(), activation_, layout_, sibling, reorder_weights_, depthwise_ ? &*depthwise_ : nullptr);
  cache_.emplace_back(std::make_pair(p, threads), conv);
  return conv;
}

}  // namespace onnxkit::runtime::nn
