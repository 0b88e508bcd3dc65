#include "tools/bench.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>

#include "ir/model.h"
#include "runtime/contention.h"
#include "runtime/session.h"
#include "tools/edit.h"
#include "util/text.h"

namespace onnxkit::tools {
namespace {

using Clock = std::chrono::steady_clock;

// Waiting for a core this long, as a share of the latency, is worth a word.
constexpr double kContendedShare = 0.05;

double ms_since(Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }

// The value at fraction q of sorted samples (nearest rank).
double quantile(const std::vector<double>& sorted, double q) {
  size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size() - 1, i == 0 ? 0 : i - 1)];
}

}  // namespace

namespace {

Result<BenchReport> measure(const std::filesystem::path& path, const BenchOptions& options) {
  if (options.runs < 1) return make_error("--runs must be at least 1");
  if (options.batch < 0) return make_error("--batch must be positive");
  BenchReport report;
  auto start = Clock::now();
  ONNXKIT_ASSIGN(auto loaded, ir::load_model(path));
  report.load_ms = ms_since(start);
  if (options.batch > 0) {
    ONNXKIT_ASSIGN(report.warnings, set_batch(*loaded, std::to_string(options.batch)));
    report.batch = options.batch;
  }
  if (std::string weights = describe_initializer_inputs(*loaded); !weights.empty())
    report.warnings.push_back(
        fmt::format("graph inputs backed by initializers ({}) may be fed, so the runtime neither prepacks nor fuses them; "
                    "`onnxkit edit MODEL OUT --freeze-initializers` makes them constants",
                    weights));
  std::shared_ptr<const ir::Model> model(std::move(loaded));

  start = Clock::now();
  runtime::SessionOptions session_options;
  session_options.threads = options.threads;
  session_options.profile = options.profile;
  ONNXKIT_ASSIGN(auto session, runtime::Session::create(model, session_options));
  report.session_ms = ms_since(start);
  report.threads = session->threads();

  InputOptions inputs = options.inputs;
  inputs.random = true;
  inputs.unbound_dims = 1;  // one sample, as `info` counts it
  ONNXKIT_ASSIGN(runtime::NamedValues feeds, prepare_inputs(*session, inputs, &report.notes));
  for (int i = 0; i < options.warmup; ++i) ONNXKIT_TRY(session->run(feeds));
  std::vector<runtime::NodeProfile> before = session->profile();
  const int64_t waited_before = runtime::process_cpu_wait_ns();
  const int64_t held_before = runtime::ContentionWatch::process().held_runs();
  const int64_t cut_before = runtime::ContentionWatch::process().cut_short_runs();
  for (int i = 0; i < options.runs; ++i) {
    start = Clock::now();
    ONNXKIT_TRY(session->run(feeds));
    report.run_ms.push_back(ms_since(start));
  }
  if (const int64_t waited_after = runtime::process_cpu_wait_ns(); waited_before >= 0 && waited_after >= waited_before)
    report.cpu_wait_ms = static_cast<double>(waited_after - waited_before) / 1e6 / static_cast<double>(options.runs);
  report.single_thread_runs = runtime::ContentionWatch::process().held_runs() - held_before;
  report.runs_cut_short = runtime::ContentionWatch::process().cut_short_runs() - cut_before;
  report.nodes = session->profile();
  for (size_t i = 0; i < report.nodes.size() && i < before.size(); ++i) {
    report.nodes[i].total_ms -= before[i].total_ms;
    report.nodes[i].calls -= before[i].calls;
  }
  std::vector<double> sorted = report.run_ms;
  std::sort(sorted.begin(), sorted.end());
  report.min_ms = sorted.front();
  report.median_ms = quantile(sorted, 0.5);
  report.p90_ms = quantile(sorted, 0.9);
  report.mean_ms = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(sorted.size());
  if (report.batch > 0) report.throughput = static_cast<double>(report.batch) * 1000.0 / report.median_ms;
  std::string held = report.single_thread_runs > 0 ? fmt::format("{} of the {} runs used one thread instead of {}",
                                                                 report.single_thread_runs, options.runs, report.threads)
                                                   : "";
  if (report.runs_cut_short > 0)
    held += fmt::format("{}{} of the {} runs went on with one thread partway", held.empty() ? "" : ", ", report.runs_cut_short,
                        options.runs);
  if (report.cpu_wait_ms > kContendedShare * report.mean_ms)
    report.warnings.push_back(fmt::format(
        "other work kept the CPUs busy: this process's threads waited {:.2f} ms per run for a core ({:.0f}% of the mean "
        "latency){}; the figures include that",
        report.cpu_wait_ms, 100 * report.cpu_wait_ms / report.mean_ms, held.empty() ? "" : ", and " + held));
  else if (!held.empty())
    // The waits that made the watch hold them came before them (in the
    // warm-up, or another process's burst that is over).
    report.warnings.push_back(
        fmt::format("{}: the contention watch saw this process's threads wait for a core before "
                    "them ({:.2f} ms per run during them); the figures include that",
                    held, report.cpu_wait_ms));
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  report.peak_rss_mb = static_cast<double>(usage.ru_maxrss) / 1024.0;
  return report;
}

}  // namespace

