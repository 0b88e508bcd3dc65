// merge-consecutive-squeezes: an Unsqueeze of an Unsqueeze (or a Squeeze of
// a Squeeze) is one.
//
// Before:  t = Unsqueeze(x, [0])   y = Unsqueeze(t, [2])     (x: [a, b])
// After:   y = Unsqueeze(x, [0, 2])                          ([1, a, 1, b])
//
// Unsqueeze's axes are positions in its output. The second's are positions
// in the final output as they are; the first's are positions in t, whose
// axes are the final axes the second did not insert, in order: t's axis p is
// the p-th final position not in the second's axes. Squeeze's axes are
// positions in its input: the first's are positions in x as they are; the
// second's are positions in t, whose axes are x's axes the first kept: t's
// axis q is the q-th axis of x not in the first's axes. Axes are attributes
// before opset 13, constant inputs from 13; negative axes need the rank
// (known or declined), and a Squeeze without axes declines (its axes depend
// on the dims).

#include <fmt/format.h>
#include <onnx/defs/attr_proto_util.h>

#include <algorithm>
#include <set>

#include "passes/eliminate/eliminate_common.h"
#include "runtime/tensor.h"

namespace onnxkit::passes::eliminate {
namespace {

// The axes of `node` made non-negative against `rank` (when known); nullopt
// when absent, not constant, out of range, repeated, or negative with no rank.
std::optional<std::vector<int64_t>> axes_of(const ir::Node& node, const PassContext& context, std::optional<int64_t> rank) {
  auto axes = ints_attribute_or_input(node, context, "axes", 1, 13);
  if (!axes || axes->empty()) return std::nullopt;
  if (rank) {
    axes = normalize_axes(std::move(*axes), *rank);
    if (!axes) return std::nullopt;
  } else if (std::any_of(axes->begin(), axes->end(), [](int64_t a) { return a < 0; })) {
    return std::nullopt;
  }
  if (std::set<int64_t>(axes->begin(), axes->end()).size() != axes->size()) return std::nullopt;
  return axes;
}

// The `index`-th non-negative integer not in `skipped`.
int64_t nth_not_in(const std::set<int64_t>& skipped, int64_t index) {
  int64_t position = 0;
  for (;; ++position) {
    if (skipped.count(position) != 0) continue;
    if (index-- == 0) return position;
  }
}

// The merged axes, in the first node's input (Squeeze) or the second's output (Unsqueeze).
std::optional<std::vector<int64_t>> merged_axes(const ir::Node& first, const ir::Node& second, const PassContext& context) {
  const auto rank = known_rank(first.input(0));
  const bool unsqueeze = second.op_type() == "Unsqueeze";
  auto given0 = ints_attribute_or_input(first, context, "axes", 1, 13);
  auto given1 = ints_attribute_or_input(second, context, "axes", 1, 13);
  if (!given0 || !given1) return std::nullopt;
  // The rank each node's axes count in: Unsqueeze's output, Squeeze's input.
  std::optional<int64_t> r0, r1;
  if (rank) {
    const auto n = static_cast<int64_t>(*rank), k0 = static_cast<int64_t>(given0->size()),
               k1 = static_cast<int64_t>(given1->size());
    r0 = unsqueeze ? n + k0 : n;
    r1 = unsqueeze ? n + k0 + k1 : n - k0;
  }
  auto a0 = axes_of(first, context, r0);
  auto a1 = axes_of(second, context, r1);
  if (!a0 || !a1) return std::nullopt;
  // Unsqueeze: the first's axes through the second's gaps; Squeeze: the second's through the first's.
  const std::vector<int64_t>& direct = unsqueeze ? *a1 : *a0;
  const std::vector<int64_t>& mapped = unsqueeze ? *a0 : *a1;
  const std::set<int64_t> skipped(direct.begin(), direct.end());
  std::vector<int64_t> merged = direct;
  for (int64_t axis : mapped) merged.push_back(nth_not_in(skipped, axis));
  std::sort(merged.begin(), merged.end());
  return merged;
}

size_t rewrite(ir::Node& second, PassContext& context) {
  ir::Node* first = paired_producer(second, second.op_type(), context);
  if (first == nullptr) return 0;
  auto merged = merged_axes(*first, second, context);
  if (!merged) return 0;
  const std::string what = fmt::format("{} and {}", first->describe(), second.describe());
  if (context.opset() < 13) {
    second.set_attribute(onnx::MakeAttribute("axes", *merged));
  } else {
    second.set_input(1, context.add_constant(*second.graph(), second.output(0)->name() + "_axes",
                                             runtime::Tensor::from<int64_t>({static_cast<int64_t>(merged->size())}, *merged)));
  }
  second.set_input(0, first->input(0));
  context.note(fmt::format("merged {} into one {}", what, second.op_type()));
  return 1;
}

}  // namespace

std::unique_ptr<Pass> make_merge_consecutive_squeezes() {
  return make_node_pass("merge-consecutive-squeezes", "merge an Unsqueeze of an Unsqueeze, or a Squeeze of a Squeeze, into one",
                        {"Unsqueeze", "Squeeze"}, rewrite);
}

}  // namespace onnxkit::passes::eliminate
