// fuse-add-into-conv-bias: adding a per-channel constant after a Conv is what
// the Conv's bias is for.
//
// Before:  c = Conv(x, W, B)    y = Add(c, K)    (or Add(K, c))
// After:   y = Conv(x, W, B')                    (the Conv's output takes y's place and name)
//
// Conditions: Conv with constant float32/float64 W (its shape gives the M
// output channels and the output's rank) and an optional constant B; its
// output read by the Add alone and not a graph output; K a constant of W's
// type that, aligned on the right against the output [N, M, spatial...], has
// size 1 everywhere but the channel axis (size M or 1) and no more axes than
// the output: [M, 1, 1], [1, M, 1, 1], [1], a scalar. Anything else ([M], [2,
// M, 1, 1], [1, 1, 1, 1, 1]) would broadcast differently or make the output
// bigger, and is left alone. Opset 7+ (older Add broadcasts by attribute).
//
// The algebra: Conv(x, W, B) + K = Conv(x, W, B + k), with k[o] the value of
// K for output channel o; B' = B + k (B = 0 when absent).

#include "passes/fuse/fuse_common.h"

namespace onnxkit::passes::fuse {
namespace {

bool fuse_once(ir::Node& conv, PassContext& context) {
  auto add = conv_then_per_channel(conv, "Add", context);
  if (!add) return false;
  const runtime::DataType type = add->weights.dtype();
  const int64_t channels = add->weights.dim(0);
  auto bias = bias_values(conv, context, type, channels);
  if (!bias) return false;
  for (size_t o = 0; o < bias->size(); ++o) (*bias)[o] += add->per_channel[o];

  return commit_fusion(context, conv, *add->consumer, {{2, from_doubles(type, {channels}, *bias), "_bias_fused"}},
                       "into its bias");
}

}  // namespace

std::unique_ptr<Pass> make_fuse_add_into_conv_bias() {
  return make_fusion_pass("fuse-add-into-conv-bias", "fold an Add of a per-channel constant into the bias of the Conv before it",
                          {"Conv"}, Repeat::while_it_fuses, fuse_once);  // Conv, Add, Add: both fold
}

}  // namespace onnxkit::passes::fuse
