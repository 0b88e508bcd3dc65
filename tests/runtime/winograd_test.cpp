// Winograd F(2x2, 3x3) convolution (kernels/nn/winograd.h) against the
// direct sum of the convolution's definition, computed here in double: odd
// output sizes (tiles cut by the edge), asymmetric pads, dilations, channel counts that
// fill neither a block (8 or 16) nor a panel of 16, bias, residual, activations
// that would not keep padded channels zero, and enough tiles for several
// chunks. Whole models through it: cli_run checks resnet18/50 against PyTorch.

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <string>

#include "runtime/kernels/nn/blocked.h"
#include "runtime/kernels/nn/winograd.h"
#include "support/test_support.h"

namespace onnxkit::runtime::nn {
namespace {

using testing::random_tensor;
using testing::to_blocked;

struct Case {
  int64_t n, c, m, h, w;
  std::vector<int64_t> pads;  // top, left, bottom, right
  FusedActivation activation;
  bool bias;  // the residual is there when activation.add_residual is
  std::vector<int64_t> dilations = {1, 1};
  int64_t groups = 1;  // c and m are the totals
};

void expect_matches_direct_sum(const Case& k) {
  const Tensor x = random_tensor({k.n, k.c, k.h, k.w}, 1);
  const int64_t group_in = k.c / k.groups, group_out = k.m / k.groups;
  const Tensor w = random_tensor({k.m, group_in, 3, 3}, 2);
  const Tensor b = random_tensor({k.m}, 3);
  ConvAttributes attrs;
  attrs.window.pads = k.pads;
  attrs.window.dilations = k.dilations;
  attrs.group = k.groups;
  auto conv = WinogradConv::create(attrs, w, k.bias ? &b : nullptr, k.activation);
  if (conv == nullptr && k.groups > 1 && channel_block() != 8) GTEST_SKIP() << "grouped runs where blocks are 8 channels";
  if (conv == nullptr) GTEST_SKIP() << "this CPU has no AVX2 and FMA";
  auto params = make_conv_params(attrs, x.shape(), w.shape());
  ASSERT_TRUE(params.ok()) << params.error().message();
  const ConvParams& p = *params;
  // The output dims of a 3 x 3 window at stride 1, from the case itself.
  const int64_t dh = k.dilations[0], dw = k.dilations[1];
  const int64_t oh = k.h + k.pads[0] + k.pads[2] - 2 * dh, ow = k.w + k.pads[1] + k.pads[3] - 2 * dw;
  ASSERT_EQ(p.window.out[0], oh);
  ASSERT_EQ(p.window.out[1], ow);
  const Tensor residual = random_tensor({k.n, k.m, oh, ow}, 4);
  const Tensor residual_blocked = to_blocked(residual);
  Tensor y(DataType::float32, blocked_shape(k.n, k.m, oh, ow));
  // Garbage where the padded channels are, which the kernel must overwrite with zeros.
  std::fill_n(y.mutable_data<float>(), y.numel(), 7.0f);
  ASSERT_TRUE(conv->run(p, to_blocked(x), y, k.activation.add_residual ? &residual_blocked : nullptr).ok());

  const int64_t blocks = y.dim(1);
  double worst = 0;
  for (int64_t i = 0; i < k.n; ++i)
    for (int64_t mb = 0; mb < blocks * channel_block(); ++mb)
      for (int64_t r = 0; r < oh; ++r)
        for (int64_t col = 0; col < ow; ++col) {
          const float got = y.data<float>()[((i * blocks + mb / channel_block()) * oh + r) * ow * channel_block() +
                                            col * channel_block() + mb % channel_block()];
          if (mb >= k.m) {
            ASSERT_EQ(got, 0.0f) << "padded channel " << mb;
            continue;
          }
          double sum = k.bias ? b.data<float>()[mb] : 0.0;
          const int64_t first = mb / group_out * group_in;
          for (int64_t ch = first; ch < first + group_in; ++ch)
            for (int64_t u = 0; u < 3; ++u)
              for (int64_t v = 0; v < 3; ++v) {
                const int64_t hh = r - k.pads[0] + u * dh, ww = col - k.pads[1] + v * dw;
                if (hh < 0 || hh >= k.h || ww < 0 || ww >= k.w) continue;
                sum += double(x.data<float>()[((i * k.c + ch) * k.h + hh) * k.w + ww]) *
                       w.data<float>()[((mb * group_in + ch - first) * 3 + u) * 3 + v];
              }
          if (k.activation.add_residual) sum += residual.data<float>()[((i * k.m + mb) * oh + r) * ow + col];
          if (k.activation.kind == FusedActivation::Kind::relu) sum = std::max(sum, 0.0);
          if (k.activation.kind == FusedActivation::Kind::clip)
            sum = std::min(std::max(sum, double(k.activation.min)), double(k.activation.max));
          if (k.activation.kind == FusedActivation::Kind::swish) sum = sum / (1 + std::exp(-sum));
          if (k.activation.kind == FusedActivation::Kind::hard_swish) sum = sum * std::clamp(sum / 6 + 0.5, 0.0, 1.0);
          worst = std::max(worst, std::abs(got - sum));
        }
  // Sums of up to 9 * c products of values below 1: float rounding through
  // the transforms stays well inside this.
  EXPECT_LE(worst, 2e-5 * 9 * group_in);
}

TEST(Winograd, OddSizesAsymmetricPadsAndPartialChannelBlocks) {
  // 10 x 12 in, pads 1, 0, 2, 1: 11 x 11 out, the last tile row and column cut.
  expect_matches_direct_sum({.n = 2, .c = 13, .m = 21, .h = 10, .w = 12, .pads = {1, 0, 2, 1}, .bias = true});
}

TEST(Winograd, NoPadsAndNoBias) { expect_matches_direct_sum({.n = 1, .c = 8, .m = 16, .h = 12, .w = 7, .pads = {0, 0, 0, 0}}); }

TEST(Winograd, ResidualThenReluAsOneStep) {
  FusedActivation relu{.kind = FusedActivation::Kind::relu, .add_residual = true};
  expect_matches_direct_sum({.n = 1, .c = 24, .m = 40, .h = 14, .w = 14, .pads = {1, 1, 1, 1}, .activation = relu, .bias = true});
}

TEST(Winograd, ClipAboveZeroLeavesPaddedChannelsZero) {
  FusedActivation clip{.kind = FusedActivation::Kind::clip, .min = 0.25f, .max = 0.75f};
  expect_matches_direct_sum({.n = 1, .c = 5, .m = 3, .h = 8, .w = 8, .pads = {1, 1, 1, 1}, .activation = clip, .bias = true});
}

void expect_matches_direct_sum_on_two_threads(const Case& k) {
  const int threads = omp_get_max_threads();
  omp_set_num_threads(2);
  expect_matches_direct_sum(k);
  omp_set_num_threads(threads);
}

// YOLO's SiLU and MobileNetV3's HardSwish follow the transform in a pass
// over the output; padded channels stay zero. Enough tiles for both threads.
TEST(Winograd, SwishAndHardSwishAfterTheTransform) {
  for (FusedActivation::Kind kind : {FusedActivation::Kind::swish, FusedActivation::Kind::hard_swish}) {
    const Case k{.n = 1, .c = 16, .m = 20, .h = 40, .w = 38, .pads = {1, 1, 1, 1}, .activation = {.kind = kind}, .bias = true};
    expect_matches_direct_sum(k);
    expect_matches_direct_sum_on_two_threads(k);
  }
}

TEST(Winograd, ManyTilesRunInSeveralChunksOnTwoThreads) {
  // 47 x 47 outputs: 576 tiles of 2 x 2, over the tiles one chunk of 16 + 16
  // channels holds; two chunks, so the two threads share every step.
  expect_matches_direct_sum_on_two_threads({.n = 1, .c = 16, .m = 16, .h = 47, .w = 47, .pads = {1, 1, 1, 1}, .bias = true});
}

TEST(Winograd, ManyChunksGoWholeToEachOfTwoThreads) {
  // 46 x 46 outputs of 64 channels: 529 tiles, several chunks for each thread.
  FusedActivation relu{.kind = FusedActivation::Kind::relu, .add_residual = true};
  expect_matches_direct_sum_on_two_threads(
      {.n = 1, .c = 64, .m = 60, .h = 46, .w = 46, .pads = {1, 1, 1, 1}, .activation = relu, .bias = true});
}

TEST(Winograd, ABatchWithAResidualGoesWholeToEachOfTwoThreads) {
  FusedActivation relu{.kind = FusedActivation::Kind::relu, .add_residual = true};
  expect_matches_direct_sum_on_two_threads(
      {.n = 3, .c = 32, .m = 24, .h = 33, .w = 31, .pads = {1, 1, 1, 1}, .activation = relu, .bias = true});
}

// RegNet's grouped 3x3s: groups of 24 channels, each its own products on
// panels of 24 columns; a group's input and output channels start mid-way
// through the blocked tensors' blocks of 16 where blocks are 16 (skipped:
// oneDNN runs those).
TEST(Winograd, GroupsOf24AsInRegNet) {
  FusedActivation relu{.kind = FusedActivation::Kind::relu};
  const Case k{.n = 1, .c = 72, .m = 72, .h = 14, .w = 14, .pads = {1, 1, 1, 1}, .activation = relu, .bias = true, .groups = 3};
  expect_matches_direct_sum(k);
  expect_matches_direct_sum_on_two_threads(k);
}

TEST(Winograd, GroupsWithMoreOutputsThanInputsAndAResidualOnTwoThreads) {
  // Two groups of 8 -> 24 channels on 41 x 43 outputs (462 tiles), several
  // chunks per group shared between the threads; the batch of two.
  FusedActivation relu{.kind = FusedActivation::Kind::relu, .add_residual = true};
  expect_matches_direct_sum_on_two_threads(
      {.n = 2, .c = 16, .m = 48, .h = 41, .w = 43, .pads = {1, 1, 1, 1}, .activation = relu, .bias = true, .groups = 2});
}

TEST(Winograd, ManyGroupsOnASmallMapGoWholeToEachThread) {
  // RegNet's last stage in small: 7 groups of 24 on 7 x 9 outputs, one
  // chunk each; no pads on the rows, dilated 2.
  expect_matches_direct_sum_on_two_threads(
      {.n = 1, .c = 168, .m = 168, .h = 11, .w = 9, .pads = {0, 1, 0, 1}, .bias = true, .dilations = {2, 1}, .groups = 7});
}

TEST(Winograd, DilatedTilesPairOutputsTwoApart) {
  // Dilation 2 on 12 x 12 outputs: runs of 4 rows and columns, whole.
  expect_matches_direct_sum(
      {.n = 1, .c = 13, .m = 21, .h = 12, .w = 12, .pads = {2, 2, 2, 2}, .bias = true, .dilations = {2, 2}});
}

TEST(Winograd, DilatedRunsCutByTheEdgeAndUnevenDilations) {
  // 17 x 15 outputs at dilations 4 and 3: the last run of 8 rows has one
  // output, the last run of 6 columns three (tiles with their second output
  // past the edge); asymmetric pads.
  FusedActivation relu{.kind = FusedActivation::Kind::relu, .add_residual = true};
  expect_matches_direct_sum(
      {.n = 2, .c = 16, .m = 20, .h = 20, .w = 19, .pads = {3, 1, 2, 1}, .activation = relu, .bias = true, .dilations = {4, 3}});
}

TEST(Winograd, DilatedManyChunksOnTwoThreads) {
  // DeepLabV3's ResNet layer 4 in small: dilation 4 on 28 x 28, 64 channels.
  expect_matches_direct_sum_on_two_threads(
      {.n = 1, .c = 64, .m = 48, .h = 28, .w = 28, .pads = {4, 4, 4, 4}, .bias = true, .dilations = {4, 4}});
}

TEST(Winograd, DilatedPaysOffOnlyWithFewUnusedOutputs) {
  const Tensor w = random_tensor({64, 64, 3, 3}, 1);
  ConvAttributes attrs;
  attrs.window.pads = {4, 4, 4, 4};
  attrs.window.dilations = {4, 4};
  auto conv = WinogradConv::create(attrs, w, nullptr, {});
  if (conv == nullptr) GTEST_SKIP() << "this CPU has no AVX2 and FMA";
  auto params = [&](int64_t size) { return make_conv_params(attrs, {1, 64, size, size}, w.shape()).value(); };
  EXPECT_TRUE(conv->pays_off(params(28)));   // 16 >= 4 x 4 outputs per axis
  EXPECT_FALSE(conv->pays_off(params(15)));  // up to 4 of every 15 outputs unused
}

TEST(Winograd, ANanGoesThroughReluAsInTheOtherPaths) {
  const Tensor w = random_tensor({8, 8, 3, 3}, 1);
  ConvAttributes attrs;
  attrs.window.pads = {1, 1, 1, 1};
  auto conv = WinogradConv::create(attrs, w, nullptr, {.kind = FusedActivation::Kind::relu});
  if (conv == nullptr) GTEST_SKIP() << "this CPU has no AVX2 and FMA";
  auto p = make_conv_params(attrs, {1, 8, 8, 8}, w.shape());
  ASSERT_TRUE(p.ok());
  Tensor x = random_tensor({1, 8, 8, 8}, 2);
  x.mutable_data<float>()[0] = std::nanf("");  // channel 0, pixel (0, 0)
  Tensor y(DataType::float32, blocked_shape(1, 8, 8, 8));
  ASSERT_TRUE(conv->run(*p, to_blocked(x), y, nullptr).ok());
  // Pixel (0, 0) of output channel 0 reads it; pixel (7, 7) does not.
  EXPECT_TRUE(std::isnan(y.data<float>()[0]));
  EXPECT_FALSE(std::isnan(y.data<float>()[(7 * 8 + 7) * channel_block()]));
}

TEST(Winograd, RefusesTensorsOfOtherShapes) {
  const Tensor w = random_tensor({16, 8, 3, 3}, 1);
  ConvAttributes attrs;
  attrs.window.pads = {1, 1, 1, 1};
  auto conv = WinogradConv::create(attrs, w, nullptr, {});
  if (conv == nullptr) GTEST_SKIP() << "this CPU has no AVX2 and FMA";
  auto p = make_conv_params(attrs, {1, 8, 6, 6}, w.shape());
  ASSERT_TRUE(p.ok());
  Tensor x(DataType::float32, blocked_shape(1, 8, 6, 6)), wrong_y(DataType::float32, blocked_shape(1, 16, 5, 6));
  auto status = conv->run(*p, x, wrong_y, nullptr);
  ASSERT_FALSE(status.ok());
  // The expected output, 16 channels of 6 x 6, as one block of 16 or two of 8.
  const std::string expected_y = channel_block() == 16 ? "[1,1,6,6,16]" : "[1,2,6,6,8]";
  EXPECT_NE(status.error().message().find(expected_y), std::string::npos) << status.error().message();
}

TEST(Winograd, DeclinesWhatItDoesNotCompute) {
  const Tensor w3 = random_tensor({4, 4, 3, 3}, 1), w5 = random_tensor({4, 4, 5, 5}, 1);
  ConvAttributes strided;
  strided.window.strides = {2, 2};
  ConvAttributes grouped;
  grouped.group = 2;
  EXPECT_EQ(WinogradConv::create(strided, w3, nullptr, {}), nullptr);
  // Groups of 2 input channels would share registers.
  EXPECT_EQ(WinogradConv::create(grouped, random_tensor({16, 2, 3, 3}, 1), nullptr, {}), nullptr);
  EXPECT_EQ(WinogradConv::create(grouped, random_tensor({4, 8, 3, 3}, 1), nullptr, {}), nullptr);
  EXPECT_EQ(WinogradConv::create(ConvAttributes{}, w5, nullptr, {}), nullptr);
  // Sigmoid and HardSigmoid are not zero at zero: padded channels would not stay zero.
  EXPECT_EQ(WinogradConv::create(ConvAttributes{}, w3, nullptr, {.kind = FusedActivation::Kind::sigmoid}), nullptr);
  EXPECT_EQ(WinogradConv::create(ConvAttributes{}, w3, nullptr, {.kind = FusedActivation::Kind::hard_sigmoid}), nullptr);
}

}  // namespace
}  // namespace onnxkit::runtime::nn
