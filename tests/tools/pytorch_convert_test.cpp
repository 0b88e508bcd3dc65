// The PyTorch generator's parts that need no Python: its coverage of the
// runtime's operators, the names it gives, its refusals, and the
// safetensors files it writes (checked byte by byte against the format's
// definition). The generated code itself is run by torch in
// tests/cli/test_pytorch.py and test_pytorch_nodes.py.

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "io/safetensors.h"
#include "runtime/kernel.h"
#include "support/test_support.h"
#include "tools/pytorch/emitter.h"
#include "tools/pytorch_convert.h"

namespace onnxkit {
namespace {

namespace fs = std::filesystem;
using testing::model_from_text;

TEST(PytorchCoverage, EveryDefaultDomainKernelHasAnEmitterOrAReason) {
  const auto& emitters = tools::pytorch::emitter_table();
  const auto& reasons = tools::pytorch::unconvertible_ops();
  for (const runtime::KernelDef& def : runtime::KernelRegistry::builtin().all()) {
    if (!def.domain.empty() && def.domain != "ai.onnx") continue;
    EXPECT_TRUE(emitters.count(def.op_type) != 0 || reasons.count(def.op_type) != 0)
        << def.op_type << " runs in onnxkit but has neither a PyTorch emitter nor a reason in unconvertible_ops()";
    EXPECT_FALSE(emitters.count(def.op_type) != 0 && reasons.count(def.op_type) != 0) << def.op_type << " is in both tables";
  }
}

TEST(PytorchGenerate, ModulesAreNamedAfterTheirNodesAndLocalsAfterTheirTensors) {
  auto model = model_from_text(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 3, 8, 8] x, float[4, 3, 3, 3] w, float[4] b) => (float[1, 4, 8, 8] y) {
  t = Conv <pads = [1, 1, 1, 1]> (x, w, b)
  y = Relu (t)
})");
  ASSERT_NE(model, nullptr);
  // w and b become weights (graph inputs no more).
  for (const char* name : {"w", "b"}) {
    ir::Value* v = model->graph().find_value(name);
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::FLOAT);
    std::vector<int64_t> dims = *v->static_shape();
    for (int64_t d : dims) t.add_dims(d);
    for (int64_t i = 0, n = std::string(name) == "w" ? 108 : 4; i < n; ++i) t.add_float_data(0.5f);
    model->graph().set_initializer(v, t);
  }
  model->graph().remove_input(2);
  model->graph().remove_input(1);
  auto nodes = model->graph().nodes().begin();
  nodes->set_name("/layer1/layer1.0/conv1/Conv");
  nodes->output(0)->owner()->rename_value(nodes->output(0), "/layer1/layer1.0/conv1/Conv_output_0").ok();
  auto source = tools::generate_pytorch_source(model->graph(), {"Net", "net.onnx", {}});
  ASSERT_TRUE(source.ok()) << source.error().message();
  const std::string& py = source->model_py;
  EXPECT_NE(py.find("class Net(nn.Module):"), std::string::npos);
  EXPECT_NE(py.find("self.layer1_0_conv1 = nn.Conv2d(3, 4, 3, padding=1)"), std::string::npos) << py;
  EXPECT_NE(py.find("layer1_0_conv1_conv = self.layer1_0_conv1(x)  # /layer1/layer1.0/conv1/Conv"), std::string::npos) << py;
  EXPECT_NE(py.find("return y"), std::string::npos);
  ASSERT_EQ(source->tensors.size(), 2u);
  EXPECT_EQ(source->tensors[0].key, "layer1_0_conv1.weight");
  EXPECT_EQ(source->tensors[1].key, "layer1_0_conv1.bias");
  EXPECT_EQ(source->modules, 1u);
}

