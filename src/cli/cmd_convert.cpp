#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/progress_line.h"
#include "tools/convert.h"
#include "tools/inputs.h"
#include "tools/pytorch_convert.h"
#include "util/text.h"

namespace onnxkit::cli {

Command add_convert_command(CLI::App& root) {
  struct Flags {
    std::string in, out;
    std::string to = "onnx";
    bool external = false;
    uint64_t threshold = 1024;
    std::string data_file;
    std::string class_name;
    std::vector<std::string> shapes;
    bool check = false, no_check = false;
    std::string python = "python3";
    std::string dtype;
    bool keep_io_types = false;
    std::vector<std::string> keep_ops, inputs;
    uint64_t seed = 0;
    double max_rel_diff = 0;
    bool quiet = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* app = root.add_subcommand(
      "convert", "Re-serialize a model (weights into or out of external data), or turn it into PyTorch source");
  app->add_option("IN", flags->in, "ONNX model to read")->required();
  app->add_option("OUT", flags->out, "ONNX model to write (atomically); with --to pytorch, the folder to write")->required();
  app->add_option("--to", flags->to, "Target: onnx (default) or pytorch")->check(CLI::IsMember({"onnx", "pytorch"}));
  app->add_flag("--external-data", flags->external,
                "Store every tensor of at least --external-threshold bytes in one side file next to OUT; "
                "without it, everything is stored inline (which must fit in 2 GiB)");
  add_external_threshold_option(*app, flags->threshold);
  app->add_option("--external-file", flags->data_file, "Name of the side file (default: OUT's name + .data)");
  app->add_option("--class-name", flags->class_name, "--to pytorch: name of the nn.Module class (default: from IN's file name)");
  app->add_option("--dtype", flags->dtype,
                  "fp16 or bf16: float32 weights and arithmetic in 16 bits; inputs and outputs an op's schema "
                  "keeps float32 (Resize scales, Range, NonMaxSuppression boxes) stay so, with Casts between")
      ->check(CLI::IsMember({"fp16", "bf16", "float16", "bfloat16"}));
  app->add_flag("--keep-io-types", flags->keep_io_types,
                "--dtype: the graph's inputs and outputs stay float32 (Casts after the inputs, before the outputs)");
  app->add_option("--keep-op", flags->keep_ops, "--dtype: an op type computed in float32 all the same (repeatable)");
  app->add_option("--input", flags->inputs,
                  "--dtype: NAME=FILE (.npy/.npz/.pb) input for the check, instead of random data (repeatable)");
  app->add_option("--seed", flags->seed, "--dtype: seed of the check's random inputs (0)");
  app->add_option("--max-rel-diff", flags->max_rel_diff,
                  "--dtype: the check fails above this difference, as a fraction of an output's largest value "
                  "(default: only an overflow fails it; above 0.05 is a warning)")
      ->check(CLI::NonNegativeNumber);
  app->add_option(
      "--shape", flags->shapes,
      "NAME:D0,D1,... dims of an input with symbolic dims, for the check (--dtype, --to pytorch) and "
      "model.py's example_inputs() (otherwise symbolic dims take 2 in the check, more where the model does not run so, and 1 in the example)");
  app->add_flag("--check", flags->check,
                "--to pytorch: run the generated module in Python on random inputs and compare it with onnxkit's runtime "
                "before writing; an error when --python cannot import torch (default: on when it can). --dtype: "
                "run the model before and after on the same inputs and print how far apart (default: on)");
  app->add_flag("--no-check", flags->no_check, "--to pytorch, --dtype: write without the check")->excludes("--check");
  app->add_option("--python", flags->python, "--to pytorch: the Python interpreter for the check (default: python3)");
  add_quiet_flag(*app, flags->quiet);
  app->footer(
      progress_footer("With --to pytorch, OUT is a folder that gets model.py (one torch.nn.Module: weighted layers as\n"
                      "nn.Conv2d, nn.Linear, nn.LSTM... named after their ONNX nodes, the rest as torch calls, one per\n"
                      "node) and weights.safetensors. model.py needs only torch: load() returns the module with its\n"
                      "weights, forward() takes the graph's inputs in order, `python model.py` runs it on random inputs.\n"
                      "An operator with no PyTorch form is one line naming it and its node, and nothing is written.\n\n"
                      "With --dtype, the float32 model and the converted one run on the same inputs (random ones the\n"
                      "model runs on, or --input) and the largest difference is printed (a warning above 5% of an\n"
                      "output's largest value); an output that overflows 16 bits, or differs by more than\n"
                      "--max-rel-diff, is an error and nothing is written.",
                      "Examples:\n"
                      "  onnxkit convert big.onnx big-ext.onnx --external-data      # weights to big-ext.onnx.data\n"
                      "  onnxkit convert big.onnx big.ext.onnx --external-data --quiet\n"
                      "  onnxkit convert big-ext.onnx inline.onnx                  # everything back in one file\n"
                      "  onnxkit convert resnet18.onnx r16.onnx --dtype fp16 --keep-io-types   # half weights, float32 I/O\n"
                      "  onnxkit convert resnet18.onnx --to pytorch resnet18_torch  # resnet18_torch/model.py + weights\n"
                      "  onnxkit convert encoder.onnx --to pytorch enc --class-name Encoder --shape input_ids:1,128\n"
                      "  onnxkit convert model.onnx --to pytorch out --python /usr/bin/python3   # check with that torch"));
  return {app, [app, flags] {
            auto usage = [&](std::string_view message) {
              fmt::print(stderr, "onnxkit convert: error: {}\n", message);
              return kExitUsage;
            };
            if (flags->to == "pytorch") {
              if (flags->external || !flags->data_file.empty() || app->count("--external-threshold") > 0)
                return usage("--external-data, --external-threshold and --external-file are for --to onnx");
              if (!flags->dtype.empty() || flags->keep_io_types || !flags->keep_ops.empty() || !flags->inputs.empty() ||
                  app->count("--seed") > 0 || app->count("--max-rel-diff") > 0)
                return usage("--dtype, --keep-io-types, --keep-op, --input, --seed and --max-rel-diff are for --to onnx");
              tools::PytorchConvertOptions options;
              options.source.class_name = flags->class_name;
              options.python = flags->python;
              if (flags->check) options.check = tools::PytorchCheck::on;
              if (flags->no_check) options.check = tools::PytorchCheck::off;
              for (const std::string& flag : flags->shapes) {
                auto shape = tools::parse_shape_flag(flag);
                if (!shape.ok()) return usage(shape.error().message());
                options.source.shapes.push_back(*shape);
                options.check_shapes.push_back(*shape);
              }
              ProgressLine progress(*app, flags->quiet);
              options.progress = progress.callback();
              auto report = tools::convert_to_pytorch(flags->in, flags->out, options);
              progress.finish();
              if (!report.ok()) return report_error(*app, report.error());
              fmt::print("{}", tools::render_pytorch_text(*report));
              return 0;
            }
            if (!flags->class_name.empty() || app->count("--python") > 0)
              return usage("--class-name and --python are for --to pytorch");
            if (flags->dtype.empty() &&
                (!flags->shapes.empty() || flags->check || flags->no_check || flags->keep_io_types || !flags->keep_ops.empty() ||
                 !flags->inputs.empty() || app->count("--seed") > 0 || app->count("--max-rel-diff") > 0))
              return usage(
                  "--shape, --check, --no-check, --keep-io-types, --keep-op, --input, --seed and --max-rel-diff need --dtype "
                  "(or --to pytorch)");
            tools::ConvertOptions options;
            options.save.external = flags->external ? io::ExternalDataPolicy::all : io::ExternalDataPolicy::none;
            options.save.threshold = flags->threshold;
            options.save.data_file = flags->data_file;
            if (!flags->dtype.empty()) {
              tools::PrecisionOptions precision;
              auto type = tools::parse_low_float(flags->dtype);
              if (!type.ok()) return usage(type.error().message());
              precision.type = *type;
              precision.keep_io_types = flags->keep_io_types;
              precision.keep_ops = flags->keep_ops;
              options.precision = precision;
              options.check = !flags->no_check;
              if (app->count("--max-rel-diff") > 0) options.max_rel_diff = flags->max_rel_diff;
              options.check_inputs.random = true;
              options.check_inputs.seed = flags->seed;
              for (const std::string& flag : flags->inputs) {
                auto input = tools::parse_input_flag(flag);
                if (!input.ok()) return usage(input.error().message());
                options.check_inputs.files.push_back(*input);
              }
              for (const std::string& flag : flags->shapes) {
                auto shape = tools::parse_shape_flag(flag);
                if (!shape.ok()) return usage(shape.error().message());
                options.check_inputs.shapes.push_back(*shape);
              }
            }
            ProgressLine progress(*app, flags->quiet);
            auto report = tools::convert_model(flags->in, flags->out, options, progress.callback());
            progress.finish();
            if (!report.ok()) return report_error(*app, report.error());
            const io::SaveSummary& saved = report->saved;
            std::string line = fmt::format("wrote {} ({})", flags->out, human_bytes(saved.model_bytes));
            if (!saved.external_file.empty())
              line += fmt::format(" + {} ({})", saved.external_file, human_bytes(saved.external_bytes));
            fmt::print("{}\n", line);
            if (options.precision) fmt::print("{}", tools::render_precision_text(*report, options.precision->type));
            return 0;
          }};
}

}  // namespace onnxkit::cli
