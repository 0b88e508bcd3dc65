#include "tools/check.h"

#include <fmt/format.h>

#include "io/model_file.h"

namespace onnxkit::tools {

Result<analysis::CheckReport> check_model_file(const std::filesystem::path& path, const analysis::CheckOptions& options) {
  ONNXKIT_ASSIGN(io::LoadedModel loaded, io::load_model(path));
  return analysis::check_model(loaded.proto, loaded.external_data->base_dir(), options);
}

std::string render_check_text(const std::filesystem::path& path, const analysis::CheckReport& report) {
  std::string out;
  for (const auto& note : report.notes) out += fmt::format("note: {}\n", note);
  for (const auto& f : report.functions) out += fmt::format("function: {}\n", f);
  for (const auto& p : report.problems) out += fmt::format("{}: {}: {}\n", path.string(), p.location, p.message);
  if (report.valid()) out += fmt::format("{}: valid\n", path.string());
  else out += fmt::format("{}: {} problem{}\n", path.string(), report.problems.size(), report.problems.size() == 1 ? "" : "s");
  return out;
}

}  // namespace onnxkit::tools
