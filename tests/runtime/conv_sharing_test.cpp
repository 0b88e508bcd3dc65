// Conv nodes reading the same weights share what is made from them
// (DnnlConvCache::shared, WinogradConv::shared): the export of a module
// applied to several inputs has one node per input on one initializer.

#include <gtest/gtest.h>

#include "runtime/kernels/nn/conv_dnnl.h"
#include "runtime/kernels/nn/winograd.h"

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

}  // namespace
}  // namespace onnxkit::runtime::nn
