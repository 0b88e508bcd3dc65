#pragma once
// The safetensors format: an 8-byte little-endian header length, a JSON
// header {NAME: {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]},
// "__metadata__": {..}}, then the tensors' bytes back to back, little-endian.
// No pickle, so reading a file runs no code: the weights `convert --to
// pytorch` writes, and the tensors its check hands to and from Python.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "util/result.h"

namespace onnxkit::io {

struct SafetensorsEntry {
  std::string name;
  int32_t data_type = 0;  // ONNX element type
  std::vector<int64_t> shape;
  std::span<const std::byte> bytes;   // numel x element size, little-endian
  std::shared_ptr<const void> owner;  // keeps `bytes` alive
};

// safetensors' name of an ONNX element type ("F32", "I64", "BOOL"...), or ""
// for the types the format has no name for (strings, complex, int4).
std::string safetensors_dtype(int32_t data_type);

// Writes the entries in order, atomically. Names must be unique; each entry's
// byte count must match its dtype and shape.
Status write_safetensors(const std::filesystem::path& path, const std::vector<SafetensorsEntry>& entries,
                         const std::map<std::string, std::string>& metadata = {});

// Reads every tensor of a file (held in memory), in header order. Refuses a
// header that does not fit the file, unknown dtypes, offsets that overlap or
// leave gaps, and sizes that disagree with the shapes.
Result<std::vector<SafetensorsEntry>> read_safetensors(const std::filesystem::path& path);

}  // namespace onnxkit::io
