// Fusion at session build (runtime/fusion.h): the chains torch exports for
// nn.Linear and nn.GELU run as one kernel when, and only when, that computes
// the same function. Truth: the formula evaluated in double here, and the
// same model run unfused.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "ir/model.h"
#include "runtime/session.h"
#include "runtime/tensor_proto.h"
#include "support/node_runner.h"
#include "support/test_support.h"

namespace onnxkit {
namespace {

using runtime::DataType;
using runtime::Tensor;
using testing::attr;
using testing::expect_tensor_near;
using testing::step_kinds;

constexpr int64_t kRows = 6, kIn = 8, kOut = 16;

// x [2, 3, 8] -> [MatMul(W) -> Add(b)] -> torch's GELU, with the GELU's
// constants as Constant nodes (as torch writes them).
struct Variant {
  bool linear = true;
  bool bias_through_identity = false;  // torch shares one bias between layers so
  float divisor = static_cast<float>(M_SQRT2);
  bool erf_is_an_output = false;
  int64_t out = kOut;  // columns of W: at 1024 the kernel stores W transposed or packed
};

float weight(int64_t i) { return static_cast<float>((i * 7) % 13) / 13.0f - 0.5f; }
float bias(int64_t j) { return 0.1f * static_cast<float>(j % 5) - 0.2f; }
float input(int64_t i) { return static_cast<float>((i * 5) % 17) / 4.0f - 2.0f; }

// An empty model at `opset`, and the type of a float tensor of `dims`.
std::shared_ptr<ir::Model> empty_model(int64_t opset = 17) {
  auto model = std::make_shared<ir::Model>();
  model->mutable_header().set_ir_version(8);
  model->set_opset("", opset);
  return model;
}

onnx::TypeProto float_type(const std::vector<int64_t>& dims) {
  onnx::TypeProto type;
  type.mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) type.mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
  return type;
}

std::shared_ptr<const ir::Model> gelu_model(const Variant& v) {
  auto model = empty_model();
  ir::Graph& g = model->graph();
  ir::Value* x = g.add_input("x", float_type({2, 3, kIn}));
  auto constant = [&](const std::string& name, float value) {
    ir::Node* c = g.add_node("Constant", {}, {name});
    c->set_attribute(attr("value", Tensor::from<float>({}, {value})));
    return c->output(0);
  };
  if (v.linear) {
    std::vector<float> w, b;
    for (int64_t i = 0; i < kIn * v.out; ++i) w.push_back(weight(i));
    for (int64_t j = 0; j < v.out; ++j) b.push_back(bias(j));
    ir::Value* wv = g.add_initializer("W", runtime::tensor_to_proto(Tensor::from<float>({kIn, v.out}, w)));
    ir::Value* bv = g.add_initializer("b", runtime::tensor_to_proto(Tensor::from<float>({v.out}, b)));
    if (v.bias_through_identity) bv = g.add_node("Identity", {bv}, {"b_shared"})->output(0);
    ir::Value* product = g.add_node("MatMul", {x, wv}, {"product"})->output(0);
    x = g.add_node("Add", {bv, product}, {"linear"})->output(0);
  }
  ir::Value* scaled = g.add_node("Div", {x, constant("divisor", v.divisor)}, {"scaled"})->output(0);
  ir::Value* erf = g.add_node("Erf", {scaled}, {"erf"})->output(0);
  ir::Value* plus_one = g.add_node("Add", {erf, constant("one", 1.0f)}, {"plus_one"})->output(0);
  ir::Value* times_x = g.add_node("Mul", {x, plus_one}, {"times_x"})->output(0);
  g.add_output(g.add_node("Mul", {times_x, constant("half", 0.5f)}, {"y"})->output(0));
  if (v.erf_is_an_output) g.add_output(erf);
  return model;
}

Tensor input_tensor() {
  std::vector<float> values;
  for (int64_t i = 0; i < kRows * kIn; ++i) values.push_back(input(i));
  return Tensor::from<float>({2, 3, kIn}, values);
}

// gelu(x W + b) in double.
Tensor expected_output(bool linear, int64_t out = kOut) {
  const int64_t cols = linear ? out : kIn;
  std::vector<double> y;
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      double v = static_cast<double>(input(r * kIn + j % kIn));
      if (linear) {
        v = bias(j);
        for (int64_t k = 0; k < kIn; ++k) v += static_cast<double>(input(r * kIn + k)) * weight(k * out + j);
      }
      y.push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
    }
  std::vector<float> f(y.begin(), y.end());
  return Tensor::from<float>({2, 3, cols}, f);
}

struct Outcome {
  Tensor y;
  std::vector<std::string> steps;  // op or fused kind of each step
};

// `model` run once on `feeds` by a profiling session: output 0 and the steps.
Outcome run_model(const std::shared_ptr<const ir::Model>& model, const runtime::NamedValues& feeds, bool fuse, int threads) {
  auto session = runtime::Session::create(model, {.threads = threads, .profile = true, .fuse = fuse});
  EXPECT_TRUE(session.ok()) << session.error().message();
  if (!session.ok()) return {};
  auto out = (*session)->run(feeds);
  EXPECT_TRUE(out.ok()) << out.error().message();
  return {out.ok() ? (*out)[0].tensor() : Tensor(), step_kinds(**session)};
}

Outcome run(const Variant& v, bool fuse) { return run_model(gelu_model(v), {{"x", input_tensor()}}, fuse, 1); }

ir::Value* add_transpose(ir::Graph& g, ir::Value* x, std::vector<int64_t> perm, const std::string& name) {
  ir::Node* t = g.add_node("Transpose", {x}, {name});
  t->set_attribute(attr("perm", perm));
  return t->output(0);
}

TEST(Fusion, LinearThenGeluIsOneStep) {
  Outcome fused = run({}, true), plain = run({}, false);
  EXPECT_EQ(fused.steps, std::vector<std::string>{"MatMul+Add+Gelu"});
  EXPECT_EQ(plain.steps.size(), 7u);  // MatMul, Add, Div, Erf, Add, Mul, Mul
  expect_tensor_near(fused.y, expected_output(true), 1e-6, 1e-5);
  expect_tensor_near(fused.y, plain.y, 1e-6, 1e-5);
}

TEST(Fusion, LinearThenGeluOf1024ColumnsIsOneStep) {
  Outcome fused = run({.out = 1024}, true);
  EXPECT_EQ(fused.steps, std::vector<std::string>{"MatMul+Add+Gelu"});
  expect_tensor_near(fused.y, expected_output(true, 1024), 1e-6, 1e-5);
  // The linear layer alone (its Erf is returned), at that width too.
  Outcome linear = run({.erf_is_an_output = true, .out = 1024}, true);
  EXPECT_EQ(linear.steps, (std::vector<std::string>{"MatMul+Add", "Div", "Erf", "Element-wise chain", "Mul"}));
  expect_tensor_near(linear.y, expected_output(true, 1024), 1e-6, 1e-5);
}

TEST(Fusion, GeluAloneAndABiasSharedThroughIdentity) {
  Outcome gelu = run({.linear = false}, true);
  EXPECT_EQ(gelu.steps, std::vector<std::string>{"Gelu"});
  expect_tensor_near(gelu.y, expected_output(false), 1e-6, 1e-5);
  Outcome shared = run({.bias_through_identity = true}, true);
  EXPECT_EQ(shared.steps, std::vector<std::string>{"MatMul+Add+Gelu"});
  expect_tensor_near(shared.y, expected_output(true), 1e-6, 1e-5);
}

