#pragma once
// `onnxkit info`: what a model is and what it costs. The report is one JSON
// object (schema in docs/info-json.md); the text form is rendered from it, so
// both always say the same thing.

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/model.h"
#include "util/result.h"

namespace onnxkit::tools {

struct InfoOptions {
  bool nodes = false;  // per-node detail: inputs, outputs, attributes, cost
  // Numbers for the inputs' symbolic dims, for the cost: whole shapes by
  // input name, and dims by their name; the rest are taken as 1 (a cost per
  // sample), and the report says which.
  std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;
  std::map<std::string, int64_t, std::less<>> dims;
  // Also the cost as an expression in the named symbolic dims left unbound
  // ("1.82G*batch"): fitted from counts at several values of each symbol,
  // as a polynomial of degree <= 2 in each, checked at two more points.
  bool symbolic = false;
};

// An error names an input or dim in `options` that the model does not have.
Result<nlohmann::json> model_info(const std::filesystem::path& path, const InfoOptions& options);
Result<nlohmann::json> model_info(const ir::Model& model, const InfoOptions& options);

std::string render_info_text(const nlohmann::json& info);
// Several reports side by side, one column per model (OnnxSlim's --inspect):
// size, opsets, nodes, parameters, compute, inputs, outputs and every
// operator's count; rows where the models differ are marked with '*'.
std::string render_info_comparison(const std::vector<nlohmann::json>& infos);

// The pieces of the report, for other reports (draw's side panel):
// {"dtype", "dims", "values" (small inline tensors only), "external"}.
nlohmann::json tensor_json(const onnx::TensorProto& tensor);
nlohmann::json attribute_json(const ir::Attribute& attribute);
// One attribute's JSON as text: 3, [1,1], 'NOTSET', tensor int64[2] [0,4096].
std::string attribute_text(const nlohmann::json& attribute);

}  // namespace onnxkit::tools
