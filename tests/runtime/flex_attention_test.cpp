// FlexAttention (ai.onnx.preview) against its definition written below in
// double, loop by loop: scores = Q K^T * scale, the score modifier, a softmax
// per row, the probability modifier, times V, query head h reading kv head
// h / group. The modifiers are small sub-graphs (an additive mask, a
// softcap, a scaling); the definition applies the same functions by hand.
// One case is worked out fully by hand. The cases cover the fused path (no
// modifier) and the materialised one, float, float16 and double, a
// softmax_precision of double under float inputs, a fully masked row, and
// the errors.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "runtime/kernels/common.h"
#include "support/node_runner.h"

namespace onnxkit {
namespace {

using runtime::DataType;
using runtime::Shape;
using runtime::Tensor;
using testing::attr;
using testing::expect_tensor_near;
using testing::try_run_node;
using Doubles = std::vector<double>;

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

struct Case {
  int64_t batch = 2, q_heads = 4, kv_heads = 2, q_len = 5, kv_len = 6, head = 8, v_head = 4;
  std::optional<float> scale;
  DataType type = DataType::float32;
  // The modifiers as functions of (i, j, value), for the definition; null: none.
  std::function<double(int64_t, int64_t, double)> score_fn, prob_fn;
  std::vector<onnx::AttributeProto> attributes;  // the same modifiers as sub-graphs, and the rest
};

Tensor make(DataType type, Shape shape, const Doubles& v) {
  Tensor t(type, std::move(shape));
  Status s = runtime::dispatch_float(type, [&]<class T>() -> Status {
    for (size_t i = 0; i < v.size(); ++i) t.mutable_data<T>()[i] = static_cast<T>(static_cast<runtime::compute_t<T>>(v[i]));
    return {};
  });
  EXPECT_TRUE(s.ok());
  return t;
}

// Values as the case's element type holds them.
Doubles rounded(DataType type, const Doubles& v) {
  const Tensor t = make(type, {static_cast<int64_t>(v.size())}, v);
  Doubles out(v.size());
  Status s = runtime::dispatch_float(type, [&]<class T>() -> Status {
    for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<double>(static_cast<runtime::compute_t<T>>(t.data<T>()[i]));
    return {};
  });
  EXPECT_TRUE(s.ok());
  return out;
}

Doubles definition(const Case& c, const Doubles& q, const Doubles& k, const Doubles& v) {
  const double scale = c.scale ? *c.scale : 1.0 / std::sqrt(static_cast<double>(c.head));
  const int64_t group = c.q_heads / c.kv_heads;
  Doubles y(static_cast<size_t>(c.batch * c.q_heads * c.q_len * c.v_head));
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.q_heads; ++h) {
      const int64_t kvh = b * c.kv_heads + h / group;
      for (int64_t i = 0; i < c.q_len; ++i) {
        Doubles s(static_cast<size_t>(c.kv_len));
        for (int64_t j = 0; j < c.kv_len; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < c.head; ++e)
            dot += q[static_cast<size_t>(((b * c.q_heads + h) * c.q_len + i) * c.head + e)] *
                   k[static_cast<size_t>((kvh * c.kv_len + j) * c.head + e)];
          s[j] = c.score_fn ? c.score_fn(i, j, dot * scale) : dot * scale;
        }
        double top = kNegInf, sum = 0;
        for (double x : s) top = std::max(top, x);
        for (double& x : s) sum += x = top == kNegInf ? 0 : std::exp(x - top);
        for (int64_t j = 0; j < c.kv_len; ++j) {
          s[j] = sum > 0 ? s[j] / sum : 0;
          if (c.prob_fn) s[j] = c.prob_fn(i, j, s[j]);
        }
        for (int64_t e = 0; e < c.v_head; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < c.kv_len; ++j) acc += s[j] * v[static_cast<size_t>((kvh * c.kv_len + j) * c.v_head + e)];
          y[static_cast<size_t>(((b * c.q_heads + h) * c.q_len + i) * c.v_head + e)] = acc;
        }
      }
    }
  return y;
}

