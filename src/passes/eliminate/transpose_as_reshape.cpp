// transpose-as-reshape: a Transpose that only moves axes of size 1 is a Reshape.
//
// Before:  y = Transpose<perm = [0, 2, 1, 3]>(x: float[batch, 1, 7, 768])
// After:   y = Reshape(x, [0, 7, 1, 768])
//
// Conditions: x's rank known and every axis the Transpose moves out of its
// order known; the axes that are not 1 keep their relative order (then the
// elements keep theirs: only unit axes changed place). Each dim of the target
// is the known size, or 0 (copy) for a symbolic dim that stays at its index;
// a symbolic dim that moves must be the only one, and becomes -1 (then every
// other dim is known and not 0, so -1 is determined). A known 0 declines:
// Reshape reads 0 as "copy".
//
// Alone this changes no count, but a Reshape next to this one then merges
// with it (merge-consecutive-reshapes): Swin-T's last stage has 1x1 windows,
// whose partition Reshape -> Transpose -> Reshape becomes one Reshape.

#include <fmt/format.h>

#include "passes/eliminate/eliminate_common.h"
#include "runtime/tensor.h"

namespace onnxkit::passes::eliminate {
namespace {

// The Reshape target that does what `perm` does to a tensor of `dims` (-1:
// symbolic), or nullopt when the Transpose is not a Reshape or the target
// cannot say it.
std::optional<std::vector<int64_t>> reshape_target(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm) {
  if (perm.size() != dims.size()) return std::nullopt;
  std::vector<bool> seen(dims.size(), false);
  int64_t last_kept = -1;  // the last axis of x that is not 1, in output order
  for (int64_t axis : perm) {
    if (axis < 0 || axis >= static_cast<int64_t>(dims.size()) || seen[static_cast<size_t>(axis)]) return std::nullopt;
    seen[static_cast<size_t>(axis)] = true;
    if (dims[static_cast<size_t>(axis)] == 1) continue;
    if (axis < last_kept) return std::nullopt;
    last_kept = axis;
  }
  std::vector<int64_t> target;
  bool inferred = false;
  for (size_t i = 0; i < perm.size(); ++i) {
    const int64_t dim = dims[static_cast<size_t>(perm[i])];
    if (dim == 0) return std::nullopt;
    if (dim > 0) {
      target.push_back(dim);
    } else if (perm[i] == static_cast<int64_t>(i)) {
      target.push_back(0);
    } else {
      if (inferred) return std::nullopt;
      inferred = true;
      target.push_back(-1);
    }
  }
  if (inferred)  // -1 is determined only when no other dim is copied (possibly 0)
    for (int64_t d : target)
      if (d == 0) return std::nullopt;
  return target;
}

size_t rewrite(ir::Node& transpose, PassContext& context) {
  ir::Value* x = transpose.input(0);
  auto dims = x != nullptr ? x->static_shape() : std::nullopt;
  if (!dims || transpose.attribute("perm") == nullptr || !only_first_output_used(transpose)) return 0;
  auto target = reshape_target(*dims, transpose.attr_ints("perm"));
  if (!target) return 0;
  ir::Graph& graph = *transpose.graph();
  const std::string what = transpose.describe();
  ir::Value* shape = context.add_constant(graph, transpose.output(0)->name() + "_shape",
                                          runtime::Tensor::from<int64_t>({static_cast<int64_t>(target->size())}, *target));
  ir::Node* reshape = graph.insert_node(&transpose, "Reshape", {x, shape}, {transpose.output(0)->name() + "_reshaped"});
  if (!transpose.name().empty()) reshape->set_name(graph.unique_node_name(transpose.name() + "_as_reshape"));
  if (!replace_value(graph, transpose.output(0), reshape->output(0))) {
    graph.remove_node(reshape);
    return 0;
  }
  graph.remove_node(&transpose);
  context.note(fmt::format("{} only moves axes of size 1: now a Reshape to [{}]", what, fmt::join(*target, ", ")));
  return 1;
}

}  // namespace

std::unique_ptr<Pass> make_transpose_as_reshape() {
  return make_node_pass("transpose-as-reshape", "make a Transpose that only moves axes of size 1 a Reshape", {"Transpose"},
                        rewrite);
}

}  // namespace onnxkit::passes::eliminate
