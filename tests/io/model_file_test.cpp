// Loading and saving model files: external data in both directions, atomic
// writes, and a clear error for every kind of broken input.

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "io/model_file.h"
#include "io/tensor_proto.h"
#include "support/test_support.h"

namespace onnxkit {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

constexpr const char* kModel = R"(
<ir_version: 8, opset_import: ["" : 15]>
g (float[4] x) => (float[4] y) <float[4] w = {1.0, 2.0, 3.0, 4.0}, int64[1] k = {7}> {
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

// The model with w stored at `offset` of `file` (which the caller writes).
onnx::ModelProto with_external_w(const std::string& location, const std::string& offset, const std::string& length) {
  onnx::ModelProto proto = testing::parse_model_text(kModel);
  onnx::TensorProto* w = proto.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->clear_raw_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  for (auto [key, value] : {std::pair{"location", location}, {"offset", offset}, {"length", length}}) {
    if (value.empty()) continue;
    auto* entry = w->add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  }
  return proto;
}

void write_model(const fs::path& path, const onnx::ModelProto& proto) { write_bytes(path, proto.SerializeAsString()); }

std::string load_error(const fs::path& path) {
  auto loaded = io::load_model(path);
  EXPECT_FALSE(loaded.ok()) << path << " should not load";
  return loaded.ok() ? "" : loaded.error().message();
}

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

TEST(ModelFile, ReadsExternalDataThroughAMapping) {
  TempDir dir;
  write_bytes(dir / "w.bin", "padding!" + float_bytes({1, 2, 3, 4}));
  write_model(dir / "m.onnx", with_external_w("w.bin", "8", "16"));
  auto loaded = io::load_model(dir / "m.onnx");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  const auto& w = loaded->proto.graph().initializer(0);
  EXPECT_TRUE(w.raw_data().empty()) << "external bytes must not be copied into the proto";
  auto bytes = loaded->external_data->bytes(w);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size()), float_bytes({1, 2, 3, 4}));
}

TEST(ModelFile, SavesInlineTensorsToOneSideFileAndBack) {
  TempDir dir;
  write_model(dir / "m.onnx", testing::parse_model_text(kModel));
  auto loaded = io::load_model(dir / "m.onnx");
  ASSERT_TRUE(loaded.ok());

  io::SaveOptions external{io::ExternalDataPolicy::all, /*threshold=*/16, ""};
  auto saved = io::save_model(loaded->proto, loaded->external_data.get(), dir / "ext.onnx", external);
  ASSERT_TRUE(saved.ok()) << saved.error().message();
  EXPECT_EQ(saved->external_file, "ext.onnx.data");
  auto reloaded = io::load_model(dir / "ext.onnx");
  ASSERT_TRUE(reloaded.ok()) << reloaded.error().message();
  const auto& w = reloaded->proto.graph().initializer(0);
  const auto& k = reloaded->proto.graph().initializer(1);
  EXPECT_TRUE(io::is_external(w)) << "16 bytes reach the threshold";
  EXPECT_FALSE(io::is_external(k)) << "8 bytes stay inline";
  auto bytes = reloaded->external_data->bytes(w);
  ASSERT_TRUE(bytes.ok());
  // float_data in the source becomes little-endian bytes in the side file.
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size()), float_bytes({1, 2, 3, 4}));

  auto back =
      io::save_model(reloaded->proto, reloaded->external_data.get(), dir / "inline.onnx", {io::ExternalDataPolicy::none, 0, ""});
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_TRUE(back->external_file.empty());
  auto inlined = io::load_model(dir / "inline.onnx");
  ASSERT_TRUE(inlined.ok());
  EXPECT_FALSE(io::is_external(inlined->proto.graph().initializer(0)));
  EXPECT_EQ(inlined->proto.graph().initializer(0).raw_data(), float_bytes({1, 2, 3, 4}));
  EXPECT_EQ(inlined->proto.graph().initializer(0).external_data_size(), 0);
}

TEST(ModelFile, KeepPolicyRewritesExternalTensorsNextToTheNewModel) {
  TempDir dir;
  fs::create_directory(dir / "src");
  fs::create_directory(dir / "dst");
  write_bytes(dir / "src/w.bin", float_bytes({5, 6, 7, 8}));
  write_model(dir / "src/m.onnx", with_external_w("w.bin", "", ""));
  auto loaded = io::load_model(dir / "src/m.onnx");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  auto saved = io::save_model(loaded->proto, loaded->external_data.get(), dir / "dst/m.onnx");
  ASSERT_TRUE(saved.ok()) << saved.error().message();
  fs::remove_all(dir / "src");
  auto reloaded = io::load_model(dir / "dst/m.onnx");
  ASSERT_TRUE(reloaded.ok()) << reloaded.error().message();
  auto bytes = reloaded->external_data->bytes(reloaded->proto.graph().initializer(0));
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size()), float_bytes({5, 6, 7, 8}));
}

TEST(ModelFile, SavingInPlaceOverTheMappedSideFileWorks) {
  TempDir dir;
  write_model(dir / "m.onnx", testing::parse_model_text(kModel));
  io::SaveOptions external{io::ExternalDataPolicy::all, 0, "m.onnx.data"};
  {
    auto loaded = io::load_model(dir / "m.onnx");
    ASSERT_TRUE(loaded.ok());
    ASSERT_TRUE(io::save_model(loaded->proto, loaded->external_data.get(), dir / "m.onnx", external).ok());
  }
  auto loaded = io::load_model(dir / "m.onnx");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  auto again = io::save_model(loaded->proto, loaded->external_data.get(), dir / "m.onnx", external);
  ASSERT_TRUE(again.ok()) << again.error().message();
  auto reloaded = io::load_model(dir / "m.onnx");
  ASSERT_TRUE(reloaded.ok()) << reloaded.error().message();
  auto bytes = reloaded->external_data->bytes(reloaded->proto.graph().initializer(0));
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size()), float_bytes({1, 2, 3, 4}));
}

