#pragma once
// Which node of one graph is which node of another: a model before and after
// `simplify` or `edit`, for `draw --diff`.
//
// A stand-in: `compare` is getting its own pairing of two models' tensors
// (src/tools/compare.*); once it lands, pair_nodes should be built on it so
// both commands pair alike. Callers only use NodePairing.

#include <string>
#include <unordered_map>

#include "ir/graph.h"

namespace onnxkit::tools {

struct NodePairing {
  std::unordered_map<const ir::Node*, const ir::Node*> a_to_b, b_to_a;

  const ir::Node* partner_in_b(const ir::Node* a) const;
  const ir::Node* partner_in_a(const ir::Node* b) const;
};

// Pairs the main-graph nodes of `a` and `b`: first those with the same
// non-empty name and op type; then, in b's topological order, an unpaired
// node of b with an unpaired node of a of the same op type reading the same
// sources (the partners' outputs, graph inputs of the same name, constants
// of the same type and dims), so a renamed node still pairs.
NodePairing pair_nodes(const ir::Graph& a, const ir::Graph& b);

// What differs between paired nodes: "" when nothing; else the first
// difference found, e.g. "attribute 'axis'", "input 1 ('shape')".
// Constants are compared by type, dims and data.
std::string node_difference(const ir::Node& a, const ir::Node& b, const NodePairing& pairing);

}  // namespace onnxkit::tools
