#include <fmt/format.h>

#include "cli/commands.h"
#include "tools/convert.h"
#include "util/text.h"

namespace onnxkit::cli {

Command add_convert_command(CLI::App& root) {
  struct Flags {
    std::string in, out;
    bool external = false;
    uint64_t threshold = 1024;
    std::string data_file;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* app = root.add_subcommand("convert", "Re-serialize a model, moving weights into or out of external data");
  app->add_option("IN", flags->in, "ONNX model to read")->required();
  app->add_option("OUT", flags->out, "ONNX model to write (atomically)")->required();
  app->add_flag("--external-data", flags->external,
                "Store every tensor of at least --external-threshold bytes in one side file next to OUT; "
                "without it, everything is stored inline (which must fit in 2 GiB)");
  add_external_threshold_option(*app, flags->threshold);
  app->add_option("--external-file", flags->data_file, "Name of the side file (default: OUT's name + .data)");
  app->footer(
      "Examples:\n"
      "  onnxkit convert big.onnx big-ext.onnx --external-data      # weights to big-ext.onnx.data\n"
      "  onnxkit convert big-ext.onnx inline.onnx                  # everything back in one file");
  return {app, [app, flags] {
            io::SaveOptions options;
            options.external = flags->external ? io::ExternalDataPolicy::all : io::ExternalDataPolicy::none;
            options.threshold = flags->threshold;
            options.data_file = flags->data_file;
            auto summary = tools::convert_model(flags->in, flags->out, options);
            if (!summary.ok()) return report_error(*app, summary.error());
            std::string line = fmt::format("wrote {} ({})", flags->out, human_bytes(summary->model_bytes));
            if (!summary->external_file.empty())
              line += fmt::format(" + {} ({})", summary->external_file, human_bytes(summary->external_bytes));
            fmt::print("{}\n", line);
            return 0;
          }};
}

}  // namespace onnxkit::cli
