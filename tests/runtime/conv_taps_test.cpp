// TapProducts (kernels/nn/conv_taps.h): a convolution as one product per
// kernel tap over its live outputs, against a direct convolution in double
// precision written here, on channels-last arrays; and through DnnlConv,
// which picks it where oneDNN's kernel would multiply padding (held to
// AVX2, as ctest's onednn_avx2 runs these tests again).

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "runtime/kernels/nn/conv_dnnl.h"
#include "runtime/kernels/nn/conv_taps.h"

namespace onnxkit::runtime::nn {
namespace {

struct TapCase {
  int64_t batch, c, m, h, w, kh, kw, dilation_h, dilation_w, stride_h, stride_w;
  int64_t pads[4];  // top, left, bottom, right
};

ConvParams params_of(const TapCase& t) {
  ConvParams p;
  p.batch = t.batch;
  p.in_channels = t.c;
  p.out_channels = t.m;
  p.group = 1;
  WindowGeometry& g = p.window;
  g.in = {t.h, t.w};
  g.kernel = {t.kh, t.kw};
  g.strides = {t.stride_h, t.stride_w};
  g.dilations = {t.dilation_h, t.dilation_w};
  g.pads_begin = {t.pads[0], t.pads[1]};
  g.pads_end = {t.pads[2], t.pads[3]};
  for (size_t i = 0; i < 2; ++i)
    g.out.push_back((g.in[i] + g.pads_begin[i] + g.pads_end[i] - (g.kernel[i] - 1) * g.dilations[i] - 1) / g.strides[i] + 1);
  return p;
}

std::vector<float> normal_values(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& e : v) e = normal(rng);
  return v;
}

// relu(conv + bias), x [N, H, W, C], w [M, C, kh, kw], y [N, OH, OW, M].
std::vector<float> direct_conv_nhwc(const TapCase& t, const ConvParams& p, const std::vector<float>& x,
                                    const std::vector<float>& w, const std::vector<float>& bias) {
  const int64_t oh = p.window.out[0], ow = p.window.out[1];
  std::vector<float> y(static_cast<size_t>(t.batch * oh * ow * t.m));
  for (int64_t n = 0; n < t.batch; ++n)
    for (int64_t r = 0; r < oh; ++r)
      for (int64_t s = 0; s < ow; ++s)
        for (int64_t m = 0; m < t.m; ++m) {
          double sum = bias[static_cast<size_t>(m)];
          for (int64_t i = 0; i < t.kh; ++i)
            for (int64_t j = 0; j < t.kw; ++j) {
              const int64_t iy = r * t.stride_h + i * t.dilation_h - t.pads[0];
              const int64_t ix = s * t.stride_w + j * t.dilation_w - t.pads[1];
              if (iy < 0 || iy >= t.h || ix < 0 || ix >= t.w) continue;
              for (int64_t c = 0; c < t.c; ++c)
                sum += static_cast<double>(x[static_cast<size_t>(((n * t.h + iy) * t.w + ix) * t.c + c)]) *
                       w[static_cast<size_t>(((m * t.c + c) * t.kh + i) * t.kw + j)];
            }
          y[static_cast<size_t>(((n * oh + r) * ow + s) * t.m + m)] = static_cast<float>(std::max(sum, 0.0));
        }
  return y;
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4f * (1.0f + std::abs(want[i]))) << "at " << i;
}

const TapCase kCases[] = {
    // DeepLabV3's ASPP on a small map: most taps read padding.
    {2, 24, 20, 14, 14, 3, 3, 12, 12, 1, 1, {12, 12, 12, 12}},
    // Strided, uneven pads, a map neither square nor a multiple of anything.
    {1, 7, 33, 9, 11, 3, 3, 2, 3, 2, 2, {1, 2, 3, 0}},
    // A 1x3 kernel dilated along one dim only; more channels than a cache line.
    {1, 5, 40, 6, 13, 1, 3, 1, 5, 1, 1, {0, 5, 0, 5}},
    // DeepLabV3's layer4 (dilation 4, pads 4) on a map larger than the
    // reach: taps live over most of each row, gathered into one product.
    {1, 16, 40, 12, 13, 3, 3, 4, 4, 1, 1, {4, 4, 4, 4}},
    // Every tap live (no pads): the products cover the whole map.
    {1, 3, 4, 8, 8, 3, 3, 2, 2, 1, 1, {0, 0, 0, 0}},
};