TEST(Fusion, DeclinesWhenAPartIsSeenOrTheConstantsDiffer) {
  // The Erf value is returned: only the linear layer fuses.
  Outcome seen = run({.erf_is_an_output = true}, true);
  EXPECT_EQ(seen.steps, (std::vector<std::string>{"MatMul+Add", "Div", "Erf", "Element-wise chain", "Mul"}));
  expect_tensor_near(seen.y, expected_output(true), 1e-6, 1e-5);
  // x / 2 is not GELU's x / sqrt 2. What stays of it after the Erf is an
  // element-wise chain all the same: + 1, then * x.
  Outcome other = run({.divisor = 2.0f}, true);
  EXPECT_EQ(other.steps, (std::vector<std::string>{"MatMul+Add", "Div", "Erf", "Element-wise chain", "Mul"}));
  expect_tensor_near(other.y, run({.divisor = 2.0f}, false).y, 1e-6, 1e-5);
}

// x [2, 3, 8] -> MatMul(W [8, out]) -> Add(b) -> Softmax: a recognizer's
// class scores. x's rank is declared unless `rank_unknown`; no `axis` leaves
// the attribute out.
struct SoftmaxVariant {
  int64_t opset = 17;
  std::optional<int64_t> axis = 2;
  bool rank_unknown = false;
  int64_t out = kOut;
};

std::shared_ptr<const ir::Model> linear_softmax_model(const SoftmaxVariant& v) {
  auto model = empty_model(v.opset);
  ir::Graph& g = model->graph();
  onnx::TypeProto type = float_type({2, 3, kIn});
  if (v.rank_unknown) type.mutable_tensor_type()->clear_shape();
  ir::Value* x = g.add_input("x", type);
  std::vector<float> w, b;
  for (int64_t i = 0; i < kIn * v.out; ++i) w.push_back(weight(i));
  for (int64_t j = 0; j < v.out; ++j) b.push_back(4.0f * bias(j));
  ir::Value* wv = g.add_initializer("W", runtime::tensor_to_proto(Tensor::from<float>({kIn, v.out}, w)));
  ir::Value* bv = g.add_initializer("b", runtime::tensor_to_proto(Tensor::from<float>({v.out}, b)));
  ir::Value* product = g.add_node("MatMul", {x, wv}, {"product"})->output(0);
  ir::Value* scores = g.add_node("Add", {product, bv}, {"scores"})->output(0);
  ir::Node* softmax = g.add_node("Softmax", {scores}, {"y"});
  if (v.axis) softmax->set_attribute(attr("axis", *v.axis));
  g.add_output(softmax->output(0));
  return model;
}

// The softmax of x W + b in double, over each group of values that share
// the index `group` gives them ([2, 3, out] flattened).
template <class Group> Tensor expected_softmax(int64_t out, Group group) {
  std::vector<double> v;
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t j = 0; j < out; ++j) {
      double sum = 4.0 * static_cast<double>(bias(j));
      for (int64_t k = 0; k < kIn; ++k) sum += static_cast<double>(input(r * kIn + k)) * weight(k * out + j);
      v.push_back(sum);
    }
  std::vector<double> total(v.size(), 0.0);
  for (size_t i = 0; i < v.size(); ++i) total[group(static_cast<int64_t>(i))] += std::exp(v[i]);
  std::vector<float> y;
  for (size_t i = 0; i < v.size(); ++i) y.push_back(static_cast<float>(std::exp(v[i]) / total[group(static_cast<int64_t>(i))]));
  return Tensor::from<float>({2, 3, out}, y);
}

TEST(Fusion, LinearThenSoftmaxOnTheLastAxisIsOneStep) {
  auto rows = [](int64_t out) { return [out](int64_t i) { return static_cast<size_t>(i / out); }; };
  for (int64_t out : {kOut, int64_t{1024}}) {  // at 1024 the bias is the packed product's
    for (SoftmaxVariant v :
         {SoftmaxVariant{.out = out}, SoftmaxVariant{.axis = -1, .out = out}, SoftmaxVariant{.opset = 11, .out = out},
          SoftmaxVariant{.opset = 11, .axis = -1, .out = out}, SoftmaxVariant{.axis = -1, .rank_unknown = true, .out = out},
          SoftmaxVariant{.axis = std::nullopt, .rank_unknown = true, .out = out}}) {  // from opset 13 the default is -1
      SCOPED_TRACE(::testing::Message() << "opset " << v.opset << " axis " << v.axis.value_or(99) << " out " << out);
      Outcome fused = run_model(linear_softmax_model(v), {{"x", input_tensor()}}, true, 1);
      EXPECT_EQ(fused.steps, std::vector<std::string>{"MatMul+Add+Softmax"});
      expect_tensor_near(fused.y, expected_softmax(out, rows(out)), 1e-7, 1e-5);
    }
  }
}

TEST(Fusion, SoftmaxOnAnotherAxisStaysApart) {
  const int64_t out = kOut;
  const std::vector<std::string> apart{"MatMul+Add", "Softmax"};
  // Along axis 1: the three rows of each batch, column by column.
  Outcome middle = run_model(linear_softmax_model({.axis = 1}), {{"x", input_tensor()}}, true, 1);
  EXPECT_EQ(middle.steps, apart);
  expect_tensor_near(
      middle.y, expected_softmax(out, [&](int64_t i) { return static_cast<size_t>(i / (3 * out) * out + i % out); }), 1e-7, 1e-5);
  // Before opset 13 the default axis 1 views [2, 3, out] as [2, 3 * out].
  Outcome flat = run_model(linear_softmax_model({.opset = 11, .axis = std::nullopt}), {{"x", input_tensor()}}, true, 1);
  EXPECT_EQ(flat.steps, apart);
  expect_tensor_near(flat.y, expected_softmax(out, [&](int64_t i) { return static_cast<size_t>(i / (3 * out)); }), 1e-7, 1e-5);
  // Axis 2 is the last only if x's rank is known.
  Outcome unknown = run_model(linear_softmax_model({.rank_unknown = true}), {{"x", input_tensor()}}, true, 1);
  EXPECT_EQ(unknown.steps, apart);
  expect_tensor_near(unknown.y, expected_softmax(out, [&](int64_t i) { return static_cast<size_t>(i / out); }), 1e-7, 1e-5);
}

// x = -4..4 through a 1x1 Conv with weights [2, -1] and bias [1, 0], then a
// Clip: channel 0 is 2x + 1, channel 1 is -x, before clipping.
std::shared_ptr<const ir::Model> conv_clip_model(int64_t opset, bool constant_bounds) {
  auto model = empty_model(opset);
  ir::Graph& g = model->graph();
  ir::Value* x = g.add_input("x", float_type({1, 1, 3, 3}));
  ir::Value* w = g.add_initializer("w", runtime::tensor_to_proto(Tensor::from<float>({2, 1, 1, 1}, {2, -1})));
  ir::Value* b = g.add_initializer("b", runtime::tensor_to_proto(Tensor::from<float>({2}, {1, 0})));
  ir::Value* conv = g.add_node("Conv", {x, w, b}, {"conv"})->output(0);
  ir::Node* clip = nullptr;
  if (opset < 11) {
    clip = g.add_node("Clip", {conv}, {"y"});
    clip->set_attribute(attr("min", 0.0f));
    clip->set_attribute(attr("max", 6.0f));
  } else if (constant_bounds) {
    ir::Value* lo = g.add_initializer("lo", runtime::tensor_to_proto(Tensor::from<float>({}, {0})));
    ir::Value* hi = g.add_initializer("hi", runtime::tensor_to_proto(Tensor::from<float>({}, {6})));
    clip = g.add_node("Clip", {conv, lo, hi}, {"y"});
  } else {
    clip = g.add_node("Clip", {conv, g.add_input("lo", float_type({})), g.add_input("hi", float_type({}))}, {"y"});
  }
  g.add_output(clip->output(0));
  return model;
}

