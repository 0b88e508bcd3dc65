#pragma once
// Writes a file so that readers see either the old file or the complete new
// one: data goes to a temporary file in the same folder, which commit()
// renames over the target. Destroyed without commit(), it leaves nothing.
//
// Only regular files are replaced. A FIFO, a device or a socket at the target
// is refused (as root, writing to /dev/null would otherwise replace it), and
// so is a symbolic link: replacing the link would cut it silently, and
// writing through it would put a model in the link's target folder while its
// side file went next to the link, where readers of the link would not find
// it. Either way the user should name the file meant.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "util/result.h"

namespace onnxkit::io {

// Succeeds when `target` is absent or a regular file; else an error naming it.
Status check_replaceable(const std::filesystem::path& target);

// check_replaceable, and the folder `target` goes in exists and may be
// written: commands ask before long work, so a typo in the output path costs
// nothing.
Status check_writable(const std::filesystem::path& target);
// The same for an output folder: `dir` is a folder that may be written, or
// it can be made in the nearest folder above it that exists.
Status check_writable_folder(const std::filesystem::path& dir);

// The start of the name of every temporary file AtomicFile makes for
// `file_name`: ".NAME.tmp-", then six random characters. NAME is shortened
// (keeping whole UTF-8 characters) where the whole would exceed NAME_MAX, so
// any name the file system accepts can be written; the random part keeps
// temporaries apart. Recognisable, so that leftovers of a killed run can be
// told from the user's files.
std::string temporary_name_prefix(const std::string& file_name);

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

  // Flushes and closes the file but leaves it under its temporary name, for
  // a file that another must reference before it is renamed (save_model's
  // side file, see replace_pair.h). The destructor still removes it unless
  // keep() is called once the reference is in place.
  Status close();
  void keep() { temp_.clear(); }

  const std::filesystem::path& target() const { return target_; }
  const std::filesystem::path& temporary() const { return temp_; }

 private:
  AtomicFile(std::filesystem::path target, std::filesystem::path temp, int fd)
      : target_(std::move(target)), temp_(std::move(temp)), fd_(fd) {}
  Status flush();
  Status write_through(const char* data, size_t size);

  std::filesystem::path target_;
  std::filesystem::path temp_;  // empty once renamed or kept
  int fd_ = -1;                 // -1 once closed
  std::string buffer_;          // small writes gather here
  uint64_t written_ = 0;
};

// Writes `bytes` to `path` atomically.
Status write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

}  // namespace onnxkit::io
