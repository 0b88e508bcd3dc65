// eliminate-noop-flatten: a Flatten of a 2-D tensor that keeps its shape.
//
// Before:  y = Flatten<axis = 1>(x: float[batch, 512])
// After:   readers of y read x
//
// Flatten gives [d0 * ... * d(axis-1), d(axis) * ... ]. On [d0, d1] that is
// [d0, d1] for axis 1 (or -1), [1, d0 * d1] for axis 0 (or -2), the same
// when d0 is 1, and [d0 * d1, 1] for axis 2, the same when d1 is 1.
// Conditions: x's rank known to be 2, and for axis 0 or 2 the dim known.

#include "passes/eliminate/eliminate_common.h"

namespace onnxkit::passes::eliminate {
namespace {

bool keeps_shape(const ir::Node& flatten, const PassContext&) {
  auto dims = flatten.input(0) != nullptr ? flatten.input(0)->static_shape() : std::nullopt;
  if (!dims || dims->size() != 2) return false;
  int64_t axis = flatten.attr_int("axis", 1);
  if (axis < -2 || axis > 2) return false;
  if (axis < 0) axis += 2;
  if (axis == 1) return true;
  return (*dims)[axis == 0 ? 0 : 1] == 1;
}

}  // namespace

std::unique_ptr<Pass> make_eliminate_noop_flatten() {
  return make_bypass_pass("eliminate-noop-flatten", "remove Flatten of a 2-D tensor to its own shape", {"Flatten"}, keeps_shape);
}

}  // namespace onnxkit::passes::eliminate
