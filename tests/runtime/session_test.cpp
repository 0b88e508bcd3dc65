// Session: reusable and safe to run from several threads at once.

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <thread>

#include "ir/model.h"
#include "runtime/session.h"
#include "support/node_runner.h"

namespace onnxkit {
namespace {

using runtime::Tensor;

std::shared_ptr<const ir::Model> load(const std::string& name) {
  auto model = ir::load_model(std::string(TEST_MODELS_DIR) + "/" + name);
  EXPECT_TRUE(model.ok()) << (model.ok() ? "" : model.error().message());
  return model.ok() ? std::shared_ptr<const ir::Model>(std::move(model).value()) : nullptr;
}

// Noise around a brightness of its own: white noise alone averages out in
// the pooling, and every image would give the same output.
Tensor random_image(unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> unit(0, 1);
  const float brightness = 0.5f * static_cast<float>(seed);
  Tensor t(runtime::DataType::float32, {1, 3, 224, 224});
  for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<float>()[i] = brightness + 0.2f * unit(rng);
  return t;
}

TEST(Session, ConcurrentRunsGiveTheSerialResults) {
  auto model = load("mobilenet_v2_opset13.onnx");
  ASSERT_NE(model, nullptr);
  auto session = runtime::Session::create(model, {.threads = 2});
  ASSERT_TRUE(session.ok()) << session.error().message();
  const std::string input = (*session)->inputs()[0].name;
  constexpr int kThreads = 4;
  std::vector<Tensor> images, serial;
  for (int i = 0; i < kThreads; ++i) {
    images.push_back(random_image(static_cast<unsigned>(i)));
    auto out = (*session)->run({{input, images.back()}});
    ASSERT_TRUE(out.ok()) << out.error().message();
    serial.push_back((*out)[0].tensor());
  }
  std::vector<std::vector<Tensor>> concurrent(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int round = 0; round < 3; ++round) {
        auto out = (*session)->run({{input, images[static_cast<size_t>(i)]}});
        if (out.ok()) concurrent[static_cast<size_t>(i)].push_back((*out)[0].tensor());
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_EQ(concurrent[static_cast<size_t>(i)].size(), 3u);
    for (const Tensor& t : concurrent[static_cast<size_t>(i)])
      testing::expect_tensor_near(t, serial[static_cast<size_t>(i)], 1e-6, 1e-5);
  }
  // Different inputs really give different outputs (the comparison above can fail).
  double difference = 0;
  for (int64_t k = 0; k < serial[0].numel(); ++k)
    difference = std::max<double>(difference, std::abs(serial[0].data<float>()[k] - serial[1].data<float>()[k]));
  EXPECT_GT(difference, 1e-5);
}

TEST(Session, ReportsInputsAndOutputsAndRefusesUnknownOutputs) {
  auto model = load("resnet18_opset13.onnx");
  ASSERT_NE(model, nullptr);
  auto session = runtime::Session::create(model);
  ASSERT_TRUE(session.ok());
  ASSERT_EQ((*session)->inputs().size(), 1u);
  EXPECT_EQ((*session)->inputs()[0].name, "input");
  EXPECT_EQ((*session)->outputs()[0].name, "output");
  auto bad = runtime::Session::create(model, {.outputs = {"outptu"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("did you mean 'output'"), std::string::npos) << bad.error().message();
}

}  // namespace
}  // namespace onnxkit
