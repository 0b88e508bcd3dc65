#include <fmt/format.h>

#include "cli/commands.h"
#include "tools/info.h"
#include "tools/inputs.h"

namespace onnxkit::cli {

Command add_info_command(CLI::App& root) {
  struct Flags {
    std::vector<std::string> models;
    bool json = false;
    tools::InfoOptions options;
    std::vector<std::string> shapes, dims;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* app = root.add_subcommand("info", "Summarize a model: opsets, inputs/outputs, operators, parameters, MACs/FLOPs");
  app->add_option("MODEL", flags->models, "ONNX model file; several: side by side, one column each")->required();
  app->add_flag("--json", flags->json, "Print one JSON object (schema: docs/info-json.md)");
  app->add_flag("--nodes", flags->options.nodes, "List every node with its inputs, outputs, attributes and cost");
  app->add_option("--shape", flags->shapes, "NAME:D0,D1,...: an input's shape for the cost (repeatable)");
  app->add_option("--dim", flags->dims, "SYMBOL=N: a symbolic dim's value for the cost, e.g. batch=8 (repeatable)");
  app->add_flag("--symbolic", flags->options.symbolic,
                "Also the cost as an expression in the symbolic dims left unbound, e.g. 1.82G*batch MACs");
  app->footer(
      "Shapes come from the model's declarations and ONNX shape inference; MACs and FLOPs\n"
      "are counted where every shape a node needs is known. Symbolic dims (a dynamic batch)\n"
      "count as 1 unless --dim or --shape sets them: the cost of one sample. If/Loop/Scan\n"
      "bodies count too (a Loop by its trip count when constant; the report says when not).\n\n"
      "Examples:\n"
      "  onnxkit info model.onnx\n"
      "  onnxkit info model.onnx --dim batch=8     # MACs of a batch of 8\n"
      "  onnxkit info gpt.onnx --symbolic --dim batch=1   # MACs as a function of the sequence length\n"
      "  onnxkit info bert.onnx --shape input_ids:1,128\n"
      "  onnxkit info model.onnx --nodes          # attributes and inputs of every node\n"
      "  onnxkit info model.onnx simplified.onnx  # side by side; '*' marks rows that differ\n"
      "  onnxkit info model.onnx --json | jq .compute.macs");
  return {app, [app, flags] {
            for (const std::string& flag : flags->shapes) {
              auto shape = tools::parse_shape_flag(flag);
              if (!shape.ok()) return report_usage_error(*app, shape.error());
              flags->options.shapes.push_back(std::move(shape).value());
            }
            for (const std::string& flag : flags->dims) {
              auto dim = tools::parse_dim_flag(flag);
              if (!dim.ok()) return report_usage_error(*app, dim.error());
              flags->options.dims[dim->first] = dim->second;
            }
            if (flags->models.size() > 1 && flags->options.nodes)
              return report_usage_error(*app, Error("--nodes lists one model's nodes: give one MODEL"));
            std::vector<nlohmann::json> infos;
            for (const std::string& model : flags->models) {
              auto info = tools::model_info(model, flags->options);
              if (!info.ok()) return report_error(*app, info.error());
              infos.push_back(std::move(info).value());
            }
            const nlohmann::json shown = infos.size() == 1 ? infos[0] : nlohmann::json(infos);
            if (flags->json) fmt::print("{}\n", shown.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
            else if (infos.size() == 1) fmt::print("{}", tools::render_info_text(infos[0]));
            else fmt::print("{}", tools::render_info_comparison(infos));
            return 0;
          }};
}

}  // namespace onnxkit::cli
