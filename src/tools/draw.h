#pragma once
// `onnxkit draw`: a picture of a graph, as an SVG file or as one
// self-contained HTML page (pan, zoom, search, a side panel per node).
//
// Each ONNX node is a box showing its op type and short attributes; weights
// and constants are listed in the box of the node that reads them (type and
// dims; small ones with their values) instead of being drawn apart; edges
// carry their tensor's type when known; graph inputs and outputs are boxes of
// their own. If/Loop/Scan bodies are drawn inside their node. The layout is
// draw_layout.h's, so the same graph always gives the same bytes.
//
// SVG structure (what tests and scripts can rely on): every box is a
// <g class="box KIND" id=... data-name=...> with KIND one of node, input,
// output, scope (a --collapse group, with data-count) or capture (an outer
// value read inside a sub-graph), holding a <rect> with its coordinates;
// every edge is a <g class="edge" data-from=ID data-to=ID data-tensor=NAME>.
// Diff marks add the class removed, added or changed.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "util/progress.h"
#include "util/result.h"

namespace onnxkit::tools {

enum class DrawFormat { svg, html };
enum class SubgraphDrawing { expand, collapse };

// The numeric field of a node entry in a `compare --json` report that
// --overlay colours by; the entry's "name" is a node's or a tensor's name.
inline constexpr std::string_view kOverlayErrorField = "error";

struct NodeError {
  std::string name;  // a node's name, or the name of a tensor it produces
  double error = 0;
};

struct DrawOptions {
  DrawFormat format = DrawFormat::svg;
  bool left_right = false;  // ranks left to right
  SubgraphDrawing subgraphs = SubgraphDrawing::expand;
  bool weights = true;        // list each node's weights and constants in its box
  bool weight_stats = false;  // read every weight once for min/max/mean (side panel, tooltips)
  int collapse_depth = 0;     // > 0: one box per name scope of this many levels
  // The graph of another version of the model: boxes of nodes it removed,
  // added or changed are coloured, its added nodes drawn in (--diff).
  const ir::Graph* diff_with = nullptr;
  std::vector<NodeError> overlay;  // colour nodes by these errors (--overlay)
  std::string title;               // of the HTML page
};

struct Drawing {
  std::string text;            // the SVG or HTML document
  size_t boxes = 0;            // top-level boxes drawn (nodes, scopes, inputs, outputs)
  size_t edges = 0;            // top-level edges drawn
  size_t crossings = 0;        // edge crossings of the top-level layout
  size_t overlay_matched = 0;  // overlay entries that named a node or its tensor
  std::string warning;         // draw_file: when shape inference stopped early
};

Result<Drawing> draw_graph(const ir::Graph& graph, const DrawOptions& options);

struct DrawFileOptions {
  DrawOptions draw;               // its format is taken from the output's extension
  bool infer_shapes = false;      // run shape inference first (--shapes)
  std::filesystem::path diff;     // --diff OTHER.onnx
  std::filesystem::path overlay;  // --overlay COMPARE.json
  ProgressFn progress;            // told each step of the work on a big model (util/progress.h)
};

// .svg or .html (.htm); an error naming the extension otherwise.
Result<DrawFormat> draw_format_for(const std::filesystem::path& out);

// The node entries of a `compare --json` report: an array of objects with a
// "name" and the numeric kOverlayErrorField, at the top level or under
// "nodes". Entries without a numeric error are skipped.
Result<std::vector<NodeError>> parse_overlay(const nlohmann::json& report);

// Loads the model (and the other ones asked for), draws it and writes `out`
// atomically.
Result<Drawing> draw_file(const std::filesystem::path& model, const std::filesystem::path& out, DrawFileOptions options);

}  // namespace onnxkit::tools
