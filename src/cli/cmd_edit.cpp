#include <fmt/format.h>

#include <map>

#include "cli/commands.h"
#include "tools/edit_file.h"

namespace onnxkit::cli {

Command add_edit_command(CLI::App& root) {
  struct Flags {
    std::string in, out;
    bool external = false;
    uint64_t threshold = 1024;
    // Every operation flag, and the name of the operation it stands for
    // ("script" expands to the file's operations).
    std::map<const CLI::Option*, std::string> operations;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* app = root.add_subcommand(
      "edit", "Graph surgery: apply operations in the order given, check the result, and write it (or nothing)");
  app->add_option("IN", flags->in, "ONNX model to read")->required();
  app->add_option("OUT", flags->out, "Edited model to write (atomically; nothing is written if an operation or the check fails)")
      ->required();
  app->option_defaults()->group("Operations (repeatable, applied in the order given)");
  for (const tools::EditOperationInfo& op : tools::edit_operations()) {
    std::string name = fmt::format("--{}", op.name);
    CLI::Option* option = op.argument.empty()
                              ? app->add_flag(name)
                              : app->add_option(name)->type_name(std::string(op.argument))->allow_extra_args(false)->take_all();
    option->description(std::string(op.summary));
    flags->operations[option] = std::string(op.name);
  }
  CLI::Option* script = app->add_option("--script")
                            ->description("Operations from a file, one per line as above ('set-attr n:a=1'), '#' comments")
                            ->type_name("FILE")
                            ->allow_extra_args(false)
                            ->take_all();
  flags->operations[script] = "script";
  app->option_defaults()->group("Output");
  add_external_data_flags(*app, flags->external, flags->threshold);
  app->footer(
      "Names are checked: an unknown node or tensor is an error that suggests the closest name.\n"
      "After the last operation, inputs left without a producer are an error, types are\n"
      "inferred again, and the model must pass ONNX's checker with strict shape inference;\n"
      "otherwise the exit code is 1 and nothing is written.\n\n"
      "Examples:\n"
      "  # TensorRT wants InstanceNormalization epsilon >= 1e-5; a dynamic batch\n"
      "  onnxkit edit in.onnx out.onnx --set-attr-op InstanceNormalization:epsilon=1e-5 --batch batch\n"
      "  # Seed 002: Resize by constant scales, Reshape to a constant shape, drop the shape glue\n"
      "  onnxkit edit in.onnx out.onnx --set-input /Resize:2=float:[1,1,2,2] --set-input /Resize:3= \\\n"
      "      --set-input /Reshape:1=int64:[-1,4096] --cleanup\n"
      "  # Cut off mean/std preprocessing and the Softmax head\n"
      "  onnxkit edit in.onnx out.onnx --extract /Div_output_0:/fc/Gemm_output_0\n"
      "  # Engines without PRelu; MXNet's [C] slopes\n"
      "  onnxkit edit in.onnx out.onnx --fix-prelu-slope --replace-prelu\n"
      "  # Look inside: every intermediate tensor as an output, then run it\n"
      "  onnxkit edit in.onnx debug.onnx --outputs-all && onnxkit run debug.onnx --random --output-dir out/\n"
      "  # Drop an If whose condition is constant, a node, rename, set an attribute\n"
      "  onnxkit edit in.onnx out.onnx --remove-op If --remove-node /Identity --rename input=image \\\n"
      "      --set-attr /conv1/Conv:pads=[1,1,1,1]\n"
      "  # The same fixes, kept in a file\n"
      "  onnxkit edit in.onnx out.onnx --script fixes.txt");
  return {app, [app, flags] {
            std::vector<tools::EditOperation> operations;
            std::map<const CLI::Option*, size_t> seen;
            for (const CLI::Option* option : app->parse_order()) {
              auto it = flags->operations.find(option);
              if (it == flags->operations.end()) continue;
              size_t k = seen[option]++;
              std::string argument = k < option->results().size() ? option->results()[k] : std::string();
              if (option->get_expected_max() == 0) argument.clear();  // flags
              if (it->second != "script") {
                operations.push_back({it->second, argument, "--" + it->second});
                continue;
              }
              auto from_script = tools::read_edit_script(argument);
              if (!from_script.ok()) return report_error(*app, from_script.error());
              operations.insert(operations.end(), from_script->begin(), from_script->end());
            }
            if (operations.empty()) {
              fmt::print(
                  stderr,
                  "onnxkit edit: error: no operation given (see --help; to re-save a model as it is, use 'onnxkit convert')\n");
              return kExitUsage;
            }
            tools::EditToolOptions options;
            options.save.external = flags->external ? io::ExternalDataPolicy::all : io::ExternalDataPolicy::keep;
            options.save.threshold = flags->threshold;
            auto report = tools::edit_file(flags->in, flags->out, operations, options);
            if (!report.ok()) return report_error(*app, report.error());
            fmt::print("{}", tools::render_edit_text(*report, flags->out));
            return 0;
          }};
}

}  // namespace onnxkit::cli
