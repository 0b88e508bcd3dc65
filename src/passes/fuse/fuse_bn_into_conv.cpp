// fuse-bn-into-conv: a BatchNormalization after a convolution becomes part of
// the convolution's weights and bias.
//
// Before:  c = Conv(x, W, B)              y = BatchNormalization(c, gamma, beta, mean, var)
// After:   y = Conv(x, W', B')            (the Conv's output takes y's place and name)
//
// Conditions: Conv or ConvTranspose with constant float32/float64 W and an
// optional constant B; its output read by the BatchNormalization alone and
// not a graph output; the BatchNormalization in inference mode (only Y used)
// with constant parameters of one value per output channel; neither node in
// the user's exclusion list.
//
// The algebra: inference BN is y = (c - mean) * s + beta per channel, with
// s = gamma / sqrt(var + epsilon). The convolution is linear in W and adds B
// per output channel o, so
//   W'[o, ...] = W[o, ...] * s[o]
//   B'[o]      = (B[o] - mean[o]) * s[o] + beta[o]        (B = 0 when absent)
// Conv's W is [M, C/group, k...]: output channel o is axis 0. ConvTranspose's
// W is [C, M/group, k...]: input channel i of group g = i / (C/group) feeds
// output channels g * (M/group) + j for j along axis 1.
//
// Weights that another node also reads are copied, not edited.

#include "passes/fuse/fuse_common.h"

namespace onnxkit::passes::fuse {
namespace {

// Where the output channels lie in W (flattened): the output channel that
// element i contributes to is ((i / block) % per_group) plus
// (i / (block * per_group * in_per_group)) * per_group. Arithmetic rather
// than a table: a table of int64 per element would take twice the memory of
// a float32 W, and W may be most of the model.
struct ChannelLayout {
  int64_t channels = 0;      // output channels M
  int64_t block = 1;         // consecutive elements of one output channel
  int64_t per_group = 1;     // output channels in one run of blocks
  int64_t in_per_group = 1;  // runs that share those channels (ConvTranspose: input channels per group)
  size_t channel(size_t i) const {
    const auto b = static_cast<size_t>(block), m = static_cast<size_t>(per_group);
    return (i / b) % m + i / (b * m * static_cast<size_t>(in_per_group)) * m;
  }
};

// The layout of W's output channels; nullopt when W's shape does not fit
// the op and its group attribute.
std::optional<ChannelLayout> output_channels_of_weights(const ir::Node& conv, const runtime::Shape& w_shape) {
  if (w_shape.size() < 3) return std::nullopt;
  int64_t kernel_size = 1;
  for (size_t i = 2; i < w_shape.size(); ++i) kernel_size *= w_shape[i];
  const int64_t group = conv.attr_int("group", 1);
  if (group <= 0 || kernel_size <= 0 || w_shape[0] <= 0 || w_shape[1] <= 0) return std::nullopt;
  if (conv.op_type() == "Conv") {
    // Conv: W is [M, C/group, k...], one output channel per row.
    return ChannelLayout{.channels = w_shape[0], .block = w_shape[1] * kernel_size, .per_group = w_shape[0]};
  }
  // ConvTranspose: W is [C, M/group, k...]; input channel i of group g feeds
  // output channels g * (M/group) + j for j along axis 1.
  const int64_t in_channels = w_shape[0], per_group = w_shape[1];
  if (in_channels % group != 0) return std::nullopt;
  return ChannelLayout{
      .channels = per_group * group, .block = kernel_size, .per_group = per_group, .in_per_group = in_channels / group};
}

// Fuses the BatchNormalization that alone reads `conv`'s output, if any.
bool fuse_once(ir::Node& conv, PassContext& context) {
  ir::Value* conv_out = conv.output(0);
  ir::Node* bn = sole_consumer(conv_out);
  // Checked before W is read: reading copies it, and every Conv has a sole
  // consumer (a Relu, an Add) far more often than a BatchNormalization.
  if (bn == nullptr || !bn->is_onnx_op("BatchNormalization") || context.excluded(*bn) || bn->input(0) != conv_out) return false;

  auto weights = context.constant(conv.input(1));
  if (!weights || !is_fusable_weight_type(weights->dtype())) return false;
  auto layout = output_channels_of_weights(conv, weights->shape());
  if (!layout) return false;
  const int64_t channels = layout->channels;

  auto bias = bias_values(conv, context, weights->dtype(), channels);
  if (!bias) return false;
  auto bn_affine = inference_batch_norm(*bn, context, channels);
  if (!bn_affine) return false;

  std::vector<double> new_weights = *as_doubles(*weights);
  for (size_t i = 0; i < new_weights.size(); ++i) new_weights[i] *= bn_affine->scale[layout->channel(i)];
  for (size_t o = 0; o < bias->size(); ++o) (*bias)[o] = (*bias)[o] * bn_affine->scale[o] + bn_affine->shift[o];

  return commit_fusion(context, conv, *bn,
                       {{1, from_doubles(weights->dtype(), weights->shape(), new_weights), "_weight_fused"},
                        {2, from_doubles(weights->dtype(), {channels}, *bias), "_bias_fused"}},
                       "into its weights and bias");
}

}  // namespace

std::unique_ptr<Pass> make_fuse_bn_into_conv() {
  return make_fusion_pass("fuse-bn-into-conv",
                          "fold an inference BatchNormalization into the weights and bias of the Conv/ConvTranspose before it",
                          {"Conv", "ConvTranspose"}, Repeat::while_it_fuses, fuse_once);  // Conv, BN, BN: both fold
}

}  // namespace onnxkit::passes::fuse
