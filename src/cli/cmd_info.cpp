#include <fmt/format.h>

#include "cli/commands.h"
#include "tools/info.h"

namespace onnxkit::cli {

Command add_info_command(CLI::App& root) {
  struct Flags {
    std::string model;
    bool json = false;
    tools::InfoOptions options;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* app = root.add_subcommand("info", "Summarize a model: opsets, inputs/outputs, operators, parameters, MACs/FLOPs");
  app->add_option("MODEL", flags->model, "ONNX model file")->required();
  app->add_flag("--json", flags->json, "Print one JSON object (schema: docs/info-json.md)");
  app->add_flag("--nodes", flags->options.nodes, "List every node with its inputs, outputs, attributes and cost");
  app->footer(
      "Shapes come from the model's declarations and ONNX shape inference; MACs and FLOPs\n"
      "are counted where every shape a node needs is known.\n\n"
      "Examples:\n"
      "  onnxkit info model.onnx\n"
      "  onnxkit info model.onnx --nodes          # attributes and inputs of every node\n"
      "  onnxkit info model.onnx --json | jq .compute.macs");
  return {app, [app, flags] {
            auto info = tools::model_info(flags->model, flags->options);
            if (!info.ok()) return report_error(*app, info.error());
            if (flags->json)
              fmt::print("{}\n", info->dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
            else
              fmt::print("{}", tools::render_info_text(*info));
            return 0;
          }};
}

}  // namespace onnxkit::cli
