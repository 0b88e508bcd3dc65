#include "cli/progress_line.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace onnxkit::cli {

void add_quiet_flag(CLI::App& command, bool& quiet) {
  command.add_flag("-q,--quiet", quiet, "No progress line (shown only on a terminal, for models over 100 MB or 2,000 nodes)");
}

std::string progress_footer(std::string_view about, std::string_view examples) {
  return fmt::format(
      "{}\n\n"
      "Models over 100 MB or 2,000 nodes show a progress line on a terminal (stderr; never\n"
      "when piped or with --quiet).\n\n"
      "{}",
      about, examples);
}

ProgressLine::ProgressLine(const CLI::App& command, bool quiet)
    : command_(command.get_name()), enabled_(!quiet && ::isatty(STDERR_FILENO) == 1) {}

ProgressLine::~ProgressLine() { finish(); }

void ProgressLine::finish() {
  if (shown_) std::fputs("\r\x1b[K", stderr);
  shown_ = false;
}

ProgressFn ProgressLine::callback() {
  if (!enabled_) return {};
  return [this](std::string_view step) {
    fmt::print(stderr, "\r\x1b[Konnxkit {}: {}...", command_, step);
    std::fflush(stderr);
    shown_ = true;
  };
}

}  // namespace onnxkit::cli
