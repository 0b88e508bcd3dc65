#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/input_flags.h"
#include "cli/progress_line.h"
#include "tools/compare.h"

namespace onnxkit::cli {

Command add_compare_command(CLI::App& root) {
  struct Flags {
    std::vector<std::string> models;
    std::vector<std::string> reference;
    InputFlags inputs;
    int iterations = 1;
    double rtol = 1e-4, atol = 1e-5;
    std::string stat = "elemwise";
    double quantile = 0.99;
    size_t top = 10;
    bool json = false;
    bool fail_fast = false;
    bool all_tensors = false;
    bool no_local = false;
    int threads = 0;
    bool quiet = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* app = root.add_subcommand(
      "compare", "Run two models (or a model and another engine's numbers) on the same inputs and find the node where they part");
  app->add_option("MODELS", flags->models, "A.onnx B.onnx, or one MODEL with --reference")->expected(1, 2);
  app->add_option("--reference", flags->reference,
                  "Another engine's values for MODEL: a folder of .npy/.pb (run --output-dir), an .npz, a .pb, or "
                  "Polygraphy's --save-outputs/--save-inputs JSON (repeatable: files merge)");
  add_input_flags(*app, flags->inputs, true);
  app->add_option("--iterations", flags->iterations, "Input samples (random ones with seeds S, S+1, ...; default 1)")
      ->check(CLI::PositiveNumber);
  app->add_option("--rtol", flags->rtol, "Relative tolerance (1e-4)")->check(CLI::NonNegativeNumber);
  app->add_option("--atol", flags->atol, "Absolute tolerance (1e-5)")->check(CLI::NonNegativeNumber);
  app->add_option("--stat", flags->stat,
                  "What must be within tolerance: elemwise (every element, as numpy.allclose), or the max, mean, "
                  "median or quantile of the errors against atol + rtol * that of |A|")
      ->check(CLI::IsMember({"elemwise", "max", "mean", "median", "quantile"}));
  app->add_option("--quantile", flags->quantile, "The quantile reported, and checked with --stat quantile (0.99)")
      ->check(CLI::Range(0.0, 1.0));
  app->add_option("--top", flags->top, "Nodes listed by local error (10; 0: none)");
  app->add_flag("--json", flags->json, "Print the whole report as one JSON object (schema: docs/compare-json.md)");
  app->add_flag("--fail-fast", flags->fail_fast, "Stop at the first divergent tensor and re-run only the node that made it");
  app->add_flag("--all-tensors", flags->all_tensors,
                "List every compared tensor, not only the outputs and the first divergent one");
  app->add_flag("--no-local", flags->no_local, "Do not re-run B's nodes on A's inputs (faster; no culprit)");
  app->add_option("--threads", flags->threads, "Threads per run (0: one per core)");
  add_quiet_flag(*app, flags->quiet);
  app->footer(
      progress_footer("Both models run on the same inputs with every intermediate tensor kept in memory.\n"
                      "Tensors pair by name, then graph inputs and outputs by position, then by structure\n"
                      "(same op on paired inputs), so a model after simplify or another exporter still pairs.\n"
                      "Walking A in order, the first tensor out of tolerance is reported; then each node of B\n"
                      "is re-run on A's values of its inputs: its *local error* says whether the node itself\n"
                      "computes something else or only inherits error from above. The node wrong on A's inputs\n"
                      "and in its own run with the largest local error is the culprit.\n"
                      "Random inputs respect declared shapes (symbolic dims as 1 unless --shape) and keep\n"
                      "integer inputs within the tables they index. Exit code: 0 when every output is within\n"
                      "tolerance, 1 when not (or on a bad model or file), 2 on a usage error.",
                      "Examples:\n"
                      "  onnxkit compare big.onnx big.sim.onnx --quiet   # no progress line, even on a terminal\n"
                      "  onnxkit compare model.onnx model.sim.onnx\n"
                      "  onnxkit compare fp32.onnx edited.onnx --input input=image.npy --rtol 1e-3 --atol 1e-4\n"
                      "  onnxkit compare model.onnx --reference torch_dump/          # NAME.npy per tensor\n"
                      "  onnxkit compare model.onnx --reference inputs.json --reference outputs.json   # Polygraphy\n"
                      "  onnxkit run model.onnx --random --outputs all --output-dir ref/ --save-inputs ref/inputs.npz\n"
                      "  onnxkit compare edited.onnx --reference ref/ --json | jq .culprit"));
  return {app, [app, flags] {
            const bool reference = !flags->reference.empty();
            if (flags->models.size() != (reference ? 1u : 2u)) {
              fmt::print(stderr, "onnxkit compare: error: give A.onnx and B.onnx, or one MODEL with --reference (see --help)\n");
              return kExitUsage;
            }
            auto inputs = input_options(flags->inputs);
            if (!inputs.ok()) return report_usage_error(*app, inputs.error());
            tools::CompareOptions options;
            options.inputs = std::move(inputs).value();
            options.iterations = flags->iterations;
            options.tolerance.rtol = flags->rtol;
            options.tolerance.atol = flags->atol;
            options.tolerance.stat = *tools::parse_error_stat(flags->stat);
            options.tolerance.quantile = flags->quantile;
            options.fail_fast = flags->fail_fast;
            options.local_errors = !flags->no_local;
            options.threads = flags->threads;
            ProgressLine progress(*app, flags->quiet);
            options.progress = progress.callback();
            auto report = reference ? tools::compare_with_reference(flags->models[0],
                                                                    {flags->reference.begin(), flags->reference.end()}, options)
                                    : tools::compare_models(flags->models[0], flags->models[1], options);
            progress.finish();
            if (!report.ok()) return report_error(*app, report.error());
            if (flags->json)
              fmt::print("{}\n",
                         tools::compare_report_json(*report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
            else fmt::print("{}", tools::render_compare_text(*report, flags->top, flags->all_tensors));
            return report->passed ? 0 : kExitFailure;
          }};
}

}  // namespace onnxkit::cli
