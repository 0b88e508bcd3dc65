#include "io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "io/fd.h"

namespace onnxkit::io {

namespace fs = std::filesystem;

namespace {
constexpr size_t kBufferSize = 1 << 20;
constexpr std::string_view kTemporaryMark = ".tmp-";
constexpr size_t kRandomChars = 6;  // mkostemp's XXXXXX
}  // namespace

Status check_replaceable(const fs::path& target) {
  struct stat st {};
  if (::lstat(target.c_str(), &st) != 0) {
    if (errno == ENOENT) return {};
    return make_error("{}: {}", target.string(), std::strerror(errno));
  }
  if (S_ISREG(st.st_mode)) return {};
  if (S_ISLNK(st.st_mode))
    return make_error(
        "{}: is a symbolic link; onnxkit does not write through or replace links (name the file it "
        "points to, or remove the link)",
        target.string());
  return make_error("{}: is {}, not a regular file; onnxkit replaces only regular files", target.string(),
                    file_type_name(st.st_mode));
}

std::string temporary_name_prefix(const std::string& file_name) {
  const size_t room = NAME_MAX - 1 - kTemporaryMark.size() - kRandomChars;  // 1 for the leading '.'
  size_t keep = file_name.size();
  if (keep > room) {
    keep = room;
    while (keep > 0 && (static_cast<unsigned char>(file_name[keep]) & 0xC0) == 0x80) --keep;  // a continuation byte
  }
  return "." + file_name.substr(0, keep) + std::string(kTemporaryMark);
}

Status check_writable(const fs::path& target) {
  ONNXKIT_TRY(check_replaceable(target));
  std::error_code ec;
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  if (!fs::is_directory(dir, ec)) return make_error("{}: folder '{}' does not exist", target.string(), dir.string());
  if (::access(dir.c_str(), W_OK) != 0)
    return make_error("{}: cannot write in folder '{}': {}", target.string(), dir.string(), std::strerror(errno));
  return {};
}

Status check_writable_folder(const fs::path& dir) {
  std::error_code ec;
  fs::path existing = dir;
  while (!existing.empty() && !fs::exists(existing, ec)) existing = existing.parent_path();
  if (existing.empty()) existing = ".";
  if (!fs::is_directory(existing, ec)) return make_error("{}: '{}' is not a folder", dir.string(), existing.string());
  if (::access(existing.c_str(), W_OK) != 0)
    return make_error("{}: cannot write in folder '{}': {}", dir.string(), existing.string(), std::strerror(errno));
  return {};
}

Result<AtomicFile> AtomicFile::create(const fs::path& target) {
  ONNXKIT_TRY(check_writable(target));
  const fs::path dir = target.parent_path();
  std::string pattern = (dir / (temporary_name_prefix(target.filename().string()) + "XXXXXX")).string();
  int fd = ::mkostemp(pattern.data(), O_CLOEXEC);
  if (fd < 0) return make_error("{}: cannot create a temporary file: {}", target.string(), std::strerror(errno));
  // mkstemp creates 0600; a model is an ordinary file, so follow the umask.
  mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  return AtomicFile(target, pattern, fd);
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : target_(std::move(other.target_)),
      temp_(std::move(other.temp_)),
      fd_(other.fd_),
      buffer_(std::move(other.buffer_)),
      written_(other.written_) {
  other.fd_ = -1;
  other.temp_.clear();
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

Status AtomicFile::write_through(const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd_, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error("{}: write failed: {}", target_.string(), std::strerror(errno));
    data += n;
    size -= static_cast<size_t>(n);
  }
  return {};
}

Status AtomicFile::flush() {
  Status s = write_through(buffer_.data(), buffer_.size());
  buffer_.clear();
  return s;
}

Status AtomicFile::write(std::span<const std::byte> bytes) {
  const char* data = reinterpret_cast<const char*>(bytes.data());
  written_ += bytes.size();
  if (buffer_.size() + bytes.size() <= kBufferSize) {
    buffer_.append(data, bytes.size());
    return {};
  }
  ONNXKIT_TRY(flush());
  return write_through(data, bytes.size());
}

Status AtomicFile::write(std::string_view bytes) { return write(std::as_bytes(std::span(bytes.data(), bytes.size()))); }

Status AtomicFile::copy_from(int fd, uint64_t offset, uint64_t length) {
  ONNXKIT_TRY(flush());
  auto in = static_cast<off64_t>(offset);
  uint64_t left = length;
  while (left > 0) {
    ssize_t n = ::copy_file_range(fd, &in, fd_, nullptr, left, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // not supported here (or a short source): copy by hand
    left -= static_cast<uint64_t>(n);
  }
  std::string chunk;
  while (left > 0) {
    chunk.resize(std::min<uint64_t>(left, kBufferSize));
    ssize_t n = ::pread(fd, chunk.data(), chunk.size(), in);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error("{}: cannot read the data to copy: {}", target_.string(), std::strerror(errno));
    ONNXKIT_TRY(write_through(chunk.data(), static_cast<size_t>(n)));
    in += n;
    left -= static_cast<uint64_t>(n);
  }
  written_ += length;
  return {};
}

Status AtomicFile::close() {
  if (fd_ < 0) return {};
  // No fsync: the rename already guarantees no reader sees a partial file
  // after a failed run, and syncing gigabytes would dominate save time.
  Status flushed = flush();
  int rc = ::close(fd_);
  fd_ = -1;
  if (!flushed.ok()) return flushed;
  if (rc != 0) return make_error("{}: write failed: {}", target_.string(), std::strerror(errno));
  return {};
}

Status AtomicFile::commit() {
  ONNXKIT_TRY(close());
  if (::rename(temp_.c_str(), target_.c_str()) != 0)
    return make_error("{}: cannot rename the temporary file into place: {}", target_.string(), std::strerror(errno));
  temp_.clear();
  return {};
}

Status write_file_atomically(const fs::path& path, std::string_view bytes) {
  ONNXKIT_ASSIGN(AtomicFile file, AtomicFile::create(path));
  ONNXKIT_TRY(file.write(bytes));
  return file.commit();
}

}  // namespace onnxkit::io
