// eliminate-single-concat: a Concat of one tensor is that tensor.
//
// Before:  y = Concat<axis = 1>(x)
// After:   readers of y read x

#include "passes/eliminate/eliminate_common.h"

namespace onnxkit::passes::eliminate {

std::unique_ptr<Pass> make_eliminate_single_concat() {
  return make_bypass_pass("eliminate-single-concat", "remove Concat of a single input", {"Concat"},
                          [](const ir::Node& concat, const PassContext&) { return concat.inputs().size() == 1; });
}

}  // namespace onnxkit::passes::eliminate
