#pragma once
// Writes a file so that readers see either the old file or the complete new
// one: data goes to a temporary file in the same folder, which commit()
// renames over the target. Destroyed without commit(), it leaves nothing.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "util/result.h"

namespace onnxkit::io {

class AtomicFile {
 public:
  static Result<AtomicFile> create(const std::filesystem::path& target);

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;
  AtomicFile(const AtomicFile&) = delete;
  ~AtomicFile();

  Status write(std::span<const std::byte> bytes);
  Status write(std::string_view bytes);
  // Appends `length` bytes of another file from `offset`, in the kernel
  // (copy_file_range) where it can: no page of the source is mapped in.
  Status copy_from(int fd, uint64_t offset, uint64_t length);
  uint64_t size() const { return written_; }

  // Flushes and renames onto the target.
  Status commit();

  const std::filesystem::path& target() const { return target_; }

 private:
  AtomicFile(std::filesystem::path target, std::filesystem::path temp, int fd)
      : target_(std::move(target)), temp_(std::move(temp)), fd_(fd) {}
  Status flush();
  Status write_through(const char* data, size_t size);

  std::filesystem::path target_;
  std::filesystem::path temp_;
  int fd_ = -1;
  std::string buffer_;  // small writes gather here
  uint64_t written_ = 0;
};

// Writes `bytes` to `path` atomically.
Status write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

}  // namespace onnxkit::io
