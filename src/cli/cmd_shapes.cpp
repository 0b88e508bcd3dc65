#include <fmt/format.h>

#include "cli/commands.h"
#include "tools/shapes.h"

namespace onnxkit::cli {

Command add_shapes_command(CLI::App& root) {
  struct Flags {
    std::string in, out;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* app = root.add_subcommand("shapes", "Infer every tensor's type and shape and write them into the model");
  app->add_option("IN", flags->in, "ONNX model to read")->required();
  app->add_option("OUT", flags->out, "Model to write, with value_info for every intermediate tensor")->required();
  app->footer(
      "Existing value_info entries are replaced by what inference finds. Symbolic dims keep\n"
      "their names, and dims computed from them are written as expressions in them\n"
      "(2*batch, 384*seq, H + 4): shape arithmetic is followed through Shape, Gather,\n"
      "Slice, Concat, Mul/Div/Add/Sub, Reshape with 0/-1, Expand, Pad and Range.\n\n"
      "Example:\n"
      "  onnxkit shapes model.onnx model.shapes.onnx   # then open it in Netron");
  return {app, [app, flags] {
            auto report = tools::infer_shapes_file(flags->in, flags->out);
            if (!report.ok()) return report_error(*app, report.error());
            if (!report->warning.empty()) fmt::print(stderr, "warning: {}\n", report->warning);
            fmt::print("wrote {}: {} of {} intermediate tensors have a shape ({} fully static)\n", flags->out,
                       report->with_shape, report->values, report->fully_static);
            return 0;
          }};
}

}  // namespace onnxkit::cli
