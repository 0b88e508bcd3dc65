#include "tools/run.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "io/atomic_file.h"
#include "io/tensor_file.h"
#include "ir/model.h"
#include "runtime/tensor_proto.h"
#include "util/text.h"

namespace onnxkit::tools {
namespace {

namespace fs = std::filesystem;
using runtime::Datum;
using runtime::Tensor;

void summarize(const Datum& value, OutputSummary& s) {
  s.type = value.describe();
  if (!value.is_tensor() || value.tensor().numel() == 0) return;
  const Tensor& t = value.tensor();
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0;
  Status st = runtime::dispatch_numeric(t.dtype(), [&]<class T>() -> Status {
    for (const T& x : t.values<T>()) {
      double v = static_cast<double>(x);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
    }
    return {};
  });
  if (!st.ok()) return;
  s.has_stats = true;
  s.min = lo;
  s.max = hi;
  s.mean = sum / static_cast<double>(t.numel());
}

// Writes output `k`; returns the file name used.
Result<std::string> write_output(const fs::path& dir, size_t k, const std::string& name, const Datum& value,
                                 TensorFormat format) {
  if (value.is_tensor() && format == TensorFormat::npy) {
    std::string file = fmt::format("output_{}.npy", k);
    ONNXKIT_TRY(io::write_npy(dir / file, runtime::tensor_to_proto(value.tensor(), name)));
    return file;
  }
  // Sequences, maps and optionals have no .npy form: they are always protobuf.
  std::string file = fmt::format("output_{}.pb", k);
  if (value.is_tensor()) ONNXKIT_TRY(io::write_pb(dir / file, runtime::tensor_to_proto(value.tensor(), name)));
  else if (value.is_sequence()) ONNXKIT_TRY(io::write_pb(dir / file, runtime::sequence_to_proto(value.sequence(), name)));
  else if (value.is_optional()) ONNXKIT_TRY(io::write_pb(dir / file, runtime::optional_to_proto(value.optional(), name)));
  else if (value.is_map()) ONNXKIT_TRY(io::write_pb(dir / file, runtime::map_to_proto(value.map(), name)));
  else return make_error("output '{}' has no value", name);
  return file;
}

}  // namespace

Result<RunReport> run_model(const fs::path& path, const RunOptions& options) {
  // Before the work: a typo in an output path costs nothing.
  if (!options.output_dir.empty()) ONNXKIT_TRY(io::check_writable_folder(options.output_dir));
  if (!options.save_inputs.empty()) {  // its folder may be --output-dir, made later
    ONNXKIT_TRY(io::check_writable_folder(options.save_inputs.parent_path()));
    ONNXKIT_TRY(io::check_replaceable(options.save_inputs));
  }
  ONNXKIT_ASSIGN(auto loaded, ir::load_model(path));
  std::shared_ptr<const ir::Model> model(std::move(loaded));
  runtime::SessionOptions session_options;
  session_options.threads = options.threads;
  session_options.outputs = options.outputs;
  session_options.all_outputs = options.all_outputs;
  ONNXKIT_ASSIGN(auto session, runtime::Session::create(model, session_options));
  ONNXKIT_ASSIGN(runtime::NamedValues feeds, prepare_inputs(*session, options.inputs));

  runtime::RunLimits limits;
  constexpr double kLongest = 1e9;  // seconds: 31 years, and nanoseconds of it still fit in 64 bits
  limits.timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(std::min(options.timeout_seconds, kLongest)));
  RunReport report;
  report.threads = session->threads();
  auto start = std::chrono::steady_clock::now();
  ONNXKIT_ASSIGN(std::vector<Datum> results, session->run(feeds, limits));
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int warm_runs = options.warm_runs;
  if (warm_runs < 0) {
    report.warm_skipped = report.seconds > kAutoWarmSeconds;
    warm_runs = report.warm_skipped ? 0 : 1;
  }
  for (int i = 0; i < warm_runs; ++i) {
    start = std::chrono::steady_clock::now();
    ONNXKIT_TRY(session->run(feeds, limits));
    report.warm_seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }

  for (const fs::path& dir : {options.output_dir, options.save_inputs.parent_path()}) {
    if (dir.empty()) continue;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return make_error("{}: cannot create the folder: {}", dir.string(), ec.message());
  }
  if (!options.save_inputs.empty()) {
    std::vector<std::pair<std::string, onnx::TensorProto>> arrays;
    for (const auto& [name, value] : feeds) {
      if (!value.is_tensor())
        return make_error("--save-inputs: input '{}' is {}, which an .npz cannot hold", name, value.describe());
      arrays.emplace_back(name, runtime::tensor_to_proto(value.tensor(), name));
    }
    ONNXKIT_TRY(io::write_npz(options.save_inputs, arrays));
  }
  nlohmann::json listing = nlohmann::json::array();
  for (size_t k = 0; k < results.size(); ++k) {
    OutputSummary s;
    s.name = session->outputs()[k].name;
    summarize(results[k], s);
    if (!options.output_dir.empty()) {
      ONNXKIT_ASSIGN(s.file, write_output(options.output_dir, k, s.name, results[k], options.format));
      nlohmann::json entry = {{"index", k}, {"name", s.name}, {"file", s.file}};
      if (results[k].is_tensor()) {
        entry["dtype"] = runtime::to_string(results[k].tensor().dtype());
        entry["shape"] = results[k].tensor().shape();
      } else {
        entry["type"] = s.type;
      }
      listing.push_back(entry);
    }
    report.outputs.push_back(std::move(s));
  }
  // Names come from the model: bytes that are not UTF-8 become U+FFFD, as in info.
  if (!options.output_dir.empty())
    ONNXKIT_TRY(io::write_file_atomically(options.output_dir / "outputs.json",
                                          listing.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"));
  return report;
}

std::string render_run_text(const RunReport& report) {
  size_t width = 4;
  for (const auto& o : report.outputs) width = std::max(width, o.name.size());
  std::string out;
  for (const auto& o : report.outputs) {
    out += fmt::format("{:<{}}  {}", o.name, width, o.type);
    if (o.has_stats) out += fmt::format("  min {:.6g}  max {:.6g}  mean {:.6g}", o.min, o.max, o.mean);
    if (!o.file.empty()) out += "  -> " + o.file;
    out += "\n";
  }
  out += fmt::format("first run {}", human_ms(report.seconds * 1000));
  if (!report.warm_seconds.empty()) {
    std::vector<double> warm = report.warm_seconds;
    std::sort(warm.begin(), warm.end());
    out += fmt::format(", warm {}{}", human_ms(warm[(warm.size() - 1) / 2] * 1000),
                       warm.size() > 1 ? fmt::format(" (median of {})", warm.size()) : "");
  } else if (report.warm_skipped) {
    out += " (no warm run after a long first one: --warm-runs N asks for them)";
  }
  out += fmt::format(", {} thread{}\n", report.threads, report.threads == 1 ? "" : "s");
  return out;
}

}  // namespace onnxkit::tools
