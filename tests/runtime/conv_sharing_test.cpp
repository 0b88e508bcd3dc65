// Conv nodes reading the same weights share what is made from them
// (DnnlConvCache::shared, WinogradConv::shared): the export of a module
// applied to several inputs has one node per input on one initializer.

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "runtime/kernels/nn/conv_dnnl.h"
#include "runtime/kernels/nn/winograd.h"
#include "runtime/session.h"
#include "support/test_support.h"

namespace onnxkit::runtime::nn {
namespace {

Tensor filled(Shape shape, float value) {
  Tensor t(DataType::float32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<float>()[i] = value;
  return t;
}

TEST(ConvSharing, NodesOnTheSameWeightsShareOneCache) {
  const Tensor w = filled({16, 16, 3, 3}, 0.5f), other = filled({16, 16, 3, 3}, 0.5f), b = filled({16}, 1.0f);
  const Tensor same_storage = w;  // another node's view of the same initializer
  const FusedActivation relu{.kind = FusedActivation::Kind::relu};
  auto first = DnnlConvCache::shared(w, &b, relu, ActivationLayout::blocked, true);
  EXPECT_EQ(DnnlConvCache::shared(same_storage, &b, relu, ActivationLayout::blocked, true), first);
  // Equal values in other storage, another activation, layout, bias or
  // weights placement: each its own.
  EXPECT_NE(DnnlConvCache::shared(other, &b, relu, ActivationLayout::blocked, true), first);
  EXPECT_NE(DnnlConvCache::shared(w, &b, {}, ActivationLayout::blocked, true), first);
  EXPECT_NE(DnnlConvCache::shared(w, &b, relu, ActivationLayout::plain, true), first);
  EXPECT_NE(DnnlConvCache::shared(w, nullptr, relu, ActivationLayout::blocked, true), first);
  EXPECT_NE(DnnlConvCache::shared(w, &b, relu, ActivationLayout::blocked, false), first);
  // Held by no node, it is gone: the next request makes a new one.
  std::weak_ptr<DnnlConvCache> gone = first;
  first.reset();
  EXPECT_TRUE(gone.expired());
}

TEST(ConvSharing, NodesOnTheSameWeightsShareWinogradFilters) {
  const Tensor w = filled({16, 16, 3, 3}, 0.5f), other = filled({16, 16, 3, 3}, 0.5f);
  ConvAttributes attrs;
  attrs.window.kernel_shape = {3, 3};
  auto first = WinogradConv::shared(attrs, w, nullptr, {});
  if (first == nullptr) GTEST_SKIP() << "no Winograd convolution on this CPU";
  EXPECT_EQ(WinogradConv::shared(attrs, Tensor(w), nullptr, {}), first);
  EXPECT_NE(WinogradConv::shared(attrs, other, nullptr, {}), first);
  EXPECT_NE(WinogradConv::shared(attrs, w, nullptr, {.kind = FusedActivation::Kind::relu}), first);
}

// Y = conv(X, W) in double, straight from the definition: X [1, C, H, W]
// and W [M, C, k, k].
std::vector<double> naive_conv(const Tensor& x, const Tensor& w, int64_t stride, int64_t pad, int64_t dilation) {
  const int64_t c = x.dim(1), h = x.dim(2), width = x.dim(3), m = w.dim(0), k = w.dim(2);
  const int64_t oh = (h + 2 * pad - dilation * (k - 1) - 1) / stride + 1,
                ow = (width + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
  std::vector<double> y(static_cast<size_t>(m * oh * ow), 0.0);
  for (int64_t o = 0; o < m; ++o)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double sum = 0;
        for (int64_t ci = 0; ci < c; ++ci)
          for (int64_t a = 0; a < k; ++a)
            for (int64_t b = 0; b < k; ++b) {
              const int64_t r = i * stride - pad + a * dilation, q = j * stride - pad + b * dilation;
              if (r < 0 || r >= h || q < 0 || q >= width) continue;
              sum += static_cast<double>(x.data<float>()[(ci * h + r) * width + q]) *
                     static_cast<double>(w.data<float>()[((o * c + ci) * k + a) * k + b]);
            }
        y[static_cast<size_t>((o * oh + i) * ow + j)] = sum;
      }
  return y;
}

TEST(ConvSharing, NodesOnTheSameWeightsKeepTheirOwnStridesPadsAndDilations) {
  // One initializer, five convolutions of one input (weight sharing across
  // dilation rates, as in TridentNet): each must run its own geometry, the
  // last two as products per tap (dilations past most of the map).
  Tensor w(DataType::float32, {16, 16, 3, 3}), x(DataType::float32, {1, 16, 12, 12});
  for (int64_t i = 0; i < w.numel(); ++i) w.mutable_data<float>()[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i)));
  for (int64_t i = 0; i < x.numel(); ++i) x.mutable_data<float>()[i] = static_cast<float>(std::cos(0.3 * static_cast<double>(i)));
  auto model = testing::model_from_text(fmt::format(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 16, 12, 12] x) => (float[1, 16, 12, 12] plain, float[1, 16, 12, 12] dilated, float[1, 16, 6, 6] strided,
                                float[1, 16, 12, 12] far, float[1, 16, 12, 12] farther) <float[16, 16, 3, 3] w = {{{}}}> {{
  plain = Conv<pads = [1, 1, 1, 1]>(x, w)
  dilated = Conv<pads = [2, 2, 2, 2], dilations = [2, 2]>(x, w)
  strided = Conv<pads = [1, 1, 1, 1], strides = [2, 2]>(x, w)
  far = Conv<pads = [8, 8, 8, 8], dilations = [8, 8]>(x, w)
  farther = Conv<pads = [10, 10, 10, 10], dilations = [10, 10]>(x, w)
}})",
                                                    fmt::join(w.values<float>(), ", ")));
  auto session = Session::create(std::move(model), {.threads = 1});
  ASSERT_TRUE(session.ok()) << session.error().message();
  auto out = (*session)->run({{"x", x}});
  ASSERT_TRUE(out.ok()) << out.error().message();
  const struct { int64_t stride, pad, dilation; } geometry[] = {{1, 1, 1}, {1, 2, 2}, {2, 1, 1}, {1, 8, 8}, {1, 10, 10}};
  for (size_t n = 0; n < 5; ++n) {
    SCOPED_TRACE(n);
    const std::vector<double> want = naive_conv(x, w, geometry[n].stride, geometry[n].pad, geometry[n].dilation);
    const Tensor& got = (*out)[n].tensor();
    ASSERT_EQ(static_cast<size_t>(got.numel()), want.size());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got.data<float>()[i], want[i], 1e-3 * (1 + std::abs(want[i]))) << i;
  }
}

}  // namespace
}  // namespace onnxkit::runtime::nn
