// Tensor-family kernels on cases the backend data leaves out: opset 18+
// forms, views, strings, negative steps, bad inputs.

#include <gtest/gtest.h>

#include "support/node_runner.h"

namespace onnxkit {
namespace {

using runtime::DataType;
using runtime::Tensor;
using testing::attr;
using testing::expect_tensor_near;
using testing::run_node;
using testing::try_run_node;

Tensor iota(runtime::Shape shape) {
  std::vector<float> v(static_cast<size_t>(runtime::shape_size(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return Tensor::from<float>(std::move(shape), v);
}

TEST(Tensor, SplitNumOutputsMakesTheLastPartSmaller) {
  auto out = run_node({.op_type = "Split", .opset = 18, .inputs = {{"x", iota({7})}},
                       .attributes = {attr("num_outputs", 3)}, .num_outputs = 3});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({3}, {0, 1, 2}));
  expect_tensor_near(out[1].tensor(), Tensor::from<float>({3}, {3, 4, 5}));
  expect_tensor_near(out[2].tensor(), Tensor::from<float>({1}, {6}));
}

TEST(Tensor, SplitSizesThatDoNotAddUpAreRefused) {
  auto out = try_run_node({.op_type = "Split", .opset = 13,
                           .inputs = {{"x", iota({6})}, {"s", Tensor::from<int64_t>({2}, {2, 3})}}, .num_outputs = 2});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("do not add up"), std::string::npos) << out.error().message();
}

TEST(Tensor, ReshapeIsAViewAndInfersMinusOne) {
  auto x = iota({2, 3, 4});
  auto out = run_node({.op_type = "Reshape", .opset = 14,
                       .inputs = {{"x", x}, {"s", Tensor::from<int64_t>({2}, {0, -1})}}});
  EXPECT_EQ(out[0].tensor().shape(), (runtime::Shape{2, 12}));
  EXPECT_TRUE(out[0].tensor().shares_buffer_with(x)) << "Reshape must not copy";
  auto bad = try_run_node({.op_type = "Reshape", .inputs = {{"x", x}, {"s", Tensor::from<int64_t>({2}, {5, -1})}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("cannot reshape"), std::string::npos);
}

TEST(Tensor, ReshapeAllowZeroKeepsAZeroDim) {
  auto out = run_node({.op_type = "Reshape", .opset = 14,
                       .inputs = {{"x", iota({0, 3})}, {"s", Tensor::from<int64_t>({2}, {3, 0})}},
                       .attributes = {attr("allowzero", 1)}});
  EXPECT_EQ(out[0].tensor().shape(), (runtime::Shape{3, 0}));
}

TEST(Tensor, SliceWithNegativeStepReverses) {
  auto out = run_node({.op_type = "Slice", .opset = 13,
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

TEST(Tensor, TileAndExpandRepeat) {
  auto x = Tensor::from<int32_t>({2, 1}, {1, 2});
  auto tile = run_node({.op_type = "Tile", .inputs = {{"x", x}, {"r", Tensor::from<int64_t>({2}, {2, 3})}}});
  expect_tensor_near(tile[0].tensor(), Tensor::from<int32_t>({4, 3}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2}));
  auto expand = run_node({.op_type = "Expand", .inputs = {{"x", x}, {"s", Tensor::from<int64_t>({3}, {2, 1, 2})}}});
  expect_tensor_near(expand[0].tensor(), Tensor::from<int32_t>({2, 2, 2}, {1, 1, 2, 2, 1, 1, 2, 2}));
}

TEST(Tensor, CastSaturatesInsteadOfOverflowing) {
  auto out = run_node({.op_type = "Cast", .inputs = {{"x", Tensor::from<float>({4}, {300.0f, -1e20f, std::nanf(""), 7.9f})}},
                       .attributes = {attr("to", static_cast<int64_t>(DataType::int8))}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int8_t>({4}, {127, -128, 0, 7}));
}

TEST(Tensor, CastBetweenStringsAndNumbers) {
  auto to_string = run_node({.op_type = "Cast", .inputs = {{"x", Tensor::from<float>({2}, {0.1f, -3.0f})}},
                             .attributes = {attr("to", static_cast<int64_t>(DataType::string))}});
  expect_tensor_near(to_string[0].tensor(), Tensor::from<std::string>({2}, {"0.1", "-3"}));
  auto back = run_node({.op_type = "Cast", .inputs = {{"x", Tensor::from<std::string>({3}, {"2.5", "-inf", "1e3"})}},
                        .attributes = {attr("to", static_cast<int64_t>(DataType::float64))}});
  expect_tensor_near(back[0].tensor(), Tensor::from<double>({3}, {2.5, -INFINITY, 1000}));
}

TEST(Tensor, ShapeStartAndEnd) {
  auto out = run_node({.op_type = "Shape", .opset = 15, .inputs = {{"x", iota({2, 3, 4, 5})}},
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
  auto crd2 = run_node({.op_type = "DepthToSpace", .inputs = {{"x", x2}},
                        .attributes = {attr("blocksize", 2), attr("mode", "CRD")}});
  expect_tensor_near(crd2[0].tensor(), Tensor::from<float>({1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(Tensor, UnsqueezeAxesMoveFromAttributeToInput) {
  auto x = iota({3});
  auto old = run_node({.op_type = "Unsqueeze", .opset = 11, .inputs = {{"x", x}}, .attributes = {attr("axes", std::vector<int64_t>{0, 2})}});
  EXPECT_EQ(old[0].tensor().shape(), (runtime::Shape{1, 3, 1}));
  auto now = run_node({.op_type = "Unsqueeze", .opset = 13, .inputs = {{"x", x}, {"a", Tensor::from<int64_t>({1}, {-1})}}});
  EXPECT_EQ(now[0].tensor().shape(), (runtime::Shape{3, 1}));
}

TEST(Tensor, LargeBuffersAreReusedInsteadOfReturnedToTheSystem) {
  const void* first = nullptr;
  {
    Tensor a(DataType::float32, {512, 512});
    first = a.raw();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
  }
  Tensor b(DataType::float32, {512, 512});  // the same size: the buffer a left
  EXPECT_EQ(b.raw(), first);
  Tensor c(DataType::float32, {512, 512});  // b still holds it: a new one
  EXPECT_NE(c.raw(), first);
}

}  // namespace
}  // namespace onnxkit
