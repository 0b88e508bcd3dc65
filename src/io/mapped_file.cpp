#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace onnxkit::io {

Result<std::shared_ptr<const MappedFile>> MappedFile::open(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), kReadFlags));
  if (!fd) return make_error("{}: {}", path.string(), std::strerror(errno));
  return map(std::move(fd), path);
}

Result<std::shared_ptr<const MappedFile>> MappedFile::map(UniqueFd fd, std::filesystem::path path) {
  ONNXKIT_ASSIGN(uint64_t size, regular_file_size(fd, path));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return make_error("{}: {}", path.string(), std::strerror(errno));
  const std::byte* data = nullptr;
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
    if (p == MAP_FAILED) return make_error("{}: cannot map file: {}", path.string(), std::strerror(errno));
    data = static_cast<const std::byte*>(p);
  }
  return std::shared_ptr<const MappedFile>(new MappedFile(std::move(path), st.st_dev, st.st_ino, data, size));
}

bool MappedFile::is_same_file(const UniqueFd& fd) const {
  struct stat st {};
  return ::fstat(fd.get(), &st) == 0 && st.st_dev == device_ && st.st_ino == inode_;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

}  // namespace onnxkit::io
