#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace onnxkit::io {

Result<std::shared_ptr<const MappedFile>> MappedFile::open(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error("{}: {}", path.string(), std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return make_error("{}: {}", path.string(), std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return make_error("{}: is a directory, not a file", path.string());
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error("{}: not a regular file", path.string());
  }
  size_t size = static_cast<size_t>(st.st_size);
  const std::byte* data = nullptr;
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return make_error("{}: cannot map file: {}", path.string(), std::strerror(err));
    }
    data = static_cast<const std::byte*>(p);
  }
  return std::shared_ptr<const MappedFile>(new MappedFile(path, fd, data, size));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
  ::close(fd_);
}

}  // namespace onnxkit::io
