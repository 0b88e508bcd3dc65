#pragma once
// `onnxkit info`: what a model is and what it costs. The report is one JSON
// object (schema in docs/info-json.md); the text form is rendered from it, so
// both always say the same thing.

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "ir/model.h"
#include "util/result.h"

namespace onnxkit::tools {

struct InfoOptions {
  bool nodes = false;  // per-node detail: inputs, outputs, attributes, cost
};

Result<nlohmann::json> model_info(const std::filesystem::path& path, const InfoOptions& options);
nlohmann::json model_info(const ir::Model& model, const InfoOptions& options);

std::string render_info_text(const nlohmann::json& info);

}  // namespace onnxkit::tools
