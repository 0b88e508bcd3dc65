#include "passes/eliminate/eliminate_common.h"

#include <fmt/format.h>

#include <string>

namespace onnxkit::passes::eliminate {
namespace {

class BypassPass final : public Pass {
 public:
  BypassPass(std::string_view name, std::string_view summary, std::initializer_list<std::string_view> op_types,
             NoopTest is_noop)
      : name_(name), summary_(summary), op_types_(op_types), is_noop_(std::move(is_noop)) {}

  std::string_view name() const override { return name_; }
  std::string_view summary() const override { return summary_; }

  size_t run(ir::Graph& graph, PassContext& context) const override {
    size_t changes = 0;
    // Each step removes only the node it looks at: the rest stay valid.
    for (ir::Node* node : nodes_of(graph, op_types_)) {
      if (context.excluded(*node) || !is_noop_(*node, context)) continue;
      std::string what = node->describe();
      if (!bypass_node(*node)) continue;
      context.note(fmt::format("removed {}", what));
      ++changes;
    }
    return changes;
  }

 private:
  std::string_view name_;
  std::string_view summary_;
  std::vector<std::string_view> op_types_;
  NoopTest is_noop_;
};

}  // namespace

std::unique_ptr<Pass> make_bypass_pass(std::string_view name, std::string_view summary,
                                       std::initializer_list<std::string_view> op_types, NoopTest is_noop) {
  return std::make_unique<BypassPass>(name, summary, op_types, std::move(is_noop));
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

}  // namespace onnxkit::passes::eliminate
