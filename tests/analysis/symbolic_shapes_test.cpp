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

// torch's F.pad as exported (Swin-T's window padding): amounts computed as
// (7 - W % 7) % 7 from the input's shape, in torch's order (last dim first),
// zero-extended to 2*rank, then Reshape [-1, 2], reversed rows, Transpose and
// flattened into ONNX's begins-then-ends. With H = 10 and W = 12 the pads are
// bottom (7 - 3) % 7 = 4 and right (7 - 5) % 7 = 2, plus a left pad of 1:
// torch [0,0, 1,2, 0,4] -> rows (0,0),(1,2),(0,4),(0,0) -> reversed
// (0,0),(0,4),(1,2),(0,0) -> ONNX [0,0,1,0, 0,4,2,0] -> [B, 14, 15, 4].
TEST(SymbolicShapes, TorchPadAmountsThroughReshapeSliceTranspose) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[B, 10, 12, 4] x) => (float ys)
  <int64 seven = {7}, int64[1] i1 = {1}, int64[1] i2 = {2}, int64 s1 = {1}, int64 s2 = {2}, int64[1] zero = {0},
   int64[1] one = {1}, int64 eight = {8}, int64[2] rows = {-1, 2}, int64[1] minus1 = {-1},
   int64[1] lowest = {-9223372036854775807}> {
  s = Shape(x)
  h = Gather(s, s1)
  w = Gather(s, s2)
  hm = Mod(h, seven)
  hs = Sub(seven, hm)
  pb = Mod(hs, seven)
  wm = Mod(w, seven)
  ws = Sub(seven, wm)
  pr = Mod(ws, seven)
  pbu = Unsqueeze(pb, zero)
  pru = Unsqueeze(pr, zero)
  given = Concat <axis = 0> (zero, zero, one, pru, zero, pbu)
  n = Shape(given)
  rest = Sub(eight, n)
  fill = ConstantOfShape <value = int64[1] {0}> (rest)
  all = Concat <axis = 0> (given, fill)
  pairs = Reshape(all, rows)
  reversed = Slice(pairs, minus1, lowest, zero, minus1)
  t = Transpose <perm = [1, 0]> (reversed)
  flat = Reshape(t, minus1)
  pads = Cast <to = 7> (flat)
  y = Pad(x, pads)
  ys = ReduceSum <keepdims = 0> (y)
})");
  ASSERT_NE(model, nullptr);
  analysis::apply_inferred_types(*model);
  analysis::SymbolicShapes shapes(model->graph(), model->opset());
  const analysis::SymbolicInts* v = shapes.ints(model->graph().find_value("pads"));
  ASSERT_NE(v, nullptr);
  std::string text;
  for (const auto& d : v->values) text += (text.empty() ? "" : ",") + d.to_string();
  EXPECT_EQ(text, "0,0,1,0,0,4,2,0");
  EXPECT_EQ(declared_dims(*model, "y"), "B,14,15,4");
}

std::string ints_text(ir::Model& model, const std::string& name) {
  analysis::SymbolicShapes shapes(model.graph(), model.opset());
  const analysis::SymbolicInts* v = shapes.ints(model.graph().find_value(name));
  if (v == nullptr) return "(unknown)";
  std::string text;
  for (const auto& d : v->values) text += (text.empty() ? "" : ",") + d.to_string();
  return text;
}

// torch's x.expand(batch, -1, -1) on ViT's class token, as exported: the
// target [B, -1, -1] compared with -1 (B is a dim, so B == -1 is false),
// Where picks 1 for the -1 entries: Expand to [B, 1, 8], and the Concat with
// the patches is [B, 197, 8].
TEST(SymbolicShapes, ExpandWithMinusOneEntriesAsTorchExportsIt) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[B, 196, 8] x, float[1, 1, 8] cls) => (float ys)
  <int64[1] zero = {0}, int64[1] m1 = {-1}, int64 minus1 = {-1}> {
  s = Shape(x)
  b = Gather(s, zero)
  shape = Concat <axis = 0> (b, m1, m1)
  n = Shape(shape)
  ones = ConstantOfShape <value = int64[1] {1}> (n)
  neg = Mul(ones, minus1)
  eq = Equal(shape, neg)
  target = Where(eq, ones, shape)
  e = Expand(cls, target)
  c = Concat <axis = 1> (e, x)
  ys = ReduceSum <keepdims = 0> (c)
})");
  ASSERT_NE(model, nullptr);
  analysis::apply_inferred_types(*model);
  EXPECT_EQ(ints_text(*model, "target"), "B,1,1");
  EXPECT_EQ(declared_dims(*model, "e"), "B,1,8");
  EXPECT_EQ(declared_dims(*model, "c"), "B,197,8");
}

// Mod (Python's sign of the divisor, C's with fmod = 1), and comparisons,
// Max and Min decided by the sign of a - b where a dim H (>= 0) fixes it.
TEST(SymbolicShapes, ModComparisonsMaxMinOverDims) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[H, 4] x) => (int64[9] v)
  <int64[1] zero = {0}, int64[1] one = {1}, int64[1] two = {2}, int64[1] three = {3}, int64[1] four = {4},
   int64[1] seven = {7}, int64[1] neg3 = {-3}, int64[1] neg7 = {-7}, int64[1] minus1 = {-1}> {
  s = Shape(x)
  h = Gather(s, zero)
  m1 = Mod(neg7, three)
  m2 = Mod(seven, neg3)
  m3 = Mod <fmod = 1> (neg7, three)
  h4 = Mul(h, four)
  m4 = Mod(h4, two)
  hp1 = Add(h, one)
  mx = Max(hp1, one)
  mn = Min(h, minus1)
  lt = Less(h, zero)
  ge = GreaterOrEqual(h, zero)
  eq = Equal(hp1, zero)
  ltc = Cast <to = 7> (lt)
  gec = Cast <to = 7> (ge)
  eqc = Cast <to = 7> (eq)
  v = Concat <axis = 0> (m1, m2, m3, m4, mx, mn, ltc, gec, eqc)
})");
  ASSERT_NE(model, nullptr);
  analysis::apply_inferred_types(*model);
  EXPECT_EQ(ints_text(*model, "v"), "2,-2,-1,0,H + 1,-1,0,1,0");
}

}  // namespace
}  // namespace onnxkit::testing
