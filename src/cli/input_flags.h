#pragma once
// The input flags `run` and `bench` share: --input, --shape, --dim,
// --val-range, --random, --seed.

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "tools/inputs.h"

namespace onnxkit::cli {

struct InputFlags {
  tools::InputFlagTexts texts;
  bool random = false;
  uint64_t seed = 0;
};

void add_input_flags(CLI::App& app, InputFlags& flags, bool with_random);

// The parsed flags, or the first bad one as an error.
Result<tools::InputOptions> input_options(const InputFlags& flags);

}  // namespace onnxkit::cli
