#pragma once
// File descriptors, and the check behind a rule: onnxkit reads only regular
// files. Opening a FIFO would block the command until some writer appears; a
// device would be mapped or read without end. (Writes follow the same rule:
// atomic_file.h.)

#include <fcntl.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>

#include "util/result.h"

namespace onnxkit::io {

// Owns a descriptor and closes it.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Flags to open a file for reading. O_NONBLOCK makes opening a FIFO return at
// once instead of waiting for a writer; regular_file_size turns it off again.
inline constexpr int kReadFlags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;

// What a file of this mode is, for messages: "a FIFO", "a character device".
std::string file_type_name(mode_t mode);

// The size of the file `fd` is open on, once it is known to be a regular
// file (its reads are made blocking again); else an error naming `path`.
Result<uint64_t> regular_file_size(const UniqueFd& fd, const std::filesystem::path& path);

}  // namespace onnxkit::io