TEST(PytorchGenerate, ShapeArithmeticStaysPython) {
  auto model = model_from_text(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[N, 4, 2] x) => (float[N, 8] y) {
  s = Shape (x)
  i = Constant <value = int64 {0}> ()
  n = Gather (s, i)
  zero = Constant <value = int64[1] {0}> ()
  u = Unsqueeze (n, zero)
  m = Constant <value = int64[1] {-1}> ()
  shape = Concat <axis = 0> (u, m)
  y = Reshape (x, shape)
})");
  ASSERT_NE(model, nullptr);
  auto source = tools::generate_pytorch_source(model->graph(), {"Net", "", {}});
  ASSERT_TRUE(source.ok()) << source.error().message();
  EXPECT_NE(source->model_py.find("n = x.shape[0]"), std::string::npos) << source->model_py;
  EXPECT_NE(source->model_py.find("y = x.reshape(n, -1)"), std::string::npos) << source->model_py;
}

TEST(PytorchGenerate, RefusalNamesTheOpTheNodeAndWhy) {
  auto model = model_from_text(R"(<ir_version: 8, opset_import: ["" : 17, "com.example" : 1]>
g (float[2] x) => (float[2] y) {
  y = com.example.Fancy (x)
})");
  ASSERT_NE(model, nullptr);
  model->graph().nodes().begin()->set_name("fancy_one");
  auto source = tools::generate_pytorch_source(model->graph(), {"Net", "", {}});
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.error().message(),
            "cannot convert Fancy node 'fancy_one': operators of domain 'com.example' have no PyTorch form (only the "
            "default ONNX domain converts)");
}

// --- safetensors ------------------------------------------------------------------

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(Safetensors, WritesTheFormatByteByByte) {
  fs::path dir = fs::temp_directory_path() / "onnxkit_safetensors_test";
  fs::create_directories(dir);
  int32_t i32[2] = {1, -2};
  uint8_t flags[3] = {1, 0, 1};
  std::vector<io::SafetensorsEntry> entries(2);
  entries[0] = {"a.weight", onnx::TensorProto::INT32, {2}, std::as_bytes(std::span(i32)), nullptr};
  entries[1] = {"mask", onnx::TensorProto::BOOL, {1, 3}, std::as_bytes(std::span(flags)), nullptr};
  ASSERT_TRUE(io::write_safetensors(dir / "t.safetensors", entries).ok());
  std::string bytes = read_all(dir / "t.safetensors");
  // The header, as the format defines it, padded with spaces to 8 bytes.
  std::string header =
      R"({"a.weight":{"dtype":"I32","shape":[2],"data_offsets":[0,8]},"mask":{"dtype":"BOOL","shape":[1,3],"data_offsets":[8,11]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string expected(8, '\0');
  for (int i = 0; i < 8; ++i) expected[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  expected += header;
  expected += std::string("\x01\x00\x00\x00\xfe\xff\xff\xff", 8) + std::string("\x01\x00\x01", 3);
  EXPECT_EQ(bytes, expected);

  auto back = io::read_safetensors(dir / "t.safetensors");
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[1].name, "mask");
  EXPECT_EQ((*back)[1].shape, (std::vector<int64_t>{1, 3}));
  fs::remove_all(dir);
}

TEST(Safetensors, RefusesFilesThatDoNotHoldTogether) {
  fs::path dir = fs::temp_directory_path() / "onnxkit_safetensors_bad";
  fs::create_directories(dir);
  auto write = [&](const std::string& header, const std::string& data) {
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
    std::ofstream(dir / "bad.safetensors", std::ios::binary) << bytes << header << data;
    return io::read_safetensors(dir / "bad.safetensors");
  };
  EXPECT_FALSE(write(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "1234").ok());      // past the end
  EXPECT_FALSE(write(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", "12345678").ok());  // a gap
  EXPECT_FALSE(write(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", "12345678").ok());  // shape vs size
  EXPECT_FALSE(write(R"({"a":{"dtype":"Q9","shape":[2],"data_offsets":[0,8]}})", "12345678").ok());   // dtype
  EXPECT_FALSE(write(R"(not json)", "").ok());
  EXPECT_TRUE(write(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "12345678").ok());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace onnxkit
