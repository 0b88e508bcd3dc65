// Quantization kernels on what the backend data leaves out: rounding ties
// and saturation, per-axis and blocked scales, the opset 19/21 types and
// attributes, int32 dequantization, integer convolutions against a naive
// loop, bad inputs.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "support/node_runner.h"

namespace onnxkit {
namespace {

using runtime::DataType;
using runtime::Float16;
using runtime::Tensor;
using testing::attr;
using testing::expect_tensor_near;
using testing::float8_tensor;
using testing::int4_tensor;
using testing::run_node;
using testing::try_run_node;

Tensor half_tensor(const runtime::Shape& shape, const std::vector<float>& values) {
  Tensor t(DataType::float16, shape);
  for (size_t i = 0; i < values.size(); ++i) t.mutable_data<Float16>()[i] = Float16(values[i]);
  return t;
}

TEST(Quantization, QuantizeRoundsHalfToEvenThenSaturates) {
  // x / 2 = 0.5, 1.5, 2.5, -0.5, -1.5, 300, -300
  auto x = Tensor::from<float>({7}, {1, 3, 5, -1, -3, 600, -600});
  auto scale = Tensor::from<float>({}, {2});
  auto out = run_node(
      {.op_type = "QuantizeLinear", .opset = 13, .inputs = {{"x", x}, {"s", scale}, {"z", Tensor::from<uint8_t>({}, {10})}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<uint8_t>({7}, {10, 12, 12, 10, 8, 255, 0}));
  // An odd zero point: the rounding happens before it is added.
  out = run_node(
      {.op_type = "QuantizeLinear", .opset = 13, .inputs = {{"x", x}, {"s", scale}, {"z", Tensor::from<int8_t>({}, {1})}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int8_t>({7}, {1, 3, 3, 1, -1, 127, -128}));
  // No zero point: uint8 with zero 0.
  out = run_node({.op_type = "QuantizeLinear", .opset = 10, .inputs = {{"x", x}, {"s", scale}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<uint8_t>({7}, {0, 2, 2, 0, 0, 255, 0}));
  // Far out of range, infinite and NaN inputs saturate (NaN to 0).
  const float inf = std::numeric_limits<float>::infinity();
  out = run_node({.op_type = "QuantizeLinear",
                  .opset = 13,
                  .inputs = {{"x", Tensor::from<float>({5}, {1e10f, -1e10f, inf, -inf, std::nanf("")})},
                             {"s", Tensor::from<float>({}, {0.5f})},
                             {"z", Tensor::from<int8_t>({}, {3})}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int8_t>({5}, {127, -128, 127, -128, 0}));
  // int32 input (opset 10).
  out = run_node({.op_type = "QuantizeLinear",
                  .opset = 10,
                  .inputs = {{"x", Tensor::from<int32_t>({3}, {7, -9, 1000})},
                             {"s", Tensor::from<float>({}, {2})},
                             {"z", Tensor::from<int8_t>({}, {0})}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int8_t>({3}, {4, -4, 127}));
}

TEST(Quantization, PerAxisAndBlockedScales) {
  auto x = Tensor::from<float>({2, 4}, {1, 2, 3, 4, 10, 20, 30, 40});
  // Per axis 0: scales 1 and 10.
  auto out =
      run_node({.op_type = "QuantizeLinear",
                .opset = 13,
                .inputs = {{"x", x}, {"s", Tensor::from<float>({2}, {1, 10})}, {"z", Tensor::from<uint8_t>({2}, {0, 100})}},
                .attributes = {attr("axis", 0)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<uint8_t>({2, 4}, {1, 2, 3, 4, 101, 102, 103, 104}));
  // Blocks of 2 along axis 1 (opset 21): scale [2, 2].
  out = run_node({.op_type = "QuantizeLinear",
                  .opset = 21,
                  .inputs = {{"x", x}, {"s", Tensor::from<float>({2, 2}, {1, 2, 5, 10})}},
                  .attributes = {attr("axis", 1), attr("block_size", 2), attr("output_dtype", 3)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int8_t>({2, 4}, {1, 2, 2, 2, 2, 4, 3, 4}));
  out = run_node({.op_type = "DequantizeLinear",
                  .opset = 21,
                  .inputs = {{"x", Tensor::from<int8_t>({2, 3}, {1, 2, 3, 4, 5, 6})},
                             {"s", Tensor::from<float>({2, 2}, {1, 2, 3, 4})},
                             {"z", Tensor::from<int8_t>({2, 2}, {0, 1, 0, 1})}},
                  .attributes = {attr("axis", 1), attr("block_size", 2)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 3}, {1, 2, 4, 12, 15, 20}));
}

TEST(Quantization, Opset19And21Types) {
  // float16 input and scale quantize; float16 scale dequantizes to float16.
  auto out = run_node(
      {.op_type = "QuantizeLinear",
       .opset = 19,
       .inputs = {
           {"x", half_tensor({3}, {1.5f, -2.5f, 100})}, {"s", half_tensor({}, {0.5f})}, {"z", Tensor::from<int8_t>({}, {0})}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int8_t>({3}, {3, -5, 127}));
  out = run_node({.op_type = "DequantizeLinear",
                  .opset = 19,
                  .inputs = {{"x", Tensor::from<uint8_t>({2}, {130, 120})},
                             {"s", half_tensor({}, {0.25f})},
                             {"z", Tensor::from<uint8_t>({}, {128})}}});
  expect_tensor_near(out[0].tensor(), half_tensor({2}, {0.5f, -2}));
  // int16 (opset 21).
  out = run_node({.op_type = "QuantizeLinear",
                  .opset = 21,
                  .inputs = {{"x", Tensor::from<float>({2}, {1000.4f, -40000})},
                             {"s", Tensor::from<float>({}, {1})},
                             {"z", Tensor::from<int16_t>({}, {0})}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int16_t>({2}, {1000, -32768}));
  // int32 dequantizes without a zero point.
  out = run_node({.op_type = "DequantizeLinear",
                  .opset = 13,
                  .inputs = {{"x", Tensor::from<int32_t>({3}, {-100000, 0, 7})}, {"s", Tensor::from<float>({}, {0.5f})}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({3}, {-50000, 0, 3.5f}));
}

TEST(Quantization, BadScalesAreErrors) {
  auto x = Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  struct Case {
    testing::NodeSpec spec;
    std::string needle;
  };
  std::vector<Case> cases;
  cases.push_back({{.op_type = "QuantizeLinear", .opset = 13, .inputs = {{"x", x}, {"s", Tensor::from<float>({2}, {1, 1})}}},
                   "input y_scale has 2 elements but axis 1"});
  cases.push_back({{.op_type = "QuantizeLinear", .opset = 10, .inputs = {{"x", x}, {"s", Tensor::from<float>({3}, {1, 1, 1})}}},
                   "per-tensor"});
  cases.push_back({{.op_type = "QuantizeLinear",
                    .opset = 13,
                    .inputs = {{"x", x}, {"s", Tensor::from<float>({3}, {1, 1, 1})}, {"z", Tensor::from<uint8_t>({}, {0})}}},
                   "they must match"});
  cases.push_back({{.op_type = "QuantizeLinear",
                    .opset = 13,
                    .inputs = {{"x", x}, {"s", Tensor::from<float>({2}, {1, 1})}},
                    .attributes = {attr("axis", 2)}},
                   "axis 2 is out of range"});
  cases.push_back({{.op_type = "QuantizeLinear",
                    .opset = 21,
                    .inputs = {{"x", x}, {"s", Tensor::from<float>({2, 1}, {1, 1})}},
                    .attributes = {attr("axis", 1), attr("block_size", 2)}},
                   "it must be 2 along dim 1"});
  cases.push_back({{.op_type = "DequantizeLinear",
                    .opset = 13,
                    .inputs = {{"x", Tensor::from<int8_t>({2}, {1, 2})},
                               {"s", Tensor::from<float>({}, {1})},
                               {"z", Tensor::from<uint8_t>({}, {0})}}},
                   "x_zero_point is uint8 but x is int8"});
  cases.push_back({{.op_type = "DequantizeLinear",
                    .opset = 13,
                    .inputs = {{"x", Tensor::from<float>({2}, {1, 2})}, {"s", Tensor::from<float>({}, {1})}}},
                   "input x must be"});
  for (const Case& c : cases) {
    auto out = try_run_node(c.spec);
    ASSERT_FALSE(out.ok()) << c.needle;
    EXPECT_NE(out.error().message().find(c.needle), std::string::npos) << out.error().message();
  }
}

TEST(Quantization, DynamicQuantizeIncludesZeroInTheRange) {
  // Range [0, 5.1]: scale 0.02, zero point 0.
  auto out = run_node({.op_type = "DynamicQuantizeLinear",
                       .opset = 11,
                       .inputs = {{"x", Tensor::from<float>({3}, {1, 2.56f, 5.1f})}},
                       .num_outputs = 3});
  expect_tensor_near(out[1].tensor(), Tensor::from<float>({}, {0.02f}));
  expect_tensor_near(out[2].tensor(), Tensor::from<uint8_t>({}, {0}));
  expect_tensor_near(out[0].tensor(), Tensor::from<uint8_t>({3}, {50, 128, 255}));
  // Range [-2.55, 0]: scale 0.01, zero point 255.
  out = run_node({.op_type = "DynamicQuantizeLinear",
                  .opset = 11,
                  .inputs = {{"x", Tensor::from<float>({2}, {-2.55f, -1.001f})}},
                  .num_outputs = 3});
  expect_tensor_near(out[1].tensor(), Tensor::from<float>({}, {0.01f}));
  expect_tensor_near(out[2].tensor(), Tensor::from<uint8_t>({}, {255}));
  expect_tensor_near(out[0].tensor(), Tensor::from<uint8_t>({2}, {0, 155}));
  // All zeros: no range, everything 0.
  out = run_node(
      {.op_type = "DynamicQuantizeLinear", .opset = 11, .inputs = {{"x", Tensor::from<float>({2}, {0, 0})}}, .num_outputs = 3});
  expect_tensor_near(out[0].tensor(), Tensor::from<uint8_t>({2}, {0, 0}));
  expect_tensor_near(out[1].tensor(), Tensor::from<float>({}, {0}));
}

TEST(Quantization, QLinearMatMulRequantizesPerRowAndColumn) {
  auto a = Tensor::from<uint8_t>({2, 2}, {12, 14, 20, 10});  // minus 10: [[2,4],[10,0]]
  auto b = Tensor::from<int8_t>({2, 2}, {1, 3, 2, 5});
  // Real products: row 0 [10, 26], row 1 [10, 30]; a_scale 0.5, b_scale
  // per column [1, 2], y_scale 1 -> [5, 26], [5, 30]; y zero point 100.
  auto out = run_node({.op_type = "QLinearMatMul",
                       .opset = 10,
                       .inputs = {{"a", a},
                                  {"sa", Tensor::from<float>({}, {0.5f})},
                                  {"za", Tensor::from<uint8_t>({}, {10})},
                                  {"b", b},
                                  {"sb", Tensor::from<float>({2}, {1, 2})},
                                  {"zb", Tensor::from<int8_t>({}, {0})},
                                  {"sy", Tensor::from<float>({}, {1})},
                                  {"zy", Tensor::from<uint8_t>({}, {100})}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<uint8_t>({2, 2}, {105, 126, 105, 130}));
  auto bad = try_run_node({.op_type = "QLinearMatMul",
                           .opset = 10,
                           .inputs = {{"a", a},
                                      {"sa", Tensor::from<float>({3}, {1, 1, 1})},
                                      {"za", Tensor::from<uint8_t>({}, {10})},
                                      {"b", b},
                                      {"sb", Tensor::from<float>({}, {1})},
                                      {"zb", Tensor::from<int8_t>({}, {0})},
                                      {"sy", Tensor::from<float>({}, {1})},
                                      {"zy", Tensor::from<uint8_t>({}, {100})}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("a_scale"), std::string::npos) << bad.error().message();
}

struct ConvCase {
  runtime::Shape x, w;
  std::vector<int64_t> strides, dilations, pads;
  int64_t group = 1;
  std::string auto_pad = "NOTSET";
};

// The integer convolution by its definition: every output, every tap, the
// input read through explicit bounds checks (padding holds the zero point).
std::vector<int32_t> naive_conv(const ConvCase& c, const std::vector<uint8_t>& x, int32_t xz, const std::vector<int8_t>& w,
                                const std::vector<int32_t>& wz, runtime::Shape& out_shape) {
  const size_t sp = c.x.size() - 2;
  std::vector<int64_t> out(sp), begin(sp);
  for (size_t d = 0; d < sp; ++d) {
    const int64_t extent = (c.w[d + 2] - 1) * c.dilations[d] + 1;
    if (c.auto_pad == "SAME_UPPER") {
      out[d] = (c.x[d + 2] + c.strides[d] - 1) / c.strides[d];
      const int64_t total = std::max<int64_t>(0, (out[d] - 1) * c.strides[d] + extent - c.x[d + 2]);
      begin[d] = total / 2;
    } else {
      begin[d] = c.pads[d];
      out[d] = (c.x[d + 2] + c.pads[d] + c.pads[d + sp] - extent) / c.strides[d] + 1;
    }
  }
  out_shape = {c.x[0], c.w[0]};
  out_shape.insert(out_shape.end(), out.begin(), out.end());
  const int64_t cg = c.w[1], mg = c.w[0] / c.group;
  const int64_t out_size = runtime::shape_size(out), k_size = runtime::shape_size({c.w.begin() + 2, c.w.end()});
  const int64_t in_size = runtime::shape_size({c.x.begin() + 2, c.x.end()});
  std::vector<int32_t> y(static_cast<size_t>(c.x[0] * c.w[0] * out_size), 0);
  for (int64_t n = 0; n < c.x[0]; ++n)
    for (int64_t m = 0; m < c.w[0]; ++m)
      for (int64_t o = 0; o < out_size; ++o) {
        int32_t sum = 0;
        for (int64_t ci = 0; ci < cg; ++ci)
          for (int64_t t = 0; t < k_size; ++t) {
            int64_t offset = 0, orest = o, trest = t;
            bool inside = true;
            std::vector<int64_t> oi(sp), ti(sp);
            for (size_t d = sp; d-- > 0;) {
              oi[d] = orest % out[d], orest /= out[d];
              ti[d] = trest % c.w[d + 2], trest /= c.w[d + 2];
            }
            for (size_t d = 0; d < sp; ++d) {
              const int64_t i = oi[d] * c.strides[d] + ti[d] * c.dilations[d] - begin[d];
              inside = inside && i >= 0 && i < c.x[d + 2];
              offset = offset * c.x[d + 2] + i;
            }
            if (!inside) continue;
            const int64_t channel = (m / mg) * cg + ci;
            const int32_t xv = x[(n * c.x[1] + channel) * in_size + offset] - xz;
            const int32_t wv = w[(m * cg + ci) * k_size + t] - wz[wz.size() == 1 ? 0 : m];
            sum += xv * wv;
          }
        y[(n * c.w[0] + m) * out_size + o] = sum;
      }
  return y;
}

TEST(Quantization, ConvIntegerMatchesNaiveLoop) {
  std::mt19937 gen(5);
  const std::vector<ConvCase> cases = {
      {{1, 2, 7}, {3, 2, 3}, {2}, {1}, {1, 2}},                                       // 1-D, stride 2
      {{2, 4, 9, 8}, {6, 2, 3, 2}, {1, 2}, {2, 1}, {1, 0, 2, 1}, 2},                  // groups, dilation
      {{1, 3, 10, 11}, {4, 3, 3, 3}, {2, 3}, {1, 1}, {0, 0, 0, 0}, 1, "SAME_UPPER"},  // auto_pad
      {{1, 2, 4, 5, 6}, {2, 2, 2, 3, 2}, {1, 2, 1}, {1, 1, 2}, {1, 0, 1, 0, 1, 1}},   // 3-D
      {{1, 16, 40, 40}, {32, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},                // big enough for threads
  };
  for (const ConvCase& c : cases) {
    std::vector<uint8_t> x(static_cast<size_t>(runtime::shape_size(c.x)));
    std::vector<int8_t> w(static_cast<size_t>(runtime::shape_size(c.w)));
    for (auto& v : x) v = static_cast<uint8_t>(gen() % 256);
    for (auto& v : w) v = static_cast<int8_t>(static_cast<int>(gen() % 256) - 128);
    std::vector<int8_t> wz_values(static_cast<size_t>(c.w[0]));
    for (auto& v : wz_values) v = static_cast<int8_t>(static_cast<int>(gen() % 11) - 5);
    const std::vector<int32_t> wz(wz_values.begin(), wz_values.end());
    runtime::Shape out_shape;
    const auto expected = naive_conv(c, x, 7, w, wz, out_shape);
    std::vector<onnx::AttributeProto> attributes = {attr("strides", c.strides), attr("dilations", c.dilations),
                                                    attr("group", c.group), attr("auto_pad", c.auto_pad)};
    if (c.auto_pad == "NOTSET") attributes.push_back(attr("pads", c.pads));
    for (int threads : {1, 2}) {
      auto out = run_node({.op_type = "ConvInteger",
                           .opset = 10,
                           .inputs = {{"x", Tensor::from<uint8_t>(c.x, x)},
                                      {"w", Tensor::from<int8_t>(c.w, w)},
                                      {"xz", Tensor::from<uint8_t>({}, {7})},
                                      {"wz", Tensor::from<int8_t>({c.w[0]}, wz_values)}},
                           .attributes = attributes,
                           .threads = threads});
      expect_tensor_near(out[0].tensor(), Tensor::from<int32_t>(out_shape, expected));
    }
  }
}

TEST(Quantization, QLinearConvAddsBiasAndRequantizes) {
  // One 2x2 input, one 1x1 kernel per map: y = x - 2 scaled.
  auto x = Tensor::from<uint8_t>({1, 1, 2, 2}, {2, 3, 4, 10});
  auto w = Tensor::from<int8_t>({2, 1, 1, 1}, {1, -2});
  auto out = run_node({.op_type = "QLinearConv",
                       .opset = 10,
                       .inputs = {{"x", x},
                                  {"sx", Tensor::from<float>({}, {0.5f})},
                                  {"zx", Tensor::from<uint8_t>({}, {2})},
                                  {"w", w},
                                  {"sw", Tensor::from<float>({2}, {1, 0.25f})},
                                  {"zw", Tensor::from<int8_t>({}, {0})},
                                  {"sy", Tensor::from<float>({}, {1})},
                                  {"zy", Tensor::from<int8_t>({}, {-10})},
                                  {"b", Tensor::from<int32_t>({2}, {4, 0})}}});
  // Map 0: (x-2+4)*0.5 = [2, 2.5, 3, 6] -> [2, 2, 3, 6] - 10.
  // Map 1: (x-2)*-2*0.125 = [0, -0.25, -0.5, -2] -> [0, 0, -0, -2] - 10.
  expect_tensor_near(out[0].tensor(), Tensor::from<int8_t>({1, 2, 2, 2}, {-8, -8, -7, -4, -10, -10, -10, -12}));
}

TEST(Quantization, BadConvolutionsAreErrors) {
  auto x = Tensor::from<uint8_t>({1, 4, 3, 3}, std::vector<uint8_t>(36, 1));
  struct Case {
    Tensor w;
    std::vector<onnx::AttributeProto> attributes;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {Tensor::from<uint8_t>({2, 3, 1, 1}, std::vector<uint8_t>(6, 1)), {}, "has 4 channels"},
      {Tensor::from<uint8_t>({3, 2, 1, 1}, std::vector<uint8_t>(6, 1)), {attr("group", 2)}, "not a multiple of group"},
      {Tensor::from<uint8_t>({1, 4, 5, 5}, std::vector<uint8_t>(100, 1)), {}, "does not fit"},
      {Tensor::from<uint8_t>({1, 4, 1, 1}, std::vector<uint8_t>(4, 1)),
       {attr("strides", std::vector<int64_t>{1})},
       "attribute strides has 1 values"},
      {Tensor::from<uint8_t>({1, 4, 1}, std::vector<uint8_t>(4, 1)), {}, "same rank"},
      {Tensor::from<uint8_t>({1, 4, 1, 1}, std::vector<uint8_t>(4, 1)),
       {attr("pads", std::vector<int64_t>{int64_t(1) << 40, 0, 0, 0})},
       "attribute pads has"},
      {Tensor::from<uint8_t>({1, 4, 1, 1}, std::vector<uint8_t>(4, 1)), {attr("auto_pad", "SAME")}, "auto_pad 'SAME'"},
  };
  for (const Case& c : cases) {
    auto out =
        try_run_node({.op_type = "ConvInteger", .opset = 10, .inputs = {{"x", x}, {"w", c.w}}, .attributes = c.attributes});
    ASSERT_FALSE(out.ok()) << c.needle;
    EXPECT_NE(out.error().message().find(c.needle), std::string::npos) << out.error().message();
  }
}

TEST(Quantization, QuantizeToFloat8RoundsToNearestEvenAndSaturates) {
  // x / 2 = 0.5, 1.5, 1.0625 (an E4M3 tie, to 1.0), 500, -500, 1e5. Codes
  // hand-computed as in the Cast tests, and the same as onnx 1.23's
  // ReferenceEvaluator gives for QuantizeLinear-19. The float8 zero point (0)
  // only picks the output type.
  const auto x = Tensor::from<float>({6}, {1, 3, 2.125f, 1000, -1000, 2e5f});
  struct Case {
    DataType type;
    std::vector<uint8_t> saturated, unsaturated;
  };
  const std::vector<Case> cases = {
      {DataType::float8e4m3fn, {0x30, 0x3c, 0x38, 0x7e, 0xfe, 0x7e}, {0x30, 0x3c, 0x38, 0x7f, 0xff, 0x7f}},
      {DataType::float8e4m3fnuz, {0x38, 0x44, 0x40, 0x7f, 0xff, 0x7f}, {0x38, 0x44, 0x40, 0x80, 0x80, 0x80}},
      // 500 rounds to 512 here, in range.
      {DataType::float8e5m2, {0x38, 0x3e, 0x3c, 0x60, 0xe0, 0x7b}, {0x38, 0x3e, 0x3c, 0x60, 0xe0, 0x7c}},
      {DataType::float8e5m2fnuz, {0x3c, 0x42, 0x40, 0x64, 0xe4, 0x7f}, {0x3c, 0x42, 0x40, 0x64, 0xe4, 0x80}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(runtime::to_string(c.type));
    const std::vector<testing::NodeInput> inputs = {
        {"x", x}, {"s", Tensor::from<float>({}, {2})}, {"z", float8_tensor(c.type, {}, {0})}};
    auto saturated = run_node({.op_type = "QuantizeLinear", .opset = 19, .inputs = inputs});
    expect_tensor_near(saturated[0].tensor(), float8_tensor(c.type, {6}, c.saturated));
    auto unsaturated =
        run_node({.op_type = "QuantizeLinear", .opset = 19, .inputs = inputs, .attributes = {attr("saturate", 0)}});
    expect_tensor_near(unsaturated[0].tensor(), float8_tensor(c.type, {6}, c.unsaturated));
  }
}

TEST(Quantization, QuantizeToInt4RoundsThenSaturatesToFourBits) {
  // x / 2 = -10, -1.5, 0, 1.5, 2.5, 50 round (half to even) to -10, -2, 0,
  // 2, 2, 50; then the zero point, then [-8, 7] or [0, 15]. Hand-computed;
  // onnx 1.23's ReferenceEvaluator agrees.
  const auto x = Tensor::from<float>({6}, {-20, -3, 0, 3, 5, 100});
  const auto scale = Tensor::from<float>({}, {2});
  // The int4 zero point is an initializer: it comes through a packed TensorProto.
  auto out = run_node({.op_type = "QuantizeLinear",
                       .opset = 21,
                       .inputs = {{"x", x}, {"s", scale}, {"z", int4_tensor(DataType::int4, {}, {1}), true}}});
  expect_tensor_near(out[0].tensor(), int4_tensor(DataType::int4, {6}, {-8, -1, 1, 3, 3, 7}));
  out = run_node({.op_type = "QuantizeLinear",
                  .opset = 21,
                  .inputs = {{"x", x}, {"s", scale}, {"z", int4_tensor(DataType::uint4, {}, {8})}}});
  expect_tensor_near(out[0].tensor(), int4_tensor(DataType::uint4, {6}, {0, 6, 8, 10, 10, 15}));
  out = run_node({.op_type = "QuantizeLinear",
                  .opset = 21,
                  .inputs = {{"x", x}, {"s", scale}},
                  .attributes = {attr("output_dtype", static_cast<int64_t>(DataType::int4))}});
  expect_tensor_near(out[0].tensor(), int4_tensor(DataType::int4, {6}, {-8, -2, 0, 2, 2, 7}));
}

TEST(Quantization, DequantizeFloat8AndInt4) {
  // y = (x - zero point) * scale; float8 codes decoded by hand (as in the
  // Cast tests). onnx 1.23's ReferenceEvaluator agrees.
  const float nan = std::nanf("");
  struct Case {
    DataType type;
    std::vector<uint8_t> codes;
    std::vector<float> expected;  // at scale 0.5
  };
  const std::vector<Case> cases = {
      {DataType::float8e4m3fn, {0x38, 0x7e, 0xc0, 0x7f, 0x01}, {0.5f, 224, -1, nan, 0x1p-10f}},
      {DataType::float8e4m3fnuz, {0x40, 0x7f, 0xc0, 0x80, 0x01}, {0.5f, 120, -0.5f, nan, 0x1p-11f}},
      {DataType::float8e5m2, {0x3c, 0x7b, 0xc0, 0x7c, 0x01}, {0.5f, 28672, -1, std::numeric_limits<float>::infinity(), 0x1p-17f}},
      {DataType::float8e5m2fnuz, {0x40, 0x7f, 0xc0, 0x80, 0x01}, {0.5f, 28672, -0.5f, nan, 0x1p-18f}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(runtime::to_string(c.type));
    auto out = run_node({.op_type = "DequantizeLinear",
                         .opset = 19,
                         .inputs = {{"x", float8_tensor(c.type, {5}, c.codes)},
                                    {"s", Tensor::from<float>({}, {0.5f})},
                                    {"z", float8_tensor(c.type, {}, {0})}}});
    expect_tensor_near(out[0].tensor(), Tensor::from<float>({5}, c.expected), 0, 0);
  }
  auto out = run_node({.op_type = "DequantizeLinear",
                       .opset = 21,
                       .inputs = {{"x", int4_tensor(DataType::int4, {4}, {-8, -1, 0, 7})},
                                  {"s", Tensor::from<float>({}, {0.5f})},
                                  {"z", int4_tensor(DataType::int4, {}, {-1})}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({4}, {-3.5f, 0, 0.5f, 4}));
  out = run_node({.op_type = "DequantizeLinear",
                  .opset = 21,
                  .inputs = {{"x", int4_tensor(DataType::uint4, {3}, {0, 15, 8}), true},
                             {"s", Tensor::from<float>({}, {2})},
                             {"z", int4_tensor(DataType::uint4, {}, {8})}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({3}, {-16, 14, 0}));
}

TEST(Quantization, BlockedQuantizationToInt2AndBack) {
  // Blocks of 2 along axis 1: x / scale rounds half to even, adds the zero
  // point and saturates to [-2, 1]: 1 / 0.5 = 2 -> 1; -3 / 0.5 = -6 -> -2;
  // 0.4 -> 0, - 1 = -1; 2.6 -> 3, - 1 = 2 -> 1. Back: (q - z) * s.
  const auto x = Tensor::from<float>({1, 4}, {1, -3, 0.4f, 2.6f});
  const auto scale = Tensor::from<float>({1, 2}, {0.5f, 1});
  const auto zero = int4_tensor(DataType::int2, {1, 2}, {0, -1});
  auto q = run_node({.op_type = "QuantizeLinear",
                     .opset = 25,
                     .inputs = {{"x", x}, {"s", scale}, {"z", zero}},
                     .attributes = {attr("axis", int64_t{1}), attr("block_size", int64_t{2})}});
  expect_tensor_near(q[0].tensor(), int4_tensor(DataType::int2, {1, 4}, {1, -2, -1, 1}));
  auto dq = run_node({.op_type = "DequantizeLinear",
                      .opset = 25,
                      .inputs = {{"x", q[0].tensor()}, {"s", scale}, {"z", zero}},
                      .attributes = {attr("axis", int64_t{1}), attr("block_size", int64_t{2})}});
  expect_tensor_near(dq[0].tensor(), Tensor::from<float>({1, 4}, {0.5f, -1, 0, 2}), 0, 0);
  // uint2 per tensor: 7 / 2 = 3.5 -> 4 -> 3; 2.9 / 2 -> 1; -1 -> 0.
  q = run_node({.op_type = "QuantizeLinear",
                .opset = 25,
                .inputs = {{"x", Tensor::from<float>({3}, {7, 2.9f, -1})},
                           {"s", Tensor::from<float>({}, {2})},
                           {"z", int4_tensor(DataType::uint2, {}, {0})}}});
  expect_tensor_near(q[0].tensor(), int4_tensor(DataType::uint2, {3}, {3, 1, 0}));
}

TEST(Quantization, QuantizeToFloat4E2M1RoundsLikeCast) {
  // x / 2 = 0.5 (code 1), 2.5 (a tie: 2, code 4), -6.5 (beyond 6: -6, 0xf);
  // back at scale 2: 1, 4, -12.
  auto q = run_node({.op_type = "QuantizeLinear",
                     .opset = 23,
                     .inputs = {{"x", Tensor::from<float>({3}, {1, 5, -13})},
                                {"s", Tensor::from<float>({}, {2})},
                                {"z", float8_tensor(DataType::float4e2m1, {}, {0})}}});
  expect_tensor_near(q[0].tensor(), float8_tensor(DataType::float4e2m1, {3}, {0x1, 0x4, 0xf}));
  auto dq = run_node(
      {.op_type = "DequantizeLinear", .opset = 23, .inputs = {{"x", q[0].tensor()}, {"s", Tensor::from<float>({}, {2})}}});
  expect_tensor_near(dq[0].tensor(), Tensor::from<float>({3}, {1, 4, -12}), 0, 0);
  // E8M0 is a scale type, not a quantized one.
  auto bad = try_run_node({.op_type = "QuantizeLinear",
                           .opset = 25,
                           .inputs = {{"x", Tensor::from<float>({1}, {1})},
                                      {"s", Tensor::from<float>({}, {2})},
                                      {"z", float8_tensor(DataType::float8e8m0, {}, {127})}}});
  EXPECT_FALSE(bad.ok());
}

}  // namespace
}  // namespace onnxkit
