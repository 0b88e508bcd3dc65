// merge-consecutive-reshapes: a Reshape of a Reshape reads the original.
//
// Before:  t = Reshape(x, s1)   y = Reshape(t, s2)
// After:   y = Reshape(x, s2)   (the first goes when y was its only reader)
//
// Reshape keeps the elements in order, so only the last target matters,
// provided s2 does not copy a dim from t: s2 constant and free of 0 (or
// allowzero = 1, where 0 means an empty dim, not "copy").

#include <fmt/format.h>

#include <algorithm>

#include "passes/eliminate/eliminate_common.h"

namespace onnxkit::passes::eliminate {
namespace {

class MergeConsecutiveReshapes final : public Pass {
 public:
  std::string_view name() const override { return "merge-consecutive-reshapes"; }
  std::string_view summary() const override { return "make a Reshape of a Reshape read the first one's input"; }

  size_t run(ir::Graph& graph, PassContext& context) const override {
    size_t changes = 0;
    for (ir::Node* second : nodes_of(graph, {"Reshape"})) {
      ir::Node* first = second->input(0) != nullptr ? second->input(0)->producer() : nullptr;
      if (first == nullptr || first->graph() != &graph || !first->is_onnx_op("Reshape")) continue;
      if (context.excluded(*first) || context.excluded(*second) || first->input(0) == nullptr) continue;
      auto target = context.constant_ints(second->input(1));
      if (!target) continue;
      const bool copies_dims = second->attr_int("allowzero", 0) == 0 &&
                               std::find(target->begin(), target->end(), 0) != target->end();
      if (copies_dims) continue;
      second->set_input(0, first->input(0));
      context.note(fmt::format("{} now reads the input of {}", second->describe(), first->describe()));
      ++changes;
    }
    return changes;
  }
};

}  // namespace

std::unique_ptr<Pass> make_merge_consecutive_reshapes() { return std::make_unique<MergeConsecutiveReshapes>(); }

}  // namespace onnxkit::passes::eliminate
