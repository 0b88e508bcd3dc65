#include "io/external_data.h"

#include <charconv>

#include "io/tensor_proto.h"

namespace onnxkit::io {
namespace {

namespace fs = std::filesystem;

Result<uint64_t> parse_uint(const onnx::TensorProto& tensor, const std::string& key, const std::string& text) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty())
    return make_error("{}: external data {} '{}' is not a non-negative integer", describe_tensor(tensor), key, text);
  return value;
}

bool is_within(const fs::path& path, const fs::path& dir) {
  auto [d, p] = std::mismatch(dir.begin(), dir.end(), path.begin(), path.end());
  return d == dir.end();
}

}  // namespace

Result<ExternalLocation> parse_external_location(const onnx::TensorProto& tensor) {
  ExternalLocation loc;
  bool has_location = false;
  for (const auto& entry : tensor.external_data()) {
    if (entry.key() == "location") {
      loc.location = entry.value();
      has_location = true;
    } else if (entry.key() == "offset") {
      ONNXKIT_ASSIGN(loc.offset, parse_uint(tensor, "offset", entry.value()));
    } else if (entry.key() == "length") {
      ONNXKIT_ASSIGN(loc.length, parse_uint(tensor, "length", entry.value()));
    }
  }
  if (!has_location || loc.location.empty())
    return make_error("{}: external data has no location", describe_tensor(tensor));
  return loc;
}

void set_external_location(onnx::TensorProto& tensor, const std::string& location, uint64_t offset,
                           uint64_t length) {
  tensor.clear_external_data();
  auto add = [&](const char* key, std::string value) {
    auto* entry = tensor.add_external_data();
    entry->set_key(key);
    entry->set_value(std::move(value));
  };
  add("location", location);
  add("offset", std::to_string(offset));
  add("length", std::to_string(length));
  tensor.set_data_location(onnx::TensorProto::EXTERNAL);
}

Result<std::shared_ptr<const MappedFile>> ExternalDataStore::file(const std::string& location) const {
  std::lock_guard lock(mutex_);
  if (auto it = files_.find(location); it != files_.end()) return it->second;

  fs::path rel(location);
  if (rel.is_absolute()) return make_error("external data location '{}' is an absolute path", location);
  fs::path normal = rel.lexically_normal();
  if (normal.empty() || *normal.begin() == "..")
    return make_error("external data location '{}' leads out of the model's folder", location);
  fs::path full = base_dir_ / normal;
  std::error_code ec;
  if (!fs::exists(full, ec))
    return make_error("external data file '{}' not found (looked for {})", location, full.string());
  // Symlinks are followed, but the target must stay inside the model's folder.
  fs::path real = fs::canonical(full, ec);
  fs::path real_base = fs::canonical(base_dir_.empty() ? fs::path(".") : base_dir_, ec);
  if (ec || !is_within(real, real_base))
    return make_error("external data location '{}' leads out of the model's folder", location);
  ONNXKIT_ASSIGN(auto mapped, MappedFile::open(full));
  files_.emplace(location, mapped);
  return mapped;
}

Result<std::span<const std::byte>> ExternalDataStore::bytes(const onnx::TensorProto& tensor) const {
  ONNXKIT_ASSIGN(ExternalSlice s, slice(tensor));
  return s.bytes();
}

Result<ExternalSlice> ExternalDataStore::slice(const onnx::TensorProto& tensor) const {
  ONNXKIT_ASSIGN(ExternalLocation loc, parse_external_location(tensor));
  auto mapped = file(loc.location);
  if (!mapped.ok()) return mapped.error().in(describe_tensor(tensor));
  uint64_t size = mapped.value()->size();
  if (loc.offset > size)
    return make_error("{}: external data offset {} is past the end of '{}' ({} bytes)", describe_tensor(tensor),
                      loc.offset, loc.location, size);
  uint64_t length = loc.length.value_or(size - loc.offset);
  if (length > size - loc.offset)
    return make_error("{}: external data '{}' is too short: needs {} bytes at offset {}, file has {}",
                      describe_tensor(tensor), loc.location, length, loc.offset, size);
  ONNXKIT_ASSIGN(uint64_t count, element_count(tensor));
  if (tensor.data_type() == onnx::TensorProto::STRING)
    return make_error("{}: string tensors cannot be stored externally", describe_tensor(tensor));
  uint64_t expected = data_byte_size(tensor.data_type(), count);
  if (has_fixed_size(tensor.data_type()) && length != expected)
    return make_error("{}: external data has {} bytes but {} elements of {} need {}", describe_tensor(tensor), length,
                      count, data_type_name(tensor.data_type()), expected);
  return ExternalSlice{mapped.value(), loc.offset, length};
}

uint64_t ExternalDataStore::mapped_bytes() const {
  std::lock_guard lock(mutex_);
  uint64_t total = 0;
  for (const auto& [_, f] : files_) total += f->size();
  return total;
}

}  // namespace onnxkit::io
