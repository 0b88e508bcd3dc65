#pragma once
// `onnxkit shapes`: infer every value's type and shape and write them into
// the model's value_info, for viewers and engines that want them declared.

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "io/model_file.h"
#include "util/result.h"

namespace onnxkit::tools {

struct ShapesReport {
  size_t values = 0;        // intermediate values of the main graph
  size_t with_shape = 0;    // of those, how many have a known rank
  size_t fully_static = 0;  // of those, how many have every dim a number
  std::string warning;      // when inference stopped early
};

struct ShapesOptions {
  // Input name -> its dims, each a number or a symbol ("N", "3", "224"),
  // declared before inference in place of what the model says.
  std::vector<std::pair<std::string, std::vector<std::string>>> input_shapes;
  io::SaveOptions save;
};

Result<ShapesReport> infer_shapes_file(const std::filesystem::path& in, const std::filesystem::path& out,
                                       const ShapesOptions& options = {});

}  // namespace onnxkit::tools
