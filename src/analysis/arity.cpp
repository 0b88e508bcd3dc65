#include "analysis/arity.h"

#include <fmt/format.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <array>
#include <climits>
#include <limits>

#include "analysis/opset_history.h"
#include "ir/graph.h"

namespace onnxkit::analysis {
namespace {

std::string count_text(int n, const char* what) { return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s"); }

std::string range_text(int min, int max, const char* what) {
  if (min == max) return count_text(min, what);
  if (max == std::numeric_limits<int>::max()) return fmt::format("at least {}", count_text(min, what));
  return fmt::format("{} to {} {}s", min, max, what);
}

// A position the schema requires (a single, non-optional parameter) left out.
std::string omitted_problem(std::string_view op_type, const std::vector<bool>& given,
                            const std::vector<onnx::OpSchema::FormalParameter>& formal, const char* what) {
  for (size_t i = 0; i < given.size() && i < formal.size(); ++i)
    if (!given[i] && formal[i].GetOption() == onnx::OpSchema::Single)
      return fmt::format("{} {} ('{}') of {} is required but omitted", what, i, formal[i].GetName(), op_type);
  return "";
}

// Ops whose required inputs a version after libonnx's schemas made
// optional, and that version: the older least count no longer holds. (The
// least counts of every other op still do.)
constexpr std::array<std::pair<std::string_view, int64_t>, 1> kInputsOptionalSince = {{{"OptionalHasElement", 18}}};

bool inputs_optional_since(std::string_view op_type, int64_t opset) {
  return std::any_of(kInputsOptionalSince.begin(), kInputsOptionalSince.end(),
                     [&](const auto& entry) { return entry.first == op_type && opset >= entry.second; });
}

}  // namespace

std::string arity_problem(std::string_view domain, std::string_view op_type, int64_t opset, const std::vector<bool>& inputs,
                          const std::vector<bool>& outputs) {
  if (!ir::canonical_domain(domain).empty()) return "";
  const int n_inputs = static_cast<int>(inputs.size()), n_outputs = static_cast<int>(outputs.size());
  const onnx::OpSchema* schema =
      onnx::OpSchemaRegistry::Schema(std::string(op_type), static_cast<int>(std::clamp<int64_t>(opset, 1, INT_MAX)), "");
  if (schema == nullptr) return n_outputs == 0 ? fmt::format("{} has no outputs", op_type) : "";
  const bool current = !changed_since_libonnx(op_type, opset);
  const int min_inputs = inputs_optional_since(op_type, opset) ? 0 : schema->min_input();
  const int max_inputs = current ? schema->max_input() : std::numeric_limits<int>::max();
  const int max_outputs = current ? schema->max_output() : std::numeric_limits<int>::max();
  if (n_inputs < min_inputs || n_inputs > max_inputs) {
    std::string text = fmt::format("{} takes {}, got {}", op_type, range_text(min_inputs, max_inputs, "input"), n_inputs);
    const auto& formal = schema->inputs();
    if (n_inputs < min_inputs && static_cast<size_t>(n_inputs) < formal.size())
      text += fmt::format(": input {} is missing", formal[static_cast<size_t>(n_inputs)].GetName());
    return text;
  }
  if (n_outputs < schema->min_output() || n_outputs > max_outputs)
    return fmt::format("{} has {}, got {}", op_type, range_text(schema->min_output(), max_outputs, "output"), n_outputs);
  if (!current) return "";
  std::string omitted = omitted_problem(op_type, inputs, schema->inputs(), "input");
  return omitted.empty() ? omitted_problem(op_type, outputs, schema->outputs(), "output") : omitted;
}

}  // namespace onnxkit::analysis
