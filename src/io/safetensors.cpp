#include "io/safetensors.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>

#include "io/atomic_file.h"
#include "io/tensor_proto.h"

namespace onnxkit::io {

namespace {

struct DtypeName {
  int32_t data_type;
  const char* name;
};

constexpr DtypeName kDtypes[] = {
    {onnx::TensorProto::FLOAT, "F32"},
    {onnx::TensorProto::DOUBLE, "F64"},
    {onnx::TensorProto::FLOAT16, "F16"},
    {onnx::TensorProto::BFLOAT16, "BF16"},
    {onnx::TensorProto::INT8, "I8"},
    {onnx::TensorProto::UINT8, "U8"},
    {onnx::TensorProto::INT16, "I16"},
    {onnx::TensorProto::UINT16, "U16"},
    {onnx::TensorProto::INT32, "I32"},
    {onnx::TensorProto::UINT32, "U32"},
    {onnx::TensorProto::INT64, "I64"},
    {onnx::TensorProto::UINT64, "U64"},
    {onnx::TensorProto::BOOL, "BOOL"},
    // float8 (codes of ONNX 1.14, newer than the headers built against)
    {17, "F8_E4M3"},
    {19, "F8_E5M2"},
};

int32_t dtype_from_name(const std::string& name) {
  for (const DtypeName& d : kDtypes)
    if (name == d.name) return d.data_type;
  return 0;
}

uint64_t element_count(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

}  // namespace

std::string safetensors_dtype(int32_t data_type) {
  for (const DtypeName& d : kDtypes)
    if (d.data_type == data_type) return d.name;
  return "";
}

Status write_safetensors(const std::filesystem::path& path, const std::vector<SafetensorsEntry>& entries,
                         const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const SafetensorsEntry& e : entries) {
    std::string dtype = safetensors_dtype(e.data_type);
    if (dtype.empty())
      return make_error("{}: tensor '{}': safetensors has no {} type", path.string(), e.name, data_type_name(e.data_type));
    if (header.contains(e.name)) return make_error("{}: tensor '{}' is written twice", path.string(), e.name);
    uint64_t expected = data_byte_size(e.data_type, element_count(e.shape));
    if (e.bytes.size() != expected)
      return make_error("{}: tensor '{}' holds {} bytes, its shape needs {}", path.string(), e.name, e.bytes.size(), expected);
    header[e.name] = {{"dtype", dtype}, {"shape", e.shape}, {"data_offsets", {offset, offset + e.bytes.size()}}};
    offset += e.bytes.size();
  }
  std::string text = header.dump();
  // Padding the header to 8 bytes keeps every tensor as aligned as the file
  // is, which loaders that map the file rely on.
  text.append((8 - text.size() % 8) % 8, ' ');
  char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<char>((static_cast<uint64_t>(text.size()) >> (8 * i)) & 0xff);
  ONNXKIT_ASSIGN(AtomicFile file, AtomicFile::create(path));
  ONNXKIT_TRY(file.write(std::string_view(length, 8)));
  ONNXKIT_TRY(file.write(text));
  for (const SafetensorsEntry& e : entries) ONNXKIT_TRY(file.write(e.bytes));
  return file.commit();
}

Result<std::vector<SafetensorsEntry>> read_safetensors(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("{}: cannot open", path.string());
  auto data = std::make_shared<std::string>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  const std::string& bytes = *data;
  if (bytes.size() < 8) return make_error("{}: too short for a safetensors file", path.string());
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i) length |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  if (length > bytes.size() - 8) return make_error("{}: header of {} bytes does not fit the file", path.string(), length);
  nlohmann::ordered_json header =
      nlohmann::ordered_json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<int64_t>(length), nullptr, false);
  if (header.is_discarded() || !header.is_object()) return make_error("{}: the header is not a JSON object", path.string());
  const uint64_t base = 8 + length;
  const uint64_t data_size = bytes.size() - base;
  std::vector<SafetensorsEntry> entries;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& [name, spec] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string& tensor = name;  // clang 14 cannot capture a structured binding
    auto where = [&](std::string_view what) { return make_error("{}: tensor '{}': {}", path.string(), tensor, what); };
    if (!spec.is_object() || !spec.contains("dtype") || !spec.contains("shape") || !spec.contains("data_offsets"))
      return where("needs dtype, shape and data_offsets");
    if (!spec["dtype"].is_string() || !spec["shape"].is_array() || !spec["data_offsets"].is_array() ||
        spec["data_offsets"].size() != 2)
      return where("malformed entry");
    SafetensorsEntry e;
    e.name = name;
    e.data_type = dtype_from_name(spec["dtype"].get<std::string>());
    if (e.data_type == 0) return where(fmt::format("unknown dtype '{}'", spec["dtype"].get<std::string>()));
    for (const auto& d : spec["shape"]) {
      if (!d.is_number_unsigned()) return where("shape holds a negative or non-integer dim");
      e.shape.push_back(d.get<int64_t>());
    }
    if (!spec["data_offsets"][0].is_number_unsigned() || !spec["data_offsets"][1].is_number_unsigned())
      return where("offsets must be non-negative integers");
    uint64_t begin = spec["data_offsets"][0].get<uint64_t>(), end = spec["data_offsets"][1].get<uint64_t>();
    if (begin > end || end > data_size) return where("data_offsets lie outside the file");
    if (end - begin != data_byte_size(e.data_type, element_count(e.shape)))
      return where(
          fmt::format("holds {} bytes, its shape needs {}", end - begin, data_byte_size(e.data_type, element_count(e.shape))));
    e.bytes = std::as_bytes(std::span<const char>(bytes.data() + base + begin, end - begin));
    e.owner = data;
    ranges.emplace_back(begin, end);
    entries.push_back(std::move(e));
  }
  std::sort(ranges.begin(), ranges.end());
  uint64_t covered = 0;
  for (const auto& [begin, end] : ranges) {
    if (begin != covered) return make_error("{}: tensor data overlaps or leaves a gap at byte {}", path.string(), covered);
    covered = end;
  }
  if (covered != data_size) return make_error("{}: {} bytes after the last tensor", path.string(), data_size - covered);
  return entries;
}

}  // namespace onnxkit::io
