// Shapes of opset 18+ operators that the Debian ONNX library's inference
// loses, checked against dims computed by hand from the specification.
#include <gtest/gtest.h>

#include "analysis/onnx_inference.h"
#include "support/test_support.h"

namespace onnxkit::testing {
namespace {

TEST(NewerOpShapes, Opset18SplitPadReduceAndWhatFollowsThem) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 18]>
g (float[N, 6, 8, 8] x) => (float[N, 3, 10, 10] y) <int64[2] axes = {2, 3}, int64[4] pads = {1, 1, 1, 1}> {
  a, b = Split <axis = 1, num_outputs = 2> (x)
  p = Pad(a, pads, , axes)
  r = ReduceMean <keepdims = 1> (p, axes)
  y = Add(p, r)
  odd1, odd2, odd3 = Split <axis = 2, num_outputs = 3> (x)
})");
  ASSERT_NE(model, nullptr);
  analysis::apply_inferred_types(*model);
  EXPECT_EQ(declared_dims(*model, "a"), "N,3,8,8");
  EXPECT_EQ(declared_dims(*model, "b"), "N,3,8,8");
  EXPECT_EQ(declared_dims(*model, "p"), "N,3,10,10");  // 8 + 1 + 1 on axes 2 and 3
  EXPECT_EQ(declared_dims(*model, "r"), "N,3,1,1");
  EXPECT_EQ(declared_dims(*model, "y"), "N,3,10,10");
  EXPECT_EQ(declared_dims(*model, "odd1"), "N,6,3,8");  // ceil(8 / 3) = 3, 3, then 2
  EXPECT_EQ(declared_dims(*model, "odd3"), "N,6,2,8");
  EXPECT_TRUE(model->graph().value_info().empty());  // the hints do not stay behind
}

TEST(NewerOpShapes, Opset18ResizeWithAxesAndReduceWithoutKeepdims) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 18]>
g (float[1, 2, 5, 5] x) => (float[2, 10, 10] y) <float[2] scales = {2.0, 2.0}, int64[1] first = {0}> {
  z = Resize <axes = [2, 3], mode = "nearest"> (x, , scales)
  y = ReduceSum <keepdims = 0> (z, first)
})");
  ASSERT_NE(model, nullptr);
  analysis::apply_inferred_types(*model);
  EXPECT_EQ(declared_dims(*model, "z"), "1,2,10,10");
  EXPECT_EQ(declared_dims(*model, "y"), "2,10,10");
}

TEST(NewerOpShapes, Opset18CenterCropPadMishAndBitwiseBroadcast) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 18]>
g (float[N, 3, 7, 9] x, int32[4, 1] a, int32[5] b) => (float[N, 3, 4, 6] y, int32[4, 5] z) <int64[2] crop = {4, 6}> {
  c = CenterCropPad <axes = [2, 3]> (x, crop)
  m = Mish(c)
  y = Identity(m)
  s = BitwiseAnd(a, b)
  z = Identity(s)
})");
  ASSERT_NE(model, nullptr);
  analysis::apply_inferred_types(*model);
  EXPECT_EQ(declared_dims(*model, "c"), "N,3,4,6");  // the crop's sizes on axes 2 and 3
  EXPECT_EQ(declared_dims(*model, "m"), "N,3,4,6");
  EXPECT_EQ(declared_dims(*model, "s"), "4,5");  // [4, 1] and [5] broadcast
}

}  // namespace
}  // namespace onnxkit::testing
