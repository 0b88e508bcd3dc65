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

// The same for a flag whose value is wrong, found after parsing; returns
// kExitUsage.
int report_usage_error(const CLI::App& command, const Error& error);

// Prints a usage error on one line, "onnxkit <command>: error: <message>",
// with the closest command or flag when one was misspelled; returns
// kExitUsage (help and --version print as usual and return 0).
int report_usage_error(CLI::App& root, const CLI::ParseError& error, const std::vector<std::string>& args);

// --external-threshold SIZE (bytes, or 4KB, 1MiB...; never negative).
void add_external_threshold_option(CLI::App& command, uint64_t& threshold);

// --external-data (tensors of at least the threshold go to OUT.data) and
// --external-threshold, as the commands writing a model beside their input
// (edit, simplify) take them.
void add_external_data_flags(CLI::App& command, bool& external, uint64_t& threshold);

Command add_info_command(CLI::App& root);
Command add_check_command(CLI::App& root);
Command add_convert_command(CLI::App& root);
Command add_run_command(CLI::App& root);
Command add_bench_command(CLI::App& root);
Command add_simplify_command(CLI::App& root);
Command add_shapes_command(CLI::App& root);
Command add_edit_command(CLI::App& root);
Command add_draw_command(CLI::App& root);
Command add_compare_command(CLI::App& root);
Command add_debug_command(CLI::App& root);

}  // namespace onnxkit::cli