TEST(ModelFile, ParsesFromBytes) {
  std::string bytes = testing::parse_model_text(kModel).SerializeAsString();
  auto loaded = io::parse_model(std::as_bytes(std::span(bytes.data(), bytes.size())), ".", "mem");
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->proto.graph().node(0).op_type(), "Mul");
}

TEST(ModelFile, FailedSaveLeavesNoFileAndKeepsTheOldOne) {
  TempDir dir;
  write_bytes(dir / "out.onnx", "old contents");
  onnx::ModelProto proto = with_external_w("missing.bin", "", "");
  auto saved = io::save_model(proto, nullptr, dir / "out.onnx");
  ASSERT_FALSE(saved.ok());
  EXPECT_EQ(read_bytes(dir / "out.onnx"), "old contents");
  size_t files = std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator());
  EXPECT_EQ(files, 1u) << "no temporary file may be left behind";
  EXPECT_FALSE(io::save_model(proto, nullptr, dir / "no/such/dir/out.onnx").ok());
}

TEST(ModelFile, BrokenExternalDataIsRefusedWithTheTensorNamed) {
  TempDir dir;
  fs::create_directory(dir / "model");
  write_bytes(dir / "outside.bin", float_bytes({1, 2, 3, 4}));
  write_bytes(dir / "model/w.bin", float_bytes({1, 2, 3, 4}));
  fs::create_symlink(dir / "outside.bin", dir / "model/link.bin");
  struct Case {
    std::string location, offset, length, expected;
  };
  std::vector<Case> cases = {
      {"missing.bin", "", "", "not found"},
      {"w.bin", "8", "16", "too short"},
      {"w.bin", "64", "", "past the end"},
      {"w.bin", "-8", "", "not a non-negative integer"},
      {"w.bin", "0", "12", "need 16"},
      {(dir / "outside.bin").string(), "", "", "absolute path"},
      {"../outside.bin", "", "", "leads out of the model's folder"},
      {"sub/../../outside.bin", "", "", "leads out of the model's folder"},
      {"link.bin", "", "", "leads out of the model's folder"},
  };
  for (const auto& c : cases) {
    write_model(dir / "model/m.onnx", with_external_w(c.location, c.offset, c.length));
    std::string error = load_error(dir / "model/m.onnx");
    EXPECT_CONTAINS(error, c.expected);
    EXPECT_CONTAINS(error, "'w'");
    EXPECT_CONTAINS(error, "m.onnx");
  }
}

TEST(ModelFile, BrokenFilesGiveOneClearLine) {
  TempDir dir;
  std::string valid = testing::parse_model_text(kModel).SerializeAsString();
  write_bytes(dir / "empty.onnx", "");
  write_bytes(dir / "truncated.onnx", valid.substr(0, valid.size() / 2));
  write_bytes(dir / "random.onnx", std::string("\xff\xfe\x01\x02\x99garbage\x00\x17", 14));
  onnx::ModelProto no_graph;
  no_graph.set_ir_version(8);
  write_model(dir / "nograph.onnx", no_graph);
  fs::create_directory(dir / "folder.onnx");

  EXPECT_CONTAINS(load_error(dir / "empty.onnx"), "empty file");
  EXPECT_CONTAINS(load_error(dir / "truncated.onnx"), "truncated, corrupt");
  EXPECT_CONTAINS(load_error(dir / "random.onnx"), "not an ONNX model");
  EXPECT_CONTAINS(load_error(dir / "nograph.onnx"), "no graph");
  EXPECT_CONTAINS(load_error(dir / "folder.onnx"), "is a directory");
  EXPECT_CONTAINS(load_error(dir / "absent.onnx"), "No such file");
  for (const char* name : {"empty.onnx", "truncated.onnx", "random.onnx", "nograph.onnx", "folder.onnx"})
    EXPECT_CONTAINS(load_error(dir / name), (dir / name).string());
}

TEST(ModelFile, BadTensorStorageIsRefused) {
  TempDir dir;
  auto with = [&](auto&& mutate) {
    onnx::ModelProto proto = testing::parse_model_text(kModel);
    mutate(*proto.mutable_graph()->mutable_initializer(0));
    write_model(dir / "m.onnx", proto);
    return load_error(dir / "m.onnx");
  };
  EXPECT_CONTAINS(with([](onnx::TensorProto& w) { w.set_dims(0, -4); }), "negative");
  EXPECT_CONTAINS(with([](onnx::TensorProto& w) {
                    w.set_dims(0, int64_t{1} << 40);
                    w.add_dims(int64_t{1} << 40);
                  }),
                  "overflows");
  EXPECT_CONTAINS(with([](onnx::TensorProto& w) { w.add_float_data(5); }), "holds 5 values");
  EXPECT_CONTAINS(with([](onnx::TensorProto& w) {
                    w.clear_float_data();
                    w.set_raw_data("abc");
                  }),
                  "raw_data holds 3 bytes");
}

}  // namespace
}  // namespace onnxkit