Result<std::vector<runtime::Datum>> run(const Case& c, const Doubles& q, const Doubles& k, const Doubles& v) {
  return try_run_node({.op_type = "FlexAttention",
                       .domain = "ai.onnx.preview",
                       .opset = 1,
                       .inputs = {{"Q", make(c.type, {c.batch, c.q_heads, c.q_len, c.head}, q)},
                                  {"K", make(c.type, {c.batch, c.kv_heads, c.kv_len, c.head}, k)},
                                  {"V", make(c.type, {c.batch, c.kv_heads, c.kv_len, c.v_head}, v)}},
                       .attributes = c.attributes});
}

void check(const Case& c, double tolerance) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(-1, 1);
  auto random = [&](int64_t n) {
    Doubles r(static_cast<size_t>(n));
    for (double& x : r) x = dist(rng);
    return rounded(c.type, r);
  };
  const Doubles q = random(c.batch * c.q_heads * c.q_len * c.head);
  const Doubles k = random(c.batch * c.kv_heads * c.kv_len * c.head);
  const Doubles v = random(c.batch * c.kv_heads * c.kv_len * c.v_head);
  auto out = run(c, q, k, v);
  ASSERT_TRUE(out.ok()) << out.error().message();
  expect_tensor_near((*out)[0].tensor(), make(c.type, {c.batch, c.q_heads, c.q_len, c.v_head}, definition(c, q, k, v)), tolerance,
                     tolerance);
}

// A modifier sub-graph x -> y of `nodes` over the input "x", constants
// named in `constants`, element type `type`.
struct Constant {
  std::string name;
  Shape shape;
  Doubles values;
};
onnx::AttributeProto modifier(const std::string& attr_name, DataType type, const std::vector<onnx::NodeProto>& nodes,
                              const std::vector<Constant>& constants) {
  onnx::AttributeProto a;
  a.set_name(attr_name);
  a.set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto* g = a.mutable_g();
  g->set_name(attr_name);
  for (const onnx::NodeProto& n : nodes) *g->add_node() = n;
  for (const Constant& c : constants) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(c.name);
    t->set_data_type(static_cast<int32_t>(type));
    for (int64_t d : c.shape) t->add_dims(d);
    for (double x : c.values) type == DataType::float64 ? t->add_double_data(x) : t->add_float_data(static_cast<float>(x));
  }
  for (auto [list, name] : {std::pair{g->mutable_input(), "x"}, {g->mutable_output(), "y"}}) {
    onnx::ValueInfoProto* vi = list->Add();
    vi->set_name(name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(type));
  }
  return a;
}

onnx::NodeProto node(const std::string& op, std::vector<std::string> inputs, const std::string& output) {
  onnx::NodeProto n;
  n.set_op_type(op);
  for (const std::string& i : inputs) n.add_input(i);
  n.add_output(output);
  return n;
}

// score_mod: scores + mask, the mask (q_len, kv_len) causal but for row 0,
// which sees no key at all.
void add_mask(Case& c, DataType type) {
  Doubles mask;
  for (int64_t i = 0; i < c.q_len; ++i)
    for (int64_t j = 0; j < c.kv_len; ++j) mask.push_back(i == 0 || j > i ? kNegInf : 0.0);
  c.score_fn = [mask, n = c.kv_len](int64_t i, int64_t j, double s) { return s + mask[static_cast<size_t>(i * n + j)]; };
  c.attributes.push_back(modifier("score_mod", type, {node("Add", {"x", "mask"}, "y")}, {{"mask", {c.q_len, c.kv_len}, mask}}));
}

