#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/input_flags.h"
#include "tools/reduce.h"
#include "util/text.h"

namespace onnxkit::cli {

Command add_debug_command(CLI::App& root) {
  struct Flags {
    std::string model, output, min_good;
    std::vector<std::string> reference;
    bool check = false;
    std::string fail_regex;
    std::string mode = "bisect";
    InputFlags inputs;
    int iterations = 1;
    double rtol = 1e-4, atol = 1e-5;
    std::string stat = "elemwise";
    int threads = 0;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* debug = root.add_subcommand("debug", "Debugging tools: reduce a failing model to the few nodes that fail");
  debug->require_subcommand(1);
  CLI::App* app = debug->add_subcommand("reduce", "Shrink a failing model to a minimal sub-graph that still fails");
  // Everything after --check is the command: CLI11 stops parsing at the first
  // argument it cannot place and leaves the rest in remaining().
  app->prefix_command();
  app->add_option("MODEL", flags->model, "The failing ONNX model")->required();
  app->add_option("-o,--output", flags->output, "Where to write the minimal failing model");
  app->add_option("--min-good", flags->min_good, "Also write a passing model close in size to it");
  app->add_option("--reference", flags->reference,
                  "Reference values: a folder, .npz, .pb or Polygraphy JSON (as compare --reference), or a GOOD.onnx "
                  "run on the same inputs; cut sub-graphs are fed these values (repeatable)");
  app->add_option("--mode", flags->mode, "bisect (default: binary search, then dropping nodes one by one) or linear")
      ->check(CLI::IsMember({"bisect", "linear"}));
  add_input_flags(*app, flags->inputs, false);
  app->add_option("--iterations", flags->iterations, "Input samples; a candidate fails if any sample fails (1)")
      ->check(CLI::PositiveNumber);
  app->add_option("--rtol", flags->rtol, "Relative tolerance of onnxkit's own judge (1e-4)")->check(CLI::NonNegativeNumber);
  app->add_option("--atol", flags->atol, "Absolute tolerance of onnxkit's own judge (1e-5)")->check(CLI::NonNegativeNumber);
  app->add_option("--stat", flags->stat, "elemwise, max, mean, median or quantile (as compare --stat)")
      ->check(CLI::IsMember({"elemwise", "max", "mean", "median", "quantile"}));
  app->add_option("--fail-regex", flags->fail_regex,
                  "With --check: a candidate fails when the command's output matches this regex (exit code ignored)");
  app->add_option("--threads", flags->threads, "Threads per run (0: one per core)");
  app->add_flag("--check", flags->check,
                "Judge each candidate by a command: everything after --check is the command and its arguments, "
                "{model} standing for the candidate's path and {inputs} for an .npz of its inputs. Give it last.");
  app->footer(
      "Candidates are runs of consecutive nodes. Bisect finds the shortest failing prefix\n"
      "(cutting outputs), then the shortest failing suffix of it (cutting inputs), then drops\n"
      "every node that is not needed to fail; each step is printed with its verdict.\n"
      "A cut sub-graph reads the reference's values: the inputs of its first node stay inputs,\n"
      "tensors from other branches are frozen to constants in the models written.\n"
      "Without --check, onnxkit is the judge: a candidate fails when an output differs from the\n"
      "reference (--reference) beyond --rtol/--atol on any of the --iterations samples.\n"
      "The result passes `onnxkit check --full`.\n\n"
      "Examples:\n"
      "  onnxkit debug reduce bad.onnx --reference good.onnx -o min.onnx\n"
      "  onnxkit run good.onnx --random --outputs all --output-dir ref/ --save-inputs ref/inputs.npz\n"
      "  onnxkit debug reduce bad.onnx --reference ref/ -o min.onnx --min-good good_min.onnx\n"
      "  onnxkit debug reduce bad.onnx --reference ref/ -o min.onnx --check onnxkit compare {model} --reference ref/\n"
      "  onnxkit debug reduce model.onnx -o min.onnx --fail-regex 'mismatch' --check ./my_engine_test {model} {inputs}");
  return {
      debug, [app, flags] {
        std::vector<std::string> rest = app->remaining();
        if (!flags->check && !rest.empty()) {
          fmt::print(stderr, "onnxkit debug reduce: error: unexpected argument '{}' (the --check command goes last)\n", rest[0]);
          return kExitUsage;
        }
        if (flags->check && rest.empty()) {
          fmt::print(
              stderr,
              "onnxkit debug reduce: error: --check needs a command, e.g. --check onnxkit compare {{model}} --reference ref/\n");
          return kExitUsage;
        }
        if (!flags->check && !flags->fail_regex.empty()) {
          fmt::print(stderr, "onnxkit debug reduce: error: --fail-regex needs --check\n");
          return kExitUsage;
        }
        if (flags->output.empty() && flags->min_good.empty()) {
          fmt::print(stderr, "onnxkit debug reduce: error: -o MIN.onnx is required\n");
          return kExitUsage;
        }
        auto inputs = input_options(flags->inputs);
        if (!inputs.ok()) return report_usage_error(*app, inputs.error());
        tools::ReduceOptions options;
        options.check = rest;
        options.fail_regex = flags->fail_regex;
        options.reference.assign(flags->reference.begin(), flags->reference.end());
        options.compare.inputs = std::move(inputs).value();
        options.compare.iterations = flags->iterations;
        options.compare.tolerance.rtol = flags->rtol;
        options.compare.tolerance.atol = flags->atol;
        options.compare.tolerance.stat = *tools::parse_error_stat(flags->stat);
        options.compare.threads = flags->threads;
        options.mode = flags->mode == "linear" ? tools::ReduceMode::linear : tools::ReduceMode::bisect;
        options.output = flags->output;
        options.min_good = flags->min_good;
        if (!options.check.empty()) fmt::print("check command: {}\n", join(options.check, " "));
        auto report = tools::reduce_model(flags->model, options, [](const tools::ReduceStep& step) {
          fmt::print("{}\n", tools::render_reduce_step(step));
          std::fflush(stdout);
        });
        if (!report.ok()) return report_error(*app, report.error());
        fmt::print("{}", tools::render_reduce_text(*report, options));
        return 0;
      }};
}

}  // namespace onnxkit::cli
