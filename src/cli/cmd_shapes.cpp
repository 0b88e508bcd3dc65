#include <fmt/format.h>

#include "cli/commands.h"
#include "tools/edit.h"
#include "tools/shapes.h"

namespace onnxkit::cli {

Command add_shapes_command(CLI::App& root) {
  struct Flags {
    std::string in, out;
    std::vector<std::string> input_shapes;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* app = root.add_subcommand("shapes", "Infer every tensor's type and shape and write them into the model");
  app->add_option("IN", flags->in, "ONNX model to read")->required();
  app->add_option("OUT", flags->out, "Model to write, with value_info for every intermediate tensor")->required();
  app->add_option("--input-shape", flags->input_shapes,
                  "NAME:D0,D1,...: declare an input's shape first, each dim a number or a symbol (repeatable)");
  app->footer(
      "Existing value_info entries are replaced by what inference finds. Symbolic dims keep\n"
      "their names, and dims computed from them are written as expressions in them\n"
      "(2*batch, 384*seq, H + 4): shape arithmetic is followed through Shape, Gather,\n"
      "Slice, Concat, Mul/Div/Mod/Add/Sub, Reshape with 0/-1, Expand, Pad, Range and\n"
      "small int tensors reshaped and transposed (torch's F.pad amounts).\n\n"
      "--input-shape replaces an input's declared shape before inference: numbers to see\n"
      "the static shapes at one size, symbols to name dims the model leaves unnamed. The\n"
      "outputs' shapes are then inferred anew rather than kept as the model declares them.\n\n"
      "Examples:\n"
      "  onnxkit shapes model.onnx model.shapes.onnx   # then open it in Netron\n"
      "  onnxkit shapes swin.onnx out.onnx --input-shape input:N,3,224,224\n"
      "  onnxkit shapes gpt.onnx out.onnx --input-shape input_ids:1,128");
  return {app, [app, flags] {
            tools::ShapesOptions options;
            for (const std::string& flag : flags->input_shapes) {
              auto shape = tools::parse_input_shape_flag(flag);
              if (!shape.ok()) return report_usage_error(*app, shape.error());
              options.input_shapes.push_back(std::move(shape).value());
            }
            auto report = tools::infer_shapes_file(flags->in, flags->out, options);
            if (!report.ok()) return report_error(*app, report.error());
            if (!report->warning.empty()) fmt::print(stderr, "warning: {}\n", report->warning);
            fmt::print("wrote {}: {} of {} intermediate tensors have a shape ({} fully static)\n", flags->out, report->with_shape,
                       report->values, report->fully_static);
            return 0;
          }};
}

}  // namespace onnxkit::cli
