#pragma once
// Reading and writing ONNX model files: the protobuf, and the external data
// it may point to.

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/external_data.h"
#include "util/result.h"

namespace onnxkit::io {

struct LoadedModel {
  onnx::ModelProto proto;
  // Resolves tensors whose data is external; its folder is the model's.
  std::shared_ptr<const ExternalDataStore> external_data;
  std::filesystem::path path;  // empty when parsed from bytes
  uint64_t file_size = 0;      // of the protobuf file itself
};

// Parses and validates a model file. Every error names the file and, where
// one is at fault, the tensor.
Result<LoadedModel> load_model(const std::filesystem::path& path);

// Parses a model from memory. External data, if any, is looked up relative
// to `base_dir`; `name` stands for the model in error messages.
Result<LoadedModel> parse_model(std::span<const std::byte> bytes, const std::filesystem::path& base_dir,
                                const std::string& name = "<bytes>");

enum class ExternalDataPolicy {
  keep,  // tensors external in the source stay external, the rest inline
  all,   // every tensor of at least `threshold` bytes goes external
  none,  // everything inline (must fit in protobuf's 2 GiB)
};

struct SaveOptions {
  ExternalDataPolicy external = ExternalDataPolicy::keep;
  uint64_t threshold = 1024;
  // File name, next to the model, for external data; default "<model>.data".
  std::string data_file;
  // For tests: called after each step of replacing the files that changes
  // what a reader finds (a rename, a link), with the step's name; an error
  // from it stops the save there, as a failure at that point would. Lets a
  // test load the model at every step, where a kill could leave it.
  std::function<Status(std::string_view step)> after_step;
};

struct SaveSummary {
  uint64_t model_bytes = 0;
  uint64_t external_bytes = 0;  // 0 when no side file was written
  std::string external_file;    // its name next to the model, when written
};

// Writes `proto` to `path` atomically, together with its side file when some
// tensors are external: readers, and a save stopped anywhere, find the old
// model with its old data or the new with the new (io/replace_pair.h says
// how). The old model's own side file is removed when the new one no longer
// reads it. Only a regular file (or nothing) at `path` is replaced. Tensors
// that are external in the source are read through `source` (may be null when
// there are none). Takes the proto by value because tensors moved out to the
// side file are cleared from it.
Result<SaveSummary> save_model(onnx::ModelProto proto, const ExternalDataStore* source, const std::filesystem::path& path,
                               const SaveOptions& options = {});

// The same, with the main graph's initializers given apart from `proto` (whose
// graph has none): they are serialized from where they are, never copied, so
// a model in memory is written without a second copy of its weights.
Result<SaveSummary> save_model(onnx::ModelProto proto, const std::vector<const onnx::TensorProto*>& initializers,
                               const ExternalDataStore* source, const std::filesystem::path& path,
                               const SaveOptions& options = {});

// The largest message protobuf can parse or write.
inline constexpr uint64_t kProtobufLimit = 2147483647;

}  // namespace onnxkit::io
