// fuse-pad-into-conv: zero Pad of the spatial axes + Conv / counting AveragePool.
#include <gtest/gtest.h>

#include "passes/fuse/fuse_test_support.h"

namespace onnxkit::testing {
namespace {

TEST(FusePadIntoConv, PadsAddToTheConvsOwn) {
  // Pad: 1 before and 2 after the height, 0 and 1 around the width; the Conv
  // already pads 1 everywhere.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 4, 4] x) => (float[1, 3, 7, 6] y)
  <float[3, 2, 1, 1] w = {1, 2, 3, 4, 5, 6}, int64[8] pads = {0, 0, 1, 0, 0, 0, 2, 1}>
{
  p = Pad (x, pads)
  y = Conv <pads = [1, 1, 1, 1]> (p, w)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-pad-into-conv", *model), 1u);
  EXPECT_EQ(count_ops(model->graph(), "Pad"), 0u);
  const ir::Node* conv = first_node(model->graph(), "Conv");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->attr_ints("pads"), (std::vector<int64_t>{2, 1, 3, 2}));
  EXPECT_EQ(conv->input(0)->name(), "x");
  EXPECT_EQ(model->graph().outputs()[0]->name(), "y");
  expect_same_outputs(*before, *model);
}

TEST(FusePadIntoConv, CountingAveragePoolAndExplicitZeroValue) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 4, 4] x) => (float[1, 2, 4, 4] y)
  <int64[8] pads = {0, 0, 1, 1, 0, 0, 1, 1}, float zero = {0}>
{
  p = Pad (x, pads, zero)
  y = AveragePool <kernel_shape = [3, 3], count_include_pad = 1> (p)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-pad-into-conv", *model), 1u);
  EXPECT_EQ(count_ops(model->graph(), "Pad"), 0u);
  EXPECT_EQ(first_node(model->graph(), "AveragePool")->attr_ints("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  expect_same_outputs(*before, *model);
}

TEST(FusePadIntoConv, AveragePoolWithoutPadsOfItsOwnCountsThePadsItTakes) {
  // torch's avg_pool2d(x, 3, stride=1, padding=1) (Inception-v3): the Pad's
  // zeros are elements of each window, so the fused pool counts padding.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 5, 4] x) => (float[1, 2, 5, 4] y)
  <int64[8] pads = {0, 0, 1, 1, 0, 0, 1, 1}>
{
  p = Pad (x, pads)
  y = AveragePool <kernel_shape = [3, 3], pads = [0, 0, 0, 0], strides = [1, 1]> (p)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-pad-into-conv", *model), 1u);
  EXPECT_EQ(count_ops(model->graph(), "Pad"), 0u);
  const ir::Node* pool = first_node(model->graph(), "AveragePool");
  EXPECT_EQ(pool->attr_ints("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(pool->attr_int("count_include_pad", 0), 1);
  expect_same_outputs(*before, *model);
}

TEST(FusePadIntoConv, PadsOverListedAxesAtOpset18) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 18]>
g (float[1, 2, 4, 4] x) => (float[1, 3, 6, 5] y)
  <float[3, 2, 1, 1] w = {1, 2, 3, 4, 5, 6}, int64[4] pads = {1, 0, 1, 1}, int64[2] axes = {-2, 3}, float zero = {0}>
{
  p = Pad (x, pads, zero, axes)
  y = Conv (p, w)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-pad-into-conv", *model), 1u);
  EXPECT_EQ(first_node(model->graph(), "Conv")->attr_ints("pads"), (std::vector<int64_t>{1, 0, 1, 1}));
  expect_same_outputs(*before, *model);
}

TEST(FusePadIntoConv, PadsAttributeBeforeOpset11) {
  auto model = model_from_text(R"(
<ir_version: 5, opset_import: ["" : 10]>
g (float[1, 2, 4, 4] x) => (float[1, 3, 6, 6] y)
  <float[3, 2, 1, 1] w = {1, 2, 3, 4, 5, 6}>
{
  p = Pad <pads = [0, 0, 1, 1, 0, 0, 1, 1]> (x)
  y = Conv (p, w)
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-pad-into-conv", *model), 1u);
  EXPECT_EQ(first_node(model->graph(), "Conv")->attr_ints("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  expect_same_outputs(*before, *model);
}

TEST(FusePadIntoConv, DeclinesWhatTheConsumerCannotPadItself) {
  // MaxPool pads with -inf; an AveragePool that excludes its own padding; one
  // whose ceil_mode window may run past the padding; a channel
  // pad; a non-zero value; reflect mode; a negative pad (a crop); a Conv with
  // auto_pad; a Pad whose output is also a graph output.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 4, 4] x) => (float[1, 2, 4, 4] y1, float[1, 2, 6, 6] y2, float[1, 3, 6, 6] y3, float[1, 3, 6, 6] y4,
                           float[1, 3, 6, 6] y5, float[1, 3, 3, 3] y6, float[1, 3, 6, 6] y7, float[1, 3, 6, 6] y8,
                           float[1, 2, 6, 6] p8, float[1, 2, 3, 3] y9)
  <float[3, 2, 1, 1] w = {1, 2, 3, 4, 5, 6}, float[3, 3, 1, 1] w3 = {1, 2, 3, 4, 5, 6, 7, 8, 9},
   int64[8] pads = {0, 0, 1, 1, 0, 0, 1, 1}, int64[8] channel_pads = {0, 1, 1, 1, 0, 0, 1, 1},
   int64[8] crop = {0, 0, 1, 1, 0, 0, -1, -1}, float one = {1}>
{
  p1 = Pad (x, pads)
  y1 = MaxPool <kernel_shape = [3, 3]> (p1)
  p2 = Pad (x, pads)
  y2 = AveragePool <kernel_shape = [3, 3], pads = [1, 1, 1, 1]> (p2)
  p3 = Pad (x, channel_pads)
  y3 = Conv (p3, w3)
  p4 = Pad (x, pads, one)
  y4 = Conv (p4, w)
  p5 = Pad <mode = "reflect"> (x, pads)
  y5 = Conv (p5, w)
  p6 = Pad (x, crop)
  y6 = Conv (p6, w)
  p7 = Pad (x, pads)
  y7 = Conv <auto_pad = "SAME_UPPER"> (p7, w)
  p8 = Pad (x, pads)
  y8 = Conv (p8, w)
  p9 = Pad (x, pads)
  y9 = AveragePool <kernel_shape = [2, 2], strides = [2, 2], ceil_mode = 1> (p9)
})");
  EXPECT_EQ(run_pass("fuse-pad-into-conv", *model), 0u);
  EXPECT_EQ(count_ops(model->graph(), "Pad"), 9u);
}

TEST(FusePadIntoConv, RewritesInsideIfBranches) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 4, 4] x, bool cond) => (float[1, 3, 6, 6] y)
  <float[3, 2, 1, 1] w = {1, 2, 3, 4, 5, 6}, int64[8] pads = {0, 0, 1, 1, 0, 0, 1, 1}>
{
  y = If (cond) <
    then_branch = then_g () => (float[1, 3, 6, 6] a) { pa = Pad (x, pads)  a = Conv (pa, w) },
    else_branch = else_g () => (float[1, 3, 6, 6] b) { b = Conv <pads = [1, 1, 1, 1]> (x, w) }>
})");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-pad-into-conv", *model), 1u);
  EXPECT_EQ(count_ops(model->graph(), "Pad"), 0u);
  expect_same_outputs(*before, *model);
}

}  // namespace
}  // namespace onnxkit::testing