TEST(Fusion, ConvThenClipIsOneOneDnnPrimitive) {
  std::vector<float> x;
  for (int i = -4; i <= 4; ++i) x.push_back(static_cast<float>(i));
  const Tensor expected = Tensor::from<float>({1, 2, 3, 3}, {0, 0, 0, 0, 1, 3, 5, 6, 6,  //
                                                             4, 3, 2, 1, 0, 0, 0, 0, 0});
  for (auto [opset, constant_bounds] : {std::pair{6, true}, {13, true}, {13, false}}) {
    auto session = runtime::Session::create(conv_clip_model(opset, constant_bounds), {.threads = 1, .profile = true});
    ASSERT_TRUE(session.ok()) << session.error().message();
    runtime::NamedValues feeds = {{"x", Tensor::from<float>({1, 1, 3, 3}, x)}};
    if (!constant_bounds) {
      feeds.emplace_back("lo", Tensor::from<float>({}, {0}));
      feeds.emplace_back("hi", Tensor::from<float>({}, {6}));
    }
    auto out = (*session)->run(feeds);
    ASSERT_TRUE(out.ok()) << out.error().message();
    expect_tensor_near((*out)[0].tensor(), expected, 0, 0);
    // Bounds only known at run time keep Clip a step of its own.
    EXPECT_EQ(step_kinds(**session).back(), constant_bounds ? "(fused into Conv)" : "Clip") << opset;
  }
}

// x = -8..8 (stepped by 1/2) through a 1x1 Conv to `channels` channels,
// weights 2 and -1 and biases 1 and 0 in turn (even channels 2x + 1, odd
// ones -x), then `activation`: HardSwish, HardSigmoid, Sigmoid, or "Swish"
// for Sigmoid -> Mul(conv, sigmoid) with the Conv's output as Mul input
// `swish_conv_at`. With `sigmoid_seen` the Sigmoid's output is a graph output
// too, which keeps it unfused. At 16 channels every node runs blocked; at 2
// only the Conv and the zero-preserving HardSwish do. x is [1, 1, 3, width].
std::shared_ptr<const ir::Model> conv_activation_model(const std::string& activation, int64_t channels, size_t swish_conv_at = 0,
                                                       bool sigmoid_seen = false, int64_t width = 11) {
  auto model = empty_model(17);
  ir::Graph& g = model->graph();
  ir::Value* x = g.add_input("x", float_type({1, 1, 3, width}));
  std::vector<float> weights, biases;
  for (int64_t c = 0; c < channels; ++c) {
    weights.push_back(c % 2 == 0 ? 2.0f : -1.0f);
    biases.push_back(c % 2 == 0 ? 1.0f : 0.0f);
  }
  ir::Value* w = g.add_initializer("w", runtime::tensor_to_proto(Tensor::from<float>({channels, 1, 1, 1}, weights)));
  ir::Value* b = g.add_initializer("b", runtime::tensor_to_proto(Tensor::from<float>({channels}, biases)));
  ir::Value* conv = g.add_node("Conv", {x, w, b}, {"conv"})->output(0);
  if (activation != "Swish") {
    ir::Node* node = g.add_node(activation, {conv}, {"y"});
    if (activation == "HardSigmoid") {
      node->set_attribute(attr("alpha", 0.25f));
      node->set_attribute(attr("beta", 0.375f));
    }
    g.add_output(node->output(0));
    return model;
  }
  ir::Value* gate = g.add_node("Sigmoid", {conv}, {"gate"})->output(0);
  ir::Value* y = g.add_node("Mul", swish_conv_at == 0 ? std::vector{conv, gate} : std::vector{gate, conv}, {"y"})->output(0);
  g.add_output(y);
  if (sigmoid_seen) g.add_output(gate);
  return model;
}

TEST(Fusion, ConvThenHardSwishHardSigmoidSigmoidOrSwishIsOneStep) {
  std::vector<float> x;
  for (int i = 0; i < 33; ++i) x.push_back(-8.0f + 0.5f * static_cast<float>(i));
  const std::vector<std::pair<std::string, double (*)(double)>> cases = {
      {"HardSwish", [](double v) { return v * std::clamp(v / 6 + 0.5, 0.0, 1.0); }},
      {"HardSigmoid", [](double v) { return std::clamp(0.25 * v + 0.375, 0.0, 1.0); }},
      {"Sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"Swish", [](double v) { return v / (1 + std::exp(-v)); }},
  };
  for (const auto& [activation, f] : cases)
    for (int64_t channels : {2, 16}) {
      std::vector<float> expected;
      for (int64_t c = 0; c < channels; ++c)
        for (float v : x) expected.push_back(static_cast<float>(c % 2 == 0 ? f(2.0 * v + 1) : f(-v)));
      for (size_t conv_at : {0, 1}) {
        if (activation != "Swish" && conv_at == 1) continue;
        for (int threads : {1, 2}) {
          auto session = runtime::Session::create(conv_activation_model(activation, channels, conv_at),
                                                  {.threads = threads, .profile = true});
          ASSERT_TRUE(session.ok()) << session.error().message();
          auto out = (*session)->run({{"x", Tensor::from<float>({1, 1, 3, 11}, x)}});
          ASSERT_TRUE(out.ok()) << out.error().message();
          SCOPED_TRACE(activation + ", " + std::to_string(channels) + " channels, conv at " + std::to_string(conv_at) +
                       ", threads " + std::to_string(threads));
          expect_tensor_near((*out)[0].tensor(), Tensor::from<float>({1, channels, 3, 11}, expected), 1e-6, 1e-5);
          const std::vector<std::string> kinds = step_kinds(**session);
          const auto fused = std::count(kinds.begin(), kinds.end(), "(fused into Conv)");
          EXPECT_EQ(fused, activation == "Swish" ? 2 : 1);
        }
      }
    }
}

// ConvTranspose -> BatchNormalization -> activation (a decoder's upsampling):
// the normalization folds into the weights and bias, the activation applies
// to the output, on the non-overlapping path (kernel = stride) and the
// general one (grouped, no bias); an activation alone; a normalization whose
// statistics are an input stays a node. Against the unfused session.
TEST(Fusion, ConvTransposeTakesOverItsBatchNormAndActivation) {
  onnx::ModelProto proto = testing::parse_model_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,6,7,9] x, float[4] live) => (float[2,4,14,18] y, float[2,4,13,17] z, float[2,4,14,18] h, float[2,4,14,18] u) {
  t1 = ConvTranspose <kernel_shape = [2,2], strides = [2,2]> (x, w1, b1)
  n1 = BatchNormalization <epsilon = 0.001> (t1, scale, shift, mean, var)
  y = Relu(n1)
  t2 = ConvTranspose <kernel_shape = [3,3], strides = [2,2], pads = [1,1,1,1], group = 2> (x, w2)
  n2 = BatchNormalization (t2, scale, shift, mean, var)
  z = Sigmoid(n2)
  t3 = ConvTranspose <kernel_shape = [2,2], strides = [2,2]> (x, w1)
  h = HardSwish(t3)
  t4 = ConvTranspose <kernel_shape = [2,2], strides = [2,2]> (x, w1, b1)
  u = BatchNormalization (t4, scale, shift, mean, live)
})");
  unsigned seed = 20;
  for (const auto& [name, shape] : std::vector<std::pair<std::string, runtime::Shape>>{{"w1", {6, 4, 2, 2}},
                                                                                       {"b1", {4}},
                                                                                       {"w2", {6, 2, 3, 3}},
                                                                                       {"scale", {4}},
                                                                                       {"shift", {4}},
                                                                                       {"mean", {4}},
                                                                                       {"var", {4}}}) {
    Tensor t = testing::random_tensor(shape, seed++);
    if (name == "var")
      for (int64_t i = 0; i < 4; ++i) t.mutable_data<float>()[i] = 0.2f + std::abs(t.data<float>()[i]);
    onnx::TensorProto p = runtime::tensor_to_proto(t);
    p.set_name(name);
    *proto.mutable_graph()->add_initializer() = std::move(p);
  }
  auto imported = ir::import_model(std::move(proto));
  ASSERT_TRUE(imported.ok()) << imported.error().message();
  const std::shared_ptr<const ir::Model> model = std::move(imported).value();
  const runtime::NamedValues feeds = {{"x", testing::random_tensor({2, 6, 7, 9}, 30)},
                                      {"live", Tensor::from<float>({4}, {0.5f, 1.0f, 1.5f, 2.0f})}};
  auto reference = runtime::Session::create(model, {.threads = 1, .fuse = false});
  ASSERT_TRUE(reference.ok()) << reference.error().message();
  auto expected = (*reference)->run(feeds);
  ASSERT_TRUE(expected.ok()) << expected.error().message();
  for (int threads : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << threads << " threads");
    auto session = runtime::Session::create(model, {.threads = threads, .profile = true});
    ASSERT_TRUE(session.ok()) << session.error().message();
    auto out = (*session)->run(feeds);
    ASSERT_TRUE(out.ok()) << out.error().message();
    for (size_t i = 0; i < out->size(); ++i) expect_tensor_near((*out)[i].tensor(), (*expected)[i].tensor(), 1e-5, 1e-5);
    const std::vector<std::string> kinds = step_kinds(**session);
    EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "(fused into Conv)"), 5);   // n1, y, n2, z, h
    EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "BatchNormalization"), 1);  // u
  }
}

