#pragma once
// Constant folding: every node whose inputs are all known — initializers,
// and for Shape and Size a tensor whose shape is static — is run through the
// runtime's kernels and replaced by initializers holding its outputs, which
// keep the outputs' names.
//
// Not folded: non-deterministic ops, QuantizeLinear/DequantizeLinear (kept
// for the engines that read them), nodes with sub-graphs, nodes the user
// excluded, and outputs that would bloat the file (over `size_limit` bytes
// and larger than the node's inputs: Tile, Expand, ConstantOfShape...).
// Nodes whose outputs would exceed the work budget are stopped before their
// outputs are allocated, and left with a warning.

#include <cstdint>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace onnxkit::passes {

struct FoldOptions {
  uint64_t size_limit = 1 << 20;
  // Elements a node's outputs may hold beyond its inputs' count: a
  // ConstantOfShape or Range asking for 2^40 is refused, where computing it
  // only to drop it by size_limit would take the memory first.
  uint64_t work_limit = 1 << 24;
};

struct FoldResult {
  size_t folded = 0;
  // One per node that could have been folded but failed (its kernel refused).
  std::vector<std::string> warnings;
};

// Folds `graph` and every sub-graph below it.
FoldResult fold_constants(ir::Graph& graph, PassContext& context, const FoldOptions& options = {});

}  // namespace onnxkit::passes
