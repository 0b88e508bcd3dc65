#include "io/fd.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace onnxkit::io {

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

std::string file_type_name(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFLNK: return "a symbolic link";
    case S_IFIFO: return "a FIFO";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    default: return "an unknown kind of file";
  }
}

Result<uint64_t> regular_file_size(const UniqueFd& fd, const std::filesystem::path& path) {
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return make_error("{}: {}", path.string(), std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return make_error("{}: is {}, not a regular file", path.string(), file_type_name(st.st_mode));
  int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0)
    return make_error("{}: {}", path.string(), std::strerror(errno));
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace onnxkit::io
