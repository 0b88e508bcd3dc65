// eliminate-squeeze-unsqueeze: Squeeze then Unsqueeze on the same axes (or
// the reverse) gives the tensor back.
//
// Before:  s = Squeeze(x: float[N, 1, 8], axes = [1])   y = Unsqueeze(s, axes = [1])
// After:   readers of y read x           (Squeeze goes too when y was its only reader)
//
// Both ops' axes refer to the larger of the two ranks (Squeeze's input,
// Unsqueeze's output), so the pair is the identity exactly when the two axis
// sets, made non-negative against that rank, are equal. Axes are attributes
// before opset 13, constant inputs from 13; a Squeeze without axes removes
// every dim of size 1, which needs x's dims all known.

#include <fmt/format.h>

#include <algorithm>

#include "passes/eliminate/eliminate_common.h"

namespace onnxkit::passes::eliminate {
namespace {

// The axes of a Squeeze or Unsqueeze, non-negative against `rank` and sorted.
std::optional<std::vector<int64_t>> sorted_axes(const ir::Node& node, const PassContext& context, std::optional<int64_t> rank,
                                                const ir::Value* squeezed_input) {
  bool present = false;
  auto axes = ints_attribute_or_input(node, context, "axes", 1, 13, &present);
  if (present && !axes) return std::nullopt;
  if (!present) {
    if (node.op_type() != "Squeeze" || squeezed_input == nullptr) return std::nullopt;
    auto dims = squeezed_input->static_shape();
    if (!dims) return std::nullopt;
    axes.emplace();
    for (size_t i = 0; i < dims->size(); ++i) {
      if ((*dims)[i] < 0) return std::nullopt;  // a symbolic dim may or may not be 1
      if ((*dims)[i] == 1) axes->push_back(static_cast<int64_t>(i));
    }
  }
  if (std::any_of(axes->begin(), axes->end(), [](int64_t a) { return a < 0; })) {
    if (!rank) return std::nullopt;
    axes = normalize_axes(*axes, *rank);
    if (!axes) return std::nullopt;
  }
  std::sort(axes->begin(), axes->end());
  return axes;
}

// True when `second`, reading the output of `first`, undoes it.
bool undoes(const ir::Node& first, const ir::Node& second, const PassContext& context) {
  const ir::Value* x = first.input(0);
  auto x_rank = known_rank(x);
  if (first.op_type() == "Squeeze") {
    // Both refer to x's rank.
    std::optional<int64_t> rank;
    if (x_rank) rank = static_cast<int64_t>(*x_rank);
    auto removed = sorted_axes(first, context, rank, x);
    auto inserted = sorted_axes(second, context, rank, nullptr);
    return removed && inserted && *removed == *inserted;
  }
  // Unsqueeze then Squeeze: both refer to the rank in between.
  auto raw_inserted = ints_attribute_or_input(first, context, "axes", 1, 13);
  if (!raw_inserted) return false;
  std::optional<int64_t> rank;
  if (x_rank) rank = static_cast<int64_t>(*x_rank + raw_inserted->size());
  auto inserted = sorted_axes(first, context, rank, nullptr);
  auto removed = sorted_axes(second, context, rank, first.output(0));
  return inserted && removed && *inserted == *removed;
}

size_t remove_squeeze_unsqueeze(ir::Node& second, PassContext& context) {
  ir::Graph& graph = *second.graph();
  ir::Node* first = paired_producer(second, second.op_type() == "Squeeze" ? "Unsqueeze" : "Squeeze", context);
  if (first == nullptr) return 0;
  if (!undoes(*first, second, context)) return 0;
  std::string what = fmt::format("{} and {}", first->describe(), second.describe());
  if (!replace_value(graph, second.output(0), first->input(0))) return 0;
  graph.remove_node(&second);
  context.note(fmt::format("removed {}: they cancel", what));
  return 1;
}

}  // namespace

std::unique_ptr<Pass> make_eliminate_squeeze_unsqueeze() {
  return make_node_pass("eliminate-squeeze-unsqueeze", "remove Squeeze followed by Unsqueeze on the same axes, and the reverse",
                        {"Squeeze", "Unsqueeze"}, remove_squeeze_unsqueeze);
}

}  // namespace onnxkit::passes::eliminate
