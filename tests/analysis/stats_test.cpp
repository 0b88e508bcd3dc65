// Costs and parameter counts of compute_stats, each against a count worked
// by hand from the op's definition in the ONNX specification.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "analysis/stats.h"
#include "support/test_support.h"

namespace onnxkit::testing {
namespace {

analysis::ModelStats stats_of(const std::string& text) {
  auto model = model_from_text(text);
  EXPECT_NE(model, nullptr);
  if (model == nullptr) return {};
  return analysis::compute_stats(*model, analysis::infer_types_with_onnx(*model).types);
}

void expect_cost(const analysis::ModelStats& stats, uint64_t macs, uint64_t flops) {
  EXPECT_EQ(stats.total_macs, macs);
  EXPECT_EQ(stats.total_flops, flops);
  EXPECT_EQ(stats.nodes_without_shapes, 0u);
  EXPECT_EQ(stats.nodes_without_cost_model, 0u);
}

TEST(Costs, LstmPerDirectionStepAndGate) {
  // H = 4, I = 3, T = 5, B = 2: per step and batch row the gate products are
  // 4H x (I + H) = 16 x 7 MACs; the biases 2 x 4H FLOPs; the cell 9H FLOPs.
  auto forward = stats_of(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[5, 2, 3] x, float[1, 16, 3] w, float[1, 16, 4] r, float[1, 32] b) => (float[5, 1, 2, 4] y) {
  y = LSTM <hidden_size = 4> (x, w, r, b)
})");
  expect_cost(forward, 5 * 2 * 16 * 7, 2 * 5 * 2 * 16 * 7 + 5 * 2 * 32 + 5 * 2 * 9 * 4);

  // Both directions, batch first, no bias: twice the products and the cells.
  auto both = stats_of(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 5, 3] x, float[2, 16, 3] w, float[2, 16, 4] r) => (float[2, 5, 2, 4] y) {
  y = LSTM <hidden_size = 4, direction = "bidirectional", layout = 1> (x, w, r)
})");
  expect_cost(both, 2 * 5 * 2 * 16 * 7, 2 * 2 * 5 * 2 * 16 * 7 + 2 * 5 * 2 * 9 * 4);
}

TEST(Costs, GruAndRnn) {
  // GRU, H = 2, I = 2, T = 3, B = 1: 3H x (I + H) MACs per step, biases
  // 2 x 3H, the cell 8H.
  auto gru = stats_of(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[3, 1, 2] x, float[1, 6, 2] w, float[1, 6, 2] r, float[1, 12] b) => (float[3, 1, 1, 2] y) {
  y = GRU <hidden_size = 2> (x, w, r, b)
})");
  expect_cost(gru, 3 * 6 * 4, 2 * 3 * 6 * 4 + 3 * 12 + 3 * 8 * 2);
  // RNN, H = 5, I = 3, T = 4: H x (I + H) MACs and one activation per unit.
  auto rnn = stats_of(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4, 1, 3] x, float[1, 5, 3] w, float[1, 5, 5] r) => (float[4, 1, 1, 5] y) {
  y = RNN <hidden_size = 5> (x, w, r)
})");
  expect_cost(rnn, 4 * 5 * 8, 2 * 4 * 5 * 8 + 4 * 5);
}

TEST(Costs, EinsumContractsReducesAndRearranges) {
  // A batched matrix product: b * i * j * k multiply-adds.
  const char* bmm = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3, 4] a, float[2, 4, 5] b) => (float[2, 3, 5] y) {
  y = Einsum <equation = "EQ"> (a, b)
})";
  for (const char* equation : {"bij,bjk->bik", "...ij,...jk->...ik", "bij, bjk"}) {
    SCOPED_TRACE(equation);
    std::string text = bmm;
    text.replace(text.find("EQ"), 2, equation);
    expect_cost(stats_of(text), 2 * 3 * 4 * 5, 2 * 2 * 3 * 4 * 5);
  }
  auto sum_rows = stats_of(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[3, 4] a) => (float[3] y) { y = Einsum <equation = "ij->i"> (a) })");
  expect_cost(sum_rows, 0, 12);
  auto trace = stats_of(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[3, 3] a) => (float y) { y = Einsum <equation = "ii"> (a) })");
  expect_cost(trace, 0, 3);
  auto transpose = stats_of(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[3, 4] a) => (float[4, 3] y) { y = Einsum <equation = "ij->ji"> (a) })");
  expect_cost(transpose, 0, 0);
  // Two ellipses (or stray dots) are no equation: not counted, not misread.
  for (const char* equation : {"......ij->ij", "i.j->ij"}) {
    std::string text = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 2, 3, 4] a) => (float[3, 4] y) { y = Einsum <equation = "EQ"> (a) })";
    text.replace(text.find("EQ"), 2, equation);
    EXPECT_EQ(stats_of(text).nodes_without_shapes, 1u) << equation;
  }
}

