#include "tools/draw.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "analysis/onnx_inference.h"
#include "io/atomic_file.h"
#include "ir/model.h"
#include "tools/draw_scene.h"

namespace onnxkit::tools {

Result<Drawing> draw_graph(const ir::Graph& graph, const DrawOptions& options) {
  if (options.collapse_depth < 0)
    return make_error("the scope depth to collapse must be 1 or more, not {}", options.collapse_depth);
  ONNXKIT_ASSIGN(draw::SceneResult scene, draw::build_scene(graph, options));
  Drawing drawing;
  drawing.text = options.format == DrawFormat::html ? draw::render_html(scene, options) : draw::render_svg(scene, options);
  drawing.boxes = scene.scene->boxes.size();
  drawing.edges = scene.scene->edges.size();
  drawing.crossings = scene.scene->crossings;
  drawing.overlay_matched = scene.overlay_matched;
  return drawing;
}

Result<DrawFormat> draw_format_for(const std::filesystem::path& out) {
  std::string ext = out.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".svg") return DrawFormat::svg;
  if (ext == ".html" || ext == ".htm") return DrawFormat::html;
  return make_error("'{}': the output must end in .svg or .html", out.string());
}

Result<std::vector<NodeError>> parse_overlay(const nlohmann::json& report) {
  const nlohmann::json* nodes = &report;
  if (report.is_object() && report.contains("nodes")) nodes = &report["nodes"];
  if (!nodes->is_array())
    return make_error("expected an array of nodes, each with \"name\" and a numeric \"{}\" (alone or under \"nodes\")",
                      kOverlayErrorField);
  std::vector<NodeError> errors;
  for (const nlohmann::json& entry : *nodes) {
    if (!entry.is_object()) continue;
    auto name = entry.find("name");
    auto error = entry.find(std::string(kOverlayErrorField));
    if (name == entry.end() || !name->is_string() || error == entry.end() || !error->is_number()) continue;
    errors.push_back({name->get<std::string>(), error->get<double>()});
  }
  if (errors.empty() && !nodes->empty())
    return make_error("none of the {} node entries has a \"name\" and a numeric \"{}\"", nodes->size(), kOverlayErrorField);
  return errors;
}

namespace {

Result<std::vector<NodeError>> read_overlay(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return make_error("{}: cannot read the overlay report", path.string());
  std::stringstream text;
  text << file.rdbuf();
  nlohmann::json report = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (report.is_discarded()) return make_error("{}: not valid JSON", path.string());
  auto errors = parse_overlay(report);
  if (!errors.ok()) return errors.error().in(path.string());
  return errors;
}

}  // namespace

Result<Drawing> draw_file(const std::filesystem::path& model_path, const std::filesystem::path& out, DrawFileOptions options) {
  ONNXKIT_ASSIGN(options.draw.format, draw_format_for(out));
  ONNXKIT_TRY(io::check_writable(out));
  Progress progress(options.progress);
  std::error_code ec;
  progress.size_up(std::filesystem::file_size(model_path, ec), 0);
  progress.step("reading the model");
  ONNXKIT_ASSIGN(std::unique_ptr<ir::Model> model, ir::load_model(model_path));
  progress.size_up(model->file_size(), model->graph().nodes().size());
  std::unique_ptr<ir::Model> other;
  if (!options.diff.empty()) {
    ONNXKIT_ASSIGN(other, ir::load_model(options.diff));
    options.draw.diff_with = &other->graph();
  }
  if (!options.overlay.empty()) {
    ONNXKIT_ASSIGN(options.draw.overlay, read_overlay(options.overlay));
  }
  std::string warning;
  if (options.infer_shapes) {
    progress.step("inferring shapes");
    warning = analysis::apply_inferred_types(*model);
    if (other != nullptr) analysis::apply_inferred_types(*other);
  }
  if (options.draw.title.empty()) options.draw.title = model_path.filename().string();
  progress.step("laying out the graph");
  ONNXKIT_ASSIGN(Drawing drawing, draw_graph(model->graph(), options.draw));
  progress.step("writing");
  ONNXKIT_TRY(io::write_file_atomically(out, drawing.text));
  drawing.warning = std::move(warning);
  return drawing;
}

}  // namespace onnxkit::tools
