// merge-consecutive-reshapes: a Reshape of a Reshape (or of a Flatten,
// Squeeze or Unsqueeze: other views) reads the original.
//
// Before:  t = Reshape(x, s1)   y = Reshape(t, s2)
// After:   y = Reshape(x, s2')  (the first goes when y was its only reader)
//
// Each of these keeps the elements in order, so only the last shape matters. An
// entry 0 of s2 (allowzero = 0) copies t's dim at that index, which s2' must
// then say some other way: s1's own entry there when it is a number (a 0 of
// s1 copies x's dim, so a 0 stays a 0), else t's inferred dim (the only
// way for a view other than Reshape). s2 constant;
// declined when s1 copies under allowzero = 1 (its 0 is an empty dim, which
// s2's 0 would then read as "copy") or t's dim is not known.

#include <fmt/format.h>

#include <algorithm>

#include "passes/eliminate/eliminate_common.h"
#include "runtime/tensor.h"

namespace onnxkit::passes::eliminate {
namespace {

// s2 with every entry 0 made independent of t; nullopt when it cannot be.
std::optional<std::vector<int64_t>> without_copies(const ir::Node& first, std::vector<int64_t> target,
                                                   const PassContext& context) {
  auto s1 = first.op_type() == "Reshape" ? context.constant_ints(first.input(1)) : std::nullopt;
  auto t_dims = first.output(0)->static_shape();
  const bool first_allows_zero = first.attr_int("allowzero", 0) != 0;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] != 0) continue;
    if (s1 && i < s1->size() && (*s1)[i] > 0) {
      target[i] = (*s1)[i];
    } else if (s1 && i < s1->size() && (*s1)[i] == 0 && !first_allows_zero) {
      // copies x's dim i, as s1 did
    } else if (t_dims && i < t_dims->size() && (*t_dims)[i] > 0) {
      target[i] = (*t_dims)[i];
    } else {
      return std::nullopt;
    }
  }
  return target;
}

bool is_view(const ir::Node& node) {
  return node.is_onnx_op("Reshape") || node.is_onnx_op("Flatten") || node.is_onnx_op("Squeeze") || node.is_onnx_op("Unsqueeze");
}

size_t merge_reshape_into_view(ir::Node& second, PassContext& context) {
  ir::Graph& graph = *second.graph();
  ir::Node* first = second.input(0) != nullptr ? second.input(0)->producer() : nullptr;
  if (first == nullptr || first->graph() != &graph || !is_view(*first)) return 0;
  if (context.excluded(*first) || first->input(0) == nullptr) return 0;
  auto target = context.constant_ints(second.input(1));
  if (!target) return 0;
  const bool copies_dims = second.attr_int("allowzero", 0) == 0 && std::find(target->begin(), target->end(), 0) != target->end();
  if (copies_dims) {
    auto independent = without_copies(*first, *target, context);
    if (!independent) return 0;
    second.set_input(
        1, context.add_constant(graph, second.output(0)->name() + "_shape",
                                runtime::Tensor::from<int64_t>({static_cast<int64_t>(independent->size())}, *independent)));
  }
  second.set_input(0, first->input(0));
  context.note(fmt::format("{} now reads the input of {}", second.describe(), first->describe()));
  return 1;
}

}  // namespace

std::unique_ptr<Pass> make_merge_consecutive_reshapes() {
  return make_node_pass("merge-consecutive-reshapes",
                        "make a Reshape of a Reshape, Flatten, Squeeze or Unsqueeze read that one's input", {"Reshape"},
                        merge_reshape_into_view);
}

}  // namespace onnxkit::passes::eliminate
