#pragma once
// `onnxkit check`: validation with errors that name the node.

#include <filesystem>
#include <string>

#include "analysis/checker.h"
#include "util/result.h"

namespace onnxkit::tools {

// Loads the model (load errors are an Error) and checks it.
Result<analysis::CheckReport> check_model_file(const std::filesystem::path& path, const analysis::CheckOptions& options);

// One line per problem and note, then a verdict line.
std::string render_check_text(const std::filesystem::path& path, const analysis::CheckReport& report);

}  // namespace onnxkit::tools
