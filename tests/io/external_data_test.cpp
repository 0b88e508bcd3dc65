// External data is read only from inside the model's folder, even while its
// symbolic links change, and only from regular files: a FIFO or a device named
// as external data is refused at once.

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <future>
#include <thread>

#include "io/external_data.h"
#include "io/model_file.h"
#include "runtime/session.h"
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

void write_bytes(const fs::path& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::string float_bytes(std::initializer_list<float> values) {
  std::string out(values.size() * 4, '\0');
  std::memcpy(out.data(), std::data(values), out.size());
  return out;
}

// kModel with w's 16 bytes in the side file `location`.
void write_model_with_external_w(const fs::path& path, const std::string& location) {
  onnx::ModelProto proto = testing::parse_model_text(kModel);
  onnx::TensorProto* w = proto.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* entry = w->add_external_data();
  entry->set_key("location");
  entry->set_value(location);
  write_bytes(path, proto.SerializeAsString());
}

std::string w_bytes(const io::LoadedModel& loaded) {
  auto bytes = loaded.external_data->bytes(loaded.proto.graph().initializer(0));
  if (!bytes.ok()) return "error: " + bytes.error().message();
  return {reinterpret_cast<const char*>(bytes->data()), bytes->size()};
}

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

// Runs `open` on another thread; if that takes longer than a few seconds it
// is blocked on `fifo`, which the test then opens for writing to set it free:
// a regression fails the test instead of hanging it.
template <class Open> auto unless_blocked(const fs::path& fifo, bool& blocked, Open open) {
  auto opening = std::async(std::launch::async, open);
  blocked = opening.wait_for(std::chrono::seconds(5)) == std::future_status::timeout;
  if (blocked) {
    int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (writer >= 0) ::close(writer);
  }
  return opening.get();
}

TEST(ExternalData, SymlinkSwappedDuringLoadsNeverLeaksAFileOutsideTheFolder) {
  // A second thread points w.bin alternately at a file inside the folder and
  // at a secret outside it (by absolute path and by '..'), each swap one
  // atomic rename. Checking the link and then opening the path again (the old
  // way) read the secret in some of these loads; opening beneath the folder's
  // descriptor never does.
  TempDir dir;
  fs::create_directory(dir / "model");
  fs::create_directory(dir / "out");
  const std::string inside = float_bytes({1, 2, 3, 4});
  const std::string secret = float_bytes({666, 667, 668, 669});
  write_bytes(dir / "model/inside.bin", inside);
  write_bytes(dir / "secret.bin", secret);
  fs::create_symlink("inside.bin", dir / "model/w.bin");
  write_model_with_external_w(dir / "model/m.onnx", "w.bin");

  std::atomic<bool> stop = false;
  std::thread swapper([&] {
    const fs::path targets[] = {"inside.bin", dir / "secret.bin", "inside.bin", "../secret.bin"};
    fs::path next = dir / "model/next.bin";
    for (size_t i = 0; !stop; ++i) {
      ::unlink(next.c_str());
      if (::symlink(targets[i % 4].c_str(), next.c_str()) != 0) continue;
      ::rename(next.c_str(), (dir / "model/w.bin").c_str());
    }
  });

  // 400 loads that get through, or as many as 2 seconds allow (opened beneath
  // the folder, most loads land on an outside target and are refused: the
  // swaps seem to restart the kernel's lookups in favour of the quick ones).
  int loaded = 0, refused = 0, leaked = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (loaded < 400 && std::chrono::steady_clock::now() < deadline) {
    auto model = io::load_model(dir / "model/m.onnx");
    if (!model.ok()) {
      ++refused;
      continue;
    }
    ++loaded;
    if (w_bytes(*model) == secret) ++leaked;
    io::SaveOptions external{io::ExternalDataPolicy::all, 0, ""};
    auto saved = io::save_model(model->proto, model->external_data.get(), dir / "out/m.onnx", external);
    if (saved.ok() && read_bytes(dir / "out" / saved->external_file).find(secret) != std::string::npos) ++leaked;
  }
  stop = true;
  swapper.join();
  EXPECT_EQ(leaked, 0) << "the secret outside the folder was read (" << loaded << " loads, " << refused << " refused)";
  EXPECT_GT(loaded, 0) << "the link pointed inside for half of the time: some loads must succeed";
}

TEST(ExternalData, FifoIsRefusedWithoutBlocking) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "w.bin").c_str(), 0600), 0) << std::strerror(errno);
  write_model_with_external_w(dir / "m.onnx", "w.bin");
  bool blocked = false;
  auto loaded = unless_blocked(dir / "w.bin", blocked, [&] { return io::load_model(dir / "m.onnx"); });
  EXPECT_FALSE(blocked) << "opening the FIFO waited for a writer";
  ASSERT_FALSE(loaded.ok());
  EXPECT_CONTAINS(loaded.error().message(), "FIFO");
  EXPECT_CONTAINS(loaded.error().message(), "w.bin");
  EXPECT_CONTAINS(loaded.error().message(), "m.onnx");
}