TEST(Costs, ConvTransposeScattersEveryInputElement) {
  // 2 x 3 x 3 input elements, each into C_out x 3 x 3 = 4 x 9 outputs.
  auto stats = stats_of(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 3, 3] x, float[2, 4, 3, 3] w) => (float[1, 4, 5, 5] y) { y = ConvTranspose(x, w) })");
  expect_cost(stats, 18 * 36, 2 * 18 * 36);
}

TEST(Costs, ResizeInterpolatesOverTheAxesItResizes) {
  // Linear over H and W: 4 taps, a multiply and an add each, per output
  // element of [1, 2, 8, 8]; nearest only reads.
  auto linear = stats_of(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 4, 4] x) => (float[1, 2, 8, 8] y) <float[4] scales = {1.0, 1.0, 2.0, 2.0}> {
  y = Resize <mode = "linear"> (x, , scales)
})");
  expect_cost(linear, 0, 128 * 2 * 4);
  auto cubic = stats_of(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 4, 4] x) => (float[1, 2, 4, 8] y) <float[4] scales = {1.0, 1.0, 1.0, 2.0}> {
  y = Resize <mode = "cubic"> (x, , scales)
})");
  expect_cost(cubic, 0, 64 * 2 * 4);
  auto nearest = stats_of(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 4, 4] x) => (float[1, 2, 8, 8] y) <float[4] scales = {1.0, 1.0, 2.0, 2.0}> {
  y = Resize <mode = "nearest"> (x, , scales)
})");
  expect_cost(nearest, 0, 0);
}

TEST(Costs, AttentionOfOpset23In4DAnd3DWithPastAndMask) {
  // B = 2, 4 heads, S = 6 queries, L = 10 keys, E = 8, Ev = 16: Q.K^T and P.V
  // are 480 scores x (8 + 16) MACs; each score is scaled and soft-maxed (4).
  auto four_d = stats_of(R"(
<ir_version: 10, opset_import: ["" : 23]>
g (float[2, 4, 6, 8] q, float[2, 4, 10, 8] k, float[2, 4, 10, 16] v) => (float[2, 4, 6, 16] y) {
  y = Attention(q, k, v)
})");
  expect_cost(four_d, 480 * 24, 2 * 480 * 24 + 480 * 4);
  // The same heads packed 3D, with a mask (+1 per score) and 5 past keys:
  // L = 15, 720 scores.
  auto three_d = stats_of(R"(
<ir_version: 10, opset_import: ["" : 23]>
g (float[2, 6, 32] q, float[2, 10, 32] k, float[2, 10, 64] v, float[6, 15] mask, float[2, 4, 5, 8] pk,
   float[2, 4, 5, 16] pv) => (float[2, 6, 64] y) {
  y = Attention <q_num_heads = 4, kv_num_heads = 4> (q, k, v, mask, pk, pv)
})");
  expect_cost(three_d, 720 * 24, 2 * 720 * 24 + 720 * 5);
}

