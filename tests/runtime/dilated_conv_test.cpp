// Dilated convolutions with wide pads, where oneDNN 2.6 has only its
// reference kernel for the blocked layout and onnxkit runs them on a
// channels-last copy or pads the input itself (kernels/nn/conv_padding.h),
// checked in both layouts, with weights prepacked and reordered per run,
// against a direct convolution in double precision written here, with a
// fused residual Add and Relu.

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "ir/model.h"
#include "runtime/session.h"
#include "runtime/tensor_proto.h"
#include "support/node_runner.h"
#include "support/test_support.h"

namespace onnxkit {
namespace {

using runtime::Tensor;

struct DilatedCase {
  int64_t c, m, h, w, dilation, stride;
  int64_t pads[4];  // top, left, bottom, right
};

Tensor normal_tensor(runtime::Shape shape, unsigned seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  Tensor t(runtime::DataType::float32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<float>()[i] = normal(rng);
  return t;
}

// relu(conv(x, w) + b + r), 3x3 kernel, batch 1, directly from the definition.
Tensor direct_conv(const DilatedCase& c, const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& r) {
  const int64_t ho = r.dim(2), wo = r.dim(3);
  Tensor y(runtime::DataType::float32, r.shape());
  for (int64_t m = 0; m < c.m; ++m)
    for (int64_t oy = 0; oy < ho; ++oy)
      for (int64_t ox = 0; ox < wo; ++ox) {
        double sum = b.data<float>()[m] + r.data<float>()[(m * ho + oy) * wo + ox];
        for (int64_t ch = 0; ch < c.c; ++ch)
          for (int64_t ky = 0; ky < 3; ++ky)
            for (int64_t kx = 0; kx < 3; ++kx) {
              const int64_t iy = oy * c.stride + ky * c.dilation - c.pads[0];
              const int64_t ix = ox * c.stride + kx * c.dilation - c.pads[1];
              if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
              sum += static_cast<double>(x.data<float>()[(ch * c.h + iy) * c.w + ix]) *
                     w.data<float>()[((m * c.c + ch) * 3 + ky) * 3 + kx];
            }
        y.mutable_data<float>()[(m * ho + oy) * wo + ox] = static_cast<float>(std::max(sum, 0.0));
      }
  return y;
}

void expect_matches_direct_conv(const DilatedCase& c) {
  const int64_t ho = (c.h + c.pads[0] + c.pads[2] - 2 * c.dilation - 1) / c.stride + 1;
  const int64_t wo = (c.w + c.pads[1] + c.pads[3] - 2 * c.dilation - 1) / c.stride + 1;
  const std::string text =
      fmt::format(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,{0},{2},{3}] x, float[1,{1},{4},{5}] r) => (float[1,{1},{4},{5}] y) {{
  c = Conv <kernel_shape = [3,3], dilations = [{6},{6}], strides = [{7},{7}], pads = [{8},{9},{10},{11}]> (x, w, b)
  a = Add(c, r)
  y = Relu(a)
}})",
                  c.c, c.m, c.h, c.w, ho, wo, c.dilation, c.stride, c.pads[0], c.pads[1], c.pads[2], c.pads[3]);
  onnx::ModelProto proto = testing::parse_model_text(text);
  const Tensor w = normal_tensor({c.m, c.c, 3, 3}, 1, 0.1f), b = normal_tensor({c.m}, 2, 0.5f);
  for (auto [name, t] : {std::pair{"w", &w}, std::pair{"b", &b}}) {
    onnx::TensorProto p = runtime::tensor_to_proto(*t);
    p.set_name(name);
    *proto.mutable_graph()->add_initializer() = std::move(p);
  }
  auto imported = ir::import_model(std::move(proto));
  ASSERT_TRUE(imported.ok()) << imported.error().message();
  std::shared_ptr<const ir::Model> model = std::move(imported).value();
  const Tensor x = normal_tensor({1, c.c, c.h, c.w}, 3, 1.0f), r = normal_tensor({1, c.m, ho, wo}, 4, 1.0f);
  const Tensor expected = direct_conv(c, x, w, b, r);
  for (auto [blocked_layout, prepack_weights] : {std::pair{true, true}, {false, true}, {true, false}, {false, false}}) {
    SCOPED_TRACE(fmt::format("{}, {}", blocked_layout ? "blocked" : "plain", prepack_weights ? "prepacked" : "per run"));
    auto session =
        runtime::Session::create(model, {.threads = 2, .blocked_layout = blocked_layout, .prepack_weights = prepack_weights});
    ASSERT_TRUE(session.ok()) << session.error().message();
    auto ours = (*session)->run({{"x", x}, {"r", r}});
    ASSERT_TRUE(ours.ok()) << ours.error().message();
    testing::expect_tensor_near((*ours)[0].tensor(), expected, 1e-4, 1e-4);
  }
}

// The channel counts and sizes are ones oneDNN 2.6 runs with ref:any in the
// blocked layout (ONEDNN_VERBOSE=1 shows it) unless the input is padded first.
TEST(BlockedLayout, DilatedConvWithWidePadsMatchesTheDefinition) {
  expect_matches_direct_conv({.c = 32, .m = 24, .h = 37, .w = 35, .dilation = 36, .stride = 1, .pads = {36, 35, 34, 37}});
  expect_matches_direct_conv({.c = 96, .m = 48, .h = 25, .w = 23, .dilation = 24, .stride = 1, .pads = {24, 23, 25, 24}});
}

TEST(BlockedLayout, StridedDilatedConvWithWidePadsMatchesTheDefinition) {
  expect_matches_direct_conv({.c = 32, .m = 32, .h = 37, .w = 35, .dilation = 36, .stride = 2, .pads = {35, 36, 37, 34}});
  expect_matches_direct_conv({.c = 24, .m = 40, .h = 37, .w = 35, .dilation = 36, .stride = 3, .pads = {36, 35, 34, 37}});
}

TEST(BlockedLayout, DilatedConvsOneDnnRunsItselfMatchTheDefinition) {
  expect_matches_direct_conv({.c = 32, .m = 32, .h = 17, .w = 19, .dilation = 2, .stride = 1, .pads = {2, 1, 3, 2}});
  expect_matches_direct_conv({.c = 48, .m = 32, .h = 21, .w = 23, .dilation = 6, .stride = 1, .pads = {6, 5, 4, 7}});
}

}  // namespace
}  // namespace onnxkit