TEST(ExternalData, DevicesAreRefused) {
  TempDir dir;
  fs::create_symlink("/dev/zero", dir / "zero.bin");
  write_model_with_external_w(dir / "m.onnx", "zero.bin");
  auto through_link = io::load_model(dir / "m.onnx");
  ASSERT_FALSE(through_link.ok());
  EXPECT_CONTAINS(through_link.error().message(), "leads out of the model's folder");

  // A device node inside the folder (root can make one; /dev/zero's numbers).
  if (::mknod((dir / "dev.bin").c_str(), S_IFCHR | 0600, makedev(1, 5)) != 0)
    GTEST_SKIP() << "cannot make a device node here: " << std::strerror(errno);
  write_model_with_external_w(dir / "m.onnx", "dev.bin");
  auto device = io::load_model(dir / "m.onnx");
  ASSERT_FALSE(device.ok());
  EXPECT_CONTAINS(device.error().message(), "character device");
  EXPECT_CONTAINS(device.error().message(), "dev.bin");
}

TEST(ExternalData, RelativeSymlinksThatStayInsideAreFollowed) {
  // Users keep weights under a subfolder and link to them; a relative link
  // that resolves inside the folder is safe and keeps working.
  TempDir dir;
  fs::create_directories(dir / "model/weights");
  write_bytes(dir / "model/weights/real.bin", float_bytes({1, 2, 3, 4}));
  fs::create_symlink("weights/real.bin", dir / "model/w.bin");
  fs::create_symlink("weights", dir / "model/linked");
  for (const char* location : {"w.bin", "linked/real.bin"}) {
    write_model_with_external_w(dir / "model/m.onnx", location);
    auto loaded = io::load_model(dir / "model/m.onnx");
    ASSERT_TRUE(loaded.ok()) << location << ": " << loaded.error().message();
    EXPECT_EQ(w_bytes(*loaded), float_bytes({1, 2, 3, 4})) << location;
  }
}

TEST(ExternalData, AbsoluteSymlinksAreRefusedEvenInsideTheFolder) {
  // The kernel resolves beneath the folder: an absolute link is refused
  // without looking where it points (see open_external_file).
  TempDir dir;
  write_bytes(dir / "real.bin", float_bytes({1, 2, 3, 4}));
  fs::create_symlink(dir / "real.bin", dir / "w.bin");
  write_model_with_external_w(dir / "m.onnx", "w.bin");
  auto loaded = io::load_model(dir / "m.onnx");
  ASSERT_FALSE(loaded.ok());
  EXPECT_CONTAINS(loaded.error().message(), "leads out of the model's folder");
}

// Lowers the soft limit on open descriptors for its lifetime.
class DescriptorLimit {
 public:
  explicit DescriptorLimit(rlim_t soft) {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit lowered = saved_;
    lowered.rlim_cur = std::min(soft, saved_.rlim_max);
    ok_ = ::setrlimit(RLIMIT_NOFILE, &lowered) == 0;
  }
  ~DescriptorLimit() { ::setrlimit(RLIMIT_NOFILE, &saved_); }
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  bool ok_ = false;
};

TEST(ExternalData, MoreSideFilesThanOpenDescriptorsLoadRunAndSave) {
  // Exporters can write one side file per tensor. 1,100 of them under
  // `ulimit -n 1024`: one descriptor kept per mapped file ran out (EMFILE).
  constexpr int kFiles = 1100;
  TempDir dir;
  onnx::ModelProto proto = testing::parse_model_text(R"(
<ir_version: 8, opset_import: ["" : 15]>
g () => (float[1100] y) {}
)");
  onnx::NodeProto* concat = proto.mutable_graph()->add_node();
  concat->set_op_type("Concat");
  concat->add_output("y");
  auto* axis = concat->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  for (int i = 0; i < kFiles; ++i) {
    const std::string name = "w" + std::to_string(i);
    write_bytes(dir / (name + ".bin"), float_bytes({static_cast<float>(i)}));
    onnx::TensorProto* w = proto.mutable_graph()->add_initializer();
    w->set_name(name);
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(1);
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* entry = w->add_external_data();
    entry->set_key("location");
    entry->set_value(name + ".bin");
    concat->add_input(name);
  }
  write_bytes(dir / "m.onnx", proto.SerializeAsString());

  DescriptorLimit limit(1024);
  ASSERT_TRUE(limit.ok()) << std::strerror(errno);
  auto loaded = ir::load_model(dir / "m.onnx");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  std::shared_ptr<const ir::Model> model(std::move(loaded).value());
  auto session = runtime::Session::create(model);
  ASSERT_TRUE(session.ok()) << session.error().message();
  auto y = (*session)->run({});
  ASSERT_TRUE(y.ok()) << y.error().message();
  auto values = (*y)[0].tensor().values<float>();
  ASSERT_EQ(values.size(), static_cast<size_t>(kFiles));
  for (int i = 0; i < kFiles; ++i) ASSERT_EQ(values[static_cast<size_t>(i)], static_cast<float>(i)) << i;

  // Saved into one side file: each tensor is copied from its own file.
  fs::create_directory(dir / "out");
  auto saved = ir::save_model(*model, dir / "out/m.onnx", {io::ExternalDataPolicy::all, 0, ""});
  ASSERT_TRUE(saved.ok()) << saved.error().message();
  const std::string data = read_bytes(dir / "out" / saved->external_file);
  EXPECT_NE(data.find(float_bytes({1099})), std::string::npos);
}

