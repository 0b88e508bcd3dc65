// A model over 2 GiB (protobuf's limit for one message) with its weights in
// external data: loads, reports, saves and reloads identical. The side file
// is sparse, so the test costs seconds, not gigabytes of writes up front.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>

#include "io/model_file.h"
#include "ir/model.h"
#include "support/test_support.h"
#include "tools/info.h"

namespace onnxkit {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kElements = 200'000'000;  // 800 MB of float32 per tensor
constexpr uint64_t kTensorBytes = kElements * 4;
constexpr int kTensors = 3;

void write_at(int fd, uint64_t offset, const std::string& bytes) {
  ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset)), static_cast<ssize_t>(bytes.size()));
}

TEST(LargeModel, OverTwoGibibytesLoadsReportsAndSavesIdentically) {
  testing::TempDir dir;
  int fd = ::open((dir / "weights.bin").c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, kTensors * kTensorBytes), 0);
  onnx::ModelProto proto;
  proto.set_ir_version(8);
  proto.add_opset_import()->set_version(15);
  auto* graph = proto.mutable_graph();
  graph->set_name("large");
  auto* sum = graph->add_node();
  sum->set_op_type("Sum");
  sum->add_output("y");
  for (int i = 0; i < kTensors; ++i) {
    std::string name = "w" + std::to_string(i);
    // Distinct markers at both ends of every tensor, so a misplaced copy shows.
    write_at(fd, i * kTensorBytes, "head" + name);
    write_at(fd, (i + 1) * kTensorBytes - 8, "tail" + name + "!");
    onnx::TensorProto* t = graph->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(kElements);
    io::set_external_location(*t, "weights.bin", i * kTensorBytes, kTensorBytes);
    sum->add_input(name);
  }
  ::close(fd);
  auto* y = graph->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  y->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(kElements);
  {
    std::string bytes = proto.SerializeAsString();
    FILE* f = std::fopen((dir / "large.onnx").c_str(), "wb");
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }

  auto model = ir::load_model(dir / "large.onnx");
  ASSERT_TRUE(model.ok()) << model.error().message();
  auto report = tools::model_info(**model, {});
  ASSERT_TRUE(report.ok()) << report.error().message();
  const nlohmann::json& info = *report;
  EXPECT_EQ(info["initializers"]["parameters"].get<uint64_t>(), kTensors * kElements);
  EXPECT_EQ(info["initializers"]["bytes"].get<uint64_t>(), kTensors * kTensorBytes);
  EXPECT_EQ(info["file"]["external_data_bytes"].get<uint64_t>(), kTensors * kTensorBytes);

  auto inline_save = ir::save_model(**model, dir / "inline.onnx", {io::ExternalDataPolicy::none, 0, ""});
  ASSERT_FALSE(inline_save.ok());
  EXPECT_NE(inline_save.error().message().find("2 GiB"), std::string::npos) << inline_save.error().message();
  EXPECT_FALSE(fs::exists(dir / "inline.onnx"));

  fs::create_directory(dir / "copy");
  auto saved = ir::save_model(**model, dir / "copy/large.onnx", {io::ExternalDataPolicy::all, 1024, ""});
  ASSERT_TRUE(saved.ok()) << saved.error().message();
  EXPECT_GE(saved->external_bytes, kTensors * kTensorBytes);

  auto reloaded = ir::load_model(dir / "copy/large.onnx");
  ASSERT_TRUE(reloaded.ok()) << reloaded.error().message();
  const ir::Graph& a = (*model)->graph();
  const ir::Graph& b = (*reloaded)->graph();
  ASSERT_EQ(b.initializers().size(), static_cast<size_t>(kTensors));
  for (int i = 0; i < kTensors; ++i) {
    const onnx::TensorProto& original = *a.initializers()[i]->initializer();
    const onnx::TensorProto& copy = *b.initializers()[i]->initializer();
    EXPECT_EQ(copy.name(), original.name());
    EXPECT_EQ(copy.dims(0), kElements);
    auto x = (*model)->external_data()->bytes(original);
    auto z = (*reloaded)->external_data()->bytes(copy);
    ASSERT_TRUE(x.ok() && z.ok());
    ASSERT_EQ(x->size(), z->size());
    EXPECT_EQ(std::memcmp(x->data(), z->data(), x->size()), 0) << "tensor " << i << " differs after saving";
  }
}

}  // namespace
}  // namespace onnxkit
