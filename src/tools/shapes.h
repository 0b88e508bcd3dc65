#pragma once
// `onnxkit shapes`: infer every value's type and shape and write them into
// the model's value_info, for viewers and engines that want them declared.

#include <filesystem>
#include <string>

#include "io/model_file.h"
#include "util/result.h"

namespace onnxkit::tools {

struct ShapesReport {
  size_t values = 0;         // intermediate values of the main graph
  size_t with_shape = 0;     // of those, how many have a known rank
  size_t fully_static = 0;   // of those, how many have every dim a number
  std::string warning;       // when inference stopped early
};

Result<ShapesReport> infer_shapes_file(const std::filesystem::path& in, const std::filesystem::path& out,
                                       const io::SaveOptions& save = {});

}  // namespace onnxkit::tools