TEST(ConvTaps, ProductsPerTapGiveTheConvolution) {
  for (const TapCase& t : kCases) {
    const ConvParams p = params_of(t);
    const std::vector<float> x = normal_values(t.batch * t.h * t.w * t.c, 1);
    const std::vector<float> w = normal_values(t.m * t.c * t.kh * t.kw, 2), bias = normal_values(t.m, 3);
    const std::unique_ptr<TapProducts> taps =
        TapProducts::create(p, w.data(), bias.data(), {.kind = FusedActivation::Kind::relu});
    ASSERT_NE(taps, nullptr);
    const std::vector<float> want = direct_conv_nhwc(t, p, x, w, bias);
    for (int threads : {1, 2}) {
      std::vector<float> y(want.size(), -1.0f);
      taps->run(x.data(), y.data(), threads);
      SCOPED_TRACE(testing::Message() << "case " << (&t - kCases) << ", " << threads << " threads");
      expect_near_all(y, want);
    }
  }
}

TEST(ConvTaps, LiveShareCountsTapsThatReadInsideTheInput) {
  // 14x14 at dilation 12, pads 12: along each dim the first tap is live for
  // outputs 12-13, the middle one for all 14, the last for 0-1: 18 of 42.
  const std::vector<float> w(24 * 20 * 9, 1.0f);  // enough for both
  const auto taps = TapProducts::create(params_of(kCases[0]), w.data(), nullptr, {});
  EXPECT_NEAR(taps->live_share(), (18.0 * 18.0) / (14.0 * 14.0 * 9.0), 1e-12);
  const auto all = TapProducts::create(params_of(kCases[4]), w.data(), nullptr, {});
  EXPECT_DOUBLE_EQ(all->live_share(), 1.0);
}

TEST(ConvTaps, OnlyPlainTwoDimensionalConvolutions) {
  const std::vector<float> w(64, 1.0f);
  ConvParams grouped = params_of(kCases[4]);
  grouped.group = 3;
  EXPECT_EQ(TapProducts::create(grouped, w.data(), nullptr, {}), nullptr);
  EXPECT_EQ(TapProducts::create(params_of(kCases[4]), w.data(), nullptr, {.add_residual = true}), nullptr);
}

// DnnlConv's result for case `t` in the plain layout, as [N, OH, OW, M].
std::vector<float> dnnl_conv_nhwc(const TapCase& t, const DnnlConv& conv, const std::vector<float>& x_nhwc) {
  const ConvParams p = params_of(t);
  Tensor x(DataType::float32, p.x_shape()), y(DataType::float32, p.y_shape());
  for (int64_t n = 0; n < t.batch; ++n)
    for (int64_t c = 0; c < t.c; ++c)
      for (int64_t i = 0; i < t.h * t.w; ++i)
        x.mutable_data<float>()[(n * t.c + c) * t.h * t.w + i] = x_nhwc[static_cast<size_t>((n * t.h * t.w + i) * t.c + c)];
  EXPECT_TRUE(conv.run(x, y).ok());
  const int64_t pixels = p.window.out[0] * p.window.out[1];
  std::vector<float> nhwc(static_cast<size_t>(y.numel()));
  for (int64_t n = 0; n < t.batch; ++n)
    for (int64_t m = 0; m < t.m; ++m)
      for (int64_t i = 0; i < pixels; ++i)
        nhwc[static_cast<size_t>((n * pixels + i) * t.m + m)] = y.data<float>()[(n * t.m + m) * pixels + i];
  return nhwc;
}

TEST(ConvTaps, DnnlConvGivesTheConvolution) {
  // Whichever engine DnnlConv picks (the per-tap products under AVX2), the
  // result is the convolution's, with weights prepacked or not, and for a
  // second input shape made beside the first (which may lend it weights).
  TapCase t = kCases[0], smaller = kCases[0];
  smaller.h = 10;
  smaller.w = 13;
  const std::vector<float> w = normal_values(t.m * t.c * 9, 5), bias = normal_values(t.m, 6);
  Tensor wt(DataType::float32, params_of(t).w_shape()), bt(DataType::float32, {t.m});
  std::copy(w.begin(), w.end(), wt.mutable_data<float>());
  std::copy(bias.begin(), bias.end(), bt.mutable_data<float>());
  for (bool prepacked : {true, false}) {
    DnnlConvCache cache(std::make_shared<const Tensor>(wt), std::make_shared<const Tensor>(bt),
                        {.kind = FusedActivation::Kind::relu}, ActivationLayout::plain, prepacked);
    for (const TapCase& c : {t, smaller}) {
      const std::vector<float> x = normal_values(c.batch * c.h * c.w * c.c, 4);
      const auto conv = cache.get(params_of(c));
      ASSERT_NE(conv, nullptr);
      SCOPED_TRACE(testing::Message() << c.h << "x" << c.w << (prepacked ? ", prepacked" : ""));
      expect_near_all(dnnl_conv_nhwc(c, *conv, x), direct_conv_nhwc(c, params_of(c), x, w, bias));
    }
  }
}

}  // namespace
}  // namespace onnxkit::runtime::nn
