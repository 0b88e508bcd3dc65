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

// For each element of W (flattened), the output channel it contributes to;
// empty when W's shape does not fit the op and its group attribute.
std::vector<int64_t> output_channel_of_weights(const ir::Node& conv, const runtime::Shape& w_shape, int64_t& channels) {
  if (w_shape.size() < 3) return {};
  int64_t kernel_size = 1;
  for (size_t i = 2; i < w_shape.size(); ++i) kernel_size *= w_shape[i];
  const int64_t group = conv.attr_int("group", 1);
  if (group <= 0 || kernel_size <= 0) return {};
  std::vector<int64_t> channel_of;
  if (conv.op_type() == "Conv") {
    channels = w_shape[0];
    const auto per_output = static_cast<size_t>(w_shape[1] * kernel_size);
    for (int64_t o = 0; o < w_shape[0]; ++o) channel_of.insert(channel_of.end(), per_output, o);
    return channel_of;
  }
  // ConvTranspose: W is [C, M/group, k...].
  const int64_t in_channels = w_shape[0], per_group = w_shape[1];
  if (in_channels % group != 0) return {};
  channels = per_group * group;
  const int64_t in_per_group = in_channels / group;
  for (int64_t i = 0; i < in_channels; ++i)
    for (int64_t j = 0; j < per_group; ++j)
      channel_of.insert(channel_of.end(), static_cast<size_t>(kernel_size), (i / in_per_group) * per_group + j);
  return channel_of;
}

// Fuses the BatchNormalization that alone reads `conv`'s output, if any.
bool fuse_once(ir::Node& conv, PassContext& context) {
  ir::Value* conv_out = conv.output(0);
  ir::Node* bn = sole_consumer(conv_out);
  if (bn == nullptr || context.excluded(*bn) || bn->input(0) != conv_out) return false;

  auto weights = context.constant(conv.input(1));
  if (!weights || !is_fusable_weight_type(weights->dtype())) return false;
  int64_t channels = 0;
  std::vector<int64_t> channel_of = output_channel_of_weights(conv, weights->shape(), channels);
  if (channel_of.empty() || static_cast<int64_t>(channel_of.size()) != weights->numel()) return false;

  auto bias = bias_values(conv, context, weights->dtype(), channels);
  if (!bias) return false;
  auto bn_affine = inference_batch_norm(*bn, context, channels);
  if (!bn_affine) return false;

  std::vector<double> new_weights = *as_doubles(*weights);
  for (size_t i = 0; i < new_weights.size(); ++i) new_weights[i] *= bn_affine->scale[static_cast<size_t>(channel_of[i])];
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
