#pragma once
// What the fusion passes share (besides ir::sole_consumer and
// ir::other_operand, which walk the chains): the pass around a fusion step,
// reading float constants as doubles, per-output-channel constants, and the
// commit that folds a node into its producer's constants without touching
// data another node reads.
//
// Every fusion checks everything first and only then edits: a helper here
// that answers nullopt/false/null has changed nothing.

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "passes/pass.h"
#include "runtime/tensor.h"

namespace onnxkit::passes::fuse {

// Factories, in the order register.cpp runs them (see each pass's file).
std::unique_ptr<Pass> make_fuse_bn_into_conv();
std::unique_ptr<Pass> make_fuse_bn_into_gemm();
std::unique_ptr<Pass> make_fuse_add_into_conv_bias();
std::unique_ptr<Pass> make_fuse_mul_into_conv_weights();
std::unique_ptr<Pass> make_fuse_matmul_add_into_gemm();
std::unique_ptr<Pass> make_fuse_pad_into_conv();
std::unique_ptr<Pass> make_fuse_pad_into_maxpool();
std::unique_ptr<Pass> make_fuse_transpose_into_gemm();
std::unique_ptr<Pass> make_fuse_reduce_unsqueeze();
std::unique_ptr<Pass> make_einsum_as_matmul();

// One fusion at `anchor`, the node the pass looks for: true when it
// rewrote the graph, having checked everything first.
using FuseStep = std::function<bool(ir::Node& anchor, PassContext& context)>;
// `once`: the step removes its anchor, so each anchor is tried once.
// `while_it_fuses`: the anchor stays and may absorb the next node too
// (Conv, BN, BN: both fold).
enum class Repeat { once, while_it_fuses };

// A pass that runs `fuse` on each node of the default domain whose op is one
// of `op_types`, unless the user excluded it (make_node_pass).
std::unique_ptr<Pass> make_fusion_pass(std::string_view name, std::string_view summary,
                                       std::initializer_list<std::string_view> op_types, Repeat repeat, FuseStep fuse);

// A constant a fusion gives its anchor: input `input` reads `data`, named
// after the anchor and `suffix` ("_bias_fused") when a new initializer is
// needed (see set_constant_input).
struct FusedConstant {
  size_t input;
  runtime::Tensor data;
  std::string_view suffix;
};

// The commit of a fusion that folds `consumer`, the sole reader of
// `anchor`'s output 0, into `anchor`'s constants, once everything is
// checked: the consumer's readers (and its name, when it is a graph output)
// go to that output, the consumer goes, the anchor reads `constants`, and a
// note says "ANCHOR: folded CONSUMER <into>". False, and nothing changed,
// when replace_value declines.
bool commit_fusion(PassContext& context, ir::Node& anchor, ir::Node& consumer, const std::vector<FusedConstant>& constants,
                   std::string_view into);

// The elements of a float32, float64, float16 or bfloat16 tensor as doubles;
// nullopt for other types.
std::optional<std::vector<double>> as_doubles(const runtime::Tensor& tensor);

// A float32 or float64 tensor of `shape` holding `values`.
runtime::Tensor from_doubles(runtime::DataType type, const runtime::Shape& shape, const std::vector<double>& values);

// True for the weight types the conv/gemm fusions rewrite: float32, float64.
bool is_fusable_weight_type(runtime::DataType type);

// When `constant`, broadcast against a tensor of rank `rank` (numpy rules,
// aligned on the right), varies along axis `channel_axis` only, with size
// `channels` or 1 there, and cannot make that tensor bigger: one value per
// channel (a scalar repeated `channels` times). Else nullopt: [C] against a
// 4-D conv output aligns with the width, not the channels.
std::optional<std::vector<double>> per_channel_values(const runtime::Tensor& constant, size_t rank, size_t channel_axis,
                                                      int64_t channels);

// A Conv whose output `op` (Add, Mul) alone reads, the other operand being
// a constant of one value per output channel (see per_channel_values): the
// Conv's weights, which give the channels, and those values.
struct ConvChannelOperand {
  ir::Node* consumer;
  runtime::Tensor weights;          // float32/float64 [M, C/group, k...]
  std::vector<double> per_channel;  // M values
};
// Nullopt when `conv`'s output is not so read, its weights are not a
// fusable constant of rank 3 or more, or the operand has another type.
// Opset 7+ (older Add and Mul broadcast by attribute).
std::optional<ConvChannelOperand> conv_then_per_channel(ir::Node& conv, std::string_view op, const PassContext& context);

// A Conv's bias B (input 2) as doubles, zeros when absent; nullopt when
// present but not a constant of `type` with `channels` elements.
std::optional<std::vector<double>> bias_values(const ir::Node& node, const PassContext& context, runtime::DataType type,
                                               int64_t channels);

// A BatchNormalization in inference mode as the affine map it computes per
// channel c: y = x * scale[c] + shift[c], where
//   scale = gamma / sqrt(var + epsilon),  shift = beta - mean * scale.
struct ChannelAffine {
  std::vector<double> scale;
  std::vector<double> shift;
};

// `bn`'s affine map over `channels` channels, when it is an inference-mode
// BatchNormalization (training_mode 0, spatial 1, is_test 1 before opset 7,
// only Y used) whose gamma, beta, mean and var are float constants of
// `channels` elements each.
std::optional<ChannelAffine> inference_batch_norm(const ir::Node& bn, const PassContext& context, int64_t channels);

// Makes input `index` of `node` hold `data`. The initializer it reads now is
// edited in place (keeping its name) when this node is its only reader and
// the type and shape stay (so its declared type stays true);
// otherwise (shared weights, a missing optional input) a new initializer
// named after `name_hint` is added to the node's graph, and the old one is
// left to the other readers or to cleanup.
void set_constant_input(PassContext& context, ir::Node& node, size_t index, const runtime::Tensor& data,
                        std::string_view name_hint);

// The value a Pad fills with, when it is in constant mode and the value is
// known (the `value` attribute before opset 11, the optional constant_value
// input from 11: 0 when absent); else nullopt.
std::optional<double> pad_fill_value(const ir::Node& pad, const PassContext& context);

// The Pad's pads over all `rank` axes, begins then ends (attribute `pads`,
// `paddings` at opset 1; a constant input from 11, over the constant `axes`
// input from 18 when given); nullopt when unknown or inconsistent.
std::optional<std::vector<int64_t>> pad_amounts(const ir::Node& pad, const PassContext& context, size_t rank);

}  // namespace onnxkit::passes::fuse
