#include <fmt/format.h>

#include <cstdio>

#include "cli/commands.h"

namespace onnxkit::cli {

int report_error(const CLI::App& command, const Error& error) {
  fmt::print(stderr, "onnxkit {}: error: {}\n", command.get_name(), error.message());
  return kExitFailure;
}

}  // namespace onnxkit::cli
