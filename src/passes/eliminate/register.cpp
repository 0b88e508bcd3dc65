#include "passes/eliminate/eliminate_common.h"
#include "passes/registry.h"

namespace onnxkit::passes {

void add_elimination_passes(std::vector<std::unique_ptr<Pass>>& passes) {
  // Inlining first: a branch's nodes then meet the other passes in this round.
  passes.push_back(eliminate::make_inline_constant_if());
  passes.push_back(eliminate::make_eliminate_identity());
  passes.push_back(eliminate::make_eliminate_dropout());
  passes.push_back(eliminate::make_eliminate_noop_cast());
  passes.push_back(eliminate::make_eliminate_noop_transpose());
  passes.push_back(eliminate::make_eliminate_noop_reshape());
  passes.push_back(eliminate::make_eliminate_noop_flatten());
  passes.push_back(eliminate::make_eliminate_noop_expand());
  passes.push_back(eliminate::make_eliminate_noop_arithmetic());
  passes.push_back(eliminate::make_eliminate_noop_pad());
  passes.push_back(eliminate::make_eliminate_noop_slice());
  passes.push_back(eliminate::make_eliminate_single_concat());
  passes.push_back(eliminate::make_eliminate_single_split());
  passes.push_back(eliminate::make_eliminate_squeeze_unsqueeze());
  passes.push_back(eliminate::make_merge_consecutive_squeezes());
  passes.push_back(eliminate::make_eliminate_repeated_unary());
  passes.push_back(eliminate::make_eliminate_where_not());
  passes.push_back(eliminate::make_merge_consecutive_transposes());
  passes.push_back(eliminate::make_transpose_as_reshape());
  passes.push_back(eliminate::make_merge_consecutive_reshapes());
  passes.push_back(eliminate::make_merge_consecutive_slices());
  passes.push_back(eliminate::make_flatten_nested_concats());
  passes.push_back(eliminate::make_eliminate_duplicate_initializers());
  passes.push_back(eliminate::make_eliminate_common_subexpressions());
}

}  // namespace onnxkit::passes
