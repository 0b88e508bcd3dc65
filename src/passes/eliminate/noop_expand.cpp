// eliminate-noop-expand: an Expand that broadcasts to the input's own shape.
//
// Before:  y = Expand(x: float[batch, 3, 1], shape = [3, 1])
// After:   readers of y read x
//
// Conditions: `shape` constant, no longer than x's rank, and each entry
// (aligned on the right) 1 or equal to x's known dim there: numpy
// broadcasting then leaves x's shape as it is.

#include "passes/eliminate/eliminate_common.h"

namespace onnxkit::passes::eliminate {
namespace {

bool keeps_shape(const ir::Node& expand, const PassContext& context) {
  auto dims = expand.input(0) ? expand.input(0)->static_shape() : std::nullopt;
  auto target = context.constant_ints(expand.input(1));
  if (!dims || !target || target->size() > dims->size()) return false;
  const size_t offset = dims->size() - target->size();
  for (size_t i = 0; i < target->size(); ++i) {
    const int64_t want = (*target)[i], have = (*dims)[offset + i];
    if (want != 1 && !(have >= 0 && want == have)) return false;
  }
  return true;
}

}  // namespace

std::unique_ptr<Pass> make_eliminate_noop_expand() {
  return make_bypass_pass("eliminate-noop-expand", "remove Expand to a shape the input already has", {"Expand"}, keeps_shape);
}

}  // namespace onnxkit::passes::eliminate
