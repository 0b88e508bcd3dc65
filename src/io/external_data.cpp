#include "io/external_data.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#endif

#include <cerrno>
#include <charconv>
#include <cstring>
#include <iterator>

#include "io/tensor_proto.h"

namespace onnxkit::io {
namespace {

namespace fs = std::filesystem;

Result<uint64_t> parse_uint(const onnx::TensorProto& tensor, const std::string& key, const std::string& text) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty())
    return make_error("{}: external data {} '{}' is not a non-negative integer", describe_tensor(tensor), key, text);
  return value;
}

// RESOLVE_BENEATH fails with EAGAIN when a rename elsewhere raced its check
// of a '..'; the kernel suggests trying again.
constexpr int kOpenat2Attempts = 8;

// openat2 resolving beneath `dir_fd`, or -1 with errno. errno ENOSYS or EPERM
// means no openat2: an older kernel, or a seccomp filter (container runtimes
// answer either) that hides it.
int openat2_beneath(int dir_fd, const char* path) {
#if defined(SYS_openat2) && defined(RESOLVE_BENEATH)
  struct open_how how {};
  how.flags = kReadFlags;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  for (int attempt = 0; attempt < kOpenat2Attempts; ++attempt) {
    long fd = ::syscall(SYS_openat2, dir_fd, path, &how, sizeof how);
    if (fd >= 0 || errno != EAGAIN) return static_cast<int>(fd);
  }
  return -1;
#else
  errno = ENOSYS;
  return -1;
#endif
}

// The checks that need no file system, with messages clearer than the
// kernel's: the location as a path relative to the folder, '.' and 'x/..'
// folded away.
Result<fs::path> relative_location(const std::string& location) {
  if (location.find('\0') != std::string::npos) return make_error("external data location '{}' contains a NUL byte", location);
  fs::path rel(location);
  if (rel.is_absolute()) return make_error("external data location '{}' is an absolute path", location);
  fs::path normal = rel.lexically_normal();
  if (normal.empty() || *normal.begin() == "..")
    return make_error("external data location '{}' leads out of the model's folder", location);
  if (!normal.has_filename()) return make_error("external data location '{}' names a folder, not a file", location);
  return normal;
}

Error open_error(const std::string& location, int err) {
  switch (err) {
    case ENOENT: return make_error("external data file '{}' not found in the model's folder", location);
    case EXDEV:
      return make_error(
          "external data location '{}' leads out of the model's folder (by '..' or an absolute "
          "symbolic link)",
          location);
    default: return make_error("external data location '{}' cannot be opened: {}", location, std::strerror(err));
  }
}

}  // namespace

Result<ExternalLocation> parse_external_location(const onnx::TensorProto& tensor) {
  ExternalLocation loc;
  bool has_location = false;
  for (const auto& entry : tensor.external_data()) {
    if (entry.key() == "location") {
      loc.location = entry.value();
      has_location = true;
    } else if (entry.key() == "offset") {
      ONNXKIT_ASSIGN(loc.offset, parse_uint(tensor, "offset", entry.value()));
    } else if (entry.key() == "length") {
      ONNXKIT_ASSIGN(loc.length, parse_uint(tensor, "length", entry.value()));
    }
  }
  if (!has_location || loc.location.empty()) return make_error("{}: external data has no location", describe_tensor(tensor));
  return loc;
}

void set_external_location(onnx::TensorProto& tensor, const std::string& location, uint64_t offset, uint64_t length) {
  tensor.clear_external_data();
  auto add = [&](const char* key, std::string value) {
    auto* entry = tensor.add_external_data();
    entry->set_key(key);
    entry->set_value(std::move(value));
  };
  add("location", location);
  add("offset", std::to_string(offset));
  add("length", std::to_string(length));
  tensor.set_data_location(onnx::TensorProto::EXTERNAL);
}

Result<UniqueFd> open_external_file(int dir_fd, const std::string& location) {
  ONNXKIT_ASSIGN(fs::path normal, relative_location(location));
  int fd = openat2_beneath(dir_fd, normal.c_str());
  if (fd >= 0) return UniqueFd(fd);
  int err = errno;
  if (err != ENOSYS && err != EPERM) return open_error(location, err);
  return open_external_file_by_walk(dir_fd, location);
}