Result<BenchReport> bench_model(const std::filesystem::path& path, const BenchOptions& options) {
  auto report = measure(path, options);
  // A model that bakes its batch into constants (a Reshape to [1 * heads, ...])
  // fails only once the batch changes; say so.
  if (!report.ok() && options.batch > 0)
    return report.error().in(fmt::format("at batch {} (does the model fix its batch in a constant?)", options.batch));
  return report;
}

std::string render_bench_text(const BenchReport& r) {
  std::string out;
  for (const std::string& n : r.notes) out += fmt::format("note: {}\n", n);
  for (const std::string& w : r.warnings) out += fmt::format("warning: {}\n", w);
  out += fmt::format(
      "runs {}  threads {}\n"
      "latency  min {}  median {}  p90 {}  mean {}\n"
      "load {:.1f} ms  session {:.1f} ms  peak RSS {:.1f} MiB\n",
      r.run_ms.size(), r.threads, human_ms(r.min_ms), human_ms(r.median_ms), human_ms(r.p90_ms), human_ms(r.mean_ms), r.load_ms,
      r.session_ms, r.peak_rss_mb);
  if (r.batch > 0) out += fmt::format("batch {}  throughput {:.1f} samples/s (at the median)\n", r.batch, r.throughput);
  return out;
}

namespace {

double runs_of(const BenchReport& r) { return static_cast<double>(std::max<size_t>(r.run_ms.size(), 1)); }

struct OperatorTime {
  std::string op_type;
  int64_t nodes = 0;
  double total_ms = 0;  // over the measured runs
};

// Time per operator type (or fused kind), slowest first.
std::vector<OperatorTime> by_operator(const BenchReport& r) {
  std::map<std::string, OperatorTime> by_op;
  for (const auto& n : r.nodes) {
    OperatorTime& t = by_op[n.op_type];
    t.op_type = n.op_type;
    t.nodes += 1;
    t.total_ms += n.total_ms;
  }
  std::vector<OperatorTime> ops;
  for (auto& [op, t] : by_op) ops.push_back(std::move(t));
  std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.total_ms > b.total_ms; });
  return ops;
}

}  // namespace

std::string render_bench_profile(const BenchReport& r, size_t top) {
  double total = 0;
  for (const auto& n : r.nodes) total += n.total_ms;
  const double runs = runs_of(r);
  std::string out = fmt::format("per run, by operator ({:.2f} ms in nodes):\n", total / runs);
  for (const OperatorTime& t : by_operator(r))
    out += fmt::format("  {:<24} {:>5} nodes  {:8.3f} ms  {:5.1f}%\n", t.op_type, t.nodes, t.total_ms / runs,
                       100 * t.total_ms / total);
  std::vector<runtime::NodeProfile> nodes = r.nodes;
  std::sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) { return a.total_ms > b.total_ms; });
  const size_t shown = top == 0 ? nodes.size() : std::min(top, nodes.size());
  out += fmt::format("slowest {} nodes{}:\n", shown, shown < nodes.size() ? fmt::format(" of {}", nodes.size()) : "");
  for (size_t i = 0; i < shown; ++i)
    out += fmt::format("  {:<40} {:<20} {:8.3f} ms\n", nodes[i].name, nodes[i].op_type, nodes[i].total_ms / runs);
  return out;
}

std::string render_bench_json(const BenchReport& r) {
  nlohmann::json j = {{"runs", r.run_ms.size()},
                      {"threads", r.threads},
                      {"min_ms", r.min_ms},
                      {"median_ms", r.median_ms},
                      {"p90_ms", r.p90_ms},
                      {"mean_ms", r.mean_ms},
                      {"load_ms", r.load_ms},
                      {"session_ms", r.session_ms},
                      {"peak_rss_mb", r.peak_rss_mb},
                      {"cpu_wait_ms", r.cpu_wait_ms},
                      {"single_thread_runs", r.single_thread_runs},
                      {"runs_cut_short", r.runs_cut_short},
                      {"run_ms", r.run_ms}};
  if (r.batch > 0) {
    j["batch"] = r.batch;
    j["throughput_per_s"] = r.throughput;
  }
  if (r.batch > 0 || !r.warnings.empty()) j["warnings"] = r.warnings;
  if (!r.notes.empty()) j["notes"] = r.notes;
  if (!r.nodes.empty()) {
    const double runs = runs_of(r);
    j["operators"] = nlohmann::json::array();
    for (const OperatorTime& t : by_operator(r))
      j["operators"].push_back({{"op_type", t.op_type}, {"nodes", t.nodes}, {"ms", t.total_ms / runs}});
    j["nodes"] = nlohmann::json::array();
    for (const auto& n : r.nodes) j["nodes"].push_back({{"name", n.name}, {"op_type", n.op_type}, {"ms", n.total_ms / runs}});
  }
  // Names come from the model: bytes that are not UTF-8 become U+FFFD, as in info.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace onnxkit::tools
