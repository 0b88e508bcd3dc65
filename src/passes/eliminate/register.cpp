#include "passes/eliminate/eliminate_common.h"
#include "passes/registry.h"

namespace onnxkit::passes {

void add_elimination_passes(std::vector<std::unique_ptr<Pass>>& passes) {
  // Inlining first: a branch's nodes then meet the other passes in this round.
  add_each(passes, {eliminate::make_inline_constant_if,
                    eliminate::make_eliminate_identity,
                    eliminate::make_eliminate_dropout,
                    eliminate::make_eliminate_noop_cast,
                    eliminate::make_eliminate_noop_transpose,
                    eliminate::make_eliminate_noop_reshape,
                    eliminate::make_eliminate_noop_flatten,
                    eliminate::make_eliminate_noop_expand,
                    eliminate::make_eliminate_noop_arithmetic,
                    eliminate::make_eliminate_noop_pad,
                    eliminate::make_eliminate_noop_slice,
                    eliminate::make_eliminate_single_concat,
                    eliminate::make_eliminate_single_split,
                    eliminate::make_eliminate_squeeze_unsqueeze,
                    eliminate::make_merge_consecutive_squeezes,
                    eliminate::make_eliminate_repeated_unary,
                    eliminate::make_eliminate_where_not,
                    eliminate::make_merge_consecutive_transposes,
                    eliminate::make_transpose_as_reshape,
                    eliminate::make_merge_consecutive_reshapes,
                    eliminate::make_merge_consecutive_slices,
                    eliminate::make_flatten_nested_concats,
                    eliminate::make_eliminate_duplicate_initializers,
                    eliminate::make_eliminate_common_subexpressions});
}

}  // namespace onnxkit::passes
