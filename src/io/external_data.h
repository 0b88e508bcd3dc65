#pragma once
// Tensors whose data lives in side files next to the model (ONNX "external
// data"). The side files are memory-mapped once each; tensors are views into
// the mapping, never copied into protobuf strings. No descriptor stays open
// per file: a model may have more side files than `ulimit -n`.

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "io/fd.h"
#include "io/mapped_file.h"
#include "util/result.h"

namespace onnxkit::io {

// The external_data entries of a TensorProto.
struct ExternalLocation {
  std::string location;  // relative to the model's folder
  uint64_t offset = 0;
  std::optional<uint64_t> length;  // absent: to the end of the file
};

Result<ExternalLocation> parse_external_location(const onnx::TensorProto& tensor);

// Rewrites the tensor's external_data entries to point at `location`.
void set_external_location(onnx::TensorProto& tensor, const std::string& location, uint64_t offset, uint64_t length);

// Where an external tensor's bytes are: a range of a mapped side file.
struct ExternalSlice {
  std::shared_ptr<const MappedFile> file;
  std::string location;  // the file's, as the tensor names it
  uint64_t offset = 0;
  uint64_t length = 0;
  std::span<const std::byte> bytes() const { return file->bytes().subspan(offset, length); }
};

// Opens the side file `location` (relative to the model's folder, which
// `dir_fd` is open on) so that the file opened is inside that folder, whatever
// the symbolic links on the way say and however they change meanwhile: the
// check is the open itself, relative to the folder's descriptor, not a
// resolved path that is then opened again. Where the kernel has openat2
// (Linux 5.6), it resolves the path beneath the folder: symbolic links are
// followed while they stay inside (a relative link to weights in a subfolder
// works), and an absolute link, '..' out of the folder or a /proc link is
// refused. Elsewhere, open_external_file_by_walk. Opening a FIFO does not
// block; the caller checks that the file is a regular one.
Result<UniqueFd> open_external_file(int dir_fd, const std::string& location);

// The fallback: one path component at a time, never following a symbolic
// link. Following them by hand would need a second path resolver (relative
// and absolute targets, '..', nested links, loops) whose slightest mistake is
// the very escape this prevents, for kernels older than openat2; so a link is
// refused there, with a message that says why. Public for its tests.
Result<UniqueFd> open_external_file_by_walk(int dir_fd, const std::string& location);

class ExternalDataStore {
 public:
  explicit ExternalDataStore(std::filesystem::path base_dir) : base_dir_(std::move(base_dir)) {}

  const std::filesystem::path& base_dir() const { return base_dir_; }

  // The bytes of an external tensor. Refuses locations that are absolute or
  // lead out of the model's folder (see open_external_file), missing files,
  // files that are not regular ones (a FIFO, a device), and ranges that do not
  // fit in the file or do not match the tensor's dims.
  Result<ExternalSlice> slice(const onnx::TensorProto& tensor) const;
  Result<std::span<const std::byte>> bytes(const onnx::TensorProto& tensor) const;

  // A descriptor on the file `slice` lies in, for copies in the kernel
  // (copy_file_range) that leave its pages unmapped. Mappings keep no
  // descriptor (see mapped_file.h), so it is opened again beneath the folder;
  // an error when that is not the very file mapped (replaced since). The
  // caller closes it after the copy.
  Result<UniqueFd> reopen(const ExternalSlice& slice) const;

  // Total size of the side files mapped so far.
  uint64_t mapped_bytes() const;

 private:
  Result<std::shared_ptr<const MappedFile>> file(const std::string& location) const;
  std::filesystem::path folder() const;
  Result<UniqueFd> open_beneath(const std::string& location) const;

  std::filesystem::path base_dir_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, std::shared_ptr<const MappedFile>> files_;
};

}  // namespace onnxkit::io
