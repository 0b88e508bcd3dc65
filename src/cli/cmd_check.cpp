#include <fmt/format.h>

#include "cli/commands.h"
#include "tools/check.h"

namespace onnxkit::cli {

Command add_check_command(CLI::App& root) {
  struct Flags {
    std::string model;
    analysis::CheckOptions options;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* app = root.add_subcommand("check", "Validate a model with the ONNX checker, naming every node at fault");
  app->add_option("MODEL", flags->model, "ONNX model file")->required();
  app->add_flag("--full", flags->options.full, "Also run strict shape and type inference");
  app->footer(
      "Exit status: 0 when the model is valid, 1 when it is not (or cannot be read).\n\n"
      "Examples:\n"
      "  onnxkit check model.onnx\n"
      "  onnxkit check model.onnx --full");
  return {app, [app, flags] {
            auto report = tools::check_model_file(flags->model, flags->options);
            if (!report.ok()) return report_error(*app, report.error());
            fmt::print("{}", tools::render_check_text(flags->model, *report));
            return report->valid() ? 0 : kExitFailure;
          }};
}

}  // namespace onnxkit::cli
