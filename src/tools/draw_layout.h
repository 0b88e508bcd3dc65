#pragma once
// A layered ("Sugiyama") layout of a directed graph of boxes, for `draw`.
// Graphviz's dot takes minutes on graphs of tens of thousands of nodes; this
// one keeps every step near-linear so a 50,000-node graph lays out in
// seconds:
//   1. cycles broken by a topological order (edges against it reversed);
//   2. ranks by longest path, then each node pulled down next to its first
//      consumer (shorter edges);
//   3. edges spanning several ranks get a chain of dummy points, shared by
//      all edges leaving the same box (a trunk, so a tensor read at 100
//      depths costs one chain, not 100);
//   4. crossing reduction: barycentric sweeps down and up, keeping the order
//      with the fewest crossings (counted exactly);
//   5. coordinates: each box aims at the median of its neighbours, and each
//      rank is placed at the positions nearest those aims that keep the
//      boxes apart (isotonic regression by pooling adjacent violators), in
//      sweeps down and up.
// Boxes of one rank share a band across the rank axis and never overlap; the
// result depends only on the input (no hashing, no randomness).

#include <cstddef>
#include <cstdint>
#include <vector>

namespace onnxkit::tools::draw {

struct Point {
  double x = 0, y = 0;
};

struct LayoutBox {
  double width = 0, height = 0;
};

struct LayoutEdge {
  uint32_t from = 0, to = 0;  // box indices
};

struct LayoutOptions {
  bool left_right = false;  // ranks left to right instead of top to bottom
  double node_gap = 24;     // between neighbouring boxes of a rank
  double rank_gap = 40;     // between ranks: room for edge labels
  double margin = 16;       // around the drawing
};

struct Layout {
  std::vector<Point> positions;  // top-left corner of each box
  // Per edge, from the source box's border to the target box's: straight
  // runs (across a rank's band) alternating with crossings of the gap
  // between ranks, so points 2k -> 2k+1 are straight and 2k+1 -> 2k+2 cross
  // a gap. Empty for an edge from a box to itself.
  std::vector<std::vector<Point>> routes;
  std::vector<uint32_t> ranks;  // per box
  double width = 0, height = 0;
  size_t crossings = 0;  // edge crossings between adjacent ranks
};

Layout layered_layout(const std::vector<LayoutBox>& boxes, const std::vector<LayoutEdge>& edges, const LayoutOptions& options);

}  // namespace onnxkit::tools::draw
