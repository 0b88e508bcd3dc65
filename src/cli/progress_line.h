#pragma once
// The progress line of long commands (simplify, convert, compare, draw):
// "onnxkit simplify: checking the result..." on stderr, each step
// overwriting the last, wiped when the command ends. Only on a terminal and
// without --quiet: scripts and logs see nothing of it.

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>

#include "util/progress.h"

namespace onnxkit::cli {

// Adds -q/--quiet (no progress line) to `command`.
void add_quiet_flag(CLI::App& command, bool& quiet);

// The --help footer of a command with a progress line: `about`, the
// paragraph saying when the line shows, then `examples` (paragraphs apart).
std::string progress_footer(std::string_view about, std::string_view examples);

class ProgressLine {
 public:
  ProgressLine(const CLI::App& command, bool quiet);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // What tools call with each step; empty when nothing is to be shown.
  ProgressFn callback();
  // Wipes the line (before the command prints its results).
  void finish();

 private:
  std::string command_;
  bool enabled_ = false;
  bool shown_ = false;
};

}  // namespace onnxkit::cli
