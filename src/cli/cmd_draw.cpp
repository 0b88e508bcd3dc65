#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/progress_line.h"
#include "tools/draw.h"

namespace onnxkit::cli {

Command add_draw_command(CLI::App& root) {
  struct Flags {
    std::string model, out, rankdir = "TB", subgraphs = "expand";
    bool no_weights = false;
    bool quiet = false;
    tools::DrawFileOptions options;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* app = root.add_subcommand("draw", "Draw the graph as SVG or as an interactive HTML page");
  app->add_option("MODEL", flags->model, "ONNX model file")->required();
  app->add_option("-o,--output", flags->out, "OUT.svg or OUT.html (one self-contained page)")->required();
  app->add_flag("--shapes", flags->options.infer_shapes, "Run shape inference first, so every edge shows its type");
  app->add_flag("--no-weights", flags->no_weights, "Leave weights and constants out of the boxes");
  app->add_flag("--weight-stats", flags->options.draw.weight_stats,
                "Read every weight once for its min/max/mean (HTML side panel)");
  app->add_option("--collapse", flags->options.draw.collapse_depth,
                  "Fold nodes into one box per name scope of this many levels (/layer1/layer1.0/...)");
  app->add_option("--subgraphs", flags->subgraphs, "If/Loop/Scan bodies: expand (drawn inside) or collapse");
  app->add_option("--diff", flags->options.diff, "Colour what OTHER.onnx removed (red), added (green), changed (orange)");
  app->add_option(
      "--overlay", flags->options.overlay,
      fmt::format("Colour nodes by the \"{}\" of each node entry of a compare --json report", tools::kOverlayErrorField));
  app->add_option("--rankdir", flags->rankdir, "TB (top to bottom) or LR (left to right)");
  add_quiet_flag(*app, flags->quiet);
  app->footer(
      progress_footer("Each node shows its op type and short attributes; weights and constants are listed in\n"
                      "the box of the node reading them; edges carry the tensor's type when it is known.\n"
                      "The HTML page needs no network: drag or arrow keys pan, the wheel or +/- zoom, 0 fits,\n"
                      "/ searches node and tensor names, a click opens a node's attributes and inputs.",
                      "Examples:\n"
                      "  onnxkit draw big.onnx -o big.html --quiet   # no progress line, even on a terminal\n"
                      "  onnxkit draw model.onnx -o model.html --shapes\n"
                      "  onnxkit draw model.onnx -o model.svg --collapse 2          # one box per /layer1/layer1.0\n"
                      "  onnxkit simplify model.onnx sim.onnx && onnxkit draw model.onnx -o diff.html --diff sim.onnx\n"
                      "  onnxkit draw model.onnx -o errors.html --overlay compare.json"));
  return {app, [app, flags] {
            // Checked here rather than by CLI11, whose messages take two lines.
            std::string usage;
            if (auto format = tools::draw_format_for(flags->out); !format.ok()) usage = format.error().message();
            else if (flags->rankdir != "TB" && flags->rankdir != "LR")
              usage = fmt::format("--rankdir '{}': expected TB or LR", flags->rankdir);
            else if (flags->subgraphs != "expand" && flags->subgraphs != "collapse")
              usage = fmt::format("--subgraphs '{}': expected expand or collapse", flags->subgraphs);
            else if (app->count("--collapse") > 0 && flags->options.draw.collapse_depth < 1)
              usage = fmt::format("--collapse {}: the scope depth must be 1 or more", flags->options.draw.collapse_depth);
            if (!usage.empty()) {
              fmt::print(stderr, "onnxkit draw: error: {}\n", usage);
              return kExitUsage;
            }
            tools::DrawFileOptions options = flags->options;
            options.draw.weights = !flags->no_weights;
            options.draw.left_right = flags->rankdir == "LR";
            options.draw.subgraphs =
                flags->subgraphs == "collapse" ? tools::SubgraphDrawing::collapse : tools::SubgraphDrawing::expand;
            ProgressLine progress(*app, flags->quiet);
            options.progress = progress.callback();
            auto drawing = tools::draw_file(flags->model, flags->out, options);
            progress.finish();
            if (!drawing.ok()) return report_error(*app, drawing.error());
            if (!drawing->warning.empty()) fmt::print(stderr, "warning: {}\n", drawing->warning);
            fmt::print("wrote {}: {} boxes, {} edges\n", flags->out, drawing->boxes, drawing->edges);
            return 0;
          }};
}

}  // namespace onnxkit::cli
