#include "cli/progress_line.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace onnxkit::cli {

void add_quiet_flag(CLI::App& command, bool& quiet) {
  command.add_flag("-q,--quiet", quiet, "No progress line (shown only on a terminal, for models over 100 MB or 2,000 nodes)");
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