// oneDNN's Swish post-op is slow, so the Conv applies Swish itself after the
// primitive, in chunks of 16384 outputs shared by the threads: on 3 x 2048
// pixels of 16 or 24 channels (6 and 12 chunks, the last one partial for 24
// in plain layout, 32 with padding blocked) every chunk must be done.
TEST(Fusion, ConvThenSwishOverManyChunksAtOneAndTwoThreads) {
  constexpr int64_t kWidth = 2048;
  std::vector<float> x;
  for (int64_t i = 0; i < 3 * kWidth; ++i) x.push_back(-10.0f + 20.0f * static_cast<float>(i) / (3 * kWidth));
  auto swish = [](double v) { return v / (1 + std::exp(-v)); };
  for (int64_t channels : {16, 24, 3}) {
    std::vector<float> expected;
    for (int64_t c = 0; c < channels; ++c)
      for (float v : x) expected.push_back(static_cast<float>(c % 2 == 0 ? swish(2.0 * v + 1) : swish(-v)));
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::to_string(channels) + " channels, threads " + std::to_string(threads));
      auto session = runtime::Session::create(conv_activation_model("Swish", channels, 0, false, kWidth), {.threads = threads});
      ASSERT_TRUE(session.ok()) << session.error().message();
      auto out = (*session)->run({{"x", Tensor::from<float>({1, 1, 3, kWidth}, x)}});
      ASSERT_TRUE(out.ok()) << out.error().message();
      expect_tensor_near((*out)[0].tensor(), Tensor::from<float>({1, channels, 3, kWidth}, expected), 1e-6, 1e-5);
    }
  }
}

TEST(Fusion, SwishWhoseSigmoidIsSeenStaysUnfused) {
  std::vector<float> x(33, 0.5f);
  auto session = runtime::Session::create(conv_activation_model("Swish", 2, 0, true), {.threads = 1, .profile = true});
  ASSERT_TRUE(session.ok()) << session.error().message();
  auto out = (*session)->run({{"x", Tensor::from<float>({1, 1, 3, 11}, x)}});
  ASSERT_TRUE(out.ok()) << out.error().message();
  // Channel 0 is 2 * 0.5 + 1 = 2, channel 1 is -0.5.
  const double s0 = 1 / (1 + std::exp(-2.0)), s1 = 1 / (1 + std::exp(0.5));
  std::vector<float> gate(33, static_cast<float>(s0)), y(33, static_cast<float>(2 * s0));
  gate.insert(gate.end(), 33, static_cast<float>(s1));
  y.insert(y.end(), 33, static_cast<float>(-0.5 * s1));
  expect_tensor_near((*out)[0].tensor(), Tensor::from<float>({1, 2, 3, 11}, y), 1e-6, 1e-5);
  expect_tensor_near((*out)[1].tensor(), Tensor::from<float>({1, 2, 3, 11}, gate), 1e-6, 1e-5);
  const std::vector<std::string> kinds = step_kinds(**session);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "(fused into Conv)"), 0);
}

// y = LayerNormalization(a + b) over the last axis of [2, 3, 8]; b is
// [2, 3, 8] or, to be broadcast, [8].
std::shared_ptr<const ir::Model> add_norm_model(bool broadcast) {
  auto model = empty_model();
  ir::Graph& g = model->graph();
  ir::Value* a = g.add_input("a", float_type({2, 3, kIn}));
  ir::Value* b = g.add_input("b", broadcast ? float_type({kIn}) : float_type({2, 3, kIn}));
  std::vector<float> scale, shift;
  for (int64_t i = 0; i < kIn; ++i) {
    scale.push_back(weight(i) + 1.0f);
    shift.push_back(0.1f * bias(i));
  }
  ir::Value* sum = g.add_node("Add", {a, b}, {"sum"})->output(0);
  ir::Node* norm = g.add_node("LayerNormalization",
                              {sum, g.add_initializer("scale", runtime::tensor_to_proto(Tensor::from<float>({kIn}, scale))),
                               g.add_initializer("shift", runtime::tensor_to_proto(Tensor::from<float>({kIn}, shift)))},
                              {"y"});
  norm->set_attribute(attr("epsilon", 1e-3f));
  g.add_output(norm->output(0));
  return model;
}

TEST(Fusion, ResidualAddThenLayerNormIsOneStepUnlessItBroadcasts) {
  for (bool broadcast : {false, true}) {
    SCOPED_TRACE(broadcast ? "broadcast" : "same shape");
    const int64_t b_size = broadcast ? kIn : kRows * kIn;
    std::vector<float> a, b;
    for (int64_t i = 0; i < kRows * kIn; ++i) a.push_back(input(i) * 3.0f + 100.0f);  // a large mean
    for (int64_t i = 0; i < b_size; ++i) b.push_back(weight(i * 3));
    // The truth, in double: ((a + b) - mean) / sqrt(var + 1e-3) * scale + bias per row.
    std::vector<float> expected;
    for (int64_t r = 0; r < kRows; ++r) {
      std::vector<double> v;
      for (int64_t j = 0; j < kIn; ++j) v.push_back(double(a[r * kIn + j]) + double(b[(r * kIn + j) % b_size]));
      double mean = 0, var = 0;
      for (double x : v) mean += x / kIn;
      for (double x : v) var += (x - mean) * (x - mean) / kIn;
      for (int64_t j = 0; j < kIn; ++j)
        expected.push_back(static_cast<float>((v[j] - mean) / std::sqrt(var + 1e-3) * (weight(j) + 1.0f) + 0.1f * bias(j)));
    }
    for (bool fuse : {true, false}) {
      auto session = runtime::Session::create(add_norm_model(broadcast), {.threads = 1, .profile = true, .fuse = fuse});
      ASSERT_TRUE(session.ok()) << session.error().message();
      auto out = (*session)->run({{"a", Tensor::from<float>({2, 3, kIn}, a)},
                                  {"b", broadcast ? Tensor::from<float>({kIn}, b) : Tensor::from<float>({2, 3, kIn}, b)}});
      ASSERT_TRUE(out.ok()) << out.error().message();
      expect_tensor_near((*out)[0].tensor(), Tensor::from<float>({2, 3, kIn}, expected), 1e-5, 1e-5);
      const std::vector<std::string> steps = step_kinds(**session);
      if (fuse && !broadcast) EXPECT_EQ(steps, std::vector<std::string>{"Add+LayerNormalization"});
      else EXPECT_EQ(steps, (std::vector<std::string>{"Add", "LayerNormalization"}));
    }
  }
}

