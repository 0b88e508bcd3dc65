#pragma once
// `onnxkit run`: one inference on our runtime, outputs summarized and
// written in the ONNX backend test layout (DIR/output_K.npy or .pb plus
// DIR/outputs.json).

#include <filesystem>
#include <string>
#include <vector>

#include "runtime/session.h"
#include "tools/inputs.h"
#include "util/result.h"

namespace onnxkit::tools {

enum class TensorFormat { npy, pb };

struct RunOptions {
  InputOptions inputs;
  int threads = 0;
  std::vector<std::string> outputs;  // names; empty: the graph's outputs
  bool all_outputs = false;          // every intermediate value as well
  std::filesystem::path output_dir;  // empty: write nothing
  TensorFormat format = TensorFormat::npy;
  // Stop the run with an error after this many seconds (0: no limit); see
  // runtime::RunLimits.
  double timeout_seconds = 0;
  // Write the inputs the run used here as an .npz (empty: not), so the run
  // can be replayed (--input FILE.npz) or compared against (compare --reference);
  // its folder is made when missing, as output_dir is.
  std::filesystem::path save_inputs;
  // Runs after the first on the same inputs, timed apart from it: a first run
  // pays one-time costs (memory, packed weights, page faults) and can take
  // many times a warm one. -1: one warm run, unless the first took over
  // kAutoWarmSeconds, where another would double a long wait.
  int warm_runs = -1;
};

inline constexpr double kAutoWarmSeconds = 2.0;

struct OutputSummary {
  std::string name;
  std::string type;  // "float32[1,1000]", "seq(float32) of 3"
  bool has_stats = false;
  double min = 0, max = 0, mean = 0;
  std::string file;  // relative to the output folder, when written
};

struct RunReport {
  std::vector<OutputSummary> outputs;
  double seconds = 0;                // the first run alone
  std::vector<double> warm_seconds;  // each warm run
  bool warm_skipped = false;         // warm_runs -1 and the first run was long
  int threads = 0;
};

Result<RunReport> run_model(const std::filesystem::path& model, const RunOptions& options);

std::string render_run_text(const RunReport& report);

}  // namespace onnxkit::tools
