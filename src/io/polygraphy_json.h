#pragma once
// Polygraphy's saved arrays: `polygraphy run --save-outputs FILE.json`
// (a RunResults: per runner, per iteration, output name -> array) and
// `--save-inputs FILE.json` (a list of feed dicts, one per iteration). Each
// array is the base64 of its .npy bytes (in older files the bytes as latin-1
// text). The file is parsed as a stream, so a 500 MB dump is never held as a
// JSON tree: only the decoded arrays stay.

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "util/result.h"

namespace onnxkit::io {

struct PolygraphyArrays {
  // Per iteration, the arrays by name, in file order. For a RunResults, the
  // first runner's.
  std::vector<std::vector<std::pair<std::string, onnx::TensorProto>>> iterations;
  std::vector<std::string> runners;  // every runner a RunResults names, in order
};

Result<PolygraphyArrays> read_polygraphy_json(const std::filesystem::path& path);

// RFC 4648 base64 (padding optional, no whitespace); nullopt on a bad character.
std::optional<std::string> decode_base64(std::string_view text);

}  // namespace onnxkit::io
