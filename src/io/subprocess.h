#pragma once
// Running another program and collecting what it prints: how `convert --to
// pytorch` runs the generated module in Python for its check.

#include <chrono>
#include <string>
#include <vector>

#include "util/result.h"

namespace onnxkit::io {

struct ProcessResult {
  int exit_code = -1;      // the program's exit status; -1 when killed by a signal
  bool timed_out = false;  // killed after the timeout
  std::string output;      // stdout and stderr together, the last 64 KiB at most
};

// Runs argv[0] (looked up in PATH when it has no '/') with the rest as its
// arguments, and waits for it at most `timeout`, then kills it. An error only
// when the program cannot be started.
Result<ProcessResult> run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

}  // namespace onnxkit::io
