// merge-consecutive-transposes: two Transposes in a row are one (or none).
//
// Before:  t = Transpose<perm = p1>(x)   y = Transpose<perm = p2>(t)
// After:   y = Transpose<perm = p>(x), p[i] = p1[p2[i]]; removed when p is the identity
//          (the first Transpose goes too when y was its only reader)
//
// Why p1[p2[i]]: t's axis j is x's axis p1[j], and y's axis i is t's axis
// p2[i]. A missing perm reverses the axes, which needs the rank.

#include <fmt/format.h>
#include <onnx/defs/attr_proto_util.h>

#include <numeric>

#include "passes/eliminate/eliminate_common.h"

namespace onnxkit::passes::eliminate {
namespace {

// `rank_hint`: the rank when the input's type does not say it (both
// Transposes of a pair have the same rank).
std::optional<std::vector<int64_t>> permutation(const ir::Node& transpose, std::optional<size_t> rank_hint) {
  if (transpose.attribute("perm") != nullptr) return transpose.attr_ints("perm");
  auto rank = known_rank(transpose.input(0));
  if (!rank) rank = rank_hint;
  if (!rank) return std::nullopt;
  std::vector<int64_t> reversed(*rank);
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  return reversed;
}

size_t merge_transposes(ir::Node& second, PassContext& context) {
  ir::Graph& graph = *second.graph();
  ir::Node* first = second.input(0) != nullptr ? second.input(0)->producer() : nullptr;
  if (first == nullptr || first->graph() != &graph || !first->is_onnx_op("Transpose")) return 0;
  if (context.excluded(*first)) return 0;
  auto p1 = permutation(*first, std::nullopt);
  auto p2 = permutation(second, p1 ? std::optional<size_t>(p1->size()) : std::nullopt);
  if (!p1 && p2) p1 = permutation(*first, p2->size());
  if (!p1 || !p2 || p1->size() != p2->size()) return 0;
  std::vector<int64_t> merged(p2->size());
  bool valid = true;
  for (size_t i = 0; i < p2->size(); ++i) {
    const int64_t j = (*p2)[i];
    valid = valid && j >= 0 && static_cast<size_t>(j) < p1->size();
    if (valid) merged[i] = (*p1)[j];
  }
  if (!valid) return 0;
  std::string what = fmt::format("{} and {}", first->describe(), second.describe());
  ir::Value* x = first->input(0);
  bool identity = true;
  for (size_t i = 0; i < merged.size(); ++i) identity = identity && merged[i] == static_cast<int64_t>(i);
  if (identity) {
    if (!replace_value(graph, second.output(0), x)) return 0;
    graph.remove_node(&second);
    context.note(fmt::format("removed {}: they cancel", what));
  } else {
    second.set_input(0, x);
    second.set_attribute(onnx::MakeAttribute("perm", merged));
    context.note(fmt::format("merged {} into one Transpose", what));
  }
  return 1;
}

}  // namespace

std::unique_ptr<Pass> make_merge_consecutive_transposes() {
  return make_node_pass("merge-consecutive-transposes", "merge a Transpose of a Transpose into one, or none", {"Transpose"},
                        merge_transposes);
}

}  // namespace onnxkit::passes::eliminate
