// eliminate-single-split: a Split into one part is its input.
//
// Before:  (y) = Split<axis = 1>(x)           (or with split = [C], or num_outputs = 1)
// After:   readers of y read x
//
// A valid Split with one output returns the whole axis: its `split` sizes,
// when given, sum to the axis's length.

#include "passes/eliminate/eliminate_common.h"

namespace onnxkit::passes::eliminate {

std::unique_ptr<Pass> make_eliminate_single_split() {
  return make_bypass_pass("eliminate-single-split", "remove Split with a single output", {"Split"},
                          [](const ir::Node& split, const PassContext&) { return split.outputs().size() == 1; });
}

}  // namespace onnxkit::passes::eliminate
