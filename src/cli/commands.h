#pragma once
// Each command registers its flags on the root app and returns what runs it.
// The CLI stays thin: parse flags, call one library function, print.

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "util/result.h"

namespace onnxkit::cli {

struct Command {
  CLI::App* app;
  std::function<int()> run;  // returns the exit code
};

// Exit codes: 0 success, 1 failure (bad model, failed check...), 2 usage.
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Prints "onnxkit <command>: error: <message>" to stderr; returns kExitFailure.
int report_error(const CLI::App& command, const Error& error);

Command add_info_command(CLI::App& root);
Command add_check_command(CLI::App& root);
Command add_convert_command(CLI::App& root);
Command add_run_command(CLI::App& root);
Command add_bench_command(CLI::App& root);
Command add_simplify_command(CLI::App& root);
Command add_shapes_command(CLI::App& root);
Command add_edit_command(CLI::App& root);
Command add_draw_command(CLI::App& root);

}  // namespace onnxkit::cli
