#include "support/test_support.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <onnx/defs/parser.h>

#include <algorithm>
#include <cstdlib>
#include <random>

#include "runtime/kernels/nn/blocked.h"

namespace onnxkit::testing {

namespace fs = std::filesystem;

onnx::ModelProto parse_model_text(const std::string& text) {
  onnx::ModelProto model;
  auto status = onnx::OnnxParser::Parse(model, text.c_str());
  EXPECT_TRUE(status.IsOK()) << status.ErrorMessage() << "\n" << text;
  return model;
}

std::unique_ptr<ir::Model> model_from_text(const std::string& text) {
  auto model = ir::import_model(parse_model_text(text));
  EXPECT_TRUE(model.ok()) << (model.ok() ? "" : model.error().message());
  return model.ok() ? std::move(model).value() : nullptr;
}

std::vector<std::string> op_types(const ir::Graph& graph) {
  std::vector<std::string> ops;
  for (const ir::Node& n : graph.nodes()) ops.push_back(n.op_type());
  return ops;
}

runtime::Tensor random_tensor(runtime::Shape shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  runtime::Tensor t(runtime::DataType::float32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<float>()[i] = uniform(rng);
  return t;
}

runtime::Tensor to_blocked(const runtime::Tensor& x) {
  using runtime::nn::channel_block;
  const int64_t n = x.dim(0), c = x.dim(1), hw = x.dim(2) * x.dim(3);
  runtime::Tensor y(runtime::DataType::float32, runtime::nn::blocked_shape(n, c, x.dim(2), x.dim(3)));
  float* out = y.mutable_data<float>();
  std::fill_n(out, y.numel(), 0.0f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p)
        out[((i * y.dim(1) + ch / channel_block()) * hw + p) * channel_block() + ch % channel_block()] =
            x.data<float>()[(i * c + ch) * hw + p];
  return y;
}

std::vector<fs::path> backend_test_models() {
  std::vector<fs::path> models;
  for (const auto& entry : fs::recursive_directory_iterator(ONNX_TESTDATA))
    if (entry.path().filename() == "model.onnx") models.push_back(entry.path());
  std::sort(models.begin(), models.end());
  return models;
}

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "onnxkit-test-XXXXXX").string();
  char* made = ::mkdtemp(pattern.data());
  if (made == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = made;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string proto_diff(const google::protobuf::Message& expected, const google::protobuf::Message& actual) {
  google::protobuf::util::MessageDifferencer differ;
  std::string report;
  differ.ReportDifferencesToString(&report);
  differ.Compare(expected, actual);
  return report;
}

std::string declared_dims(const ir::Model& model, const std::string& name) {
  const ir::Value* v = model.graph().find_value(name);
  if (v == nullptr || !v->has_type() || !v->type().tensor_type().has_shape()) return "none";
  std::string out;
  for (const auto& d : v->type().tensor_type().shape().dim())
    out += (out.empty() ? "" : ",") + (d.has_dim_value()   ? std::to_string(d.dim_value())
                                       : d.has_dim_param() ? d.dim_param()
                                                           : "?");
  return out;
}

}  // namespace onnxkit::testing