TEST(Costs, SamplingQuantizingAndTheNewerOps) {
  struct Case {
    const char* name;
    int opset;
    const char* graph;
    uint64_t macs, flops;
  };
  const Case cases[] = {
      // 18 outputs x 4 bilinear taps x (multiply, add); nearest only reads.
      {"GridSample bilinear", 16,
       "(float[1, 2, 4, 4] x, float[1, 3, 3, 2] grid) => (float[1, 2, 3, 3] y) { y = GridSample(x, grid) }", 0, 18 * 4 * 2},
      {"GridSample nearest", 16,
       "(float[1, 2, 4, 4] x, float[1, 3, 3, 2] grid) => (float[1, 2, 3, 3] y) "
       "{ y = GridSample <mode = \"nearest\"> (x, grid) }",
       0, 0},
      // 24 outputs x 2x2 samples x 4 taps x 2; adaptive: one sample per bin.
      {"RoiAlign", 16,
       "(float[1, 2, 8, 8] x, float[3, 4] rois, int64[3] idx) => (float[3, 2, 2, 2] y) "
       "{ y = RoiAlign <output_height = 2, output_width = 2, sampling_ratio = 2> (x, rois, idx) }",
       0, 24 * 4 * 8},
      {"RoiAlign adaptive", 16,
       "(float[1, 2, 8, 8] x, float[3, 4] rois, int64[3] idx) => (float[3, 2, 2, 2] y) "
       "{ y = RoiAlign <output_height = 2, output_width = 2> (x, rois, idx) }",
       0, 24 * 8},
      {"TopK", 17, "(float[2, 10] x, int64[1] k) => (float[2, 3] v, int64[2, 3] i) { v, i = TopK(x, k) }", 0, 20},
      {"QuantizeLinear", 17, "(float[2, 5] x, float s, uint8 z) => (uint8[2, 5] y) { y = QuantizeLinear(x, s, z) }", 0, 2 * 10},
      {"ScatterElements add", 17,
       "(float[4, 4] d, int64[2, 4] i, float[2, 4] u) => (float[4, 4] y) "
       "{ y = ScatterElements <reduction = \"add\"> (d, i, u) }",
       0, 8},
      {"ScatterElements none", 17,
       "(float[4, 4] d, int64[2, 4] i, float[2, 4] u) => (float[4, 4] y) { y = ScatterElements(d, i, u) }", 0, 0},
      // Squares, mean, reciprocal root, normalize, scale: 5 per element.
      {"RMSNormalization", 23, "(float[2, 3, 4] x, float[4] g) => (float[2, 3, 4] y) { y = RMSNormalization(x, g) }", 0, 24 * 5},
      {"RotaryEmbedding", 23,
       "(float[1, 2, 3, 8] x, float[3, 4] c, float[3, 4] s, int64[1, 3] p) => (float[1, 2, 3, 8] y) "
       "{ y = RotaryEmbedding(x, c, s, p) }",
       0, 48 * 3},
      {"Swish", 24, "(float[2, 6] x) => (float[2, 6] y) { y = Swish(x) }", 0, 12},
      // The convolution of DeformConv: 36 outputs x 2 x 3 x 3.
      {"DeformConv", 19,
       "(float[1, 2, 5, 5] x, float[4, 2, 3, 3] w, float[1, 18, 3, 3] o) => (float[1, 4, 3, 3] y) "
       "{ y = DeformConv(x, w, o) }",
       36 * 18, 2 * 36 * 18},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    expect_cost(stats_of(fmt::format("<ir_version: 10, opset_import: [\"\" : {}]>\ng {}", c.opset, c.graph)), c.macs, c.flops);
  }
}

// A body of one MatMul [4, 8] x [8, 8]: 256 MACs per iteration.
constexpr const char* kLoop = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (INPUTS float[4, 8] x, float[8, 8] w) => (float[4, 8] y) INITS {
  y = Loop(m, cond, x) <body = body (int64 i, bool c, float[4, 8] h) => (bool c2, float[4, 8] h2) {
    c2 = Identity(c)
    t = MatMul(h, w)
    h2 = Relu(t)
  }>
})";

std::string loop_model(const std::string& inputs, const std::string& inits) {
  std::string text = kLoop;
  text.replace(text.find("INPUTS"), 6, inputs);
  text.replace(text.find("INITS"), 5, inits);
  return text;
}

TEST(Costs, LoopCountsItsBodyTimesAConstantTripCount) {
  auto constant = stats_of(loop_model("", "<int64 m = {3}, bool cond = {1}>"));
  expect_cost(constant, 3 * 256, 3 * (2 * 256 + 32));
  EXPECT_TRUE(constant.cost_notes.empty());
  ASSERT_EQ(constant.node_costs.size(), 1u);
  EXPECT_EQ(constant.node_costs[0]->macs, 3u * 256);

  // A condition computed in the loop may end it sooner: all 3 counted, said.
  auto early = stats_of(loop_model("bool cond,", "<int64 m = {3}>"));
  expect_cost(early, 3 * 256, 3 * (2 * 256 + 32));
  ASSERT_EQ(early.cost_notes.size(), 1u);
  EXPECT_NE(early.cost_notes[0].find("all 3 iterations counted"), std::string::npos) << early.cost_notes[0];

  auto unknown = stats_of(loop_model("int64 m, bool cond,", ""));
  expect_cost(unknown, 256, 2 * 256 + 32);
  ASSERT_EQ(unknown.cost_notes.size(), 1u);
  EXPECT_NE(unknown.cost_notes[0].find("trip count not constant; one iteration counted"), std::string::npos);
}

