// Element-wise kernels on cases the backend data leaves out: broadcasting
// layouts, 16-bit floats, integer edge cases, bad inputs.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/kernels/fast_math.h"
#include "support/node_runner.h"

namespace onnxkit {
namespace {

using runtime::DataType;
using runtime::Float16;
using runtime::Tensor;
using testing::attr;
using testing::expect_tensor_near;
using testing::run_node;
using testing::try_run_node;

TEST(Elementwise, AddBroadcastsEveryLayout) {
  // [2,3] + [3], [2,1] + [1,3], scalar and [2,3] either way: computed by hand.
  auto a = Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto row = Tensor::from<float>({3}, {10, 20, 30});
  auto out = run_node({.op_type = "Add", .inputs = {{"a", a}, {"b", row}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 3}, {11, 22, 33, 14, 25, 36}));

  auto col = Tensor::from<float>({2, 1}, {100, 200});
  auto line = Tensor::from<float>({1, 3}, {1, 2, 3});
  out = run_node({.op_type = "Add", .inputs = {{"a", col}, {"b", line}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 3}, {101, 102, 103, 201, 202, 203}));

  auto scalar = Tensor::from<float>({}, {0.5f});
  out = run_node({.op_type = "Sub", .inputs = {{"a", scalar}, {"b", a}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 3}, {-0.5f, -1.5f, -2.5f, -3.5f, -4.5f, -5.5f}));
  out = run_node({.op_type = "Sub", .inputs = {{"a", a}, {"b", scalar}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 3}, {0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f}));
  auto one = Tensor::from<float>({1, 1}, {2.0f});  // a single value of rank 2
  out = run_node({.op_type = "Div", .inputs = {{"a", a}, {"b", one}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 3}, {0.5f, 1, 1.5f, 2, 2.5f, 3}));
}

TEST(Elementwise, LargeBroadcastSplitsAcrossThreadsIdentically) {
  // [64,32,64] * [32,1]: big enough to run on several threads.
  std::vector<float> x(64 * 32 * 64), s(32);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 97) - 48;
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<float>(i) * 0.5f;
  std::vector<float> expected(x.size());
  for (size_t i = 0; i < x.size(); ++i) expected[i] = x[i] * s[(i / 64) % 32];
  for (int threads : {1, 2}) {
    auto out = run_node({.op_type = "Mul",
                         .inputs = {{"x", Tensor::from<float>({64, 32, 64}, x)}, {"s", Tensor::from<float>({32, 1}, s)}},
                         .threads = threads});
    expect_tensor_near(out[0].tensor(), Tensor::from<float>({64, 32, 64}, expected), 0, 0);
  }
}

TEST(Elementwise, IncompatibleShapesAreAnErrorNamingTheNode) {
  auto out =
      try_run_node({.op_type = "Add",
                    .inputs = {{"a", Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6})}, {"b", Tensor::from<float>({2}, {1, 2})}}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("under_test"), std::string::npos) << out.error().message();
  EXPECT_NE(out.error().message().find("cannot broadcast"), std::string::npos) << out.error().message();
}

