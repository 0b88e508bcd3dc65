#pragma once
// The simplifier's driver: the fixed point of shape inference and the passes
// (constant folding the last of them), the way onnx-simplifier iterates, over
// the main graph and every sub-graph. Deterministic: the same model gives the
// same result.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/model.h"
#include "passes/fold.h"
#include "passes/pass.h"
#include "util/result.h"

namespace onnxkit::passes {

struct SimplifyOptions {
  PassOptions passes;  // skipped_passes may name any pass, kFoldConstants too
  int max_iterations = 20;
  // Called after every pass that changed something, with the pass's name;
  // an error stops the driver and is returned, naming that pass. For
  // --verify-each-pass.
  std::function<Status(const ir::Model&, std::string_view pass)> after_change;
};

struct SimplifyReport {
  std::vector<std::pair<std::string, size_t>> changes;  // per pass, in first-run order
  std::vector<std::string> notes;                       // what each rewrite did, in order
  std::vector<std::string> warnings;  // rewrites that failed (nodes that failed to fold), inference that stopped
  int iterations = 0;
  bool hit_iteration_cap = false;
  size_t removed_nodes = 0;  // by cleanup: dead code
};

Result<SimplifyReport> simplify_model(ir::Model& model, const SimplifyOptions& options = {});

}  // namespace onnxkit::passes
