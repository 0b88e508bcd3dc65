// Tensor-family kernels on cases the backend data leaves out: opset 18+
// forms, views, strings, negative steps, bad inputs, the float8, float4 and
// 2- and 4-bit types (Cast, data movement, TensorProto packing).

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "runtime/tensor_proto.h"
#include "support/node_runner.h"

namespace onnxkit {
namespace {

using runtime::DataType;
using runtime::Tensor;
using testing::attr;
using testing::expect_tensor_near;
using testing::float8_tensor;
using testing::int4_tensor;
using testing::run_node;
using testing::try_run_node;

Tensor iota(runtime::Shape shape) {
  std::vector<float> v(static_cast<size_t>(runtime::shape_size(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return Tensor::from<float>(std::move(shape), v);
}

TEST(Tensor, CheckedShapeSizeRefusesNegativeAndOverflowingShapes) {
  using runtime::checked_shape_size;
  const int64_t big = int64_t{1} << 32;  // two make 2^64, which wraps to 0
  EXPECT_EQ(*checked_shape_size({}), 1);
  EXPECT_EQ(*checked_shape_size({0, 5}), 0);
  EXPECT_EQ(*checked_shape_size({1 << 20, 1 << 20}), runtime::kMaxElements);
  EXPECT_FALSE(checked_shape_size({1 << 20, 1 << 20, 2}).ok());
  EXPECT_FALSE(checked_shape_size({big, big}).ok());
  EXPECT_FALSE(checked_shape_size({std::numeric_limits<int64_t>::max()}).ok());
  EXPECT_FALSE(checked_shape_size({0, big, big}).ok());  // strides of the other dims would overflow
  auto negative = checked_shape_size({2, -5, 3});
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.error().message(), "shape [2,-5,3]: dim 1 is negative");
  EXPECT_THROW(Tensor(DataType::float32, {big, big}), runtime::ShapeError);
  EXPECT_THROW(Tensor(DataType::float32, {-5, 3}), runtime::ShapeError);
  EXPECT_THROW((void)Tensor(DataType::float32, {0}).reshaped({big, big, 0}), runtime::ShapeError);
}

TEST(Tensor, SplitNumOutputsMakesTheLastPartSmaller) {
  auto out = run_node(
      {.op_type = "Split", .opset = 18, .inputs = {{"x", iota({7})}}, .attributes = {attr("num_outputs", 3)}, .num_outputs = 3});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({3}, {0, 1, 2}));
  expect_tensor_near(out[1].tensor(), Tensor::from<float>({3}, {3, 4, 5}));
  expect_tensor_near(out[2].tensor(), Tensor::from<float>({1}, {6}));
}

TEST(Tensor, SplitSizesThatDoNotAddUpAreRefused) {
  auto out = try_run_node({.op_type = "Split",
                           .opset = 13,
                           .inputs = {{"x", iota({6})}, {"s", Tensor::from<int64_t>({2}, {2, 3})}},
                           .num_outputs = 2});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("do not add up"), std::string::npos) << out.error().message();
}

TEST(Tensor, ReshapeIsAViewAndInfersMinusOne) {
  auto x = iota({2, 3, 4});
  auto out = run_node({.op_type = "Reshape", .opset = 14, .inputs = {{"x", x}, {"s", Tensor::from<int64_t>({2}, {0, -1})}}});
  EXPECT_EQ(out[0].tensor().shape(), (runtime::Shape{2, 12}));
  EXPECT_TRUE(out[0].tensor().shares_buffer_with(x)) << "Reshape must not copy";
  auto bad = try_run_node({.op_type = "Reshape", .inputs = {{"x", x}, {"s", Tensor::from<int64_t>({2}, {5, -1})}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("cannot reshape"), std::string::npos);
}

TEST(Tensor, ReshapeAllowZeroKeepsAZeroDim) {
  auto out = run_node({.op_type = "Reshape",
                       .opset = 14,
                       .inputs = {{"x", iota({0, 3})}, {"s", Tensor::from<int64_t>({2}, {3, 0})}},
                       .attributes = {attr("allowzero", 1)}});
  EXPECT_EQ(out[0].tensor().shape(), (runtime::Shape{3, 0}));
}

TEST(Tensor, SliceWithNegativeStepReverses) {
  auto out = run_node({.op_type = "Slice",
                       .opset = 13,
                       .inputs = {{"x", iota({2, 5})},
                                  {"starts", Tensor::from<int64_t>({1}, {-1})},
                                  {"ends", Tensor::from<int64_t>({1}, {INT64_MIN})},
                                  {"axes", Tensor::from<int64_t>({1}, {1})},
                                  {"steps", Tensor::from<int64_t>({1}, {-2})}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 3}, {4, 2, 0, 9, 7, 5}));
}

TEST(Tensor, TransposeAndConcatWorkOnStrings) {
  auto s = Tensor::from<std::string>({2, 2}, {"a", "b", "c", "d"});
  auto t = run_node({.op_type = "Transpose", .inputs = {{"x", s}}});
  expect_tensor_near(t[0].tensor(), Tensor::from<std::string>({2, 2}, {"a", "c", "b", "d"}));
  auto c = run_node({.op_type = "Concat", .inputs = {{"x", s}, {"y", s}}, .attributes = {attr("axis", -1)}});
  expect_tensor_near(c[0].tensor(), Tensor::from<std::string>({2, 4}, {"a", "b", "a", "b", "c", "d", "c", "d"}));
}

TEST(Tensor, TransposeMovingOnlyDimsOfOneKeepsTheBuffer) {
  // [1, 2, 3] -> [2, 1, 3]: the elements stay in order, so the output is the
  // input under a new shape; [2, 1, 3] -> [3, 1, 2] (perm 2, 1, 0) moves them.
  auto x = Tensor::from<float>({1, 2, 3}, {1, 2, 3, 4, 5, 6});
  auto same =
      run_node({.op_type = "Transpose", .inputs = {{"x", x}}, .attributes = {attr("perm", std::vector<int64_t>{1, 0, 2})}});
  expect_tensor_near(same[0].tensor(), Tensor::from<float>({2, 1, 3}, {1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(same[0].tensor().shares_buffer_with(x));
  auto moved = run_node({.op_type = "Transpose",
                         .inputs = {{"x", x.reshaped({2, 1, 3})}},
                         .attributes = {attr("perm", std::vector<int64_t>{2, 1, 0})}});
  expect_tensor_near(moved[0].tensor(), Tensor::from<float>({3, 1, 2}, {1, 4, 2, 5, 3, 6}));
  EXPECT_FALSE(moved[0].tensor().shares_buffer_with(x));
}

// Transpose against its definition, y[i] = x[sum(i_d * stride of perm[d])],
// on the forms that go through tiles (NCHW <-> NHWC, the attention's head
// split and merge, sizes off the tile's multiples) and those that do not,
// for 1-, 4- and 8-byte elements, on one thread and on two.
TEST(Tensor, TransposeMatchesItsDefinition) {
  struct Case {
    runtime::Shape shape;
    std::vector<int64_t> perm;
  };
  const std::vector<Case> cases = {{{1, 96, 56, 56}, {0, 2, 3, 1}},
                                   {{1, 56, 56, 96}, {0, 3, 1, 2}},
                                   {{2, 7, 13, 5}, {0, 3, 1, 2}},
                                   {{1, 64, 4, 64}, {0, 2, 1, 3}},
                                   {{1, 4, 64, 64}, {0, 1, 3, 2}},
                                   {{3, 5}, {1, 0}},
                                   {{37, 130}, {1, 0}},
                                   {{2, 3, 4, 5, 6}, {4, 2, 0, 3, 1}},
                                   {{6, 1, 9, 1, 10}, {4, 1, 2, 3, 0}}};
  auto expected = [](const Tensor& x, const std::vector<int64_t>& perm, auto tag) {
    using T = decltype(tag);
    runtime::Shape out_shape;
    for (int64_t p : perm) out_shape.push_back(x.dim(static_cast<size_t>(p)));
    std::vector<int64_t> in_strides(x.rank(), 1);
    for (size_t d = x.rank() - 1; d-- > 0;) in_strides[d] = in_strides[d + 1] * x.dim(d + 1);
    std::vector<T> y(static_cast<size_t>(runtime::shape_size(out_shape)));
    for (int64_t i = 0; i < static_cast<int64_t>(y.size()); ++i) {
      int64_t from = 0;
      for (size_t d = out_shape.size(), rest = static_cast<size_t>(i); d-- > 0;) {
        from += static_cast<int64_t>(rest % static_cast<size_t>(out_shape[d])) * in_strides[static_cast<size_t>(perm[d])];
        rest /= static_cast<size_t>(out_shape[d]);
      }
      y[static_cast<size_t>(i)] = x.data<T>()[from];
    }
    return Tensor::from<T>(out_shape, y);
  };
  auto check = [&](auto tag) {
    using T = decltype(tag);
    for (const Case& c : cases) {
      std::vector<T> v(static_cast<size_t>(runtime::shape_size(c.shape)));
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(i * 7 % 251);
      const Tensor x = Tensor::from<T>(c.shape, v);
      for (int threads : {1, 2}) {
        SCOPED_TRACE(runtime::shape_to_string(c.shape) + " perm " + ::testing::PrintToString(c.perm) + " " +
                     std::to_string(sizeof(T)) + "-byte, threads " + std::to_string(threads));
        auto out =
            run_node({.op_type = "Transpose", .inputs = {{"x", x}}, .attributes = {attr("perm", c.perm)}, .threads = threads});
        expect_tensor_near(out[0].tensor(), expected(x, c.perm, tag));
      }
    }
  };
  check(float{});
  check(int8_t{});
  check(int64_t{});
}

// Expand and DepthToSpace copy through the same tiles when their innermost
// output dim is not the source's (a broadcast column, a block's pixels
// spread across the width): against their definitions, at 1 and 2 threads.
TEST(Tensor, ExpandAndDepthToSpaceThroughTilesMatchTheirDefinitions) {
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    std::vector<float> column(8), wide(64);
    for (int64_t i = 0; i < 8; ++i) column[static_cast<size_t>(i)] = static_cast<float>(3 * i + 1);
    for (int64_t i = 0; i < 64; ++i) wide[static_cast<size_t>(i)] = column[static_cast<size_t>(i / 8)];
    auto expanded = run_node({.op_type = "Expand",
                              .inputs = {{"x", Tensor::from<float>({8, 1}, column)}, {"s", Tensor::from<int64_t>({2}, {8, 8})}},
                              .threads = threads});
    expect_tensor_near(expanded[0].tensor(), Tensor::from<float>({8, 8}, wide));
    constexpr int64_t b = 4, c = 2, h = 5, w = 5;  // x [1, c * b * b, h, w]
    std::vector<float> x(static_cast<size_t>(c * b * b * h * w));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i * 7 % 251);
    for (const char* mode : {"DCR", "CRD"}) {
      SCOPED_TRACE(mode);
      std::vector<float> y(x.size());
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t r = 0; r < h * b; ++r)
          for (int64_t q = 0; q < w * b; ++q) {
            const int64_t i = r % b, j = q % b;
            const int64_t from = std::string(mode) == "DCR" ? (i * b + j) * c + ch : ch * b * b + i * b + j;
            y[static_cast<size_t>((ch * h * b + r) * w * b + q)] = x[static_cast<size_t>((from * h + r / b) * w + q / b)];
          }
      auto out = run_node({.op_type = "DepthToSpace",
                           .inputs = {{"x", Tensor::from<float>({1, c * b * b, h, w}, x)}},
                           .attributes = {attr("blocksize", b), attr("mode", mode)},
                           .threads = threads});
      expect_tensor_near(out[0].tensor(), Tensor::from<float>({1, c, h * b, w * b}, y));
    }
  }
}

TEST(Tensor, TileAndExpandRepeat) {
  auto x = Tensor::from<int32_t>({2, 1}, {1, 2});
  auto tile = run_node({.op_type = "Tile", .inputs = {{"x", x}, {"r", Tensor::from<int64_t>({2}, {2, 3})}}});
  expect_tensor_near(tile[0].tensor(), Tensor::from<int32_t>({4, 3}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2}));
  auto expand = run_node({.op_type = "Expand", .inputs = {{"x", x}, {"s", Tensor::from<int64_t>({3}, {2, 1, 2})}}});
  expect_tensor_near(expand[0].tensor(), Tensor::from<int32_t>({2, 2, 2}, {1, 1, 2, 2, 1, 1, 2, 2}));
}

TEST(Tensor, CastSaturatesInsteadOfOverflowing) {
  auto out = run_node({.op_type = "Cast",
                       .inputs = {{"x", Tensor::from<float>({4}, {300.0f, -1e20f, std::nanf(""), 7.9f})}},
                       .attributes = {attr("to", static_cast<int64_t>(DataType::int8))}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int8_t>({4}, {127, -128, 0, 7}));
}

TEST(Tensor, CastBetweenStringsAndNumbers) {
  auto to_string = run_node({.op_type = "Cast",
                             .inputs = {{"x", Tensor::from<float>({2}, {0.1f, -3.0f})}},
                             .attributes = {attr("to", static_cast<int64_t>(DataType::string))}});
  expect_tensor_near(to_string[0].tensor(), Tensor::from<std::string>({2}, {"0.1", "-3"}));
  auto back = run_node({.op_type = "Cast",
                        .inputs = {{"x", Tensor::from<std::string>({3}, {"2.5", "-inf", "1e3"})}},
                        .attributes = {attr("to", static_cast<int64_t>(DataType::float64))}});
  expect_tensor_near(back[0].tensor(), Tensor::from<double>({3}, {2.5, -INFINITY, 1000}));
}

TEST(Tensor, ShapeStartAndEnd) {
  auto out = run_node({.op_type = "Shape",
                       .opset = 15,
                       .inputs = {{"x", iota({2, 3, 4, 5})}},
                       .attributes = {attr("start", 1), attr("end", -1)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int64_t>({2}, {3, 4}));
}

TEST(Tensor, DepthToSpaceModesDiffer) {
  // x[0, c, 0, 0] = c for 4 channels, blocksize 2.
  auto x = iota({1, 4, 1, 1});
  auto dcr = run_node({.op_type = "DepthToSpace", .inputs = {{"x", x}}, .attributes = {attr("blocksize", 2)}});
  expect_tensor_near(dcr[0].tensor(), Tensor::from<float>({1, 1, 2, 2}, {0, 1, 2, 3}));
  auto x2 = iota({1, 8, 1, 1});
  auto dcr2 = run_node({.op_type = "DepthToSpace", .inputs = {{"x", x2}}, .attributes = {attr("blocksize", 2)}});
  // DCR: output channel c, position (b1, b2) reads channel (b1*2 + b2)*2 + c.
  expect_tensor_near(dcr2[0].tensor(), Tensor::from<float>({1, 2, 2, 2}, {0, 2, 4, 6, 1, 3, 5, 7}));
  auto crd2 =
      run_node({.op_type = "DepthToSpace", .inputs = {{"x", x2}}, .attributes = {attr("blocksize", 2), attr("mode", "CRD")}});
  expect_tensor_near(crd2[0].tensor(), Tensor::from<float>({1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(Tensor, UnsqueezeAxesMoveFromAttributeToInput) {
  auto x = iota({3});
  auto old = run_node(
      {.op_type = "Unsqueeze", .opset = 11, .inputs = {{"x", x}}, .attributes = {attr("axes", std::vector<int64_t>{0, 2})}});
  EXPECT_EQ(old[0].tensor().shape(), (runtime::Shape{1, 3, 1}));
  auto now = run_node({.op_type = "Unsqueeze", .opset = 13, .inputs = {{"x", x}, {"a", Tensor::from<int64_t>({1}, {-1})}}});
  EXPECT_EQ(now[0].tensor().shape(), (runtime::Shape{3, 1}));
}

TEST(Tensor, LargeBuffersAreReusedInsteadOfReturnedToTheSystem) {
  // A size no other test frees (12 MB; LargeBuffersServeLaterShapes... asks
  // for 16 MB and more), so that the cache holds only ours.
  const void* first = nullptr;
  {
    Tensor a(DataType::float32, {3001, 1000});
    first = a.raw();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
  }
  Tensor b(DataType::float32, {3001, 1000});  // the same size: the buffer a left
  EXPECT_EQ(b.raw(), first);
  Tensor c(DataType::float32, {3001, 1000});  // b still holds it: a new one
  EXPECT_NE(c.raw(), first);
}

TEST(Tensor, CastToFloat8RoundsToNearestEvenAndSaturates) {
  // Expected codes are hand-computed from the formats (E4M3FN: bias 7, max
  // 448 = 0x7e; E4M3FNUZ: bias 8, max 240 = 0x7f; E5M2: bias 15, max 57344 =
  // 0x7b, inf 0x7c; E5M2FNUZ: bias 16, max 0x7f; UZ NaN 0x80), and agree
  // with onnx 1.23's ReferenceEvaluator except where noted.
  // 1.0625 and 1.1875 are E4M3 ties (to the even mantissas of 1.0 and 1.25),
  // 1.125 and 1.375 E5M2 ties (to 1.0 and 1.5); 2^-9 is E4M3FN's smallest
  // subnormal; 464 is halfway between E4M3FN's 448 and 480, so it rounds to
  // 448 and is not out of range even without saturation.
  const float inf = std::numeric_limits<float>::infinity();
  const auto x = Tensor::from<float>(
      {13}, {1.0f, 1.0625f, 1.1875f, 1.125f, 1.375f, 0.001953125f, 464, 1e5f, -1e5f, inf, -inf, std::nanf(""), -0.0f});
  struct Case {
    DataType to;
    std::vector<uint8_t> saturated, unsaturated;
  };
  const std::vector<Case> cases = {
      {DataType::float8e4m3fn,
       {0x38, 0x38, 0x3a, 0x39, 0x3b, 0x01, 0x7e, 0x7e, 0xfe, 0x7e, 0xfe, 0x7f, 0x80},
       {0x38, 0x38, 0x3a, 0x39, 0x3b, 0x01, 0x7e, 0x7f, 0xff, 0x7f, 0xff, 0x7f, 0x80}},
      // +-inf saturate to NaN in the UZ formats, as Cast's table says (the
      // reference gives the largest finite value, onnx issue #6220).
      {DataType::float8e4m3fnuz,
       {0x40, 0x40, 0x42, 0x41, 0x43, 0x02, 0x7f, 0x7f, 0xff, 0x80, 0x80, 0x80, 0x00},
       {0x40, 0x40, 0x42, 0x41, 0x43, 0x02, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}},
      {DataType::float8e5m2,
       {0x3c, 0x3c, 0x3d, 0x3c, 0x3e, 0x18, 0x5f, 0x7b, 0xfb, 0x7b, 0xfb, 0x7e, 0x80},
       {0x3c, 0x3c, 0x3d, 0x3c, 0x3e, 0x18, 0x5f, 0x7c, 0xfc, 0x7c, 0xfc, 0x7e, 0x80}},
      {DataType::float8e5m2fnuz,
       {0x40, 0x40, 0x41, 0x40, 0x42, 0x1c, 0x63, 0x7f, 0xff, 0x80, 0x80, 0x80, 0x00},
       {0x40, 0x40, 0x41, 0x40, 0x42, 0x1c, 0x63, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(runtime::to_string(c.to));
    const auto to = attr("to", static_cast<int64_t>(c.to));
    auto saturated = run_node({.op_type = "Cast", .opset = 19, .inputs = {{"x", x}}, .attributes = {to}});
    expect_tensor_near(saturated[0].tensor(), float8_tensor(c.to, {13}, c.saturated));
    auto unsaturated = run_node({.op_type = "Cast", .opset = 19, .inputs = {{"x", x}}, .attributes = {to, attr("saturate", 0)}});
    expect_tensor_near(unsaturated[0].tensor(), float8_tensor(c.to, {13}, c.unsaturated));
    auto like = run_node({.op_type = "CastLike",
                          .opset = 19,
                          .inputs = {{"x", x}, {"like", float8_tensor(c.to, {1}, {0})}},
                          .attributes = {attr("saturate", 0)}});
    expect_tensor_near(like[0].tensor(), float8_tensor(c.to, {13}, c.unsaturated));
  }
}

TEST(Tensor, CastFromFloat8IsExact) {
  // Hand-decoded: sign, exponent field - bias, 1.mantissa (0.mantissa and
  // the smallest normal exponent when the field is 0).
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  struct Case {
    DataType from;
    std::vector<uint8_t> codes;
    std::vector<float> values;
  };
  const std::vector<Case> cases = {
      {DataType::float8e4m3fn, {0x38, 0x7e, 0x01, 0xc0, 0x7f, 0xff}, {1, 448, 0x1p-9f, -2, nan, nan}},
      {DataType::float8e4m3fnuz, {0x40, 0x7f, 0x01, 0xc0, 0x00, 0x80}, {1, 240, 0x1p-10f, -1, 0, nan}},
      {DataType::float8e5m2, {0x3c, 0x7b, 0x01, 0xc0, 0x7c, 0xfc, 0x7d, 0x7e}, {1, 57344, 0x1p-16f, -2, inf, -inf, nan, nan}},
      {DataType::float8e5m2fnuz, {0x40, 0x7f, 0x01, 0xc0, 0x80}, {1, 57344, 0x1p-17f, -1, nan}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(runtime::to_string(c.from));
    const int64_t n = static_cast<int64_t>(c.codes.size());
    auto out = run_node({.op_type = "Cast",
                         .opset = 19,
                         .inputs = {{"x", float8_tensor(c.from, {n}, c.codes)}},
                         .attributes = {attr("to", static_cast<int64_t>(DataType::float32))}});
    expect_tensor_near(out[0].tensor(), Tensor::from<float>({n}, c.values), 0, 0);
  }
  // -0 keeps its sign where the format has one.
  auto zero = run_node({.op_type = "Cast",
                        .opset = 19,
                        .inputs = {{"x", float8_tensor(DataType::float8e4m3fn, {1}, {0x80})}},
                        .attributes = {attr("to", static_cast<int64_t>(DataType::float32))}});
  EXPECT_TRUE(std::signbit(zero[0].tensor().data<float>()[0]));
  // Between float8 formats: E5M2's 57344 is beyond E4M3FN's 448.
  auto narrowed = run_node({.op_type = "Cast",
                            .opset = 19,
                            .inputs = {{"x", float8_tensor(DataType::float8e5m2, {2}, {0x7b, 0x3c})}},
                            .attributes = {attr("to", static_cast<int64_t>(DataType::float8e4m3fn))}});
  expect_tensor_near(narrowed[0].tensor(), float8_tensor(DataType::float8e4m3fn, {2}, {0x7e, 0x38}));
}

TEST(Tensor, CastToInt4SaturatesFloatsAndWrapsIntegers) {
  // Floats truncate toward zero and saturate, as for the other integer
  // types (onnx's reference, through ml_dtypes, wraps them instead: 20 -> 4;
  // the spec leaves it undefined). Integers keep their low 4 bits, the
  // spec's rule for narrowing fixed point: 200 = 0xc8 -> 0x8 = -8.
  const auto to_int4 = attr("to", static_cast<int64_t>(DataType::int4));
  const auto to_uint4 = attr("to", static_cast<int64_t>(DataType::uint4));
  auto out = run_node({.op_type = "Cast",
                       .opset = 21,
                       .inputs = {{"x", Tensor::from<float>({7}, {-20, -8.5f, -1.5f, 0.9f, 7.9f, 20, std::nanf("")})}},
                       .attributes = {to_int4}});
  expect_tensor_near(out[0].tensor(), int4_tensor(DataType::int4, {7}, {-8, -8, -1, 0, 7, 7, 0}));
  out = run_node({.op_type = "Cast",
                  .opset = 21,
                  .inputs = {{"x", Tensor::from<float>({5}, {-3, 2.5f, 15.5f, 100, std::nanf("")})}},
                  .attributes = {to_uint4}});
  expect_tensor_near(out[0].tensor(), int4_tensor(DataType::uint4, {5}, {0, 2, 15, 15, 0}));
  out = run_node({.op_type = "Cast",
                  .opset = 21,
                  .inputs = {{"x", Tensor::from<int32_t>({5}, {200, -9, 8, 7, -8})}},
                  .attributes = {to_int4}});
  expect_tensor_near(out[0].tensor(), int4_tensor(DataType::int4, {5}, {-8, 7, -8, 7, -8}));
  out = run_node({.op_type = "Cast",
                  .opset = 21,
                  .inputs = {{"x", Tensor::from<int32_t>({4}, {200, -1, 16, 15})}},
                  .attributes = {to_uint4}});
  expect_tensor_near(out[0].tensor(), int4_tensor(DataType::uint4, {4}, {8, 15, 0, 15}));
  // And back, exactly.
  out = run_node({.op_type = "Cast",
                  .opset = 21,
                  .inputs = {{"x", int4_tensor(DataType::int4, {3}, {-8, -1, 7})}},
                  .attributes = {attr("to", static_cast<int64_t>(DataType::float32))}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({3}, {-8, -1, 7}), 0, 0);
  out = run_node({.op_type = "Cast",
                  .opset = 21,
                  .inputs = {{"x", int4_tensor(DataType::uint4, {2}, {15, 0})}},
                  .attributes = {attr("to", static_cast<int64_t>(DataType::int64))}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int64_t>({2}, {15, 0}));
}

TEST(Tensor, LowPrecisionTypesMoveThroughDataMovementOps) {
  const auto x = int4_tensor(DataType::int4, {2, 3}, {-8, -1, 0, 1, 2, 7});
  auto reshaped = run_node({.op_type = "Reshape", .opset = 21, .inputs = {{"x", x}, {"s", Tensor::from<int64_t>({2}, {3, -1})}}});
  expect_tensor_near(reshaped[0].tensor(), int4_tensor(DataType::int4, {3, 2}, {-8, -1, 0, 1, 2, 7}));
  EXPECT_TRUE(reshaped[0].tensor().shares_buffer_with(x)) << "Reshape must not copy";
  auto transposed = run_node({.op_type = "Transpose", .opset = 21, .inputs = {{"x", x}}});
  expect_tensor_near(transposed[0].tensor(), int4_tensor(DataType::int4, {3, 2}, {-8, 1, -1, 2, 0, 7}));
  auto unsqueezed = run_node(
      {.op_type = "Unsqueeze",
       .opset = 21,
       .inputs = {{"x", float8_tensor(DataType::float8e5m2, {2}, {0x3c, 0x7c})}, {"a", Tensor::from<int64_t>({1}, {0})}}});
  expect_tensor_near(unsqueezed[0].tensor(), float8_tensor(DataType::float8e5m2, {1, 2}, {0x3c, 0x7c}));
  // Attribute tensors come through a TensorProto: the int4 one packed, with
  // an odd count.
  auto constant = run_node(
      {.op_type = "Constant", .opset = 21, .attributes = {attr("value", int4_tensor(DataType::uint4, {3}, {1, 15, 9}))}});
  expect_tensor_near(constant[0].tensor(), int4_tensor(DataType::uint4, {3}, {1, 15, 9}));
  auto filled = run_node({.op_type = "ConstantOfShape",
                          .opset = 21,
                          .inputs = {{"s", Tensor::from<int64_t>({1}, {3})}},
                          .attributes = {attr("value", float8_tensor(DataType::float8e4m3fn, {1}, {0x7e}))}});
  expect_tensor_near(filled[0].tensor(), float8_tensor(DataType::float8e4m3fn, {3}, {0x7e, 0x7e, 0x7e}));
}

TEST(Tensor, AConstantWhoseValueIsNoTensorIsAnError) {
  auto constant = try_run_node({.op_type = "Constant", .opset = 21, .attributes = {attr("value", int64_t{5})}});
  ASSERT_FALSE(constant.ok());
  EXPECT_NE(constant.error().message().find("attribute 'value' is not a tensor"), std::string::npos)
      << constant.error().message();
}

TEST(Tensor, Int4TensorProtosPackTwoPerByteLowNibbleFirst) {
  // The packed bytes are those of onnx 1.23's
  // helper.make_tensor("x", INT4, [5], [-8, -1, 0, 7, 3]): raw_data
  // f8 70 03, or int32_data [248, 112, 3]; for UINT4 [1, 15, 9]: f1 09 and
  // [241, 9]. The odd count leaves the last high nibble 0.
  const auto int4 = int4_tensor(DataType::int4, {5}, {-8, -1, 0, 7, 3});
  const auto uint4 = int4_tensor(DataType::uint4, {3}, {1, 15, 9});
  onnx::TensorProto proto = runtime::tensor_to_proto(int4);
  EXPECT_EQ(proto.raw_data(), std::string("\xf8\x70\x03", 3));
  auto back = runtime::tensor_from_proto(proto);
  ASSERT_TRUE(back.ok()) << back.error().message();
  expect_tensor_near(*back, int4);
  proto = runtime::tensor_to_proto(uint4);
  EXPECT_EQ(proto.raw_data(), std::string("\xf1\x09", 2));
  back = runtime::tensor_from_proto(proto);
  ASSERT_TRUE(back.ok()) << back.error().message();
  expect_tensor_near(*back, uint4);

  auto typed = [](DataType type, int64_t n, const std::vector<int32_t>& entries) {
    onnx::TensorProto p;
    p.set_data_type(static_cast<int32_t>(type));
    p.add_dims(n);
    for (int32_t e : entries) p.add_int32_data(e);
    return p;
  };
  back = runtime::tensor_from_proto(typed(DataType::int4, 5, {248, 112, 3}));
  ASSERT_TRUE(back.ok()) << back.error().message();
  expect_tensor_near(*back, int4);
  back = runtime::tensor_from_proto(typed(DataType::uint4, 3, {241, 9}));
  ASSERT_TRUE(back.ok()) << back.error().message();
  expect_tensor_near(*back, uint4);
  // One byte short: an error, not a read past the end.
  EXPECT_FALSE(runtime::tensor_from_proto(typed(DataType::int4, 5, {248, 112})).ok());
  proto = runtime::tensor_to_proto(int4);
  proto.mutable_raw_data()->pop_back();
  EXPECT_FALSE(runtime::tensor_from_proto(proto).ok());
  // Float8 int32_data entries hold one code each (make_tensor(FLOAT8E5M2,
  // [1, -2, 57344]) gives 0x3c, 0xc0, 0x7b).
  back = runtime::tensor_from_proto(typed(DataType::float8e5m2, 3, {0x3c, 0xc0, 0x7b}));
  ASSERT_TRUE(back.ok()) << back.error().message();
  expect_tensor_near(*back, float8_tensor(DataType::float8e5m2, {3}, {0x3c, 0xc0, 0x7b}));
}

TEST(Tensor, CastToFloat4E2M1RoundsToNearestEvenAndAlwaysSaturates) {
  // E2M1's values are 0, 0.5, 1, 1.5, 2, 3, 4, 6 (codes 0-7, bit 3 the
  // sign). Every input but the last five is a tie: 0.25 between 0 and 0.5,
  // 1.25 between 1 (even) and 1.5, 5 between 4 (even) and 6. With no
  // infinity or NaN, overflow and infinities give +-6 whatever `saturate`
  // says, and NaN gives +6 (0x7), as onnx's reference does.
  const float inf = std::numeric_limits<float>::infinity();
  const auto x = Tensor::from<float>({13}, {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5, 7, -3, inf, -inf, std::nanf(""), -0.0f});
  const std::vector<uint8_t> codes = {0x0, 0x2, 0x2, 0x4, 0x4, 0x6, 0x6, 0x7, 0xd, 0x7, 0xf, 0x7, 0x8};
  const auto to = attr("to", static_cast<int64_t>(DataType::float4e2m1));
  for (int64_t saturate : {0, 1}) {
    auto out = run_node({.op_type = "Cast", .opset = 23, .inputs = {{"x", x}}, .attributes = {to, attr("saturate", saturate)}});
    expect_tensor_near(out[0].tensor(), float8_tensor(DataType::float4e2m1, {13}, codes));
  }
  // Every code back to float, exactly.
  std::vector<uint8_t> all(16);
  for (uint8_t i = 0; i < 16; ++i) all[i] = i;
  auto back = run_node({.op_type = "Cast",
                        .opset = 23,
                        .inputs = {{"x", float8_tensor(DataType::float4e2m1, {16}, all)}},
                        .attributes = {attr("to", static_cast<int64_t>(DataType::float32))}});
  expect_tensor_near(back[0].tensor(),
                     Tensor::from<float>({16}, {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6}), 0, 0);
  EXPECT_TRUE(std::signbit(back[0].tensor().data<float>()[8]));
}

TEST(Tensor, CastToFloat8E8M0FollowsEachRoundMode) {
  // E8M0 is 2^(code - 127). 1.5 and 3 = 1.5 * 2 are ties: `nearest` takes
  // them up, `up` takes anything with a fraction up, `down` truncates; the
  // sign is dropped (-4 = 2^2 -> 129); 0 has exponent field 0 -> code 0;
  // 1.5 * 2^127 rounds up past the largest code 0xfe: kept there with
  // saturate, NaN (0xff) without; infinities and NaN give 0xff.
  const float inf = std::numeric_limits<float>::infinity();
  const auto x = Tensor::from<float>({11}, {1, 1.25f, 1.5f, 3, 0.75f, -4, 0, 0x1.8p127f, inf, std::nanf(""), 0x1.9p0f});
  struct Case {
    const char* mode;
    std::vector<uint8_t> saturated, unsaturated;
  };
  const std::vector<Case> cases = {
      {"up", {127, 128, 128, 129, 127, 129, 0, 0xfe, 0xff, 0xff, 128}, {127, 128, 128, 129, 127, 129, 0, 0xff, 0xff, 0xff, 128}},
      {"down",
       {127, 127, 127, 128, 126, 129, 0, 0xfe, 0xff, 0xff, 127},
       {127, 127, 127, 128, 126, 129, 0, 0xfe, 0xff, 0xff, 127}},
      {"nearest",
       {127, 127, 128, 129, 127, 129, 0, 0xfe, 0xff, 0xff, 128},
       {127, 127, 128, 129, 127, 129, 0, 0xff, 0xff, 0xff, 128}},
  };
  const auto to = attr("to", static_cast<int64_t>(DataType::float8e8m0));
  for (const Case& c : cases) {
    SCOPED_TRACE(c.mode);
    auto out = run_node(
        {.op_type = "Cast", .opset = 25, .inputs = {{"x", x}}, .attributes = {to, attr("round_mode", std::string(c.mode))}});
    expect_tensor_near(out[0].tensor(), float8_tensor(DataType::float8e8m0, {11}, c.saturated));
    out = run_node({.op_type = "Cast",
                    .opset = 25,
                    .inputs = {{"x", x}},
                    .attributes = {to, attr("round_mode", std::string(c.mode)), attr("saturate", 0)}});
    expect_tensor_near(out[0].tensor(), float8_tensor(DataType::float8e8m0, {11}, c.unsaturated));
    auto like = run_node({.op_type = "CastLike",
                          .opset = 25,
                          .inputs = {{"x", x}, {"like", float8_tensor(DataType::float8e8m0, {1}, {0})}},
                          .attributes = {attr("round_mode", std::string(c.mode))}});
    expect_tensor_near(like[0].tensor(), float8_tensor(DataType::float8e8m0, {11}, c.saturated));
  }
  auto back = run_node({.op_type = "Cast",
                        .opset = 25,
                        .inputs = {{"x", float8_tensor(DataType::float8e8m0, {5}, {127, 128, 0, 0xfe, 0xff})}},
                        .attributes = {attr("to", static_cast<int64_t>(DataType::float32))}});
  expect_tensor_near(back[0].tensor(), Tensor::from<float>({5}, {1, 2, 0x1p-127f, 0x1p127f, std::nanf("")}), 0, 0);
  auto bad = try_run_node(
      {.op_type = "Cast", .opset = 25, .inputs = {{"x", x}}, .attributes = {to, attr("round_mode", std::string("odd"))}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("round_mode"), std::string::npos) << bad.error().message();
}

TEST(Tensor, CastToInt2SaturatesFloatsAndWrapsIntegers) {
  // As for int4: floats truncate toward zero and saturate to [-2, 1] or
  // [0, 3], NaN gives 0; integers keep their low 2 bits (5 = 0b101 -> 1,
  // -3 = ...1101 -> 0b01 = 1, 2 = 0b10 -> -2).
  const auto to_int2 = attr("to", static_cast<int64_t>(DataType::int2));
  auto out = run_node({.op_type = "Cast",
                       .opset = 25,
                       .inputs = {{"x", Tensor::from<float>({7}, {-3, -2, -1.5f, 0.9f, 1, 2.5f, std::nanf("")})}},
                       .attributes = {to_int2}});
  expect_tensor_near(out[0].tensor(), int4_tensor(DataType::int2, {7}, {-2, -2, -1, 0, 1, 1, 0}));
  out = run_node({.op_type = "Cast",
                  .opset = 25,
                  .inputs = {{"x", Tensor::from<float>({4}, {-1, 2.5f, 3, 10})}},
                  .attributes = {attr("to", static_cast<int64_t>(DataType::uint2))}});
  expect_tensor_near(out[0].tensor(), int4_tensor(DataType::uint2, {4}, {0, 2, 3, 3}));
  out = run_node(
      {.op_type = "Cast", .opset = 25, .inputs = {{"x", Tensor::from<int32_t>({4}, {5, -3, 2, 3})}}, .attributes = {to_int2}});
  expect_tensor_near(out[0].tensor(), int4_tensor(DataType::int2, {4}, {1, 1, -2, -1}));
  out = run_node({.op_type = "Cast",
                  .opset = 25,
                  .inputs = {{"x", int4_tensor(DataType::int2, {4}, {-2, -1, 0, 1})}},
                  .attributes = {attr("to", static_cast<int64_t>(DataType::float32))}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({4}, {-2, -1, 0, 1}), 0, 0);
}

TEST(Tensor, SubByteTypesMoveThroughDataMovementOps) {
  const auto x = int4_tensor(DataType::int2, {2, 3}, {-2, -1, 0, 1, 1, -2});
  auto transposed = run_node({.op_type = "Transpose", .opset = 25, .inputs = {{"x", x}}});
  expect_tensor_near(transposed[0].tensor(), int4_tensor(DataType::int2, {3, 2}, {-2, 1, -1, 1, 0, -2}));
  auto concat =
      run_node({.op_type = "Concat", .opset = 25, .inputs = {{"a", x}, {"b", x}}, .attributes = {attr("axis", int64_t{0})}});
  expect_tensor_near(concat[0].tensor(), int4_tensor(DataType::int2, {4, 3}, {-2, -1, 0, 1, 1, -2, -2, -1, 0, 1, 1, -2}));
  const auto f4 = float8_tensor(DataType::float4e2m1, {4}, {0x1, 0x7, 0xf, 0x8});
  auto gathered =
      run_node({.op_type = "Gather", .opset = 25, .inputs = {{"x", f4}, {"i", Tensor::from<int64_t>({3}, {3, 0, -2})}}});
  expect_tensor_near(gathered[0].tensor(), float8_tensor(DataType::float4e2m1, {3}, {0x8, 0x1, 0xf}));
  auto sliced = run_node({.op_type = "Slice",
                          .opset = 25,
                          .inputs = {{"x", float8_tensor(DataType::float8e8m0, {4}, {1, 2, 3, 4})},
                                     {"s", Tensor::from<int64_t>({1}, {1})},
                                     {"e", Tensor::from<int64_t>({1}, {3})}}});
  expect_tensor_near(sliced[0].tensor(), float8_tensor(DataType::float8e8m0, {2}, {2, 3}));
  auto identity = run_node({.op_type = "Identity", .opset = 25, .inputs = {{"x", int4_tensor(DataType::uint2, {2}, {3, 1})}}});
  expect_tensor_near(identity[0].tensor(), int4_tensor(DataType::uint2, {2}, {3, 1}));
}

TEST(Tensor, SubByteTensorProtosPackLowBitsFirst) {
  // onnx 1.23's numpy_helper.from_array packs int2 [-2, -1, 0, 1, 1] (codes
  // 2, 3, 0, 1, 1) into 2 | 3 << 2 | 0 << 4 | 1 << 6 = 0x4e, then 0x01;
  // uint2 [3, 0, 1, 2] into 0x93; float4e2m1 [1, -6, 0.5] (codes 2, 0xf, 1)
  // into 0xf2, 0x01, as int4.
  const auto int2 = int4_tensor(DataType::int2, {5}, {-2, -1, 0, 1, 1});
  const auto uint2 = int4_tensor(DataType::uint2, {4}, {3, 0, 1, 2});
  const auto f4 = float8_tensor(DataType::float4e2m1, {3}, {0x2, 0xf, 0x1});
  const std::vector<std::pair<Tensor, std::string>> cases = {
      {int2, std::string("\x4e\x01", 2)}, {uint2, std::string("\x93", 1)}, {f4, std::string("\xf2\x01", 2)}};
  for (const auto& [tensor, bytes] : cases) {
    SCOPED_TRACE(runtime::to_string(tensor.dtype()));
    onnx::TensorProto proto = runtime::tensor_to_proto(tensor);
    EXPECT_EQ(proto.raw_data(), bytes);
    auto back = runtime::tensor_from_proto(proto);
    ASSERT_TRUE(back.ok()) << back.error().message();
    expect_tensor_near(*back, tensor);
    // The same bytes as int32_data entries, one per byte.
    onnx::TensorProto typed;
    typed.set_data_type(proto.data_type());
    *typed.mutable_dims() = proto.dims();
    for (char c : bytes) typed.add_int32_data(static_cast<uint8_t>(c));
    back = runtime::tensor_from_proto(typed);
    ASSERT_TRUE(back.ok()) << back.error().message();
    expect_tensor_near(*back, tensor);
    proto.mutable_raw_data()->pop_back();
    EXPECT_FALSE(runtime::tensor_from_proto(proto).ok());
  }
}

TEST(Tensor, LargeBuffersServeLaterShapesUpToHalfTheirSize) {
  // Sizes no other test frees, so that the cache holds only ours.
  constexpr int64_t kBig = 10'000'000;  // 40 MB of floats
  const void* first = nullptr;
  { first = Tensor(DataType::float32, {kBig}).raw(); }
  {
    Tensor smaller(DataType::float32, {kBig * 6 / 10});
    EXPECT_EQ(smaller.raw(), first);  // kept, and large enough
    Tensor same(DataType::float32, {kBig * 6 / 10});
    EXPECT_NE(same.raw(), first);  // in use: a buffer of its own
  }
  // The buffer went back with its whole size: the first shape gets it again.
  { EXPECT_EQ(Tensor(DataType::float32, {kBig}).raw(), first); }
  // Less than half of it: a fresh buffer rather than 20 MB more resident.
  { EXPECT_NE(Tensor(DataType::float32, {kBig * 4 / 10}).raw(), first); }
}

// BitCast (opset 26) where the backend data has no case: the 4-bit types,
// bytes read as bool, and widths that differ.
TEST(Tensor, BitCastKeepsBitsAndRefusesOtherWidths) {
  auto out = run_node({.op_type = "BitCast",
                       .opset = 26,
                       .inputs = {{"x", int4_tensor(DataType::int4, {3}, {-1, -8, 7})}},
                       .attributes = {attr("to", static_cast<int64_t>(DataType::uint4))}});
  expect_tensor_near(out[0].tensor(), int4_tensor(DataType::uint4, {3}, {15, 8, 7}));
  out = run_node({.op_type = "BitCast",
                  .opset = 26,
                  .inputs = {{"x", Tensor::from<uint8_t>({3}, {0, 1, 2})}},
                  .attributes = {attr("to", static_cast<int64_t>(DataType::boolean))}});
  expect_tensor_near(out[0].tensor(), Tensor::from<bool>({3}, {false, true, true}));
  // -2 as int16 is 0xfffe.
  out = run_node({.op_type = "BitCast",
                  .opset = 26,
                  .inputs = {{"x", Tensor::from<int16_t>({1}, {-2})}},
                  .attributes = {attr("to", static_cast<int64_t>(DataType::uint16))}});
  expect_tensor_near(out[0].tensor(), Tensor::from<uint16_t>({1}, {0xfffe}));
  auto bad = try_run_node({.op_type = "BitCast",
                           .opset = 26,
                           .inputs = {{"x", Tensor::from<float>({1}, {1})}},
                           .attributes = {attr("to", static_cast<int64_t>(DataType::float64))}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("widths must be equal"), std::string::npos) << bad.error().message();
}

}  // namespace
}  // namespace onnxkit
