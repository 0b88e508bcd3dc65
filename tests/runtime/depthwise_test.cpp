// Depthwise convolution on blocked activations (kernels/nn/depthwise.h)
// against the direct sum of the convolution's definition, computed here in
// double: 3x3, 5x5 and 7x7 windows; channel counts that fill no block;
// maps of every width the row kernel splits differently (1..8 pixels, 7 x 7,
// odd widths past 8); pads symmetric, asymmetric, none and wider than the
// window; batches; the activations it takes; one and two threads. And the
// convolutions it must leave to oneDNN. Whole models through it: cli_run
// checks MobileNets, EfficientNet and ConvNeXt against PyTorch.

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>

#include "runtime/kernels/nn/blocked.h"
#include "runtime/kernels/nn/depthwise.h"
#include "support/test_support.h"

namespace onnxkit::runtime::nn {
namespace {

using testing::random_tensor;
using testing::to_blocked;
using Kind = FusedActivation::Kind;

struct Case {
  int64_t n, c, h, w, k;
  std::vector<int64_t> pads;  // top, left, bottom, right
  FusedActivation activation = {};
  bool bias = true;
  int threads = 1;
};

double activate(const FusedActivation& a, double v) {
  switch (a.kind) {
    case Kind::relu: return std::max(v, 0.0);
    case Kind::clip: return std::clamp(v, double(a.min), double(a.max));
    case Kind::swish: return v / (1 + std::exp(-v));
    case Kind::hard_swish: return v * std::clamp(v / 6 + 0.5, 0.0, 1.0);
    case Kind::hard_sigmoid: return std::clamp(double(a.alpha) * v + double(a.beta), 0.0, 1.0);
    default: return v;
  }
}

void expect_matches_direct_sum(const Case& k) {
  SCOPED_TRACE(::testing::Message() << "C " << k.c << ", " << k.h << " x " << k.w << ", K " << k.k << ", " << k.threads
                                    << " threads");
  const Tensor x = random_tensor({k.n, k.c, k.h, k.w}, 1);
  const Tensor w = random_tensor({k.c, 1, k.k, k.k}, 2);
  const Tensor b = random_tensor({k.c}, 3);
  ConvAttributes attrs;
  attrs.group = k.c;
  attrs.window.pads = k.pads;
  auto conv = DepthwiseConv::create(attrs, w, k.bias ? &b : nullptr, k.activation);
  if (conv == nullptr) GTEST_SKIP() << "this CPU has no AVX2 and FMA";
  auto params = make_conv_params(attrs, x.shape(), w.shape());
  ASSERT_TRUE(params.ok()) << params.error().message();
  ASSERT_TRUE(conv->fits(*params));
  // The output dims of a K x K window at stride 1, from the case itself.
  const int64_t oh = k.h + k.pads[0] + k.pads[2] - k.k + 1, ow = k.w + k.pads[1] + k.pads[3] - k.k + 1;
  ASSERT_EQ(params->window.out, (std::vector<int64_t>{oh, ow}));
  Tensor y(DataType::float32, blocked_shape(k.n, k.c, oh, ow));
  // Garbage where the padded channels are, which the kernel must overwrite with zeros.
  std::fill_n(y.mutable_data<float>(), y.numel(), 7.0f);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(k.threads);
  const Status status = conv->run(*params, to_blocked(x), y);
  omp_set_num_threads(threads);
  ASSERT_TRUE(status.ok()) << status.error().message();

  const int64_t block = channel_block(), blocks = y.dim(1);
  double worst = 0;
  for (int64_t i = 0; i < k.n; ++i)
    for (int64_t ch = 0; ch < blocks * block; ++ch)
      for (int64_t r = 0; r < oh; ++r)
        for (int64_t col = 0; col < ow; ++col) {
          const float got = y.data<float>()[(((i * blocks + ch / block) * oh + r) * ow + col) * block + ch % block];
          if (ch >= k.c) {
            ASSERT_EQ(got, 0.0f) << "padded channel " << ch;
            continue;
          }
          double sum = k.bias ? b.data<float>()[ch] : 0.0;
          for (int64_t u = 0; u < k.k; ++u)
            for (int64_t v = 0; v < k.k; ++v) {
              const int64_t hh = r - k.pads[0] + u, ww = col - k.pads[1] + v;
              if (hh < 0 || hh >= k.h || ww < 0 || ww >= k.w) continue;
              sum += double(x.data<float>()[((i * k.c + ch) * k.h + hh) * k.w + ww]) * w.data<float>()[(ch * k.k + u) * k.k + v];
            }
          worst = std::max(worst, std::abs(got - activate(k.activation, sum)));
        }
  // Sums of up to 49 products of values below 1, in float; the activations'
  // fast exp adds its own few ulps.
  EXPECT_LE(worst, 2e-6 * (k.k * k.k + 1));
}

TEST(Depthwise, EveryWindowAndRowWidth) {
  for (int64_t k : {3, 5, 7})
    for (int64_t width : {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 16, 21, 30}) {
      const int64_t pad = k / 2;
      expect_matches_direct_sum({.n = 1, .c = 21, .h = 9, .w = width, .k = k, .pads = {pad, pad, pad, pad}});
    }
}

TEST(Depthwise, AsymmetricMissingAndWidePads) {
  expect_matches_direct_sum({.n = 2, .c = 13, .h = 11, .w = 17, .k = 3, .pads = {0, 1, 2, 0}});
  expect_matches_direct_sum({.n = 1, .c = 8, .h = 12, .w = 12, .k = 5, .pads = {0, 0, 0, 0}, .bias = false});
  expect_matches_direct_sum({.n = 1, .c = 40, .h = 6, .w = 10, .k = 7, .pads = {5, 7, 4, 6}});  // rows of padding only
  expect_matches_direct_sum({.n = 1, .c = 3, .h = 2, .w = 3, .k = 5, .pads = {2, 2, 2, 2}});    // a window wider than the map
}

// Any activation zero at zero, HardSigmoid with beta 0 among them.
TEST(Depthwise, ActivationsZeroAtZero) {
  for (FusedActivation a : {FusedActivation{.kind = Kind::relu}, FusedActivation{.kind = Kind::clip, .min = -0.5f, .max = 0.25f},
                            FusedActivation{.kind = Kind::swish}, FusedActivation{.kind = Kind::hard_swish},
                            FusedActivation{.kind = Kind::hard_sigmoid, .alpha = 0.2f, .beta = 0.0f}})
    expect_matches_direct_sum({.n = 1, .c = 20, .h = 14, .w = 14, .k = 5, .pads = {2, 2, 2, 2}, .activation = a});
}

// Enough rows for both threads, their ranges cutting planes (and batches) in the middle.
TEST(Depthwise, TwoThreads) {
  expect_matches_direct_sum({.n = 1, .c = 32, .h = 56, .w = 56, .k = 3, .pads = {1, 1, 1, 1}, .threads = 2});
  expect_matches_direct_sum(
      {.n = 3, .c = 9, .h = 29, .w = 31, .k = 7, .pads = {3, 3, 3, 3}, .activation = {.kind = Kind::swish}, .threads = 2});
}

// Relu and Clip bound the sums in registers: max(0, NaN) must stay NaN,
// as in the other paths and ONNX's Relu.
TEST(Depthwise, ANanGoesThroughReluAndClip) {
  const Tensor w = random_tensor({8, 1, 3, 3}, 1);
  ConvAttributes attrs;
  attrs.group = 8;
  attrs.window.pads = {1, 1, 1, 1};
  for (FusedActivation a : {FusedActivation{.kind = Kind::relu}, FusedActivation{.kind = Kind::clip, .min = 0.0f, .max = 6.0f}}) {
    auto conv = DepthwiseConv::create(attrs, w, nullptr, a);
    if (conv == nullptr) GTEST_SKIP() << "this CPU has no AVX2 and FMA";
    auto p = make_conv_params(attrs, {1, 8, 6, 6}, w.shape());
    ASSERT_TRUE(p.ok());
    Tensor x = random_tensor({1, 8, 6, 6}, 2);
    x.mutable_data<float>()[0] = std::nanf("");  // channel 0, pixel (0, 0)
    Tensor y(DataType::float32, blocked_shape(1, 8, 6, 6));
    ASSERT_TRUE(conv->run(*p, to_blocked(x), y).ok());
    const int64_t block = channel_block();
    for (int64_t r = 0; r < 6; ++r)
      for (int64_t col = 0; col < 6; ++col) {
        const float got = y.data<float>()[(r * 6 + col) * block];  // channel 0
        EXPECT_EQ(std::isnan(got), r <= 1 && col <= 1) << "pixel " << r << ", " << col;
      }
  }
}

TEST(Depthwise, LeavesOtherConvolutionsToOneDnn) {
  const Tensor w = random_tensor({8, 1, 3, 3}, 1);
  ConvAttributes attrs;
  attrs.group = 8;
  attrs.window.pads = {1, 1, 1, 1};
  if (DepthwiseConv::create(attrs, w, nullptr, {}) == nullptr) GTEST_SKIP() << "this CPU has no AVX2 and FMA";
  auto refused = [&](ConvAttributes a, const Tensor& weights, FusedActivation activation = {}) {
    return DepthwiseConv::create(a, weights, nullptr, activation) == nullptr;
  };
  ConvAttributes strided = attrs;
  strided.window.strides = {2, 2};
  EXPECT_TRUE(refused(strided, w));
  ConvAttributes dilated = attrs;
  dilated.window.dilations = {2, 2};
  EXPECT_TRUE(refused(dilated, w));
  ConvAttributes grouped = attrs;
  grouped.group = 4;  // two channels per group
  EXPECT_TRUE(refused(grouped, random_tensor({8, 2, 3, 3}, 2)));
  EXPECT_TRUE(refused(attrs, random_tensor({8, 1, 4, 4}, 3)));
  EXPECT_TRUE(refused(attrs, random_tensor({8, 1, 3, 5}, 4)));
  // Not zero at zero: the padded channels would not stay zero.
  EXPECT_TRUE(refused(attrs, w, {.kind = Kind::sigmoid}));
  EXPECT_TRUE(refused(attrs, w, {.kind = Kind::clip, .min = 0.5f, .max = 6.0f}));
  EXPECT_TRUE(refused(attrs, w, {.kind = Kind::relu, .add_residual = true}));
}

TEST(Depthwise, AnotherShapeIsAnError) {
  const Tensor w = random_tensor({8, 1, 3, 3}, 1);
  ConvAttributes attrs;
  attrs.group = 8;
  attrs.window.pads = {1, 1, 1, 1};
  auto conv = DepthwiseConv::create(attrs, w, nullptr, {});
  if (conv == nullptr) GTEST_SKIP() << "this CPU has no AVX2 and FMA";
  auto p = make_conv_params(attrs, {1, 8, 6, 6}, w.shape());
  ASSERT_TRUE(p.ok());
  Tensor y(DataType::float32, blocked_shape(1, 8, 6, 6));
  EXPECT_FALSE(conv->run(*p, to_blocked(random_tensor({1, 8, 6, 5}, 2)), y).ok());
  Tensor wrong_y(DataType::float32, blocked_shape(1, 8, 6, 5));
  EXPECT_FALSE(conv->run(*p, to_blocked(random_tensor({1, 8, 6, 6}, 2)), wrong_y).ok());
}

}  // namespace
}  // namespace onnxkit::runtime::nn
