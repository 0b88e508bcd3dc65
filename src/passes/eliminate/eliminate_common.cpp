#include "passes/eliminate/eliminate_common.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace onnxkit::passes::eliminate {

std::unique_ptr<Pass> make_bypass_pass(std::string_view name, std::string_view summary,
                                       std::initializer_list<std::string_view> op_types, NoopTest is_noop) {
  return make_node_pass(name, summary, op_types, [is_noop = std::move(is_noop)](ir::Node& node, PassContext& context) -> size_t {
    if (!is_noop(node, context)) return 0;
    std::string what = node.describe();
    if (!bypass_node(node)) return 0;
    context.note(fmt::format("removed {}", what));
    return 1;
  });
}

ir::Node* paired_producer(const ir::Node& node, std::string_view op, const PassContext& context) {
  ir::Node* first = node.input(0) != nullptr ? node.input(0)->producer() : nullptr;
  if (first == nullptr || first->graph() != node.graph() || !first->is_onnx_op(op) || context.excluded(*first) ||
      first->input(0) == nullptr)
    return nullptr;
  return first;
}

std::optional<size_t> known_rank(const ir::Value* value) {
  if (value == nullptr) return std::nullopt;
  auto shape = value->static_shape();
  if (!shape) return std::nullopt;
  return shape->size();
}

std::optional<std::vector<int64_t>> normalize_axes(std::vector<int64_t> axes, int64_t rank) {
  for (int64_t& axis : axes) {
    if (axis < -rank || axis >= rank) return std::nullopt;
    if (axis < 0) axis += rank;
  }
  return axes;
}

std::optional<std::vector<int64_t>> ints_attribute_or_input(const ir::Node& node, const PassContext& context,
                                                            std::string_view attribute, size_t input_index,
                                                            int64_t input_since_opset, bool* present) {
  if (context.opset() < input_since_opset) {
    if (present != nullptr) *present = node.attribute(attribute) != nullptr;
    if (node.attribute(attribute) == nullptr) return std::nullopt;
    return node.attr_ints(attribute);
  }
  const ir::Value* input = node.input(input_index);
  if (present != nullptr) *present = input != nullptr;
  return context.constant_ints(input);
}

std::optional<SliceParams> constant_slice(const ir::Node& slice, const PassContext& context) {
  auto starts = ints_attribute_or_input(slice, context, "starts", 1, 10);
  auto ends = ints_attribute_or_input(slice, context, "ends", 2, 10);
  if (!starts || !ends || starts->size() != ends->size()) return std::nullopt;
  bool has_axes = false, has_steps = false;
  auto axes = ints_attribute_or_input(slice, context, "axes", 3, 10, &has_axes);
  if (has_axes && !axes) return std::nullopt;
  // Steps came with the inputs at opset 10; before, there is no attribute of that name.
  auto steps = ints_attribute_or_input(slice, context, "steps", 4, 10, &has_steps);
  if (has_steps && !steps) return std::nullopt;
  if (!steps) steps.emplace(starts->size(), 1);
  if (!axes) {
    axes.emplace();
    for (size_t i = 0; i < starts->size(); ++i) axes->push_back(static_cast<int64_t>(i));
  }
  if (axes->size() != starts->size() || steps->size() != starts->size()) return std::nullopt;
  if (auto rank = known_rank(slice.input(0))) {
    axes = normalize_axes(*axes, static_cast<int64_t>(*rank));
    if (!axes) return std::nullopt;
  } else if (std::any_of(axes->begin(), axes->end(), [](int64_t a) { return a < 0; })) {
    return std::nullopt;
  }
  return SliceParams{std::move(*starts), std::move(*ends), std::move(*axes), std::move(*steps)};
}

}  // namespace onnxkit::passes::eliminate
