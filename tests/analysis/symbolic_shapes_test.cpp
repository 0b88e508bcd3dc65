// Symbolic shape inference on the shape arithmetic exporters emit, checked
// against dims worked by hand. ONNX's own inference leaves each of the
// checked values without a shape, or without these dims.
#include <gtest/gtest.h>

#include "analysis/onnx_inference.h"
#include "analysis/symbolic_shapes.h"
#include "support/test_support.h"

namespace onnxkit::testing {
namespace {

// GPT-style head split: x.view(b, s, 12, 64).transpose(1, 2), and a view
// over arithmetic on the batch: x.view(b * 2, -1).
TEST(SymbolicShapes, HeadSplitAndArithmeticOnTheBatch) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[B, S, 768] x) => (float ys, float zs, float ws)
  <int64[1] zero = {0}, int64[1] one = {1}, int64[1] heads = {12}, int64[1] dh = {64}, int64[1] two = {2},
   int64[1] minus1 = {-1}, int64[1] six = {6}> {
  s = Shape(x)
  b = Gather(s, zero)
  t = Gather(s, one)
  shape = Concat <axis = 0> (b, t, heads, dh)
  r = Reshape(x, shape)
  y = Transpose <perm = [0, 2, 1, 3]> (r)
  b2 = Mul(b, two)
  zshape = Concat <axis = 0> (b2, minus1)
  z = Reshape(x, zshape)
  bs6 = Mul(b, t)
  q = Div(bs6, one)
  wshape = Concat <axis = 0> (q, six, minus1)
  w = Reshape(x, wshape)
  ys = ReduceSum <keepdims = 0> (y)
  zs = ReduceSum <keepdims = 0> (z)
  ws = ReduceSum <keepdims = 0> (w)
})");
  ASSERT_NE(model, nullptr);
  analysis::apply_inferred_types(*model);
  EXPECT_EQ(declared_dims(*model, "r"), "B,S,12,64");
  EXPECT_EQ(declared_dims(*model, "y"), "B,12,S,64");
  EXPECT_EQ(declared_dims(*model, "b2"), "1");
  EXPECT_EQ(declared_dims(*model, "z"), "2*B,384*S");  // B*S*768 / (2*B)
  EXPECT_EQ(declared_dims(*model, "w"), "B*S,6,128");  // B*S*768 / (B*S*6)
}

// Pad amounts computed from constants (a voice-activity export's padding),
// Expand over Shape(x), ConstantOfShape and Range over a symbolic length.
TEST(SymbolicShapes, PadExpandConstantOfShapeRange) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[B, 3, H, W] x, float[1, 1, 1, 1] one4) => (float ps, float es, float cs, int64 rs)
  <int64[8] base = {0, 0, 1, 2, 0, 0, 1, 2}, int64[1] two = {2}, int64 zero = {0}, int64 step = {1},
   int64[1] last = {3}> {
  pads = Mul(base, two)
  p = Pad(x, pads)
  s = Shape(x)
  e = Expand(one4, s)
  c = ConstantOfShape(s)
  wv = Gather(s, last)
  wsc = Squeeze(wv)
  r = Range(zero, wsc, step)
  ps = ReduceSum <keepdims = 0> (p)
  es = ReduceSum <keepdims = 0> (e)
  cs = ReduceSum <keepdims = 0> (c)
  rs = ReduceSum <keepdims = 0> (r)
})");
  ASSERT_NE(model, nullptr);
  analysis::apply_inferred_types(*model);
  EXPECT_EQ(declared_dims(*model, "p"), "B,3,H + 4,W + 8");
  EXPECT_EQ(declared_dims(*model, "e"), "B,3,H,W");
  EXPECT_EQ(declared_dims(*model, "c"), "B,3,H,W");
  EXPECT_EQ(declared_dims(*model, "r"), "W");
}

// The contents of shape vectors, as simplify's resolve-shape-inputs reads
// them: a ShuffleNet channel shuffle's view(b, 2, c / 2, h, w).
TEST(SymbolicShapes, TracksShapeVectorContents) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[N, 116, 28, 28] x) => (float ys)
  <int64[1] zero = {0}, int64[1] one = {1}, int64[1] two = {2}, int64[1] four = {4}> {
  s = Shape(x)
  n = Gather(s, zero)
  c = Gather(s, one)
  half = Div(c, two)
  hw = Slice(s, two, four)
  none = Slice(s, two, one)
  shape = Concat <axis = 0> (n, two, half, hw, none)
  y = Reshape(x, shape)
  ys = ReduceSum <keepdims = 0> (y)
})");
  ASSERT_NE(model, nullptr);
  analysis::apply_inferred_types(*model);
  analysis::SymbolicShapes shapes(model->graph(), model->opset());
  const analysis::SymbolicInts* v = shapes.ints(model->graph().find_value("shape"));
  ASSERT_NE(v, nullptr);
  std::string text;
  for (const auto& d : v->values) text += (text.empty() ? "" : ",") + d.to_string();
  EXPECT_EQ(text, "N,2,58,28,28");  // Slice(s, 2, 1) is empty
  EXPECT_EQ(declared_dims(*model, "y"), "N,2,58,28,28");
  EXPECT_EQ(declared_dims(*model, "none"), "0");
}

}  // namespace
}  // namespace onnxkit::testing
