#pragma once
// A read-only memory map of a whole file. Weights stay on disk and are paged
// in only when touched, which is what keeps `info` on a multi-GiB model cheap.
// The descriptor is closed once the file is mapped (the mapping outlives it):
// a model may come with more side files than a process may hold open.

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>

#include "io/fd.h"
#include "util/result.h"

namespace onnxkit::io {

class MappedFile {
 public:
  // Opens and maps a regular file; anything else is refused without blocking.
  static Result<std::shared_ptr<const MappedFile>> open(const std::filesystem::path& path);
  // Maps the regular file `fd` is open on, for callers that choose how to open
  // it (external data is opened beneath the model's folder: reopening it by
  // name would let a swapped symbolic link change which file is mapped).
  // `path` names it in messages.
  static Result<std::shared_ptr<const MappedFile>> map(UniqueFd fd, std::filesystem::path path);

  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }
  // True when `fd` is open on the file mapped here (same device and inode),
  // for callers that open it again to copy from it in the kernel.
  bool is_same_file(const UniqueFd& fd) const;

 private:
  MappedFile(std::filesystem::path path, dev_t device, ino_t inode, const std::byte* data, size_t size)
      : path_(std::move(path)), device_(device), inode_(inode), data_(data), size_(size) {}

  std::filesystem::path path_;
  dev_t device_;
  ino_t inode_;
  const std::byte* data_;  // nullptr when size_ == 0 (an empty file cannot be mapped)
  size_t size_;
};

}  // namespace onnxkit::io