// x [N, C, H, W] -> Transpose [0, 2, 3, 1] -> LayerNormalization over C
// (ConvNeXt's), against the normalization worked here in double: one step
// on one thread and on two (the larger shape is shared out; its positions
// are no multiple of the kernel's tile); with a B of another shape than
// one per channel, or another perm, no fusion; a Scale of one value for
// all channels broadcasts.
TEST(Fusion, ChannelsMovedLastThenLayerNormIsOneStep) {
  struct Case {
    std::vector<int64_t> shape;
    std::vector<int64_t> perm = {0, 2, 3, 1};
    bool per_channel = true;
    bool one_scale = false;  // Scale [1], for all channels
  };
  for (const Case& c : {Case{{2, 5, 3, 4}}, Case{{2, 8, 41, 60}}, Case{{2, 5, 3, 4}, {0, 3, 2, 1}},
                        Case{{2, 5, 3, 4}, {0, 2, 3, 1}, false}, Case{{2, 5, 3, 4}, {0, 2, 3, 1}, true, true}}) {
    const int64_t n = c.shape[0], ch = c.shape[1], hw = c.shape[2] * c.shape[3];
    SCOPED_TRACE(::testing::PrintToString(c.shape) + " perm " + ::testing::PrintToString(c.perm));
    auto model = empty_model();
    ir::Graph& g = model->graph();
    ir::Value* x = g.add_input("x", float_type(c.shape));
    std::vector<float> scale, shift, xv;
    for (int64_t i = 0; i < ch; ++i) {
      scale.push_back(c.one_scale ? 1.5f : weight(i) + 1.0f);
      shift.push_back(0.1f * bias(i));
    }
    for (int64_t i = 0; i < n * ch * hw; ++i) xv.push_back(input(i * 7 + i / 13) * 3.0f + 50.0f);  // a large mean
    const Tensor scale_t = c.one_scale ? Tensor::from<float>({1}, {1.5f}) : Tensor::from<float>({ch}, scale);
    const Tensor shift_t = c.per_channel ? Tensor::from<float>({ch}, shift) : Tensor::from<float>({1, ch}, shift);
    ir::Node* norm = g.add_node("LayerNormalization",
                                {add_transpose(g, x, c.perm, "t"), g.add_initializer("scale", runtime::tensor_to_proto(scale_t)),
                                 g.add_initializer("shift", runtime::tensor_to_proto(shift_t))},
                                {"y"});
    norm->set_attribute(attr("epsilon", 1e-3f));
    g.add_output(norm->output(0));
    const bool fuses = c.per_channel && c.perm == std::vector<int64_t>{0, 2, 3, 1};
    for (int threads : {1, 2}) {
      Outcome fused = run_model(model, {{"x", Tensor::from<float>(c.shape, xv)}}, true, threads);
      EXPECT_EQ(fused.steps, fuses ? std::vector<std::string>{"Transpose+LayerNormalization"}
                                   : (std::vector<std::string>{"Transpose", "LayerNormalization"}));
      if (!fuses) continue;  // the truth below is for the fused perm
      std::vector<float> expected;
      for (int64_t b = 0; b < n; ++b)
        for (int64_t p = 0; p < hw; ++p) {
          double mean = 0, var = 0;
          for (int64_t k = 0; k < ch; ++k) mean += double(xv[(b * ch + k) * hw + p]) / double(ch);
          for (int64_t k = 0; k < ch; ++k) {
            const double d = double(xv[(b * ch + k) * hw + p]) - mean;
            var += d * d / double(ch);
          }
          for (int64_t k = 0; k < ch; ++k)
            expected.push_back(
                static_cast<float>((double(xv[(b * ch + k) * hw + p]) - mean) / std::sqrt(var + 1e-3) * scale[k] + shift[k]));
        }
      expect_tensor_near(fused.y, Tensor::from<float>({n, c.shape[2], c.shape[3], ch}, expected), 1e-5, 1e-5);
    }
  }
}

TEST(Fusion, AResidualAddGoesToTheConvOrToTheLayerNormNeverBoth) {
  // c2 = Conv(c1); a = Add(c2, c1); y = LayerNormalization(a): the Add may be
  // fused into c2 or into the normalization, but adding it twice is wrong.
  auto model = empty_model();
  ir::Graph& g = model->graph();
  const onnx::TypeProto type = float_type({1, 4, 5, 5});
  ir::Value* x = g.add_input("x", type);
  std::vector<float> w1, w2, x_values;
  for (int64_t i = 0; i < 16; ++i) {
    w1.push_back(weight(i));
    w2.push_back(weight(i + 5));
  }
  for (int64_t i = 0; i < 100; ++i) x_values.push_back(input(i));
  auto initializer = [&](const std::string& name, const Tensor& t) {
    return g.add_initializer(name, runtime::tensor_to_proto(t));
  };
  ir::Value* c1 = g.add_node("Conv", {x, initializer("w1", Tensor::from<float>({4, 4, 1, 1}, w1))}, {"c1"})->output(0);
  ir::Value* c2 = g.add_node("Conv", {c1, initializer("w2", Tensor::from<float>({4, 4, 1, 1}, w2))}, {"c2"})->output(0);
  ir::Value* a = g.add_node("Add", {c2, c1}, {"a"})->output(0);
  ir::Value* scale = initializer("scale", Tensor::from<float>({5}, {1, 2, 0.5f, 1, 1}));
  ir::Value* y = g.add_node("LayerNormalization", {a, scale}, {"y"})->output(0);
  *y->mutable_info().mutable_type() = type;  // shape inference runs on models the checker passes
  g.add_output(y);
  const Tensor feed = Tensor::from<float>({1, 4, 5, 5}, x_values);

  auto reference = runtime::Session::create(model, {.threads = 1, .blocked_layout = false, .fuse = false});
  ASSERT_TRUE(reference.ok()) << reference.error().message();
  auto expected = (*reference)->run({{"x", feed}});
  ASSERT_TRUE(expected.ok()) << expected.error().message();
  for (bool blocked : {false, true}) {
    auto session = runtime::Session::create(model, {.threads = 1, .profile = true, .blocked_layout = blocked});
    ASSERT_TRUE(session.ok()) << session.error().message();
    auto out = (*session)->run({{"x", feed}});
    ASSERT_TRUE(out.ok()) << out.error().message();
    expect_tensor_near((*out)[0].tensor(), (*expected)[0].tensor(), 1e-5, 1e-5);
    size_t fused = 0;
    for (const std::string& kind : step_kinds(**session))
      fused += kind == "(fused into Conv)" || kind == "Add+LayerNormalization";
    EXPECT_EQ(fused, 1u) << (blocked ? "blocked" : "plain");
  }
}

