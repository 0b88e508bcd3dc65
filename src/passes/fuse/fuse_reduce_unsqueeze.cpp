// fuse-reduce-unsqueeze: a reduction that drops axes, followed by an
// Unsqueeze that puts the same axes back, keeps them instead.
//
// Before:  t = ReduceMean<keepdims = 0>(x, axes = [1, 2])   y = Unsqueeze(t, [1, 2])
// After:   y = ReduceMean<keepdims = 1>(x, axes = [1, 2])
//
// Conditions: keepdims 0; the reduced axes known (attribute, or constant
// input from opset 13 for ReduceSum and 18 for the others; none given means
// all axes unless noop_with_empty_axes = 1, which declines); the Unsqueeze
// (axes an attribute before 13, a constant input from then) the only reader
// of the reduction's output, not excluded; x's rank known when an axis is
// negative or all are reduced. Both axis lists name positions in x's rank:
// the Unsqueeze's output has x's rank again. Equal sets: reducing with
// keepdims = 1 leaves a 1 exactly where the Unsqueeze would insert one.

#include <fmt/format.h>
#include <onnx/defs/attr_proto_util.h>

#include <algorithm>

#include "passes/eliminate/eliminate_common.h"
#include "passes/fuse/fuse_common.h"

namespace onnxkit::passes::fuse {
namespace {

// Sorted, distinct and non-negative against `rank` (which may be unknown
// when every axis is already non-negative); nullopt otherwise.
std::optional<std::vector<int64_t>> axis_set(std::vector<int64_t> axes, std::optional<size_t> rank) {
  if (rank) {
    auto normalized = eliminate::normalize_axes(std::move(axes), static_cast<int64_t>(*rank));
    if (!normalized) return std::nullopt;
    axes = std::move(*normalized);
  } else if (std::any_of(axes.begin(), axes.end(), [](int64_t a) { return a < 0; })) {
    return std::nullopt;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return std::nullopt;
  return axes;
}

bool fuse(ir::Node& reduce, PassContext& context) {
  if (reduce.attr_int("keepdims", 1) != 0 || reduce.input(0) == nullptr) return false;
  ir::Node* unsqueeze = sole_consumer(reduce.output(0));
  if (unsqueeze == nullptr || !unsqueeze->is_onnx_op("Unsqueeze") || context.excluded(*unsqueeze) ||
      unsqueeze->input(0) != reduce.output(0))
    return false;
  const auto rank = eliminate::known_rank(reduce.input(0));
  const int64_t axes_input_since = reduce.op_type() == "ReduceSum" ? 13 : 18;
  bool present = false;
  auto reduced = eliminate::ints_attribute_or_input(reduce, context, "axes", 1, axes_input_since, &present);
  if (present && !reduced) return false;
  if (!reduced || reduced->empty()) {
    if (reduce.attr_int("noop_with_empty_axes", 0) != 0 || !rank) return false;
    reduced.emplace();
    for (size_t i = 0; i < *rank; ++i) reduced->push_back(static_cast<int64_t>(i));
  }
  auto inserted = eliminate::ints_attribute_or_input(*unsqueeze, context, "axes", 1, 13);
  if (!inserted) return false;
  auto a = axis_set(*reduced, rank), b = axis_set(*inserted, rank);
  if (!a || !b || *a != *b) return false;
  if (!commit_fusion(context, reduce, *unsqueeze, {}, "(keepdims = 1)")) return false;
  reduce.set_attribute(onnx::MakeAttribute("keepdims", int64_t{1}));
  return true;
}

}  // namespace

std::unique_ptr<Pass> make_fuse_reduce_unsqueeze() {
  return make_fusion_pass("fuse-reduce-unsqueeze",
                          "make a reduction with keepdims = 0 followed by an Unsqueeze of the same axes keep them",
                          {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                           "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"},
                          Repeat::once, fuse);
}

}  // namespace onnxkit::passes::fuse