// Worked by hand: one head, one query, two keys, head size 1: scores 0 and
// ln 2 give probabilities 1/3 and 2/3, and values 3 and 6 give 5.
TEST(FlexAttention, WorkedByHand) {
  Case c{.batch = 1, .q_heads = 1, .kv_heads = 1, .q_len = 1, .kv_len = 2, .head = 1, .v_head = 1};
  auto out = run(c, {1.0}, {0.0, std::log(2.0)}, {3.0, 6.0});
  ASSERT_TRUE(out.ok()) << out.error().message();
  expect_tensor_near((*out)[0].tensor(), Tensor::from<float>({1, 1, 1, 1}, {5.0f}));
}

TEST(FlexAttention, FusedPathGqaScaleAndTypes) {
  for (DataType type : {DataType::float32, DataType::float16, DataType::bfloat16, DataType::float64}) {
    // The output's rounding: half a 16-bit ulp (float16 2^-11, bfloat16 2^-8).
    const double tolerance = type == DataType::float16 ? 3e-3 : type == DataType::bfloat16 ? 1e-2 : 1e-5;
    Case c{.type = type};
    check(c, tolerance);
    c.scale = 0.3f;
    c.attributes = {attr("scale", 0.3f)};
    check(c, tolerance);
  }
}

TEST(FlexAttention, ScoreModMaskWithAFullyMaskedRow) {
  for (DataType type : {DataType::float32, DataType::float16, DataType::float64}) {
    Case c{.type = type};
    add_mask(c, type == DataType::float64 ? DataType::float64 : DataType::float32);
    check(c, type == DataType::float16 ? 3e-3 : 1e-5);
  }
}

TEST(FlexAttention, SoftcapAndProbMod) {
  Case c{.q_len = 70, .kv_len = 90, .head = 16, .v_head = 8};
  c.scale = 2.0f;
  c.attributes.push_back(attr("scale", 2.0f));
  c.score_fn = [](int64_t, int64_t, double s) { return 1.5 * std::tanh(s / 1.5); };
  c.attributes.push_back(modifier("score_mod", DataType::float32,
                                  {node("Div", {"x", "cap"}, "t"), node("Tanh", {"t"}, "u"), node("Mul", {"u", "cap"}, "y")},
                                  {{"cap", {}, {1.5}}}));
  c.prob_fn = [](int64_t, int64_t, double p) { return p * 0.5; };
  c.attributes.push_back(modifier("prob_mod", DataType::float32, {node("Mul", {"x", "half"}, "y")}, {{"half", {}, {0.5}}}));
  check(c, 1e-5);
}

// softmax_precision double: the modifier receives double scores (an Add
// with a double constant fails on float ones).
TEST(FlexAttention, SoftmaxPrecisionDouble) {
  Case c;
  add_mask(c, DataType::float64);
  c.attributes.push_back(attr("softmax_precision", int64_t{11}));
  check(c, 1e-5);
}

TEST(FlexAttention, Errors) {
  Case c{.q_heads = 3, .kv_heads = 2};
  auto out = run(c, Doubles(2 * 3 * 5 * 8), Doubles(2 * 2 * 6 * 8), Doubles(2 * 2 * 6 * 4));
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("multiple of the key/value heads"), std::string::npos) << out.error().message();

  Case t;
  t.attributes.push_back(modifier("score_mod", DataType::float32, {node("Transpose", {"x"}, "y")}, {}));
  out = run(t, Doubles(2 * 4 * 5 * 8), Doubles(2 * 2 * 6 * 8), Doubles(2 * 2 * 6 * 4));
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("score_mod must return one float32 tensor"), std::string::npos) << out.error().message();

  Case p;
  p.attributes.push_back(attr("softmax_precision", int64_t{10}));
  p.attributes.push_back(modifier("prob_mod", DataType::float32, {node("Identity", {"x"}, "y")}, {}));
  out = run(p, Doubles(2 * 4 * 5 * 8), Doubles(2 * 2 * 6 * 8), Doubles(2 * 2 * 6 * 4));
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("softmax_precision"), std::string::npos) << out.error().message();
}

}  // namespace
}  // namespace onnxkit
