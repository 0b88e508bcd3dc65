// flatten-nested-concats: a Concat read only by a Concat along the same axis
// splices its inputs into the outer one.
//
// Before:  t = Concat<axis = 1>(a, b)   y = Concat<axis = 1>(x, t, c)
// After:   y = Concat<axis = 1>(x, a, b, c)   (t goes)
//
// Conditions: opset 4 or later (axis an attribute that must be given); both
// axes equal, once made non-negative against the rank (known from either
// node's inputs or output, or both axes already equal as written); the inner
// Concat read by the outer one alone (at any number of its inputs) and not a
// graph output, so that it can go. Concatenation is associative: joining
// (a, b) first and then (x, ., c) gives the same elements in the same order.

#include <fmt/format.h>

#include <algorithm>

#include "passes/eliminate/eliminate_common.h"

namespace onnxkit::passes::eliminate {
namespace {

std::optional<size_t> concat_rank(const ir::Node& concat) {
  if (auto rank = known_rank(concat.output(0))) return rank;
  for (const ir::Value* input : concat.inputs())
    if (auto rank = known_rank(input)) return rank;
  return std::nullopt;
}

bool same_axis(const ir::Node& outer, const ir::Node& inner) {
  const int64_t a = outer.attr_int("axis", 0), b = inner.attr_int("axis", 0);
  if (a == b) return true;
  auto rank = concat_rank(outer);
  if (!rank) rank = concat_rank(inner);
  if (!rank) return false;
  auto normalized = normalize_axes({a, b}, static_cast<int64_t>(*rank));
  return normalized && (*normalized)[0] == (*normalized)[1];
}

// True when every use of `value` is an input of `node`.
bool read_only_by(const ir::Value* value, const ir::Node* node) {
  return !value->is_any_graph_output() &&
         std::all_of(value->uses().begin(), value->uses().end(), [&](const ir::Use& u) { return u.node == node; });
}

size_t rewrite(ir::Node& outer, PassContext& context) {
  if (context.opset() < 4 || outer.attribute("axis") == nullptr) return 0;
  std::vector<ir::Value*> spliced;
  std::vector<std::string> absorbed;
  for (ir::Value* input : outer.inputs()) {
    ir::Node* inner = input != nullptr ? input->producer() : nullptr;
    const bool flattens = inner != nullptr && inner != &outer && inner->graph() == outer.graph() && inner->is_onnx_op("Concat") &&
                          !context.excluded(*inner) && inner->attribute("axis") != nullptr && inner->outputs().size() == 1 &&
                          read_only_by(input, &outer) && same_axis(outer, *inner);
    if (!flattens) {
      spliced.push_back(input);
      continue;
    }
    spliced.insert(spliced.end(), inner->inputs().begin(), inner->inputs().end());
    absorbed.push_back(inner->describe());
  }
  if (absorbed.empty()) return 0;
  // The list only grows: each input is replaced in place or appended.
  for (size_t i = 0; i < spliced.size(); ++i) outer.set_input(i, spliced[i]);
  context.note(fmt::format("{}: spliced in the inputs of {}", outer.describe(), fmt::join(absorbed, ", ")));
  return absorbed.size();
}

}  // namespace

std::unique_ptr<Pass> make_flatten_nested_concats() {
  return make_node_pass("flatten-nested-concats",
                        "splice into a Concat the inputs of a Concat along the same axis that only it reads", {"Concat"},
                        rewrite);
}

}  // namespace onnxkit::passes::eliminate
