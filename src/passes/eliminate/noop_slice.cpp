// eliminate-noop-slice: a Slice that keeps every element.
//
// Before:  y = Slice(x: float[N, 8], starts = [0], ends = [INT64_MAX], axes = [1])
// After:   readers of y read x
//
// Conditions: starts, ends, axes, steps constant (attributes before opset
// 10); on each sliced axis step 1, start 0 (or at most -dim), and end at
// least the dim. When the dim is unknown only an end of 2^31 - 1 or more
// counts as "to the end" (the sentinels exporters write: INT_MAX, INT64_MAX).

#include <algorithm>
#include <limits>

#include "passes/eliminate/eliminate_common.h"

namespace onnxkit::passes::eliminate {
namespace {

bool keeps_everything(const ir::Node& slice, const PassContext& context) {
  auto starts = ints_attribute_or_input(slice, context, "starts", 1, 10);
  auto ends = ints_attribute_or_input(slice, context, "ends", 2, 10);
  if (!starts || !ends || starts->size() != ends->size()) return false;
  bool has_axes = false, has_steps = false;
  auto axes = ints_attribute_or_input(slice, context, "axes", 3, 10, &has_axes);
  if (has_axes && !axes) return false;
  // Steps came with the inputs at opset 10; before, there is no attribute of that name.
  auto given_steps = ints_attribute_or_input(slice, context, "steps", 4, 10, &has_steps);
  if (has_steps && !given_steps) return false;
  const std::vector<int64_t> steps = given_steps.value_or(std::vector<int64_t>(starts->size(), 1));
  if (!axes) {
    axes.emplace();
    for (size_t i = 0; i < starts->size(); ++i) axes->push_back(static_cast<int64_t>(i));
  }
  if (axes->size() != starts->size() || steps.size() != starts->size()) return false;
  auto dims = slice.input(0) ? slice.input(0)->static_shape() : std::nullopt;
  const bool has_negative_axis = std::any_of(axes->begin(), axes->end(), [](int64_t a) { return a < 0; });
  if (has_negative_axis) {
    if (!dims) return false;
    axes = normalize_axes(*axes, static_cast<int64_t>(dims->size()));
    if (!axes) return false;
  }
  constexpr int64_t kToTheEnd = std::numeric_limits<int32_t>::max();
  for (size_t i = 0; i < axes->size(); ++i) {
    const int64_t dim = dims && static_cast<size_t>((*axes)[i]) < dims->size() ? (*dims)[(*axes)[i]] : -1;
    const int64_t start = (*starts)[i], end = (*ends)[i];
    if (steps[i] != 1) return false;
    const bool from_start = start == 0 || (dim >= 0 && start <= -dim);
    const bool to_end = end >= kToTheEnd || (dim >= 0 && end >= dim);
    if (!from_start || !to_end) return false;
  }
  return true;
}

}  // namespace

std::unique_ptr<Pass> make_eliminate_noop_slice() {
  return make_bypass_pass("eliminate-noop-slice", "remove Slice that keeps every element", {"Slice"},
                          keeps_everything);
}

}  // namespace onnxkit::passes::eliminate