TEST(Costs, IfCountsTheBranchItTakesOrTheCostlierOne) {
  const char* text = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (COND float[4, 8] x, float[8, 8] w) => (float[4, 8] y) INIT {
  y = If(c) <then_branch = then () => (float[4, 8] a) { a = MatMul(x, w) },
             else_branch = else () => (float[4, 8] b) { b = Relu(x) }>
})";
  auto model = [&](const std::string& cond, const std::string& init) {
    std::string s = text;
    s.replace(s.find("COND"), 4, cond);
    s.replace(s.find("INIT"), 4, init);
    return s;
  };
  auto data_dependent = stats_of(model("bool c,", ""));
  expect_cost(data_dependent, 256, 512);
  ASSERT_EQ(data_dependent.cost_notes.size(), 1u);
  EXPECT_NE(data_dependent.cost_notes[0].find("costlier branch counted (then_branch)"), std::string::npos);
  auto constant_false = stats_of(model("", "<bool c = {0}>"));
  expect_cost(constant_false, 0, 32);
  EXPECT_TRUE(constant_false.cost_notes.empty());
}

TEST(Costs, ScanCountsItsBodyOncePerSlice) {
  // 5 slices of [4], one Add of 4 elements each.
  auto stats = stats_of(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] s0, float[5, 4] xs) => (float[4] s, float[5, 4] ys) {
  s, ys = Scan <num_scan_inputs = 1, body = step (float[4] acc, float[4] x) => (float[4] acc2, float[4] out) {
    acc2 = Add(acc, x)
    out = Identity(acc2)
  }> (s0, xs)
})");
  expect_cost(stats, 0, 5 * 4);
}

TEST(Costs, UnknownShapesInsideABodyAndCustomOpsAreNotCounted) {
  auto stats = stats_of(R"(
<ir_version: 8, opset_import: ["" : 17, "com.example" : 1]>
g (int64 m, bool cond, float[4, 8] x) => (float[4, 8] y, float[4, 8] z) {
  y = Loop(m, cond, x) <body = body (int64 i, bool c, float[4, 8] h) => (bool c2, float[4, 8] h2) {
    c2 = Identity(c)
    h2 = com.example.Scale(h)
  }>
  z = com.example.Scale(x)
})");
  EXPECT_EQ(stats.nodes_without_cost_model, 2u);
  EXPECT_EQ(stats.ops_without_cost_model.at("com.example:Scale"), 2u);

  // NonMaxSuppression's work depends on the boxes it keeps.
  auto nms = stats_of(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 10, 4] boxes, float[1, 1, 10] scores) => (int64[?, 3] kept) { kept = NonMaxSuppression(boxes, scores) })");
  EXPECT_EQ(nms.nodes_without_cost_model, 1u);
  EXPECT_EQ(nms.ops_without_cost_model.at("NonMaxSuppression"), 1u);
}

TEST(Parameters, ConstantNodesAndSubgraphInitializersAreCounted) {
  // Weights kept in a Constant node ([8, 8] = 64 floats) and in an If
  // branch's initializer ([4] floats); the int64 shape constant is no weight.
  std::string ones = "1.0";
  for (int i = 1; i < 64; ++i) ones += ", 1.0";
  auto stats = stats_of(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4, 8] x, bool c) => (float[4, 8] y, float[32] z) <float[3] bias = {1.0, 2.0, 3.0}> {
  w = Constant <value = float[8, 8] {)" +
                        ones + R"(}> ()
  shape = Constant <value = int64[1] {32}> ()
  y = MatMul(x, w)
  z = Reshape(x, shape)
  u = If(c) <then_branch = then () => (float[4] a) <float[4] k = {1.0, 2.0, 3.0, 4.0}> { a = Identity(k) },
             else_branch = else () => (float[4] b) <float[4] k2 = {0.0, 0.0, 0.0, 0.0}> { b = Identity(k2) }>
})");
  EXPECT_EQ(stats.initializer_count, 1u);
  EXPECT_EQ(stats.parameter_count, 3u);
  EXPECT_EQ(stats.constant_nodes.tensors, 1u);
  EXPECT_EQ(stats.constant_nodes.elements, 64u);
  EXPECT_EQ(stats.constant_nodes.bytes, 64u * 4);
  EXPECT_EQ(stats.subgraph_initializers.tensors, 2u);
  EXPECT_EQ(stats.subgraph_initializers.elements, 8u);
}

}  // namespace
}  // namespace onnxkit::testing
