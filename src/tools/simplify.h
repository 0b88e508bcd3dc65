#pragma once
// `onnxkit simplify`: the passes' driver on a model file, with input shapes
// overridden on request, and a numeric check of the result against the
// original before anything is written.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "io/model_file.h"
#include "passes/simplify.h"
#include "runtime/session.h"
#include "tools/inputs.h"
#include "util/progress.h"
#include "util/result.h"

namespace onnxkit::tools {

struct SimplifyToolOptions {
  passes::SimplifyOptions simplify;
  // NAME -> dims, each a number or a symbol: the input's declared shape
  // becomes exactly this (the seeds' "set the batch size").
  std::vector<std::pair<std::string, std::vector<std::string>>> input_shapes;
  // Refuse an input_shapes entry that would turn a symbolic dim into a number.
  bool keep_dynamic = false;
  // Inputs backed by initializers become constants first (freeze_initializers),
  // so that folding and fusion see through them.
  bool freeze_initializers = false;
  // Calls of model-local functions are expanded first (ir/inline_functions.h)
  // and the functions dropped; without it the passes see each call as one
  // opaque node and the functions are kept as they are.
  bool inline_functions = false;
  // Random input sets to compare original and result on (0: no check).
  // Inputs given in check_inputs.files are used as they are; the rest are
  // chosen so that the original runs (tools/runnable_inputs.h), with a set
  // more for each other compared value of an integer scalar that runs.
  int check_runs = 1;
  InputOptions check_inputs;
  double rtol = 1e-4;
  double atol = 1e-5;
  // Limits of each check run: a Loop that does not end soon (a trip count
  // of 2^62) fails the check with an error that says so instead of hanging.
  runtime::RunLimits check_limits{.max_subgraph_runs = 1 << 20};
  // Check after every pass that changed something, naming the one that broke the numbers.
  bool verify_each_pass = false;
  // Default-domain opset of the result (0: the model's own). The simplified
  // model is converted (convert_opset: ONNX's converter, onnxkit's own steps
  // above its newest opset) and simplified again, so that what the converter
  // adds folds, before the check compares it with the original.
  int64_t target_opset = 0;
  io::SaveOptions save;
  // Told each step of the work on a big model (util/progress.h).
  ProgressFn progress;
};

struct ModelSummary {
  std::map<std::string, size_t> ops;  // op type -> count, main graph
  size_t nodes = 0;                   // main graph
  uint64_t parameters = 0;            // initializer elements, main graph
  uint64_t file_bytes = 0;            // model file plus its side file
};

struct SimplifyToolReport {
  ModelSummary before, after;
  passes::SimplifyReport passes;
  size_t frozen_initializers = 0;             // inputs made constants by freeze_initializers
  uint64_t inlined_calls = 0;                 // function calls expanded by inline_functions
  int checks_run = 0;                         // input sets the check compared on
  std::string check_inputs;                   // what the check's inputs took beyond the defaults ("height, width = 64")
  double max_abs_diff = 0;                    // over every output of every check
  int64_t opset_before = 0, opset_after = 0;  // default domain
};

Result<SimplifyToolReport> simplify_file(const std::filesystem::path& in, const std::filesystem::path& out,
                                         const SimplifyToolOptions& options);

// The before/after table; with `details`, what each pass changed as well.
std::string render_simplify_text(const SimplifyToolReport& report, bool details);

}  // namespace onnxkit::tools
