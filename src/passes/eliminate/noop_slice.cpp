// eliminate-noop-slice: a Slice that keeps every element.
//
// Before:  y = Slice(x: float[N, 8], starts = [0], ends = [INT64_MAX], axes = [1])
// After:   readers of y read x
//
// Conditions: starts, ends, axes, steps constant (attributes before opset
// 10); on each sliced axis step 1, start 0 (or at most -dim), and end at
// least the dim. When the dim is unknown only an end of 2^31 - 1 or more
// counts as "to the end" (the sentinels exporters write: INT_MAX, INT64_MAX).

#include <limits>

#include "passes/eliminate/eliminate_common.h"

namespace onnxkit::passes::eliminate {
namespace {

bool keeps_everything(const ir::Node& slice, const PassContext& context) {
  auto params = constant_slice(slice, context);
  if (!params) return false;
  auto dims = slice.input(0) ? slice.input(0)->static_shape() : std::nullopt;
  const std::vector<int64_t>& axes = params->axes;
  constexpr int64_t kToTheEnd = std::numeric_limits<int32_t>::max();
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t dim = dims && static_cast<size_t>(axes[i]) < dims->size() ? (*dims)[axes[i]] : -1;
    const int64_t start = params->starts[i], end = params->ends[i];
    if (params->steps[i] != 1) return false;
    const bool from_start = start == 0 || (dim >= 0 && start <= -dim);
    const bool to_end = end >= kToTheEnd || (dim >= 0 && end >= dim);
    if (!from_start || !to_end) return false;
  }
  return true;
}

}  // namespace

std::unique_ptr<Pass> make_eliminate_noop_slice() {
  return make_bypass_pass("eliminate-noop-slice", "remove Slice that keeps every element", {"Slice"}, keeps_everything);
}

}  // namespace onnxkit::passes::eliminate
