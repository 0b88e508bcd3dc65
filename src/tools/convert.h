#pragma once
// `onnxkit convert`: re-serialize a model, moving tensors to or from external
// data, optionally with its float32 weights and arithmetic in 16 bits.

#include <filesystem>
#include <optional>
#include <string>

#include "io/model_file.h"
#include "tools/convert_precision.h"
#include "tools/inputs.h"
#include "util/progress.h"
#include "util/result.h"

namespace onnxkit::tools {

struct ConvertOptions {
  io::SaveOptions save;
  std::optional<PrecisionOptions> precision;
  // With `precision`: run the model before and after on the same inputs
  // (those it runs on, tools/runnable_inputs.h) and report how far apart.
  bool check = true;
  InputOptions check_inputs;
  // The check fails when an output's largest difference is above this
  // fraction of that output's largest magnitude; without it, only an
  // overflow fails it (how much a model may lose is the caller's call: the
  // report says how much it did).
  std::optional<double> max_rel_diff;
};

// How far the 16-bit model's outputs are from the float32 model's.
struct PrecisionCheck {
  std::string chosen;        // inputs chosen beyond the defaults, when any
  std::string worst_output;  // the output with the largest relative difference
  double max_abs_diff = 0;
  double max_rel_diff = 0;        // max abs diff over the largest magnitude of that output
  size_t differing_integers = 0;  // elements of integer/bool outputs that differ (labels, indices)
};

struct ConvertReport {
  io::SaveSummary saved;
  std::optional<PrecisionReport> precision;
  std::optional<PrecisionCheck> check;
};

// `progress` is told each step of the work on a big model (util/progress.h).
Result<ConvertReport> convert_model(const std::filesystem::path& in, const std::filesystem::path& out,
                                    const ConvertOptions& options, const ProgressFn& progress = {});

// The lines `convert` prints after "wrote ...": the precision change and its check.
std::string render_precision_text(const ConvertReport& report, LowFloat type);

}  // namespace onnxkit::tools
