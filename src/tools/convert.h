#pragma once
// `onnxkit convert`: re-serialize a model, moving tensors to or from external
// data. (Other target formats come with later commands.)

#include <filesystem>

#include "io/model_file.h"
#include "util/result.h"

namespace onnxkit::tools {

Result<io::SaveSummary> convert_model(const std::filesystem::path& in, const std::filesystem::path& out,
                                      const io::SaveOptions& options);

}  // namespace onnxkit::tools
