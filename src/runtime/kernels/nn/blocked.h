#pragma once
// Kernels on activations in the blocked layout: a 4-D float tensor of
// logical shape [N, C, H, W] held as [N, ceil(C/B), H, W, B], channels padded
// with zeros, B = channel_block(): oneDNN's nChw16c where its AVX-512 kernels
// run, nChw8c (its AVX2 kernels) elsewhere. Chains
// of convolutions, pools and element-wise ops stay in it, so data is reordered once at each end of a
// chain instead of inside every convolution. The session decides which nodes
// run blocked (runtime/layout.h); these are the kernels it uses for them.

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_set>
#include <utility>
#include <vector>

#include "runtime/kernel.h"

namespace onnxkit::runtime::nn {

// Channels per block: 16 where oneDNN runs AVX-512 (its effective ISA, so
// ONEDNN_MAX_CPU_ISA=AVX2 makes it 8 too), else 8. Fixed for the process.
int64_t channel_block();

// The blocked shape of a logical [N, C, H, W].
Shape blocked_shape(int64_t n, int64_t c, int64_t h, int64_t w);

// How a node that starts a blocked region (a Conv) reads its plain input:
// as it is (a first layer: fewer input channels than a block, one group), or
// from a blocked copy of its `channels` channels.
struct RegionEntry {
  bool reads_plain;
  int64_t channels;
};
RegionEntry region_entry(const ir::Node& node, const ConstantOf& constant);

// The blocked layout's plan (runtime/layout.h) and the session ask the ops
// with blocked kernels of their own (OpTraits::Blocked::own_kernel: Conv,
// the pools, Concat, BatchNormalization, Pad, Resize) through these, so
// neither names them.
using ChannelsOf = std::function<int64_t(const ir::Value*)>;  // C of a blocked value, -1 for a plain one
// C of the node's output when it runs blocked, else -1. A Conv (2-D, float32,
// constant weights and bias, any grouping) may start a region from a plain
// input; a pool, an inference BatchNormalization with constant statistics
// (the activation fused after it applies) or a Concat of whole blocks along
// channels only joins one.
int64_t blocked_output_channels(const ir::Node& node, const ChannelsOf& channels_of, const ConstantOf& constant);
// The inputs it reads blocked: all of a Concat's, X alone of the others.
std::vector<size_t> blocked_activation_inputs(const ir::Node& node);
// Nodes that only move whole channels of blocked values, which the layout
// plan (runtime/layout.h) proves so from the shapes and keeps blocked:
// ShuffleNet's channel_shuffle (Reshape to [N, g, C/g, H, W], Transpose
// (0, 2, 1, 3, 4), Reshape to [N, C, H, W]), its chunk(2, dim=1) (Slices of
// axis 1), Concats of channel counts that are not whole blocks, and the
// Shape nodes that compute their run-time shapes. Each unit otherwise went
// to the plain layout and back: 17% of ShuffleNetV2's run. Shape and a
// Transpose to channels-last read blocked and write plain.
struct ChannelMove {
  enum class Kind : uint8_t {
    shape,   // Shape of a blocked value: its logical [N, C, H, W] (plain int64)
    view,    // the blocked input as it is (the chain's first Reshape and Transpose)
    gather,  // output channel k is channel from[k].channel of input from[k].input
    // Transpose (0, 2, 3, 1) of a blocked value: plain channels-last
    // [N, H, W, C], each pixel's blocks copied whole (ConvNeXt's LayerNorm
    // over channels, detection heads' box and score maps)
    channels_last,
  };
  struct Source {
    size_t input;
    int64_t channel;
  };
  // Shape and the channels-last Transpose read blocked and write a plain
  // output.
  bool writes_plain() const { return kind == Kind::shape || kind == Kind::channels_last; }

