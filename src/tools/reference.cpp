#include "tools/reference.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>

#include "io/mapped_file.h"
#include "io/polygraphy_json.h"
#include "io/tensor_file.h"
#include "runtime/tensor_proto.h"
#include "util/text.h"

namespace onnxkit::tools {
namespace {

namespace fs = std::filesystem;
using runtime::Datum;

// A name -> value map that remembers which file gave each name.
struct Gathered {
  std::unordered_map<std::string, Datum> values;
  std::unordered_map<std::string, std::string> origin;

  Status add(const std::string& name, Datum value, const std::string& file) {
    auto [it, added] = origin.emplace(name, file);
    if (!added) return make_error("reference tensor '{}' is given twice: by {} and by {}", name, it->second, file);
    values.emplace(name, std::move(value));
    return {};
  }
};

// The proto stays alive as long as the tensor viewing its raw_data.
Result<Datum> tensor_value(onnx::TensorProto proto, const std::string& file) {
  auto holder = std::make_shared<onnx::TensorProto>(std::move(proto));
  auto tensor = runtime::tensor_from_proto(*holder, nullptr, holder);
  if (!tensor.ok()) return tensor.error().in(file);
  return Datum(std::move(tensor).value());
}

Status add_npz(const fs::path& path, Gathered& into) {
  ONNXKIT_ASSIGN(auto arrays, io::read_npz(path));
  for (auto& [name, proto] : arrays) {
    ONNXKIT_ASSIGN(Datum v, tensor_value(std::move(proto), path.string()));
    ONNXKIT_TRY(into.add(name, std::move(v), path.string()));
  }
  return {};
}

// `kind` as outputs.json's "type" says: sequences and optionals are not TensorProtos.
Result<Datum> read_pb_value(const fs::path& path, const std::string& kind, std::string* name) {
  if (kind.rfind("seq(", 0) == 0) {
    ONNXKIT_ASSIGN(auto proto, io::read_pb<onnx::SequenceProto>(path));
    if (name != nullptr) *name = proto.name();
    return runtime::value_from_proto(proto);
  }
  if (kind.rfind("optional(", 0) == 0) {
    ONNXKIT_ASSIGN(auto proto, io::read_pb<onnx::OptionalProto>(path));
    if (name != nullptr) *name = proto.name();
    return runtime::value_from_proto(proto);
  }
  ONNXKIT_ASSIGN(auto proto, io::read_pb<onnx::TensorProto>(path));
  if (name != nullptr) *name = proto.name();
  return tensor_value(std::move(proto), path.string());
}

Status add_file(const fs::path& path, const std::string& listed_name, const std::string& kind, Gathered& into) {
  const std::string ext = path.extension().string();
  if (ext == ".npz") return add_npz(path, into);
  if (ext == ".npy") {
    ONNXKIT_ASSIGN(auto proto, io::read_npy(path));
    ONNXKIT_ASSIGN(Datum v, tensor_value(std::move(proto), path.string()));
    return into.add(listed_name.empty() ? path.stem().string() : listed_name, std::move(v), path.string());
  }
  if (ext == ".pb") {
    std::string stored;
    ONNXKIT_ASSIGN(Datum v, read_pb_value(path, kind, &stored));
    std::string name = !listed_name.empty() ? listed_name : !stored.empty() ? stored : path.stem().string();
    return into.add(name, std::move(v), path.string());
  }
  return make_error("{}: not a tensor file (expected .npy, .npz or .pb)", path.string());
}

// run's outputs.json: [{"name": ..., "file": ..., "type"?: ...}, ...].
Result<std::unordered_map<std::string, std::pair<std::string, std::string>>> read_listing(const fs::path& path) {
  ONNXKIT_ASSIGN(auto mapped, io::MappedFile::open(path));
  auto bytes = mapped->bytes();
  nlohmann::json listing = nlohmann::json::parse(reinterpret_cast<const char*>(bytes.data()),
                                                 reinterpret_cast<const char*>(bytes.data()) + bytes.size(), nullptr, false);
  if (listing.is_discarded() || !listing.is_array())
    return make_error("{}: not the listing `onnxkit run --output-dir` writes (a JSON array)", path.string());
  std::unordered_map<std::string, std::pair<std::string, std::string>> files;  // file -> (name, type)
  for (const auto& entry : listing) {
    if (!entry.is_object() || !entry.contains("name") || !entry.contains("file") || !entry["name"].is_string() ||
        !entry["file"].is_string())
      return make_error("{}: every entry needs a \"name\" and a \"file\"", path.string());
    const std::string file = entry["file"].get<std::string>();
    if (file.find('/') != std::string::npos || file == ".." || file.empty())
      return make_error("{}: file '{}' is not in the folder", path.string(), file);
    files[file] = {entry["name"].get<std::string>(), entry.value("type", "")};
  }
  return files;
}

Status add_folder(const fs::path& dir, Gathered& into, std::vector<std::string>& notes) {
  std::unordered_map<std::string, std::pair<std::string, std::string>> listed;
  if (fs::exists(dir / "outputs.json")) {
    ONNXKIT_ASSIGN(listed, read_listing(dir / "outputs.json"));
  }
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file()) files.push_back(entry.path());
  if (ec) return make_error("{}: cannot list the folder: {}", dir.string(), ec.message());
  std::sort(files.begin(), files.end());
  size_t skipped = 0;
  for (const fs::path& file : files) {
    const std::string ext = file.extension().string();
    if (ext != ".npy" && ext != ".pb" && ext != ".npz") {
      if (file.filename() != "outputs.json") ++skipped;
      continue;
    }
    auto it = listed.find(file.filename().string());
    ONNXKIT_TRY(add_file(file, it != listed.end() ? it->second.first : "", it != listed.end() ? it->second.second : "", into));
  }
  if (into.values.empty()) return make_error("{}: no .npy, .npz or .pb files in the folder", dir.string());
  if (skipped > 0)
    notes.push_back(fmt::format("{}: {} file{} that hold no tensor skipped", dir.string(), skipped, skipped == 1 ? "" : "s"));
  return {};
}

}  // namespace

