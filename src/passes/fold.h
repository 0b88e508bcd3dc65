#pragma once
// Constant folding: every node whose inputs are all known — initializers,
// and for Shape and Size a tensor whose shape is static — is run through the
// runtime's kernels and replaced by initializers holding its outputs, which
// keep the outputs' names. A pass like the others, registered last so that
// each round folds what the rewrites before it exposed.
//
// Not folded: non-deterministic ops, QuantizeLinear/DequantizeLinear (kept
// for the engines that read them), nodes with sub-graphs, nodes the user
// excluded, and outputs that would bloat the file (over
// FoldOptions::size_limit bytes and larger than the node's inputs: Tile,
// Expand, ConstantOfShape...). Nodes whose outputs would exceed the work
// budget are stopped before their outputs are allocated, and left with a
// warning (PassContext::warn), as are nodes whose kernel refuses them.

#include <memory>
#include <string_view>

#include "passes/pass.h"

namespace onnxkit::passes {

// Its name, for --skip and --no-fold.
inline constexpr std::string_view kFoldConstants = "fold-constants";

// Reads its limits from PassOptions::folding.
std::unique_ptr<Pass> make_fold_constants();

}  // namespace onnxkit::passes
