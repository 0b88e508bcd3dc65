// merge-consecutive-slices: a Slice of a Slice over other axes is one Slice.
//
// Before:  t = Slice(x, [s1], [e1], [a1], [k1])   y = Slice(t, [s2], [e2], [a2], [k2])
// After:   y = Slice(x, [s1, s2], [e1, e2], [a1, a2], [k1, k2])
//          (the first goes when y was its only reader)
//
// Conditions: opset 10 or later (starts... are inputs), both Slices' starts,
// ends, axes and steps constant (see constant_slice), x's rank known when an
// axis is negative, and no axis sliced by both: a Slice over axis a leaves
// every other axis as it is, so slicing two disjoint sets of axes one after
// the other is slicing both at once. Overlapping axes would need the
// composed start/step, which depends on the dim: declined.

#include <fmt/format.h>

#include <algorithm>

#include "passes/eliminate/eliminate_common.h"
#include "runtime/tensor.h"

namespace onnxkit::passes::eliminate {
namespace {

size_t rewrite(ir::Node& second, PassContext& context) {
  if (context.opset() < 10) return 0;
  ir::Node* first = paired_producer(second, "Slice", context);
  if (first == nullptr) return 0;
  auto outer = constant_slice(*first, context);
  auto inner = constant_slice(second, context);
  if (!outer || !inner) return 0;
  for (int64_t axis : inner->axes)
    if (std::find(outer->axes.begin(), outer->axes.end(), axis) != outer->axes.end()) return 0;
  auto join = [](std::vector<int64_t> a, const std::vector<int64_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  ir::Graph& graph = *second.graph();
  const std::string stem = second.output(0)->name();
  const auto constant = [&](std::string_view what, const std::vector<int64_t>& values) {
    return context.add_constant(graph, stem + std::string(what),
                                runtime::Tensor::from<int64_t>({static_cast<int64_t>(values.size())}, values));
  };
  const std::string what = fmt::format("{} and {}", first->describe(), second.describe());
  second.set_input(0, first->input(0));
  second.set_input(1, constant("_starts", join(outer->starts, inner->starts)));
  second.set_input(2, constant("_ends", join(outer->ends, inner->ends)));
  second.set_input(3, constant("_axes", join(outer->axes, inner->axes)));
  second.set_input(4, constant("_steps", join(outer->steps, inner->steps)));
  context.note(fmt::format("merged {} into one Slice", what));
  return 1;
}

}  // namespace

std::unique_ptr<Pass> make_merge_consecutive_slices() {
  return make_node_pass("merge-consecutive-slices", "merge a Slice of a Slice over other axes into one Slice", {"Slice"},
                        rewrite);
}

}  // namespace onnxkit::passes::eliminate