// Attention's products as torch exports them, on q, k, v of [S, H, D]:
// scores = (Transpose(q) / 2) x Transpose(k), then Transpose(scores x
// Transpose(v)) back to [S, H, D].
struct AttentionVariant {
  std::vector<int64_t> q_shape = {5, 2, 3};  // made [H, S, D] = [2, 5, 3] by q_perm
  std::vector<int64_t> q_perm = {1, 0, 2};
  std::vector<int64_t> divisor_dims = {};  // the shape of the constant 2
  bool scaled_is_an_output = false;
  bool divide_scores = false;  // (q x k) / 2 instead of (q / 2) x k, as GPT-2 does
};

constexpr int64_t kS = 5, kH = 2, kD = 3;

float attention_input(int which, int64_t i) { return static_cast<float>((i * (3 + which) + which) % 11) / 5.0f - 1.0f; }

std::shared_ptr<const ir::Model> attention_model(const AttentionVariant& v) {
  auto model = empty_model();
  ir::Graph& g = model->graph();
  ir::Value* q = g.add_input("q", float_type(v.q_shape));
  ir::Value* k = g.add_input("k", float_type({kS, kH, kD}));
  ir::Value* val = g.add_input("v", float_type({kS, kH, kD}));
  ir::Value* two = g.add_initializer("two", runtime::tensor_to_proto(Tensor::from<float>(v.divisor_dims, {2.0f})));
  ir::Value* qt = add_transpose(g, q, v.q_perm, "qt");
  ir::Value* scaled = v.divide_scores ? qt : g.add_node("Div", {qt, two}, {"scaled"})->output(0);
  ir::Value* scores = g.add_node("MatMul", {scaled, add_transpose(g, k, {1, 2, 0}, "kt")}, {"scores"})->output(0);
  if (v.divide_scores) scores = g.add_node("Div", {scores, two}, {"scaled_scores"})->output(0);
  ir::Value* heads = g.add_node("MatMul", {scores, add_transpose(g, val, {1, 0, 2}, "vt")}, {"heads"})->output(0);
  g.add_output(add_transpose(g, heads, {1, 0, 2}, "y"));
  if (v.scaled_is_an_output) g.add_output(scaled);
  return model;
}

Tensor attention_tensor(int which, runtime::Shape shape = {kS, kH, kD}) {
  std::vector<float> values;
  for (int64_t i = 0; i < kS * kH * kD; ++i) values.push_back(attention_input(which, i));
  return Tensor::from<float>(shape, values);
}

// y[s, h, d] = sum_t (sum_e q[s, h, e] / 2 * k[t, h, e]) v[t, h, d], in double.
Tensor expected_attention() {
  auto at = [](int which, int64_t s, int64_t h, int64_t d) {
    return static_cast<double>(attention_input(which, (s * kH + h) * kD + d));
  };
  std::vector<float> y;
  for (int64_t s = 0; s < kS; ++s)
    for (int64_t h = 0; h < kH; ++h)
      for (int64_t d = 0; d < kD; ++d) {
        double sum = 0;
        for (int64_t t = 0; t < kS; ++t) {
          double score = 0;
          for (int64_t e = 0; e < kD; ++e) score += at(0, s, h, e) / 2 * at(1, t, h, e);
          sum += score * at(2, t, h, d);
        }
        y.push_back(static_cast<float>(sum));
      }
  return Tensor::from<float>({kS, kH, kD}, y);
}

Outcome run_attention(const AttentionVariant& v, bool fuse) {
  return run_model(attention_model(v),
                   {{"q", attention_tensor(0, v.q_shape)}, {"k", attention_tensor(1)}, {"v", attention_tensor(2)}}, fuse, 2);
}

TEST(Fusion, AttentionProductsReadAndWriteTheirHeadsInPlace) {
  Outcome fused = run_attention({}, true), plain = run_attention({}, false);
  EXPECT_EQ(fused.steps, (std::vector<std::string>{"MatMul (transposed operands)", "MatMul (transposed operands)"}));
  EXPECT_EQ(plain.steps.size(), 7u);
  expect_tensor_near(fused.y, expected_attention(), 1e-6, 1e-5);
  expect_tensor_near(fused.y, plain.y, 1e-6, 1e-5);
  // The scaling after the first product is its alpha as well.
  Outcome divided = run_attention({.divide_scores = true}, true);
  EXPECT_EQ(divided.steps, (std::vector<std::string>{"MatMul (transposed operands)", "MatMul (transposed operands)"}));
  expect_tensor_near(divided.y, expected_attention(), 1e-6, 1e-5);
}

TEST(Fusion, AttentionProductsDeclineWhatTheyCannotReadInPlace) {
  // q as [H, D, S] with perm [0, 2, 1] is read as transposed matrices and
  // still fuses; q as [S, D, H] with perm [2, 0, 1] has neither matrix dim
  // contiguous, so its Transpose stays a step.
  AttentionVariant transposed{.q_shape = {kH, kD, kS}, .q_perm = {0, 2, 1}};
  AttentionVariant scattered{.q_shape = {kS, kD, kH}, .q_perm = {2, 0, 1}};
  for (bool is_scattered : {false, true}) {
    const AttentionVariant& v = is_scattered ? scattered : transposed;
    // These perms change q's meaning: only fused against unfused is the truth here.
    Outcome fused = run_attention(v, true), plain = run_attention(v, false);
    expect_tensor_near(fused.y, plain.y, 1e-6, 1e-5);
    EXPECT_EQ(std::count(fused.steps.begin(), fused.steps.end(), "Transpose"), is_scattered ? 1 : 0);
  }
  // The scaled value is returned: the Div and q's Transpose stay steps.
  Outcome seen = run_attention({.scaled_is_an_output = true}, true);
  EXPECT_EQ(seen.steps,
            (std::vector<std::string>{"Transpose", "Div", "MatMul (transposed operands)", "MatMul (transposed operands)"}));
  expect_tensor_near(seen.y, expected_attention(), 1e-6, 1e-5);
  // A divisor of rank above 1 could raise the rank by broadcasting: not a
  // scale to fold (not even at rank 3, where it would not).
  Outcome ranked = run_attention({.divisor_dims = {1, 1, 1}}, true);
  EXPECT_EQ(std::count(ranked.steps.begin(), ranked.steps.end(), "Div"), 1);
  expect_tensor_near(ranked.y, expected_attention(), 1e-6, 1e-5);
}

// value(i) over a tensor of `shape`, a different pattern per `seed`.
Tensor pattern(runtime::Shape shape, int seed) {
  std::vector<float> values;
  for (int64_t i = 0; i < runtime::shape_size(shape); ++i)
    values.push_back(static_cast<float>((i * (5 + seed) + seed) % 13) / 6.0f - 1.0f);
  return Tensor::from<float>(std::move(shape), values);
}

// Runs `model` fused and unfused on `feeds`: the fused outcome, after
// checking that both agree.
Outcome run_both(const std::shared_ptr<const ir::Model>& model, const runtime::NamedValues& feeds) {
  Outcome fused = run_model(model, feeds, true, 2), plain = run_model(model, feeds, false, 2);
  expect_tensor_near(fused.y, plain.y, 1e-6, 1e-5);
  return fused;
}