Result<UniqueFd> open_external_file_by_walk(int dir_fd, const std::string& location) {
  ONNXKIT_ASSIGN(fs::path normal, relative_location(location));
  UniqueFd folder;  // the folder reached so far; dir_fd itself at first
  auto at = [&] { return folder ? folder.get() : dir_fd; };
  fs::path walked;
  for (auto it = normal.begin(); it != normal.end(); ++it) {
    const fs::path& name = *it;
    if (name == "..") return open_error(location, EXDEV);  // relative_location folds these away
    walked /= name;
    bool last = std::next(it) == normal.end();
    int fd = last ? ::openat(at(), name.c_str(), kReadFlags | O_NOFOLLOW)
                  : ::openat(at(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      int err = errno;
      // O_NOFOLLOW answers ELOOP for a link as the last component, ENOTDIR
      // (with O_DIRECTORY) before it.
      struct stat st {};
      if ((err == ELOOP || err == ENOTDIR) && ::fstatat(at(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        return make_error(
            "external data location '{}' goes through the symbolic link '{}', which onnxkit follows "
            "only where the kernel has openat2 (Linux 5.6)",
            location, walked.string());
      return open_error(location, err);
    }
    if (last) return UniqueFd(fd);
    folder = UniqueFd(fd);
  }
  return open_error(location, ENOENT);  // not reached: relative_location returns a file name last
}

Result<std::shared_ptr<const MappedFile>> ExternalDataStore::file(const std::string& location) const {
  std::lock_guard lock(mutex_);
  if (auto it = files_.find(location); it != files_.end()) return it->second;

  // The file is mapped through the descriptor that was checked, never
  // reopened by name.
  ONNXKIT_ASSIGN(UniqueFd fd, open_beneath(location));
  ONNXKIT_ASSIGN(auto mapped, MappedFile::map(std::move(fd), folder() / location));
  files_.emplace(location, mapped);
  return mapped;
}

fs::path ExternalDataStore::folder() const { return base_dir_.empty() ? fs::path(".") : base_dir_; }

Result<UniqueFd> ExternalDataStore::open_beneath(const std::string& location) const {
  const fs::path dir = folder();
  UniqueFd dir_fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd) return make_error("cannot open the model's folder '{}': {}", dir.string(), std::strerror(errno));
  return open_external_file(dir_fd.get(), location);
}

Result<UniqueFd> ExternalDataStore::reopen(const ExternalSlice& slice) const {
  ONNXKIT_ASSIGN(UniqueFd fd, open_beneath(slice.location));
  if (!slice.file->is_same_file(fd))
    return make_error("external data file '{}' was replaced while the model was open", slice.location);
  return fd;
}

Result<std::span<const std::byte>> ExternalDataStore::bytes(const onnx::TensorProto& tensor) const {
  ONNXKIT_ASSIGN(ExternalSlice s, slice(tensor));
  return s.bytes();
}

Result<ExternalSlice> ExternalDataStore::slice(const onnx::TensorProto& tensor) const {
  ONNXKIT_ASSIGN(ExternalLocation loc, parse_external_location(tensor));
  auto mapped = file(loc.location);
  if (!mapped.ok()) return mapped.error().in(describe_tensor(tensor));
  uint64_t size = mapped.value()->size();
  if (loc.offset > size)
    return make_error("{}: external data offset {} is past the end of '{}' ({} bytes)", describe_tensor(tensor), loc.offset,
                      loc.location, size);
  uint64_t length = loc.length.value_or(size - loc.offset);
  if (length > size - loc.offset)
    return make_error("{}: external data '{}' is too short: needs {} bytes at offset {}, file has {}", describe_tensor(tensor),
                      loc.location, length, loc.offset, size);
  ONNXKIT_ASSIGN(uint64_t count, element_count(tensor));
  if (tensor.data_type() == onnx::TensorProto::STRING)
    return make_error("{}: string tensors cannot be stored externally", describe_tensor(tensor));
  uint64_t expected = data_byte_size(tensor.data_type(), count);
  if (has_fixed_size(tensor.data_type()) && length != expected)
    return make_error("{}: external data has {} bytes but {} elements of {} need {}", describe_tensor(tensor), length, count,
                      data_type_name(tensor.data_type()), expected);
  return ExternalSlice{mapped.value(), loc.location, loc.offset, length};
}

uint64_t ExternalDataStore::mapped_bytes() const {
  std::lock_guard lock(mutex_);
  uint64_t total = 0;
  for (const auto& [_, f] : files_) total += f->size();
  return total;
}

}  // namespace onnxkit::io
