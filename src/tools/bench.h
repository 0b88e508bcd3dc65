#pragma once
// `onnxkit bench`: latency and memory of repeated runs of one session.

#include <filesystem>
#include <string>
#include <vector>

#include "runtime/session.h"
#include "tools/inputs.h"
#include "util/result.h"

namespace onnxkit::tools {

struct BenchOptions {
  InputOptions inputs;  // random unless files are given
  int threads = 0;
  int warmup = 5;
  int runs = 50;
  bool profile = false;  // time every node
  // Dim 0 of every input and output set to this (0: as the model declares),
  // as `edit --batch` would; the report then gives throughput.
  int64_t batch = 0;
};

struct BenchReport {
  double load_ms = 0;     // reading the model
  double session_ms = 0;  // building the session (kernels, prepacked weights)
  std::vector<double> run_ms;
  double min_ms = 0, median_ms = 0, p90_ms = 0, mean_ms = 0;
  int threads = 0;
  int64_t batch = 0;                  // as asked; 0: the model's own
  double throughput = 0;              // samples per second at the median, with a batch
  std::vector<std::string> warnings;  // from setting the batch, and weights the runtime cannot treat as constants
  std::vector<std::string> notes;     // symbolic dims no --shape set, taken as 1
  double peak_rss_mb = 0;             // of the whole process
  // Per measured run, time the process's threads spent runnable but waiting
  // for a CPU taken by other work (0 where Linux does not say).
  double cpu_wait_ms = 0;
  // Measured runs held to one thread because the cores were busy
  // (runtime/contention.h).
  int64_t single_thread_runs = 0;
  // Measured runs that went on with one thread partway, their threads
  // waiting for cores past the run's budget (runtime/contention.h).
  int64_t runs_cut_short = 0;
  std::vector<runtime::NodeProfile> nodes;  // with profile: per node, over the measured runs
};

Result<BenchReport> bench_model(const std::filesystem::path& model, const BenchOptions& options);

std::string render_bench_text(const BenchReport& report);
// With a profile, the JSON also holds "operators" (time per operator type,
// slowest first) and "nodes" (every node's time in plan order), per run.
std::string render_bench_json(const BenchReport& report);
// Time per operator type and the slowest `top` nodes (0: every node), per run.
std::string render_bench_profile(const BenchReport& report, size_t top = 15);

}  // namespace onnxkit::tools
