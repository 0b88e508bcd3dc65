#pragma once
// The elimination family: passes that remove nodes computing nothing new.
// Most of them are "bypass" passes: a node whose output equals its input 0
// goes, and its readers read that input (see bypass_node).

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "passes/pass.h"

namespace onnxkit::passes::eliminate {

// Factories, in the order register.cpp runs them (see each pass's file).
std::unique_ptr<Pass> make_eliminate_identity();
std::unique_ptr<Pass> make_eliminate_dropout();
std::unique_ptr<Pass> make_eliminate_noop_cast();
std::unique_ptr<Pass> make_eliminate_noop_transpose();
std::unique_ptr<Pass> make_eliminate_noop_reshape();
std::unique_ptr<Pass> make_eliminate_noop_flatten();
std::unique_ptr<Pass> make_eliminate_noop_expand();
std::unique_ptr<Pass> make_eliminate_noop_arithmetic();
std::unique_ptr<Pass> make_eliminate_noop_pad();
std::unique_ptr<Pass> make_eliminate_noop_slice();
std::unique_ptr<Pass> make_eliminate_single_concat();
std::unique_ptr<Pass> make_eliminate_single_split();
std::unique_ptr<Pass> make_eliminate_squeeze_unsqueeze();
std::unique_ptr<Pass> make_merge_consecutive_squeezes();
std::unique_ptr<Pass> make_eliminate_repeated_unary();
std::unique_ptr<Pass> make_eliminate_where_not();
std::unique_ptr<Pass> make_merge_consecutive_transposes();
std::unique_ptr<Pass> make_transpose_as_reshape();
std::unique_ptr<Pass> make_merge_consecutive_reshapes();
std::unique_ptr<Pass> make_merge_consecutive_slices();
std::unique_ptr<Pass> make_flatten_nested_concats();
std::unique_ptr<Pass> make_eliminate_duplicate_initializers();
std::unique_ptr<Pass> make_eliminate_common_subexpressions();
std::unique_ptr<Pass> make_inline_constant_if();

// True when output 0 of `node` is, for every input, equal to its input 0.
using NoopTest = std::function<bool(const ir::Node& node, const PassContext& context)>;

// A pass that bypasses each node of the default domain whose op is one of
// `op_types` and that `is_noop` accepts, unless the user excluded it.
std::unique_ptr<Pass> make_bypass_pass(std::string_view name, std::string_view summary,
                                       std::initializer_list<std::string_view> op_types, NoopTest is_noop);

// The node computing input 0 of `node` when it is an `op` of the same graph,
// not excluded, with an input 0 of its own: the first of a pair that a pass
// merges or cancels (Slice of a Slice, Not under a Where...). Else null.
ir::Node* paired_producer(const ir::Node& node, std::string_view op, const PassContext& context);

// The rank of `value` when its type says it.
std::optional<size_t> known_rank(const ir::Value* value);

// `axes` made non-negative against `rank`, or nullopt when one is out of range.
std::optional<std::vector<int64_t>> normalize_axes(std::vector<int64_t> axes, int64_t rank);

// An int list that is an attribute before `input_since_opset` and a constant
// input (at `input_index`) from then on: Squeeze/Unsqueeze axes, Pad pads,
// Slice starts... nullopt when absent or not constant; see `present`.
std::optional<std::vector<int64_t>> ints_attribute_or_input(const ir::Node& node, const PassContext& context,
                                                            std::string_view attribute, size_t input_index,
                                                            int64_t input_since_opset, bool* present = nullptr);

// A Slice's constant parameters, one entry per sliced axis: axes as given
// or 0, 1, ... when absent, made non-negative when the input's rank is known
// (else negative axes make it nullopt); steps 1 when absent. Attributes
// before opset 10 (no steps then). Nullopt when any is not constant or the
// lengths differ.
struct SliceParams {
  std::vector<int64_t> starts, ends, axes, steps;
};
std::optional<SliceParams> constant_slice(const ir::Node& slice, const PassContext& context);

// The branch an If takes when its condition is a one-element bool constant:
// an initializer (not a graph input's default) or a Constant node's value.
std::optional<bool> constant_if_condition(const ir::Node& node, const PassContext& context);

// Replaces `node`, an If, by the nodes of its `taken` branch; the If's
// outputs become the branch's results (an Identity keeps an interface name
// when the branch returns a graph input or one value twice). Fails, changing
// nothing, when the branch has inputs or a result count unlike the If's.
// The pass inline-constant-if and `edit --remove-op If` both use it.
Status inline_if_branch(ir::Node& node, bool taken);

}  // namespace onnxkit::passes::eliminate
