#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/input_flags.h"
#include "tools/bench.h"

namespace onnxkit::cli {

Command add_bench_command(CLI::App& root) {
  struct Flags {
    std::string model;
    InputFlags inputs;
    tools::BenchOptions options;
    bool json = false;
    size_t top = 15;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* app = root.add_subcommand("bench", "Measure latency and peak memory of repeated runs");
  app->add_option("MODEL", flags->model, "ONNX model file")->required();
  add_input_flags(*app, flags->inputs, false);
  app->add_option("--threads", flags->options.threads, "Threads per run (0: one per core)")->check(CLI::Range(0, 1024));
  app->add_option("--warmup", flags->options.warmup, "Runs before measuring (5)")->check(CLI::NonNegativeNumber);
  app->add_option("--runs", flags->options.runs, "Measured runs (50)")->check(CLI::Range(1, 1 << 30));
  app->add_option("--batch", flags->options.batch,
                  "Set dim 0 of every input and output to N (as `edit --batch N`) and report samples/s")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  CLI::Option* profile =
      app->add_flag("--profile", flags->options.profile,
                    "Also report the time spent per operator type and per node (the slowest --top of them, or all in --json)");
  app->add_option("--top", flags->top, "With --profile: how many of the slowest nodes to list (15; 0: all)")->needs(profile);
  app->add_flag("--json", flags->json,
                "Print one JSON object: median_ms, min_ms, p90_ms, runs, threads, peak_rss_mb, throughput_per_s...");
  app->footer(
      "Inputs are random unless given with --input (a file, or a value: sr=16000,\n"
      "ids=int64:[[1,2,3]]); symbolic dims nothing sets (--dim, --shape, the data of an --input)\n"
      "are 1, and bench says so. Times under a millisecond print in microseconds.\n"
      "When other work keeps the CPUs busy, runs use one thread for a while (more threads\n"
      "would wait for each other's cores) and bench says so, with how long its threads waited\n"
      "for a core.\n\n"
      "Examples:\n"
      "  onnxkit bench resnet50.onnx --threads 2\n"
      "  onnxkit bench bert.onnx --shape input_ids:1,128 --runs 100 --json\n"
      "  onnxkit bench gpt.onnx --dim batch=4 --val-range input_ids:0,50256\n"
      "  onnxkit bench vad.onnx --input sr=16000 --dim samples=512\n"
      "  onnxkit bench resnet50.onnx --batch 8 --threads 2\n"
      "  onnxkit bench bert.onnx --profile --top 0");
  return {app, [app, flags] {
            auto inputs = input_options(flags->inputs);
            if (!inputs.ok()) return report_usage_error(*app, inputs.error());
            flags->options.inputs = std::move(inputs).value();
            auto report = tools::bench_model(flags->model, flags->options);
            if (!report.ok()) return report_error(*app, report.error());
            fmt::print("{}", flags->json ? tools::render_bench_json(*report) : tools::render_bench_text(*report));
            if (flags->options.profile && !flags->json) fmt::print("{}", tools::render_bench_profile(*report, flags->top));
            return 0;
          }};
}

}  // namespace onnxkit::cli
