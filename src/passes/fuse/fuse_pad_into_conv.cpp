// fuse-pad-into-conv: zero padding in front of a Conv (or an AveragePool that
// counts padding, or has none of its own) is padding the consumer can do itself.
//
// Before:  p = Pad<mode = constant>(x, pads, 0)    y = Conv<pads = q>(p, W, B)
// After:   y = Conv<pads = q + spatial part of pads>(x, W, B)
// And:     p = Pad(x, pads, 0)    y = AveragePool<pads = 0>(p)   (torch's avg_pool2d with padding)
//   to:    y = AveragePool<pads = spatial part of pads, count_include_pad = 1>(x)
//
// Conditions: the Pad in constant mode with value 0 (the `value` attribute
// before opset 11, the optional constant_value input from 11), its pads known
// (attribute `pads`, `paddings` at opset 1; a constant input from 11, over
// the constant `axes` input from 18 when given), none negative, and none on
// the batch and channel axes; the Pad's output read by the consumer alone, as
// its data input, and not a graph output; the consumer a Conv with auto_pad
// NOTSET, or an AveragePool with auto_pad NOTSET, ceil_mode = 0 and either
// count_include_pad = 1 or no pads of its own (then the fused node counts
// padding: the Pad's zeros were counted as elements). Neither node excluded.
// Not MaxPool: its own padding is -inf, not 0. Not an AveragePool that
// excludes its own padding from its averages.
//
// The algebra: a Conv (or counting AveragePool) with pads q reads its input
// surrounded by q zeros; reading x padded by p with zeros, surrounded by q
// more zeros, is reading x surrounded by p + q zeros. Pad's pads are
// [x1_begin, x2_begin, ..., x1_end, x2_end, ...] over all axes [N, C, d1...];
// the consumer's are the same over d1... only.

#include <fmt/format.h>
#include <onnx/defs/attr_proto_util.h>

#include <algorithm>

#include "passes/fuse/fuse_common.h"

namespace onnxkit::passes::fuse {
namespace {

// The rank of the consumer's data input, as the consumer itself states it
// (through its weights' or kernel's shape), when it does.
std::optional<size_t> consumer_rank(const ir::Node& consumer) {
  if (consumer.op_type() == "Conv") {
    auto w_shape = consumer.input(1) ? consumer.input(1)->static_shape() : std::nullopt;
    if (!w_shape || w_shape->size() < 3) return std::nullopt;
    return w_shape->size();
  }
  const size_t kernel_rank = consumer.attr_ints("kernel_shape").size();
  if (kernel_rank == 0) return std::nullopt;
  return kernel_rank + 2;
}

// True when the consumer's own padding is zeros, so that Pad's zeros may join it.
bool pads_like_zeros(const ir::Node& consumer) {
  if (consumer.attr_string("auto_pad", "NOTSET") != "NOTSET") return false;
  if (consumer.is_onnx_op("Conv")) return true;
  if (!consumer.is_onnx_op("AveragePool") || consumer.attr_int("ceil_mode", 0) != 0) return false;
  const std::vector<int64_t> own = consumer.attr_ints("pads");
  return consumer.attr_int("count_include_pad", 0) == 1 || std::all_of(own.begin(), own.end(), [](int64_t p) { return p == 0; });
}

bool fuse(ir::Node& pad, PassContext& context) {
  ir::Value* padded = pad.output(0);
  ir::Node* consumer = sole_consumer(padded);
  if (consumer == nullptr || context.excluded(*consumer) || consumer->input(0) != padded || pad.input(0) == nullptr ||
      !only_first_output_used(pad) || !pads_like_zeros(*consumer) || pad_fill_value(pad, context) != 0.0)
    return false;
  auto rank = consumer_rank(*consumer);
  auto x_shape = pad.input(0)->static_shape();
  if (!rank && x_shape) rank = x_shape->size();
  if (!rank || *rank < 3 || (x_shape && x_shape->size() != *rank)) return false;
  auto pads = pad_amounts(pad, context, *rank);
  if (!pads) return false;
  const size_t spatial = *rank - 2;
  for (int64_t p : *pads)
    if (p < 0) return false;  // a crop, not a padding
  if ((*pads)[0] != 0 || (*pads)[1] != 0 || (*pads)[*rank] != 0 || (*pads)[*rank + 1] != 0) return false;

  std::vector<int64_t> merged = consumer->attr_ints("pads");
  if (merged.empty()) merged.assign(2 * spatial, 0);
  if (merged.size() != 2 * spatial) return false;
  for (size_t i = 0; i < spatial; ++i) {
    merged[i] += (*pads)[2 + i];                    // begin of spatial axis i
    merged[spatial + i] += (*pads)[*rank + 2 + i];  // its end
  }

  consumer->set_attribute(onnx::MakeAttribute("pads", merged));
  if (consumer->is_onnx_op("AveragePool")) consumer->set_attribute(onnx::MakeAttribute("count_include_pad", int64_t{1}));
  consumer->set_input(0, pad.input(0));
  context.note(fmt::format("{}: merged into the pads of {}", pad.describe(), consumer->describe()));
  pad.graph()->remove_node(&pad);
  return true;
}

}  // namespace

std::unique_ptr<Pass> make_fuse_pad_into_conv() {
  // The step removes the Pad it fuses.
  return make_fusion_pass("fuse-pad-into-conv",
                          "merge a zero Pad of the spatial axes into the pads of the Conv or counting AveragePool after it",
                          {"Pad"}, Repeat::once, fuse);
}

}  // namespace onnxkit::passes::fuse