  Kind kind = Kind::gather;
  std::vector<int64_t> in_channels;  // C of each blocked input
  std::vector<Source> from;
  // A Reshape of the chain: the dims between N and H, W of its input and of
  // its output, which its run-time shape input must give ({C} and {g, C/g}
  // for the first of a channel_shuffle); empty for the other kinds.
  std::vector<int64_t> reshape_in, reshape_out;
};
// The channels [first, last) a Slice of an [N, C, H, W] tensor keeps when it
// slices axis 1 alone, with step 1 (starts, ends, axes and steps as its
// inputs give them; steps may be empty); none for any other slice.
std::optional<std::pair<int64_t, int64_t>> channel_slice(int64_t channels, const std::vector<int64_t>& starts,
                                                         const std::vector<int64_t>& ends, const std::vector<int64_t>& axes,
                                                         const std::vector<int64_t>& steps);
// The channels output channel k of a channel shuffle reads: the input's C
// split into `factors` (outermost first), permuted by `order` (output axis
// i is factor order[i]), merged back.
std::vector<int64_t> shuffled_channels(const std::vector<int64_t>& factors, const std::vector<int64_t>& order);

// Scale, B, mean and var of an inference BatchNormalization with constant
// statistics, one float32 each per channel (spatial), one output: as the
// plain kernel runs it when not training. None for any other.
using InputConstant = std::function<const Tensor*(size_t)>;
std::optional<std::array<const Tensor*, 4>> batch_norm_params(const ir::Node& node, int64_t channels,
                                                              const InputConstant& constant);

// The per-channel map y = a x + b those parameters (scale, B, mean, var)
// give: a = scale / sqrt(var + epsilon), b = B - mean a, in double.
struct BatchNormAffine {
  std::vector<double> a, b;
};
BatchNormAffine batch_norm_affine(const std::array<const Tensor*, 4>& params, double epsilon);

// The pads [top, left, bottom, right] of a Pad of a 4-D tensor with zeros
// on H and W only, none negative (pads and constant_value inputs from
// opset 11, attributes before); none for any other.
std::optional<std::array<int64_t, 4>> spatial_zero_pads(const ir::Node& node, const InputConstant& constant);

// The kernel on blocked tensors of a node that has one. A Conv writes a
// blocked tensor (the fused activation of `info` applies) from a blocked
// input or, with `plain_input` (region_entry), a plain one; `channels` is C
// of input 0; `move` describes a channel move (null for the other ops).
Result<std::unique_ptr<Kernel>> make_blocked_kernel(const KernelInfo& info, bool plain_input, int64_t channels,
                                                    const ChannelMove* move = nullptr);
// In-place Concat: the inputs of a blocked Concat (batch 1) that blocked
// Convs or pools compute are written straight into its output, which then
// copies only the others (squeezenet's Concats took 6% of its time as
// copies). A Concat whose inputs begin with all of an earlier one's
// (DenseNet's, one per layer over every feature map so far) shares that
// one's buffer: the earlier output is its first blocks.
struct InPlaceWrites {
  struct Write {
    const ir::Node* node;  // its step's output 0 goes into buffer `buffer`
    size_t buffer;         // of the run's, one per Concat
    std::shared_ptr<const BufferPart> part;
    bool last;  // the Concat itself: its output holds the buffer after it
  };
  std::vector<Write> writes;
  size_t buffers = 0;
};
// `computed_by`: the node whose own step writes a value (through the steps
// of fused nodes that pass a value on), null when no step does; `blocked`
// and `channels_of` the layout plan's.
using ComputedBy = std::function<const ir::Node*(const ir::Value*)>;
InPlaceWrites plan_in_place_writes(const std::vector<ir::Node*>& order, const std::unordered_set<const ir::Node*>& blocked,
                                   const ChannelsOf& channels_of, const ComputedBy& computed_by);

// Between the layouts, for tensors with `channels` channels.
std::unique_ptr<Kernel> make_to_blocked(int64_t channels);
std::unique_ptr<Kernel> make_to_plain(int64_t channels);

}  // namespace onnxkit::runtime::nn