TEST(ExternalData, ASideFileReplacedAfterLoadingIsSavedAsLoaded) {
  // Copies reopen the file (no descriptor is kept): they must copy the data
  // that was mapped, not whatever now has its name.
  TempDir dir;
  write_bytes(dir / "w.bin", float_bytes({1, 2, 3, 4}));
  write_model_with_external_w(dir / "m.onnx", "w.bin");
  auto loaded = io::load_model(dir / "m.onnx");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  write_bytes(dir / "other.bin", float_bytes({5, 6, 7, 8}));
  fs::rename(dir / "other.bin", dir / "w.bin");
  fs::create_directory(dir / "out");
  auto saved =
      io::save_model(loaded->proto, loaded->external_data.get(), dir / "out/m.onnx", {io::ExternalDataPolicy::all, 0, ""});
  ASSERT_TRUE(saved.ok()) << saved.error().message();
  EXPECT_EQ(read_bytes(dir / "out" / saved->external_file), float_bytes({1, 2, 3, 4}));
  auto reopened = loaded->external_data->reopen(*loaded->external_data->slice(loaded->proto.graph().initializer(0)));
  ASSERT_FALSE(reopened.ok());
  EXPECT_CONTAINS(reopened.error().message(), "'w.bin' was replaced");
}

// The fallback for kernels without openat2, called directly: this kernel
// has openat2, so loads never reach it.
class WalkBeneath : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "model/sub");
    write_bytes(dir_ / "model/sub/real.bin", "inside");
    write_bytes(dir_ / "secret.bin", "secret");
    fd_ = io::UniqueFd(::open((dir_ / "model").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(fd_);
  }
  std::string open_error(const std::string& location) {
    auto fd = io::open_external_file_by_walk(fd_.get(), location);
    EXPECT_FALSE(fd.ok()) << location << " should be refused";
    return fd.ok() ? "" : fd.error().message();
  }
  TempDir dir_;
  io::UniqueFd fd_;
};

TEST_F(WalkBeneath, OpensPlainPaths) {
  for (const char* location : {"sub/real.bin", "./sub/real.bin", "sub/x/../real.bin"}) {
    auto fd = io::open_external_file_by_walk(fd_.get(), location);
    ASSERT_TRUE(fd.ok()) << location << ": " << fd.error().message();
    char buffer[16] = {};
    EXPECT_EQ(::read(fd->get(), buffer, sizeof buffer), 6) << location;
    EXPECT_EQ(std::string(buffer), "inside");
  }
}

TEST_F(WalkBeneath, RefusesEverySymlink) {
  fs::create_symlink("sub/real.bin", dir_ / "model/inside_link.bin");
  fs::create_symlink("sub", dir_ / "model/sublink");
  fs::create_symlink("../secret.bin", dir_ / "model/out_link.bin");
  fs::create_symlink(dir_ / "secret.bin", dir_ / "model/abs_link.bin");
  for (const char* location : {"inside_link.bin", "out_link.bin", "abs_link.bin"}) {
    std::string error = open_error(location);
    EXPECT_CONTAINS(error, std::string("symbolic link '") + location + "'");
    EXPECT_CONTAINS(error, "openat2");
  }
  EXPECT_CONTAINS(open_error("sublink/real.bin"), "symbolic link 'sublink'");
  EXPECT_CONTAINS(open_error("../secret.bin"), "leads out of the model's folder");
  EXPECT_CONTAINS(open_error("sub/../../secret.bin"), "leads out of the model's folder");
  EXPECT_CONTAINS(open_error("missing.bin"), "not found");
  EXPECT_CONTAINS(open_error("sub/real.bin/x"), "Not a directory");
}

TEST_F(WalkBeneath, OpensAFifoWithoutBlocking) {
  // The caller refuses it by its type; opening it must not wait for a writer.
  ASSERT_EQ(::mkfifo((dir_ / "model/fifo").c_str(), 0600), 0);
  bool blocked = false;
  auto fd = unless_blocked(dir_ / "model/fifo", blocked, [&] { return io::open_external_file_by_walk(fd_.get(), "fifo"); });
  EXPECT_FALSE(blocked) << "opening the FIFO waited for a writer";
  ASSERT_TRUE(fd.ok()) << fd.error().message();
  auto size = io::regular_file_size(*fd, "fifo");
  ASSERT_FALSE(size.ok());
  EXPECT_CONTAINS(size.error().message(), "is a FIFO, not a regular file");
}

}  // namespace
}  // namespace onnxkit