std::string tensor_file_stem(const std::string& name) {
  std::string out = name;
  for (char& c : out)
    if (c == '/' || c == '\\' || c == ':' || c == '\0') c = '_';
  return out;
}

Result<Reference> load_reference(const std::vector<fs::path>& paths) {
  Reference reference;
  Gathered shared;  // files without iterations
  std::vector<Gathered> iterations;
  for (const fs::path& path : paths) {
    std::error_code ec;
    if (!fs::exists(path, ec)) return make_error("{}: no such file or folder", path.string());
    if (fs::is_directory(path, ec)) {
      ONNXKIT_TRY(add_folder(path, shared, reference.notes));
      continue;
    }
    if (path.extension() == ".json") {
      ONNXKIT_ASSIGN(io::PolygraphyArrays arrays, io::read_polygraphy_json(path));
      if (arrays.runners.size() > 1)
        reference.notes.push_back(fmt::format("{}: runner '{}' taken, the first of {} ({})", path.string(), arrays.runners[0],
                                              arrays.runners.size(), join(arrays.runners, ", ")));
      if (iterations.size() < arrays.iterations.size()) iterations.resize(arrays.iterations.size());
      for (size_t i = 0; i < arrays.iterations.size(); ++i)
        for (auto& [name, proto] : arrays.iterations[i]) {
          ONNXKIT_ASSIGN(Datum v, tensor_value(std::move(proto), path.string()));
          ONNXKIT_TRY(iterations[i].add(name, std::move(v), path.string()));
        }
      continue;
    }
    ONNXKIT_TRY(add_file(path, "", "", shared));
  }
  const size_t count = std::max<size_t>(1, iterations.size());
  for (size_t i = 0; i < count; ++i) {
    std::unordered_map<std::string, Datum> sample = shared.values;
    if (i < iterations.size()) {
      for (auto& [name, value] : iterations[i].values) {
        if (shared.origin.count(name))
          return make_error("reference tensor '{}' is given twice: by {} and by {}", name, shared.origin.at(name),
                            iterations[i].origin.at(name));
        sample.emplace(name, value);
      }
    }
    reference.samples.push_back(std::move(sample));
  }
  return reference;
}

}  // namespace onnxkit::tools
