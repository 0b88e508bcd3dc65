// fuse-pad-into-maxpool: a Pad that a MaxPool's own padding can do.
//
// Before:  p = Pad<mode = constant>(x, pads, -inf)   y = MaxPool<pads = q>(p)
// After:   y = MaxPool<pads = q + spatial part of pads>(x)
//
// MaxPool's own padding takes no part in the maximum, as if it were -inf;
// a Pad with -inf is then the same padding. A Pad with 0 is too when x is
// a Relu's output: every element is >= 0, so a 0 beside it never wins a
// window that holds one real element (NaN aside, which Relu does not make
// from numbers). Every window holds one when the merged pads on each side
// are below the kernel's size (dilation 1, ceil_mode 0: a window starts at
// most pads_begin before the first element and ends at most pads_end after
// the last). Conditions besides: the Pad's pads known, none negative, none
// on the batch and channel axes; the Pad read by the MaxPool alone, as its
// data input; the MaxPool with auto_pad NOTSET and its Indices output
// unused (indices count positions of the padded input). Neither excluded.

#include <fmt/format.h>
#include <onnx/defs/attr_proto_util.h>

#include <algorithm>
#include <cmath>

#include "passes/fuse/fuse_common.h"

namespace onnxkit::passes::fuse {
namespace {

// True when the padding values never win a window (see above).
bool pads_like_max_pool(const ir::Node& pad, const PassContext& context) {
  auto fill = pad_fill_value(pad, context);
  if (!fill) return false;
  if (std::isinf(*fill) && *fill < 0) return true;
  const ir::Node* producer = pad.input(0)->producer();
  return *fill == 0.0 && producer != nullptr && producer->is_onnx_op("Relu");
}

bool fuse(ir::Node& pad, PassContext& context) {
  ir::Node* pool = sole_consumer(pad.output(0));
  if (pool == nullptr || !pool->is_onnx_op("MaxPool") || context.excluded(*pool) || pool->input(0) != pad.output(0) ||
      pad.input(0) == nullptr || !only_first_output_used(pad) || !only_first_output_used(*pool))
    return false;
  if (pool->attr_string("auto_pad", "NOTSET") != "NOTSET" || pool->attr_int("ceil_mode", 0) != 0) return false;
  const std::vector<int64_t> kernel = pool->attr_ints("kernel_shape");
  const std::vector<int64_t> dilations = pool->attr_ints("dilations");
  if (kernel.empty() || std::any_of(dilations.begin(), dilations.end(), [](int64_t d) { return d != 1; })) return false;
  if (!pads_like_max_pool(pad, context)) return false;
  const size_t spatial = kernel.size(), rank = spatial + 2;
  auto pads = pad_amounts(pad, context, rank);
  if (!pads || std::any_of(pads->begin(), pads->end(), [](int64_t p) { return p < 0; })) return false;
  if ((*pads)[0] != 0 || (*pads)[1] != 0 || (*pads)[rank] != 0 || (*pads)[rank + 1] != 0) return false;
  std::vector<int64_t> merged = pool->attr_ints("pads");
  if (merged.empty()) merged.assign(2 * spatial, 0);
  if (merged.size() != 2 * spatial) return false;
  for (size_t i = 0; i < spatial; ++i) {
    merged[i] += (*pads)[2 + i];
    merged[spatial + i] += (*pads)[rank + 2 + i];
    if (merged[i] >= kernel[i] || merged[spatial + i] >= kernel[i]) return false;
  }
  pool->set_attribute(onnx::MakeAttribute("pads", merged));
  pool->set_input(0, pad.input(0));
  context.note(fmt::format("{}: merged into the pads of {}", pad.describe(), pool->describe()));
  pad.graph()->remove_node(&pad);
  return true;
}

}  // namespace

std::unique_ptr<Pass> make_fuse_pad_into_maxpool() {
  return make_fusion_pass("fuse-pad-into-maxpool",
                          "merge a -inf Pad (or a 0 Pad of a Relu's output) into the pads of the MaxPool after it", {"Pad"},
                          Repeat::once, fuse);
}

}  // namespace onnxkit::passes::fuse