TEST(Fusion, FourDimensionalHeadsWithAScaleFirstAndABroadcastMatrix) {
  // q, k [B=2, S=3, H=2, D=4]: s = (0.5 * q') k'^T with q' = q as [B, H, S, D]
  // and k' = k as [B, H, D, S]; y = (s w') as [B, S, H, 5], w' = w^T of w [5, 3]
  // shared by every (batch, head).
  auto model = empty_model();
  ir::Graph& g = model->graph();
  ir::Value* q = g.add_input("q", float_type({2, 3, 2, 4}));
  ir::Value* k = g.add_input("k", float_type({2, 3, 2, 4}));
  ir::Value* w = g.add_input("w", float_type({5, 3}));
  ir::Value* half = g.add_initializer("half", runtime::tensor_to_proto(Tensor::from<float>({1}, {0.5f})));
  ir::Value* qs = g.add_node("Mul", {half, add_transpose(g, q, {0, 2, 1, 3}, "qt")}, {"qs"})->output(0);
  ir::Value* s = g.add_node("MatMul", {qs, add_transpose(g, k, {0, 2, 3, 1}, "kt")}, {"s"})->output(0);
  ir::Value* y = g.add_node("MatMul", {s, add_transpose(g, w, {1, 0}, "wt")}, {"sw"})->output(0);
  g.add_output(add_transpose(g, y, {0, 2, 1, 3}, "y"));
  const Tensor tq = pattern({2, 3, 2, 4}, 0), tk = pattern({2, 3, 2, 4}, 1), tw = pattern({5, 3}, 2);
  Outcome fused = run_both(model, {{"q", tq}, {"k", tk}, {"w", tw}});
  EXPECT_EQ(fused.steps, (std::vector<std::string>{"MatMul (transposed operands)", "MatMul (transposed operands)"}));
  auto at = [](const Tensor& t, int64_t b, int64_t s, int64_t h, int64_t d) {
    return static_cast<double>(t.data<float>()[((b * 3 + s) * 2 + h) * 4 + d]);
  };
  std::vector<float> expected;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t j = 0; j < 5; ++j) {
          double sum = 0;
          for (int64_t t = 0; t < 3; ++t) {
            double score = 0;
            for (int64_t d = 0; d < 4; ++d) score += 0.5 * at(tq, b, i, h, d) * at(tk, b, t, h, d);
            sum += score * static_cast<double>(tw.data<float>()[j * 3 + t]);
          }
          expected.push_back(static_cast<float>(sum));
        }
  expect_tensor_near(fused.y, Tensor::from<float>({2, 3, 2, 5}, expected), 1e-6, 1e-5);
}

TEST(Fusion, AttentionProductsLeaveWhatAnotherChainTook) {
  {
    // MatMul -> Transpose -> MatMul: the first product takes the Transpose
    // as its output; the second must not take it as its operand too.
    auto model = empty_model();
    ir::Graph& g = model->graph();
    ir::Value* xy =
        g.add_node("MatMul", {g.add_input("x", float_type({2, 3, 4})), g.add_input("y", float_type({2, 4, 3}))}, {"xy"})
            ->output(0);
    ir::Value* t = add_transpose(g, xy, {1, 0, 2}, "t");
    g.add_output(g.add_node("MatMul", {t, g.add_input("z", float_type({3, 5}))}, {"out"})->output(0));
    Outcome fused = run_both(model, {{"x", pattern({2, 3, 4}, 0)}, {"y", pattern({2, 4, 3}, 1)}, {"z", pattern({3, 5}, 2)}});
    EXPECT_EQ(fused.steps, (std::vector<std::string>{"MatMul (transposed operands)", "MatMul"}));
  }
  {
    // A GELU read by a MatMul: its last "* 0.5" is the GELU chain's, not a scale.
    auto model = std::const_pointer_cast<ir::Model>(gelu_model({.linear = false}));
    ir::Graph& g = model->graph();
    ir::Value* gelu = g.outputs()[0];
    g.remove_output(0);
    g.add_output(g.add_node("MatMul", {gelu, g.add_input("z", float_type({kIn, 4}))}, {"out"})->output(0));
    Outcome fused = run_both(model, {{"x", input_tensor()}, {"z", pattern({kIn, 4}, 3)}});
    EXPECT_EQ(fused.steps, (std::vector<std::string>{"Gelu", "MatMul"}));
  }
}

TEST(Fusion, AScaledProductByConstantWeightsKeepsTheMatMulKernel) {
  // y = (a x W) / 2 with W a constant [16, 1024]: the scaling is no reason to
  // leave the MatMul kernel, which packs constant weights; it runs apart.
  auto model = empty_model();
  ir::Graph& g = model->graph();
  const Tensor w = pattern({16, 1024}, 2);
  ir::Value* wv = g.add_initializer("W", runtime::tensor_to_proto(w));
  ir::Value* two = g.add_initializer("two", runtime::tensor_to_proto(Tensor::from<float>({}, {2})));
  ir::Value* p = g.add_node("MatMul", {g.add_input("a", float_type({3, 16})), wv}, {"p"})->output(0);
  g.add_output(g.add_node("Div", {p, two}, {"y"})->output(0));
  auto session = runtime::Session::create(model, {.threads = 1, .profile = true});
  ASSERT_TRUE(session.ok()) << session.error().message();
  const Tensor a = pattern({3, 16}, 1);
  auto out = (*session)->run({{"a", a}});
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(step_kinds(**session), (std::vector<std::string>{"MatMul", "Div"}));
  std::vector<double> want(3 * 1024, 0.0);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 1024; ++j) {
      for (int64_t k = 0; k < 16; ++k)
        want[static_cast<size_t>(i * 1024 + j)] +=
            static_cast<double>(a.data<float>()[i * 16 + k]) * w.data<float>()[k * 1024 + j];
      want[static_cast<size_t>(i * 1024 + j)] /= 2;
    }
  expect_tensor_near((*out)[0].tensor(), runtime::Tensor::from<float>({3, 1024}, std::vector<float>(want.begin(), want.end())),
                     1e-5, 1e-5);
}

TEST(Fusion, AnAttentionPermThatRepeatsAnAxisIsNamed) {
  auto model = empty_model();
  ir::Graph& g = model->graph();
  ir::Value* t = add_transpose(g, g.add_input("a", float_type({2, 2, 3})), {0, 0, 2}, "t");
  g.add_output(g.add_node("MatMul", {t, g.add_input("b", float_type({3, 2}))}, {"y"})->output(0));
  auto session = runtime::Session::create(model, {.threads = 1});
  ASSERT_TRUE(session.ok()) << session.error().message();
  auto out = (*session)->run({{"a", pattern({2, 2, 3}, 0)}, {"b", pattern({3, 2}, 1)}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("perm repeats axis 0"), std::string::npos) << out.error().message();
}

TEST(Fusion, TransposedProductsOfIntegersGoThroughCopies) {
  // y = Transpose(a) x b on int32, a [2, 3], b [2, 4]: y[i][j] = sum_p a[p][i] b[p][j].
  auto model = empty_model();
  ir::Graph& g = model->graph();
  onnx::TypeProto int_type;
  int_type.mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT32);
  ir::Value* at = add_transpose(g, g.add_input("a", int_type), {1, 0}, "at");
  g.add_output(g.add_node("MatMul", {at, g.add_input("b", int_type)}, {"y"})->output(0));
  auto session = runtime::Session::create(model, {.threads = 1, .profile = true});
  ASSERT_TRUE(session.ok()) << session.error().message();
  const std::vector<int32_t> a = {1, 2, 3, 4, 5, 6}, b = {1, 0, -1, 2, 3, 1, 0, -2};
  auto out = (*session)->run({{"a", Tensor::from<int32_t>({2, 3}, a)}, {"b", Tensor::from<int32_t>({2, 4}, b)}});
  ASSERT_TRUE(out.ok()) << out.error().message();
  std::vector<int32_t> expected;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) expected.push_back(a[i] * b[j] + a[3 + i] * b[4 + j]);
  EXPECT_EQ(step_kinds(**session), std::vector<std::string>{"MatMul (transposed operands)"});
  const Tensor& y = (*out)[0].tensor();
  ASSERT_EQ(y.shape(), (runtime::Shape{3, 4}));
  EXPECT_EQ(std::vector<int32_t>(y.data<int32_t>(), y.data<int32_t>() + 12), expected);
}

