#pragma once
// draw's inner workings: a graph turned into a scene of boxes and edges
// (draw_scene.cpp), laid out (draw_layout.h), then written as SVG or HTML
// (draw_render.cpp). Not an API of its own: tools/draw.h is.

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/draw.h"
#include "tools/draw_layout.h"

namespace onnxkit::tools::draw {

enum class BoxKind { node, input, output, scope, capture };
// "node", "input"...: the box's CSS class and the side panel's "kind".
const char* box_kind_name(BoxKind kind);
enum class Mark { none, removed, added, changed };

struct TextLine {
  enum Style { plain, title, dim };
  std::string text;
  Style style = plain;
};

struct Scene;

// An If/Loop/Scan body drawn inside its node's box.
struct Cluster {
  std::string title;  // the attribute: then_branch, body...
  std::unique_ptr<Scene> scene;
  Point at;  // top-left, absolute once placed
  double width = 0, height = 0;
};

struct Box {
  BoxKind kind = BoxKind::node;
  std::string id;    // unique in the drawing ("b12"), keys the side panel
  std::string name;  // node, tensor or scope name
  std::string op;    // op type of nodes
  std::string fill;  // background colour
  Mark mark = Mark::none;
  size_t count = 0;  // scopes: how many nodes they hold
  std::vector<TextLine> lines;
  std::vector<Cluster> clusters;
  double width = 0, height = 0;
  Point at;  // top-left, absolute once placed
};

struct Edge {
  uint32_t from = 0, to = 0;  // boxes of the same scene
  std::string tensor;         // the value it carries
  std::string label;          // its type, "" when unknown
  bool labelled = false;      // the first edge of its tensor from its box carries the label
  Mark mark = Mark::none;
  std::vector<Point> route;  // see Layout::routes
};

struct Scene {
  std::vector<Box> boxes;
  std::vector<Edge> edges;
  double width = 0, height = 0;
  size_t crossings = 0;
};

struct SceneResult {
  std::unique_ptr<Scene> scene;
  nlohmann::json details = nlohmann::json::object();  // box id -> what the side panel shows
  std::vector<std::string> legend;                    // lines above the drawing
  size_t overlay_matched = 0;
};

// Sizes of text, for box sizes: monospace at kFontSize px.
inline constexpr double kFontSize = 11;
inline constexpr double kCharWidth = 6.6;
inline constexpr double kLineHeight = 14;
inline constexpr double kPadX = 8, kPadY = 5;

// Builds the scene and lays it out (absolute coordinates).
Result<SceneResult> build_scene(const ir::Graph& graph, const DrawOptions& options);

std::string render_svg(const SceneResult& scene, const DrawOptions& options);
std::string render_html(const SceneResult& scene, const DrawOptions& options);

// The width text takes (code points, not bytes).
double text_width(std::string_view text);

}  // namespace onnxkit::tools::draw