TEST(Elementwise, IntegerDivisionByZeroIsAnErrorNotACrash) {
  auto out = try_run_node(
      {.op_type = "Div", .inputs = {{"a", Tensor::from<int32_t>({2}, {1, 2})}, {"b", Tensor::from<int32_t>({2}, {1, 0})}}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("division by zero"), std::string::npos);
}

TEST(Elementwise, TheMostNegativeIntegerOverMinusOneWrapsInsteadOfTrapping) {
  // The quotient 2^63 does not fit: x86 raised SIGFPE. numpy gives the most
  // negative value back (np.int64(-2**63) // -1); the remainder is exactly 0.
  constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
  constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min();
  auto a64 = Tensor::from<int64_t>({3}, {kMin64, kMin64, 7});
  auto b64 = Tensor::from<int64_t>({3}, {-1, 1, -1});
  expect_tensor_near(run_node({.op_type = "Div", .inputs = {{"a", a64}, {"b", b64}}})[0].tensor(),
                     Tensor::from<int64_t>({3}, {kMin64, kMin64, -7}));
  expect_tensor_near(run_node({.op_type = "Mod", .inputs = {{"a", a64}, {"b", b64}}})[0].tensor(),
                     Tensor::from<int64_t>({3}, {0, 0, 0}));
  expect_tensor_near(
      run_node({.op_type = "Mod", .inputs = {{"a", a64}, {"b", b64}}, .attributes = {attr("fmod", 1)}})[0].tensor(),
      Tensor::from<int64_t>({3}, {0, 0, 0}));
  auto a32 = Tensor::from<int32_t>({1}, {kMin32});
  auto b32 = Tensor::from<int32_t>({1}, {-1});
  expect_tensor_near(run_node({.op_type = "Div", .inputs = {{"a", a32}, {"b", b32}}})[0].tensor(),
                     Tensor::from<int32_t>({1}, {kMin32}));
  expect_tensor_near(run_node({.op_type = "Mod", .inputs = {{"a", a32}, {"b", b32}}})[0].tensor(),
                     Tensor::from<int32_t>({1}, {0}));
}

TEST(Elementwise, Float16ComputesThroughFloat) {
  // 1.5 -> 0x3E00, 2.0 -> 0x4000; their sum 3.5 -> 0x4300 (IEEE half).
  Tensor a(DataType::float16, {2}), b(DataType::float16, {2});
  a.mutable_data<Float16>()[0] = Float16(1.5f);
  a.mutable_data<Float16>()[1] = Float16(-2.0f);
  b.mutable_data<Float16>()[0] = Float16(2.0f);
  b.mutable_data<Float16>()[1] = Float16(0.25f);
  EXPECT_EQ(a.data<Float16>()[0].bits, 0x3E00);
  auto out = run_node({.op_type = "Add", .inputs = {{"a", a}, {"b", b}}});
  const Tensor& y = out[0].tensor();
  ASSERT_EQ(y.dtype(), DataType::float16);
  EXPECT_EQ(y.data<Float16>()[0].bits, 0x4300);
  EXPECT_FLOAT_EQ(static_cast<float>(y.data<Float16>()[1]), -1.75f);
}

TEST(Elementwise, Float16ConversionRoundsLikeIeee) {
  EXPECT_EQ(Float16(1.0f).bits, 0x3C00);
  EXPECT_EQ(Float16(65504.0f).bits, 0x7BFF);       // largest half
  EXPECT_EQ(Float16(65520.0f).bits, 0x7C00);       // rounds to infinity
  EXPECT_EQ(Float16(5.9604645e-8f).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(Float16(1e-8f).bits, 0x0000);
  EXPECT_EQ(Float16(0.1f).bits, 0x2E66);
  EXPECT_EQ(Float16(-2.0f).bits, 0xC000);
  EXPECT_TRUE(std::isnan(static_cast<float>(Float16(std::nanf("")))));
  EXPECT_FLOAT_EQ(static_cast<float>(Float16(0.1f)), 0.0999755859375f);
}

TEST(Elementwise, ModFollowsTheDivisorSignUnlessFmod) {
  auto a = Tensor::from<int32_t>({4}, {-7, 7, -7, 7});
  auto b = Tensor::from<int32_t>({4}, {3, -3, -3, 3});
  auto out = run_node({.op_type = "Mod", .inputs = {{"a", a}, {"b", b}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int32_t>({4}, {2, -2, -1, 1}));
  out = run_node({.op_type = "Mod", .inputs = {{"a", a}, {"b", b}}, .attributes = {attr("fmod", 1)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int32_t>({4}, {-1, 1, -1, 1}));
}

TEST(Elementwise, ClipVersionsTakeBoundsFromAttributesThenInputs) {
  auto x = Tensor::from<float>({4}, {-5, -1, 1, 5});
  auto old =
      run_node({.op_type = "Clip", .opset = 6, .inputs = {{"x", x}}, .attributes = {attr("min", -2.0f), attr("max", 2.0f)}});
  expect_tensor_near(old[0].tensor(), Tensor::from<float>({4}, {-2, -1, 1, 2}));
  auto only_max =
      run_node({.op_type = "Clip", .opset = 13, .inputs = {{"x", x}, {"", {}}, {"hi", Tensor::from<float>({}, {0.5f})}}});
  expect_tensor_near(only_max[0].tensor(), Tensor::from<float>({4}, {-5, -1, 0.5f, 0.5f}));
}

TEST(Elementwise, SigmoidIsStableForLargeInputs) {
  auto out = run_node({.op_type = "Sigmoid", .inputs = {{"x", Tensor::from<float>({3}, {-1000, 0, 1000})}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({3}, {0, 0.5f, 1}));
}

TEST(Elementwise, FloatSigmoidIsWithinAFewUlpsOfTheDefinition) {
  std::vector<float> xs;
  for (int i = -9000; i <= 9000; ++i) xs.push_back(static_cast<float>(i) * 1e-2f);
  const float inf = std::numeric_limits<float>::infinity();
  for (float special : {1e-30f, -1e-30f, 0.0f, -0.0f, inf, -inf, std::nanf("")}) xs.push_back(special);
  auto out = run_node({.op_type = "Sigmoid", .inputs = {{"x", Tensor::from<float>({static_cast<int64_t>(xs.size())}, xs)}}});
  const float* y = out[0].tensor().data<float>();
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double expected = 1.0 / (1.0 + std::exp(-static_cast<double>(xs[i])));
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(y[i]));
    } else if (expected < 1e-37) {  // below float's normal range: 0 will do
      EXPECT_LT(y[i], 1e-37f) << xs[i];
    } else {
      worst = std::max(worst, std::abs(y[i] - expected) / expected);
    }
  }
  EXPECT_LT(worst, 4e-7);
}

TEST(Elementwise, PowKeepsIntegerPowersExact) {
  auto out =
      run_node({.op_type = "Pow",
                .inputs = {{"a", Tensor::from<int64_t>({3}, {3, -2, 10})}, {"b", Tensor::from<int64_t>({3}, {13, 3, 15})}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int64_t>({3}, {1594323, -8, 1000000000000000}));
}

TEST(Elementwise, SumMeanMaxMinFoldBroadcastInputs) {
  auto a = Tensor::from<float>({2, 1}, {1, 2});
  auto b = Tensor::from<float>({3}, {10, 20, 30});
  auto c = Tensor::from<float>({}, {100});
  auto sum = run_node({.op_type = "Sum", .inputs = {{"a", a}, {"b", b}, {"c", c}}});
  expect_tensor_near(sum[0].tensor(), Tensor::from<float>({2, 3}, {111, 121, 131, 112, 122, 132}));
  auto mean = run_node({.op_type = "Mean", .inputs = {{"a", a}, {"b", b}}});
  expect_tensor_near(mean[0].tensor(), Tensor::from<float>({2, 3}, {5.5f, 10.5f, 15.5f, 6, 11, 16}));
  auto max = run_node({.op_type = "Max", .inputs = {{"a", a}, {"c", Tensor::from<float>({}, {1.5f})}}});
  expect_tensor_near(max[0].tensor(), Tensor::from<float>({2, 1}, {1.5f, 2}));
}

TEST(Elementwise, WhereBroadcastsAllThreeInputs) {
  auto cond = Tensor::from<bool>({2, 1}, {true, false});
  auto out =
      run_node({.op_type = "Where",
                .inputs = {{"c", cond}, {"x", Tensor::from<int64_t>({3}, {1, 2, 3})}, {"y", Tensor::from<int64_t>({}, {-1})}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int64_t>({2, 3}, {1, 2, 3, -1, -1, -1}));
}

// x[i] - y[j] (or times, with `multiply`) over x's shape, y broadcast to
// it, by index arithmetic alone.
std::vector<float> naive_broadcast(const std::vector<int64_t>& shape, const std::vector<float>& x,
                                   const std::vector<int64_t>& part_shape, const std::vector<float>& y, bool part_first,
                                   bool multiply) {
  std::vector<float> out(x.size());
  const size_t lead = shape.size() - part_shape.size();
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t rest = static_cast<int64_t>(i), j = 0, stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      const int64_t at = rest % shape[d];
      rest /= shape[d];
      if (d < lead) continue;
      const int64_t dim = part_shape[d - lead];
      j += (dim == 1 ? 0 : at) * stride;
      stride *= dim;
    }
    const float yj = y[static_cast<size_t>(j)];
    out[i] = multiply ? x[i] * yj : part_first ? yj - x[i] : x[i] - yj;
  }
  return out;
}

TEST(Elementwise, PerChannelOperandsOfEveryLayoutKeepTheirOrder) {
  // Squeeze-excitation gates over plain [N,C,H,W] and blocked [N,C/16,H,W,16]
  // activations, rows repeated in the middle, broadcast dims apart (the
  // general walk), and sizes that split across threads. Mul runs rows of
  // whole 8-float vectors on a path of its own (binary.cpp's multiply_rows).
  struct Case {
    std::vector<int64_t> whole, part;
  };
  const std::vector<Case> cases{{{2, 5, 3, 4}, {2, 5, 1, 1}},
                                {{1, 6, 7, 7}, {1, 6, 1, 1}},
                                {{1, 3, 7, 7, 16}, {1, 3, 1, 1, 16}},
                                {{1, 5, 9, 9, 8}, {1, 5, 1, 1, 8}},
                                {{1, 40, 28, 28, 8}, {1, 40, 1, 1, 8}},
                                {{5, 6, 4}, {5, 1, 4}},
                                {{4, 2, 5, 3}, {4, 1, 1, 3}},
                                {{2, 4, 3, 5}, {2, 1, 3, 1}},
                                {{3, 1, 4, 2}, {3, 1, 1, 2}},
                                {{6, 7}, {7}},
                                {{1, 32, 32, 32, 16}, {1, 32, 1, 1, 16}},
                                {{1, 96, 56, 56}, {96, 1, 1}},
                                {{2, 3, 5, 24}, {2, 3, 1, 24}},
                                {{3, 2, 2, 7, 8}, {3, 2, 1, 1, 8}}};
  for (const Case& c : cases) {
    std::vector<float> x, y;
    for (int64_t i = 0, n = runtime::shape_size(c.whole); i < n; ++i) x.push_back(static_cast<float>(i % 101) / 8);
    for (int64_t i = 0, n = runtime::shape_size(c.part); i < n; ++i) y.push_back(static_cast<float>(i % 13) - 6);
    const Tensor whole = Tensor::from<float>(c.whole, x), part = Tensor::from<float>(c.part, y);
    for (bool multiply : {false, true})
      for (bool part_first : {false, true})
        for (int threads : {1, 2}) {
          SCOPED_TRACE(::testing::Message() << (multiply ? "Mul " : "Sub ") << runtime::shape_to_string(c.whole) << " and "
                                            << runtime::shape_to_string(c.part) << (part_first ? ", part first" : "") << ", "
                                            << threads << " threads");
          auto out = run_node({.op_type = multiply ? "Mul" : "Sub",
                               .inputs = {{"a", part_first ? part : whole}, {"b", part_first ? whole : part}},
                               .threads = threads});
          expect_tensor_near(out[0].tensor(),
                             Tensor::from<float>(c.whole, naive_broadcast(c.whole, x, c.part, y, part_first, multiply)), 0, 0);
        }
  }
}

TEST(Elementwise, SubKeepsOperandOrderWhenEitherSideIsTheRowBroadcast) {
  auto row = Tensor::from<float>({1, 3}, {1, 2, 3});
  auto rows = Tensor::from<float>({2, 3}, {10, 20, 30, 40, 50, 60});
  auto out = run_node({.op_type = "Sub", .inputs = {{"a", row}, {"b", rows}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 3}, {-9, -18, -27, -39, -48, -57}));
  out = run_node({.op_type = "Sub", .inputs = {{"a", rows}, {"b", row}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 3}, {9, 18, 27, 39, 48, 57}));
}

TEST(Elementwise, FloatErfIsWithinAFewUlpsOfTheCLibraryEverywhere) {
  // A dense sweep through every piece of the approximation, both signs,
  // tiny values (relative accuracy near 0) and the special values.
  std::vector<float> xs;
  for (int i = -70000; i <= 70000; ++i) xs.push_back(static_cast<float>(i) * 1e-4f);
  for (float tiny : {1e-30f, 1e-10f, 3e-5f, -2e-7f}) xs.push_back(tiny);
  const float inf = std::numeric_limits<float>::infinity();
  for (float special : {0.0f, -0.0f, inf, -inf, std::nanf("")}) xs.push_back(special);
  auto x = Tensor::from<float>({static_cast<int64_t>(xs.size())}, xs);
  auto out = run_node({.op_type = "Erf", .inputs = {{"x", x}}});
  const float* y = out[0].tensor().data<float>();
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double expected = std::erf(static_cast<double>(xs[i]));
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(y[i]));
      continue;
    }
    EXPECT_EQ(std::signbit(y[i]), std::signbit(expected)) << xs[i];
    if (expected == 0) {
      EXPECT_EQ(y[i], 0.0f);
      continue;
    }
    worst = std::max(worst, std::abs(y[i] - expected) / std::abs(expected));
  }
  EXPECT_LT(worst, 4e-7);  // float's ulp is 6e-8 to 1.2e-7 relative
}

TEST(Elementwise, FastExpIsWithinAFewUlpsOfTheCLibrary) {
  // What Softmax uses on x - max.
  using runtime::fast_exp;
  std::vector<float> xs;
  for (int i = -87000; i <= 88000; ++i) xs.push_back(static_cast<float>(i) * 1e-3f);
  std::vector<float> ys;
  for (float x : xs) ys.push_back(fast_exp(x));
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double expected = std::exp(static_cast<double>(xs[i]));
    worst = std::max(worst, std::abs(ys[i] - expected) / expected);
  }
  EXPECT_LT(worst, 4e-7);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(fast_exp(-inf), 0.0f);  // a masked Softmax entry is exactly 0
  EXPECT_EQ(fast_exp(-101.0f), 0.0f);
  EXPECT_NEAR(fast_exp(-1.0f), std::exp(-1.0f), 1e-7);
  EXPECT_TRUE(std::isnan(fast_exp(std::nanf(""))));
}

TEST(Elementwise, FastTanhIsWithinAFewUlpsOfTheCLibrary) {
  // What the recurrent cells use; both sides of the switch at 0.625, the
  // tiny values where 1 - 2 / (e^2x + 1) would cancel, and saturation.
  std::vector<float> xs = {0.0f, -0.0f, 1e-30f, -1e-20f, 1e-4f, 0.6249f, 0.625f, 0.6251f, 9.0f, -40.0f, 1e30f};
  for (int i = -20000; i <= 20000; ++i) xs.push_back(static_cast<float>(i) * 1e-3f);
  std::vector<float> ys(xs.size());
  runtime::tanh_floats(xs.data(), ys.data(), static_cast<int64_t>(xs.size()));
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double expected = std::tanh(static_cast<double>(xs[i]));
    EXPECT_EQ(std::signbit(ys[i]), std::signbit(expected)) << xs[i];
    if (expected == 0) {
      EXPECT_EQ(ys[i], 0.0f);
      continue;
    }
    worst = std::max(worst, std::abs(ys[i] - expected) / std::abs(expected));
  }
  EXPECT_LT(worst, 4e-7);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(runtime::fast_tanh(inf), 1.0f);
  EXPECT_EQ(runtime::fast_tanh(-inf), -1.0f);
  EXPECT_TRUE(std::isnan(runtime::fast_tanh(std::nanf(""))));
}

// Ops and forms newer than the backend data (opset 18-20), against values
// computed by hand or with Python's math module (mish: x * tanh(log1p(exp(x))),
// gelu: 0.5 x (1 + erf(x / sqrt 2)) and its tanh form).
TEST(Elementwise, BitwiseOpsOfOpset18) {
  auto band = run_node({.op_type = "BitwiseAnd",
                        .opset = 18,
                        .inputs = {{"a", Tensor::from<int32_t>({2}, {12, -1})}, {"b", Tensor::from<int32_t>({2}, {10, 7})}}});
  expect_tensor_near(band[0].tensor(), Tensor::from<int32_t>({2}, {8, 7}));
  auto bor = run_node(
      {.op_type = "BitwiseOr",
       .opset = 18,
       .inputs = {{"a", Tensor::from<uint8_t>({2}, {0b1100, 0xF0})}, {"b", Tensor::from<uint8_t>({2}, {0b1010, 0x0F})}}});
  expect_tensor_near(bor[0].tensor(), Tensor::from<uint8_t>({2}, {0b1110, 0xFF}));
  auto bxor = run_node({.op_type = "BitwiseXor",
                        .opset = 18,
                        .inputs = {{"a", Tensor::from<int64_t>({2, 1}, {5, 6})}, {"b", Tensor::from<int64_t>({2}, {3, 0})}}});
  expect_tensor_near(bxor[0].tensor(), Tensor::from<int64_t>({2, 2}, {6, 5, 5, 6}));
  auto bnot = run_node({.op_type = "BitwiseNot", .opset = 18, .inputs = {{"x", Tensor::from<uint8_t>({3}, {0, 255, 170})}}});
  expect_tensor_near(bnot[0].tensor(), Tensor::from<uint8_t>({3}, {255, 0, 85}));
  auto bnot16 = run_node({.op_type = "BitwiseNot", .opset = 18, .inputs = {{"x", Tensor::from<int16_t>({3}, {0, -1, 5})}}});
  expect_tensor_near(bnot16[0].tensor(), Tensor::from<int16_t>({3}, {-1, 0, -6}));
  auto on_floats = try_run_node({.op_type = "BitwiseAnd",
                                 .opset = 18,
                                 .inputs = {{"a", Tensor::from<float>({1}, {1})}, {"b", Tensor::from<float>({1}, {1})}}});
  EXPECT_FALSE(on_floats.ok());
}

TEST(Elementwise, MishOfOpset18) {
  auto out = run_node({.op_type = "Mish", .opset = 18, .inputs = {{"x", Tensor::from<float>({6}, {-3, -1, 0, 1, 2.5f, 20})}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({6}, {-0.14564746f, -0.30340146f, 0, 0.86509839f, 2.4713923f, 20}),
                     1e-6);
}

TEST(Elementwise, GeluOfOpset20InBothForms) {
  auto x = Tensor::from<float>({5}, {-2, -0.5f, 0, 1, 3});
  auto exact = run_node({.op_type = "Gelu", .opset = 20, .inputs = {{"x", x}}});
  expect_tensor_near(exact[0].tensor(), Tensor::from<float>({5}, {-0.045500264f, -0.15426877f, 0, 0.84134475f, 2.9959503f}),
                     1e-6);
  auto tanh_form = run_node({.op_type = "Gelu", .opset = 20, .inputs = {{"x", x}}, .attributes = {attr("approximate", "tanh")}});
  expect_tensor_near(tanh_form[0].tensor(), Tensor::from<float>({5}, {-0.045402306f, -0.15428599f, 0, 0.84119199f, 2.9963626f}),
                     1e-6);
}

// A tensor against one value, on either side (the loops of their own for
// a scalar operand), against the comparisons worked here.
TEST(Elementwise, ComparisonsWithOneValueOnEitherSide) {
  std::vector<float> x;
  std::vector<uint8_t> equal, greater;
  for (int i = 0; i < 300; ++i) {
    x.push_back(static_cast<float>(i % 7) - 3.0f);
    equal.push_back(i % 7 == 5);   // x == 2
    greater.push_back(i % 7 < 5);  // 2 > x
  }
  auto bools = [](const std::vector<uint8_t>& v) {
    std::vector<bool> b(v.begin(), v.end());
    return Tensor::from<bool>({3, 100}, b);
  };
  for (const runtime::Shape& scalar_shape : {runtime::Shape{}, runtime::Shape{1, 1}}) {
    const Tensor two = Tensor::from<float>(scalar_shape, {2.0f});
    const Tensor xt = Tensor::from<float>({3, 100}, x);
    auto eq = run_node({.op_type = "Equal", .inputs = {{"x", xt}, {"c", two}}});
    expect_tensor_near(eq[0].tensor(), bools(equal));
    auto gt = run_node({.op_type = "Greater", .inputs = {{"c", two}, {"x", xt}}});
    expect_tensor_near(gt[0].tensor(), bools(greater));
  }
}

TEST(Elementwise, EqualComparesStringsFromOpset19) {
  auto out = run_node(
      {.op_type = "Equal",
       .opset = 19,
       .inputs = {{"a", Tensor::from<std::string>({3}, {"cat", "dog", ""})}, {"b", Tensor::from<std::string>({1}, {"dog"})}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<bool>({3}, {false, true, false}));
}

// Swish's alpha and SwiGLU's (opsets 24 and 28) by hand: with x = ln(3)/2
// and alpha 2, sigmoid(alpha * x) = 3/4.
TEST(Elementwise, SwishAndSwiGluAlpha) {
  const float x = static_cast<float>(std::log(3.0) / 2);
  auto out = run_node({.op_type = "Swish",
                       .opset = 24,
                       .inputs = {{"x", Tensor::from<float>({2}, {x, 0})}},
                       .attributes = {attr("alpha", 2.0f)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2}, {0.75f * x, 0}));
  out = run_node({.op_type = "SwiGLU",
                  .opset = 28,
                  .inputs = {{"a", Tensor::from<float>({2}, {x, x})}, {"b", Tensor::from<float>({2}, {2, -1})}},
                  .attributes = {attr("alpha", 2.0f)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2}, {1.5f * x, -0.75f * x}));
  auto bad = try_run_node({.op_type = "SwiGLU",
                           .opset = 28,
                           .inputs = {{"a", Tensor::from<float>({2}, {x, x})}, {"b", Tensor::from<float>({1}, {2})}}});
  ASSERT_FALSE(bad.ok());
}

// The float32 activations (vectorized or computed in float) against their
// formulas in double, over a sweep long enough for the vector loops and
// their tails, with the ends of the float range and a NaN (which goes
// through, or not, as the formula says).
TEST(Elementwise, FloatActivationsMatchDoubleFormulas) {
  std::vector<float> xs;
  for (int i = 0; i <= 1000; ++i) xs.push_back(-12.0f + 0.024f * static_cast<float>(i));
  for (float v : {100.0f, -100.0f, 1e-30f, -1e-30f, 0.0f, -0.0f, 3.0f, -3.0f, 1e30f, -1e30f}) xs.push_back(v);
  xs.push_back(std::numeric_limits<float>::quiet_NaN());
  const auto n = static_cast<int64_t>(xs.size());
  struct Case {
    const char* op;
    int64_t opset;
    std::vector<onnx::AttributeProto> attributes;
    double (*f)(double);
  };
  const std::vector<Case> cases = {
      {"HardSwish", 14, {}, [](double v) { return v * std::clamp(v / 6 + 0.5, 0.0, 1.0); }},
      {"HardSigmoid",
       6,
       {attr("alpha", 0.25f), attr("beta", 0.375f)},
       [](double v) { return std::clamp(0.25 * v + 0.375, 0.0, 1.0); }},
      {"Swish", 24, {attr("alpha", 1.5f)}, [](double v) { return v / (1 + std::exp(-1.5 * v)); }},
      {"LeakyRelu", 6, {attr("alpha", 0.125f)}, [](double v) { return v >= 0 ? v : 0.125 * v; }},
      {"Elu", 6, {attr("alpha", 0.5f)}, [](double v) { return v >= 0 ? v : 0.5 * std::expm1(v); }},
      {"Celu", 12, {attr("alpha", 2.0f)}, [](double v) { return std::max(0.0, v) + std::min(0.0, 2 * std::expm1(v / 2)); }},
      {"ThresholdedRelu", 10, {attr("alpha", 0.5f)}, [](double v) { return v > 0.5 ? v : 0.0; }},
      {"Shrink",
       9,
       {attr("bias", 0.25f), attr("lambd", 0.75f)},
       [](double v) { return v < -0.75 ? v + 0.25 : (v > 0.75 ? v - 0.25 : 0.0); }},
      {"Gelu", 20, {}, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }},
      {"Gelu",
       20,
       {attr("approximate", "tanh")},
       [](double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); }},
  };
  for (const Case& c : cases) {
    std::vector<float> expected;
    for (float v : xs) expected.push_back(static_cast<float>(c.f(v)));
    auto out = run_node(
        {.op_type = c.op, .opset = c.opset, .inputs = {{"x", Tensor::from<float>({n}, xs)}}, .attributes = c.attributes});
    SCOPED_TRACE(c.op);
    expect_tensor_near(out[0].tensor(), Tensor::from<float>({n}, expected), 1e-6, 1e-5);
  }
}

}  // namespace
}  // namespace onnxkit
