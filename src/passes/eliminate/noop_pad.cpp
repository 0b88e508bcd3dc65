// eliminate-noop-pad: a Pad that adds nothing on any side.
//
// Before:  y = Pad(x, pads = [0, 0, 0, 0])
// After:   readers of y read x
//
// Conditions: every pad 0 (attribute `pads` before opset 11, a constant
// input from 11), whatever the mode and fill value.

#include "passes/eliminate/eliminate_common.h"

namespace onnxkit::passes::eliminate {
namespace {

bool pads_nothing(const ir::Node& pad, const PassContext& context) {
  auto pads = ints_attribute_or_input(pad, context, "pads", 1, 11);
  if (!pads) return false;
  for (int64_t p : *pads)
    if (p != 0) return false;
  return true;
}

}  // namespace

std::unique_ptr<Pass> make_eliminate_noop_pad() {
  return make_bypass_pass("eliminate-noop-pad", "remove Pad with all pads 0", {"Pad"}, pads_nothing);
}

}  // namespace onnxkit::passes::eliminate