// Element-wise chains (runtime/fusion.h): `text` run fused and unfused on
// `feeds`; the fused run must be one step per chain and give the same bits.
std::vector<Tensor> run_chain_model(const std::string& text, const runtime::NamedValues& feeds,
                                    const std::vector<std::string>& fused_steps) {
  std::shared_ptr<const ir::Model> model = testing::model_from_text(text);
  std::vector<Tensor> outputs[2];
  for (bool fuse : {true, false}) {
    auto session = runtime::Session::create(model, {.threads = 1, .profile = true, .fuse = fuse});
    EXPECT_TRUE(session.ok()) << session.error().message();
    if (!session.ok()) return {};
    auto out = (*session)->run(feeds);
    EXPECT_TRUE(out.ok()) << out.error().message();
    if (!out.ok()) return {};
    for (const runtime::Datum& d : *out) outputs[fuse].push_back(d.tensor());
    if (fuse) {
      EXPECT_EQ(step_kinds(**session), fused_steps);
    }
  }
  EXPECT_EQ(outputs[0].size(), outputs[1].size());
  for (size_t k = 0; k < outputs[0].size() && k < outputs[1].size(); ++k) {
    const Tensor &fused = outputs[1][k], &plain = outputs[0][k];
    EXPECT_EQ(fused.shape(), plain.shape()) << "output " << k;
    EXPECT_EQ(fused.dtype(), plain.dtype()) << "output " << k;
    if (fused.shape() != plain.shape() || fused.dtype() != plain.dtype()) continue;
    EXPECT_EQ(std::memcmp(fused.raw(), plain.raw(), fused.nbytes()), 0) << "output " << k << " differs from the unfused run's";
  }
  return outputs[1];
}

// Values from -3 to 3, some exactly 0.
std::vector<float> ramp(int64_t n) {
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<float>(i % 13 - 6) * 0.5f);
  return v;
}

TEST(Fusion, ElementwiseChainsAreOneStepWithTheBitsOfTheNodes) {
  // Every op of the table, constants on either side of Sub and Div.
  // 1000 elements: more than one block of the kernel.
  const std::vector<float> x = ramp(1000);
  std::vector<Tensor> out = run_chain_model(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1000] x) => (float[1000] y) <float two = {2.0}, float one = {1.0}, float[1] four = {4.0}, float three = {3.0}> {
  t = Tanh(x)
  m = Mul(t, two)
  s = Sub(one, m)
  r = Relu(s)
  d = Div(r, four)
  q = Div(three, d)
  n = Neg(q)
  a = Abs(n)
  g = Sigmoid(a)
  y = Sub(g, one)
})",
                                            {{"x", Tensor::from<float>({1000}, x)}}, {"Element-wise chain"});
  ASSERT_EQ(out.size(), 1u);
  for (int64_t i = 0; i < 1000; ++i) {
    const double r = std::max(0.0, 1 - 2 * std::tanh(double(x[i]))) / 4;
    const double want = 1 / (1 + std::exp(-std::abs(-3 / r))) - 1;  // 3 / 0 is inf, its sigmoid 1
    ASSERT_NEAR(out[0].data<float>()[i], want, 1e-5) << "x = " << x[i];
  }
}

TEST(Fusion, AnElementwiseChainMayEndWithATensorOperand) {
  // A Loop body's h + Sigmoid(W h + b), of one shape; then an operand that
  // broadcasts a row, and one that raises the rank.
  const std::vector<float> x = ramp(24), h = ramp(25), big = ramp(60);
  std::vector<Tensor> out = run_chain_model(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3, 4] x, float[2, 3, 4] h, float[4] row, float[3, 4] v, float[5, 3, 4] big)
  => (float[2, 3, 4] y, float[2, 3, 4] z, float[5, 3, 4] w) {
  s = Sigmoid(x)
  y = Add(h, s)
  t = Tanh(x)
  z = Div(t, row)
  u = Sigmoid(v)
  n = Neg(u)
  w = Mul(n, big)
})",
                                            {{"x", Tensor::from<float>({2, 3, 4}, x)},
                                             {"h", Tensor::from<float>({2, 3, 4}, std::vector<float>(h.begin() + 1, h.end()))},
                                             {"row", Tensor::from<float>({4}, {1, -2, 4, 0.5})},
                                             {"v", Tensor::from<float>({3, 4}, std::vector<float>(x.begin(), x.begin() + 12))},
                                             {"big", Tensor::from<float>({5, 3, 4}, big)}},
                                            {"Element-wise chain", "Element-wise chain", "Element-wise chain"});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_NEAR(out[0].data<float>()[5], h[6] + 1 / (1 + std::exp(-double(x[5]))), 1e-6);
  EXPECT_NEAR(out[1].data<float>()[6], std::tanh(double(x[6])) / 4, 1e-6);  // column 2 of a row
  EXPECT_EQ(out[2].shape(), (runtime::Shape{5, 3, 4}));
  EXPECT_NEAR(out[2].data<float>()[12 + 7], -big[19] / (1 + std::exp(-double(x[7]))), 1e-6);
}

TEST(Fusion, ElementwiseChainsOfOtherFloatTypesAndOfAScalar) {
  // float16 rounds between the nodes, and the chain does too.
  std::vector<runtime::Float16> x, h;
  for (float v : ramp(40)) x.emplace_back(v * 1.37f);
  for (float v : ramp(40)) h.emplace_back(v * -0.71f);
  run_chain_model(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float16[40] x, float16[40] h) => (float16[40] y) {
  t = Tanh(x)
  s = Sigmoid(t)
  y = Sub(s, h)
})",
                  {{"x", Tensor::from<runtime::Float16>({40}, x)}, {"h", Tensor::from<runtime::Float16>({40}, h)}},
                  {"Element-wise chain"});
  // A rank-0 x with a constant of shape [1]: the result has shape [1].
  std::vector<Tensor> out = run_chain_model(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float x) => (float[1] y) <float[1] c = {0.25}> {
  t = Relu(x)
  y = Add(t, c)
})",
                                            {{"x", Tensor::from<float>({}, {2})}}, {"Element-wise chain"});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (runtime::Shape{1}));
  EXPECT_EQ(out[0].data<float>()[0], 2.25f);
}

TEST(Fusion, ElementwiseChainsDeclineWhatTheyCannotTake) {
  // A value between the nodes that is returned, or read twice (Neg -> Mul
  // then says nothing of floats); integers.
  run_chain_model(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y, float[4] s) {
  s = Sigmoid(x)
  y = Neg(s)
})",
                  {{"x", Tensor::from<float>({4}, {-1, 0, 1, 2})}}, {"Sigmoid", "Neg"});
  run_chain_model(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) {
  s = Sigmoid(x)
  n = Neg(s)
  y = Mul(s, n)
})",
                  {{"x", Tensor::from<float>({4}, {-1, 0, 1, 2})}}, {"Sigmoid", "Neg", "Mul"});
  std::vector<Tensor> ints = run_chain_model(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (int32[4] x) => (int32[4] y) {
  r = Relu(x)
  y = Neg(r)
})",
                                             {{"x", Tensor::from<int32_t>({4}, {-3, 0, 2, 7})}}, {"Relu", "Neg"});
  ASSERT_EQ(ints.size(), 1u);
  EXPECT_EQ(std::vector<int32_t>(ints[0].data<int32_t>(), ints[0].data<int32_t>() + 4), (std::vector<int32_t>{0, 0, -2, -7}));
}

}  // namespace
}  // namespace onnxkit
