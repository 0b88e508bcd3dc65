#pragma once
// Inputs a model runs on, found by trying, for a check that must feed the
// original model something it accepts when the user gives nothing
// (`simplify`). Random data alone is not enough: symbolic spatial dims at 2
// leave no room for a 3x3 window, an audio length must be a multiple of a
// frame, and a sample rate drawn at random sends an If to the branch no
// real input takes.
//
// What is tried, smallest first: symbolic dims at axis 0 (the batch) as 2,
// the others as 2, 16, 32, ... 1024, then the batch as 1; integer scalars
// as the constants the graph compares them with (`Equal(sr, 16000)`: 16000),
// then at random. The first assignment the model runs on makes the input
// sets; the other scalar values it also runs on at the same sizes add one set
// each, so that every branch they reach is checked.

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/session.h"
#include "tools/inputs.h"
#include "util/result.h"

namespace onnxkit::tools {

struct RunnableInputOptions {
  // What the user gave (files, shapes); random data fills the rest, from `inputs.seed`.
  InputOptions inputs;
  // Input sets wanted at the first assignment found (seeds inputs.seed, +1, ...).
  int sets = 1;
  // Runs of the model allowed in the search, the successful ones included.
  int max_attempts = 24;
  // Input sets added for other scalar values the model also runs on.
  int max_extra_sets = 3;
  runtime::RunLimits limits;
};

struct RunnableInputs {
  std::vector<runtime::NamedValues> feeds;
  std::vector<std::vector<runtime::Datum>> outputs;  // the session's outputs on each of `feeds`
  // What was chosen, when anything was ("symbolic dims 'height', 'width' as 64").
  std::string chosen;
};

// Input sets `session` runs on. When none is found: an error saying what was
// tried, the model's error at the last attempt, and how to give inputs.
Result<RunnableInputs> find_runnable_inputs(const runtime::Session& session, const RunnableInputOptions& options);

// For each integer input holding one element, the constants it is compared
// with (Equal, Less, Greater... directly or through Cast, Squeeze,
// Unsqueeze, Reshape, Identity), in the order they are met, in any
// sub-graph: the values that choose its branches.
std::vector<std::pair<std::string, std::vector<int64_t>>> compared_constants(const ir::Graph& graph);

}  // namespace onnxkit::tools
