// Random ops. No implementation reproduces another's draws, so the truths
// here are the distributions themselves (moments and frequencies over 10^5
// draws, with bounds of about six standard errors, so a correct kernel fails
// less than once in 10^8 runs), the deterministic edge cases (p = 0 or 1, one
// possible class), and the seed contract.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support/node_runner.h"

namespace onnxkit {
namespace {

using runtime::DataType;
using runtime::Tensor;
using testing::attr;
using testing::expect_tensor_near;
using testing::make_node_session;
using testing::NodeSpec;
using testing::run_node;
using testing::try_run_node;

constexpr int64_t kDraws = 100000;

struct Moments {
  double mean = 0, stddev = 0, min = 0, max = 0;
};

Moments moments_of(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = t.dtype() == DataType::float64 ? t.data<double>()[i] : static_cast<double>(t.data<float>()[i]);
  Moments m{.min = v[0], .max = v[0]};
  for (double x : v) {
    m.mean += x;
    m.min = std::min(m.min, x);
    m.max = std::max(m.max, x);
  }
  m.mean /= static_cast<double>(v.size());
  for (double x : v) m.stddev += (x - m.mean) * (x - m.mean);
  m.stddev = std::sqrt(m.stddev / static_cast<double>(v.size()));
  return m;
}

TEST(Random, UniformHasTheRangeMeanAndSpreadAsked) {
  auto out = run_node(
      {.op_type = "RandomUniform",
       .attributes = {attr("shape", std::vector<int64_t>{kDraws}), attr("low", -2.0f), attr("high", 3.0f), attr("seed", 7.0f)}});
  const Tensor& y = out[0].tensor();
  ASSERT_EQ(y.dtype(), DataType::float32);
  ASSERT_EQ(y.shape(), runtime::Shape({kDraws}));
  Moments m = moments_of(y);
  EXPECT_GE(m.min, -2.0);
  EXPECT_LT(m.max, 3.0);
  // Uniform on [a, b): mean (a + b) / 2 = 0.5, deviation (b - a) / sqrt(12) = 1.4434.
  EXPECT_NEAR(m.mean, 0.5, 0.03);
  EXPECT_NEAR(m.stddev, 5 / std::sqrt(12.0), 0.02);
}

TEST(Random, NormalHasTheMeanSpreadAndShapeAsked) {
  auto out = run_node({.op_type = "RandomNormal",
                       .attributes = {attr("shape", std::vector<int64_t>{100, kDraws / 100}), attr("mean", 1.0f),
                                      attr("scale", 2.0f), attr("dtype", int64_t{11})}});
  const Tensor& y = out[0].tensor();
  ASSERT_EQ(y.dtype(), DataType::float64);
  Moments m = moments_of(y);
  EXPECT_NEAR(m.mean, 1.0, 0.04);
  EXPECT_NEAR(m.stddev, 2.0, 0.03);
  // A normal puts 68.27% of its mass within one deviation of the mean.
  int64_t within = 0;
  for (int64_t i = 0; i < y.numel(); ++i) within += std::abs(y.data<double>()[i] - 1.0) < 2.0;
  EXPECT_NEAR(static_cast<double>(within) / kDraws, 0.6827, 0.009);
}

TEST(Random, LikeFormsTakeShapeAndTypeFromTheInput) {
  Tensor x = Tensor::from<double>({2, 3}, {0, 0, 0, 0, 0, 0});
  auto normal = run_node({.op_type = "RandomNormalLike", .inputs = {{"x", x}}});
  EXPECT_EQ(normal[0].tensor().dtype(), DataType::float64);
  EXPECT_EQ(normal[0].tensor().shape(), runtime::Shape({2, 3}));
  auto uniform = run_node({.op_type = "RandomUniformLike",
                           .inputs = {{"x", x}},
                           .attributes = {attr("dtype", int64_t{1}), attr("low", 5.0f), attr("high", 6.0f)}});
  const Tensor& y = uniform[0].tensor();
  EXPECT_EQ(y.dtype(), DataType::float32);
  for (int64_t i = 0; i < y.numel(); ++i) {
    EXPECT_GE(y.data<float>()[i], 5.0f);
    EXPECT_LE(y.data<float>()[i], 6.0f);
  }
  // An integer input has no float type to lend.
  auto bad = try_run_node({.op_type = "RandomUniformLike", .inputs = {{"x", Tensor::from<int64_t>({1}, {0})}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("floating-point"), std::string::npos) << bad.error().message();
}

TEST(Random, ASeedRepeatsTheSequenceInEverySession) {
  NodeSpec seeded{.op_type = "RandomNormal", .attributes = {attr("shape", std::vector<int64_t>{8}), attr("seed", 3.0f)}};
  auto first = make_node_session(seeded);
  auto second = make_node_session(seeded);
  ASSERT_TRUE(first.ok() && second.ok());
  auto a1 = first->session->run({}), b1 = second->session->run({});
  auto a2 = first->session->run({}), b2 = second->session->run({});
  ASSERT_TRUE(a1.ok() && a2.ok() && b1.ok() && b2.ok());
  expect_tensor_near((*a1)[0].tensor(), (*b1)[0].tensor(), 0, 0);
  expect_tensor_near((*a2)[0].tensor(), (*b2)[0].tensor(), 0, 0);
  // Run 2 continues the stream rather than repeating run 1.
  EXPECT_NE((*a1)[0].tensor().data<float>()[0], (*a2)[0].tensor().data<float>()[0]);

  // Another seed, or none, gives another stream.
  NodeSpec other = seeded;
  other.attributes[1] = attr("seed", 4.0f);
  auto c = try_run_node(other);
  NodeSpec unseeded = seeded;
  unseeded.attributes.pop_back();
  auto d = try_run_node(unseeded), e = try_run_node(unseeded);
  ASSERT_TRUE(c.ok() && d.ok() && e.ok());
  EXPECT_NE((*c)[0].tensor().data<float>()[0], (*a1)[0].tensor().data<float>()[0]);
  EXPECT_NE((*d)[0].tensor().data<float>()[0], (*e)[0].tensor().data<float>()[0]);
}

TEST(Random, BernoulliDrawsOnesWithTheGivenProbability) {
  // p = 0 and p = 1 leave nothing to chance.
  auto edges = run_node({.op_type = "Bernoulli", .opset = 15, .inputs = {{"p", Tensor::from<float>({4}, {0, 1, 1, 0})}}});
  expect_tensor_near(edges[0].tensor(), Tensor::from<float>({4}, {0, 1, 1, 0}), 0, 0);
  auto as_bool = run_node({.op_type = "Bernoulli",
                           .opset = 15,
                           .inputs = {{"p", Tensor::from<double>({2}, {1, 0})}},
                           .attributes = {attr("dtype", int64_t{9})}});
  expect_tensor_near(as_bool[0].tensor(), Tensor::from<bool>({2}, {true, false}), 0, 0);

  std::vector<float> p(kDraws, 0.3f);
  auto out = run_node({.op_type = "Bernoulli",
                       .opset = 15,
                       .inputs = {{"p", Tensor::from<float>({kDraws}, p)}},
                       .attributes = {attr("seed", 1.0f), attr("dtype", int64_t{7})}});
  const Tensor& y = out[0].tensor();
  ASSERT_EQ(y.dtype(), DataType::int64);
  int64_t ones = 0;
  for (int64_t i = 0; i < kDraws; ++i) {
    ASSERT_TRUE(y.data<int64_t>()[i] == 0 || y.data<int64_t>()[i] == 1);
    ones += y.data<int64_t>()[i];
  }
  EXPECT_NEAR(static_cast<double>(ones) / kDraws, 0.3, 0.009);

  auto bad = try_run_node({.op_type = "Bernoulli", .opset = 15, .inputs = {{"p", Tensor::from<float>({1}, {1.5f})}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("outside [0, 1]"), std::string::npos) << bad.error().message();
}

TEST(Random, MultinomialFollowsTheSoftmaxOfItsRows) {
  const float kNegInf = -std::numeric_limits<float>::infinity();
  // Row 0: classes 0 and 1 with probabilities 0.2 and 0.8 (log-probabilities
  // shifted by 5, which softmax ignores). Row 1: only class 2 is possible.
  Tensor logits = Tensor::from<float>({2, 3}, {std::log(0.2f) + 5, std::log(0.8f) + 5, kNegInf,  //
                                               kNegInf, kNegInf, 0});
  auto out = run_node({.op_type = "Multinomial",
                       .inputs = {{"x", logits}},
                       .attributes = {attr("sample_size", kDraws), attr("dtype", int64_t{7})}});
  const Tensor& y = out[0].tensor();
  ASSERT_EQ(y.dtype(), DataType::int64);
  ASSERT_EQ(y.shape(), runtime::Shape({2, kDraws}));
  int64_t ones = 0;
  for (int64_t s = 0; s < kDraws; ++s) {
    const int64_t c = y.data<int64_t>()[s];
    ASSERT_TRUE(c == 0 || c == 1) << c;
    ones += c;
    ASSERT_EQ(y.data<int64_t>()[kDraws + s], 2);
  }
  EXPECT_NEAR(static_cast<double>(ones) / kDraws, 0.8, 0.008);

  auto int32 = run_node({.op_type = "Multinomial", .inputs = {{"x", logits}}});
  EXPECT_EQ(int32[0].tensor().dtype(), DataType::int32);
  EXPECT_EQ(int32[0].tensor().shape(), runtime::Shape({2, 1}));

  auto bad = try_run_node({.op_type = "Multinomial", .inputs = {{"x", Tensor::from<float>({3}, {0, 0, 0})}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("[batch, classes]"), std::string::npos) << bad.error().message();
}

}  // namespace
}  // namespace onnxkit
