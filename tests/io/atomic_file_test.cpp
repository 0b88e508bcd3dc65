// Atomic writes replace only regular files, and work for any file name the
// filesystem accepts, however long.

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "io/atomic_file.h"
#include "io/model_file.h"
#include "support/test_support.h"

namespace onnxkit {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

constexpr const char* kModel = R"(
<ir_version: 8, opset_import: ["" : 15]>
g (float[4] x) => (float[4] y) <float[4] w = {1.0, 2.0, 3.0, 4.0}> {
  y = Mul(x, w)
}
)";

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

size_t file_count(const fs::path& dir) { return std::distance(fs::directory_iterator(dir), fs::directory_iterator()); }

TEST(AtomicFile, LongestNamesWork) {
  // The temporary file's name is longer than the target's: a 250-character
  // model name (and its 255-character side file) must not overflow NAME_MAX.
  TempDir dir;
  std::string name(250 - 5, 'm');
  name += ".onnx";
  onnx::ModelProto proto = testing::parse_model_text(kModel);
  io::SaveOptions external{io::ExternalDataPolicy::all, 0, ""};
  for (int round = 0; round < 2; ++round) {  // the second replaces the first
    auto saved = io::save_model(proto, nullptr, dir / name, external);
    ASSERT_TRUE(saved.ok()) << saved.error().message();
    EXPECT_EQ(saved->external_file, name + ".data");
    auto loaded = io::load_model(dir / name);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message();
    EXPECT_EQ(file_count(dir.path()), 2u) << "no temporary file may be left behind";
  }
  ASSERT_TRUE(io::write_file_atomically(dir / name, "plain").ok());
}

TEST(AtomicFile, FifosAndDevicesAreNotReplaced) {
  TempDir dir;
  std::vector<fs::path> targets = {dir / "fifo.onnx"};
  ASSERT_EQ(::mkfifo(targets[0].c_str(), 0600), 0) << std::strerror(errno);
  // A device node of our own, never /dev/null itself: a regression here would
  // replace it. Root can make one (the numbers of /dev/null).
  if (::mknod((dir / "null.onnx").c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0) targets.push_back(dir / "null.onnx");
  onnx::ModelProto proto = testing::parse_model_text(kModel);
  for (const fs::path& target : targets) {
    SCOPED_TRACE(target.string());
    struct stat before {};
    ASSERT_EQ(::lstat(target.c_str(), &before), 0);
    auto saved = io::save_model(proto, nullptr, target, {io::ExternalDataPolicy::all, 0, ""});
    ASSERT_FALSE(saved.ok());
    EXPECT_CONTAINS(saved.error().message(), target.string());
    EXPECT_CONTAINS(saved.error().message(), "not a regular file");
    Status written = io::write_file_atomically(target, "bytes");
    ASSERT_FALSE(written.ok());
    struct stat after {};
    ASSERT_EQ(::lstat(target.c_str(), &after), 0);
    EXPECT_EQ(before.st_ino, after.st_ino) << "the node must be left as it was";
    EXPECT_EQ(before.st_mode, after.st_mode);
  }
  EXPECT_EQ(file_count(dir.path()), targets.size()) << "no temporary file may be left behind";
}

TEST(AtomicFile, SymlinkTargetIsRefused) {
  // Replacing the link would silently cut it; writing through it would put
  // the model in one folder and its side file next to the link in another.
  TempDir dir;
  std::ofstream(dir / "real.onnx") << "old";
  fs::create_symlink("real.onnx", dir / "link.onnx");
  auto saved = io::save_model(testing::parse_model_text(kModel), nullptr, dir / "link.onnx");
  ASSERT_FALSE(saved.ok());
  EXPECT_CONTAINS(saved.error().message(), "link.onnx");
  EXPECT_CONTAINS(saved.error().message(), "symbolic link");
  EXPECT_TRUE(fs::is_symlink(dir / "link.onnx"));
  std::ifstream in(dir / "real.onnx");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "old");
}

}  // namespace
}  // namespace onnxkit
