// Convolution chains on blocked activations (runtime/layout.h,
// kernels/nn/blocked.h) give what the plain kernels give, at the edges that
// are easy to get wrong: channel counts that are not whole blocks, a first
// layer reading the plain input, pools with ceil_mode, depthwise and grouped
// convolutions, residual adds, channel concatenation, and element-wise ops
// that do not keep the padded channels zero. The plain kernels are checked
// against ONNX's backend data (conformance) and PyTorch (cli_run).

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string_view>
#include <tuple>

#include "ir/model.h"
#include "runtime/kernels/nn/blocked.h"
#include "runtime/kernels/nn/conv_dnnl.h"
#include "runtime/parallel.h"
#include "runtime/session.h"
#include "runtime/tensor_proto.h"
#include "support/node_runner.h"
#include "support/test_support.h"

namespace onnxkit {
namespace {

using runtime::Tensor;

Tensor random_tensor(runtime::Shape shape, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  Tensor t(runtime::DataType::float32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<float>()[i] = normal(rng);
  return t;
}

// Values about 4, far from zero: a tap a pool drops or takes twice shows in its result.
Tensor far_from_zero(runtime::Shape shape, unsigned seed) {
  Tensor t = random_tensor(std::move(shape), seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<float>()[i] += 4.0f;
  return t;
}

// `text` with its weights (name -> shape) added as random initializers.
std::shared_ptr<const ir::Model> with_weights(const std::string& text,
                                              const std::vector<std::pair<std::string, runtime::Shape>>& weights) {
  onnx::ModelProto proto = testing::parse_model_text(text);
  unsigned seed = 1;
  for (const auto& [name, shape] : weights) {
    onnx::TensorProto t = runtime::tensor_to_proto(random_tensor(shape, seed++, 0.3f));
    t.set_name(name);
    *proto.mutable_graph()->add_initializer() = std::move(t);
  }
  auto model = ir::import_model(std::move(proto));
  EXPECT_TRUE(model.ok()) << (model.ok() ? "" : model.error().message());
  return model.ok() ? std::shared_ptr<const ir::Model>(std::move(model).value()) : nullptr;
}

size_t count_steps(const runtime::Session& session, std::string_view op) {
  return static_cast<size_t>(std::ranges::count(testing::step_kinds(session), op));
}

// What a test checks of each session besides its outputs and step counts.
using SessionCheck = std::function<void(const runtime::Session& session, bool blocked_layout)>;

// The model run blocked and plain, both with fusions (runtime/fusion.h and
// the Conv fusions of executor.cpp), twice each (the second run reuses what
// the first resolved), against the plain unfused run. Plain,
// `fused_when_plain` nodes are fused if given, else as many as blocked.
void expect_blocked_equals_plain(const std::shared_ptr<const ir::Model>& model, const Tensor& x, size_t expected_to_blocked,
                                 size_t expected_fused_into_conv, std::optional<size_t> fused_when_plain = std::nullopt,
                                 bool prepack_weights = true, const SessionCheck& also = {}) {
  ASSERT_NE(model, nullptr);
  auto reference_session = runtime::Session::create(model, {.threads = 2, .blocked_layout = false, .fuse = false});
  ASSERT_TRUE(reference_session.ok()) << reference_session.error().message();
  auto reference = (*reference_session)->run({{"x", x}});
  ASSERT_TRUE(reference.ok()) << reference.error().message();
  for (bool blocked_layout : {true, false}) {
    SCOPED_TRACE(blocked_layout ? "blocked" : "plain");
    auto session = runtime::Session::create(
        model, {.threads = 2, .profile = true, .blocked_layout = blocked_layout, .prepack_weights = prepack_weights});
    ASSERT_TRUE(session.ok()) << session.error().message();
    for (int run = 0; run < 2; ++run) {
      auto ours = (*session)->run({{"x", x}});
      ASSERT_TRUE(ours.ok()) << ours.error().message();
      ASSERT_EQ(ours->size(), reference->size());
      for (size_t i = 0; i < ours->size(); ++i) {
        SCOPED_TRACE((*session)->outputs()[i].name);
        testing::expect_tensor_near((*ours)[i].tensor(), (*reference)[i].tensor(), 1e-5, 1e-5);
      }
    }
    EXPECT_EQ(count_steps(**session, "(fused into Conv)"),
              blocked_layout ? expected_fused_into_conv : fused_when_plain.value_or(expected_fused_into_conv));
    // The blocked session did run blocked: it reordered back to plain at the edges.
    EXPECT_EQ(count_steps(**session, "ToPlain") > 0, blocked_layout);
    EXPECT_EQ(count_steps(**session, "ToBlocked"), blocked_layout ? expected_to_blocked : 0);
    if (also) also(**session, blocked_layout);
  }
}

TEST(BlockedLayout, BlocksAreSixteenChannelsWhereOneDnnRunsAvx512) {
  const char* isa = std::getenv("ONEDNN_MAX_CPU_ISA");
  const bool avx2_forced = isa != nullptr && std::string_view(isa) == "AVX2";
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  EXPECT_EQ(runtime::nn::channel_block(), avx512 && !avx2_forced ? 16 : 8);
}

TEST(BlockedLayout, AChainWithPartialBlocksPoolsConcatAndResidualsMatchesPlain) {
  // 12 and 20 channels leave padded lanes; Sigmoid (1/2 at 0) must not see them.
  auto model = with_weights(
      R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3,18,19] x) => (float[2,40] y, float[2,12,18,19] s, float[2,40,5,5] cat) {
  c1 = Conv <kernel_shape = [3,3], pads = [1,1,1,1]> (x, w1, b1)
  r1 = Relu(c1)
  s = Sigmoid(r1)
  p1 = MaxPool <kernel_shape = [3,3], strides = [2,2], ceil_mode = 1> (r1)
  c2 = Conv <kernel_shape = [1,1]> (p1, w2, b2)
  d2 = Conv <kernel_shape = [3,3], pads = [1,1,1,1], group = 20> (c2, w3)
  a = Add(c2, d2)
  c4 = Conv <kernel_shape = [3,3], pads = [1,1,1,1], strides = [2,2]> (a, w4)
  e4 = Elu(c4)
  a5 = AveragePool <kernel_shape = [3,3], strides = [2,2], pads = [1,1,1,1]> (a)
  cat = Concat <axis = 1> (a5, e4)
  g = GlobalAveragePool(cat)
  y = Flatten(g)
})",
      {{"w1", {12, 3, 3, 3}}, {"b1", {12}}, {"w2", {20, 12, 1, 1}}, {"b2", {20}}, {"w3", {20, 1, 3, 3}}, {"w4", {20, 20, 3, 3}}});
  // The first layer (3 channels) reads x as it is: nothing is reordered into blocks.
  // Relu goes into c1, and the residual Add into d2 (c2 comes first).
  expect_blocked_equals_plain(model, random_tensor({2, 3, 18, 19}, 7), 0, 2);
}

TEST(BlockedLayout, AGroupedConvOnWholeBlocksAndAPlainInputThatNeedsReordering) {
  // 16 input channels: the region starts with a reorder of x into blocks.
  auto model = with_weights(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,16,9,9] x) => (float[1,16,9,9] y) {
  c1 = Conv <kernel_shape = [3,3], pads = [1,1,1,1], group = 2> (x, w1, b1)
  lo = Constant <value = float {-0.5}> ()
  hi = Constant <value = float {0.3}> ()
  r1 = Clip(c1, lo, hi)
  c2 = Conv <kernel_shape = [1,1]> (r1, w2)
  y = Mul(c2, c1)
})",
                            {{"w1", {16, 8, 3, 3}}, {"b1", {16}}, {"w2", {16, 16, 1, 1}}});
  expect_blocked_equals_plain(model, random_tensor({1, 16, 9, 9}, 3), 1, 0);  // c1 feeds the Mul too: no fusion
}

TEST(BlockedLayout, GroupsThatSplitTheBlocksWithFusedActivationsAndAResidual) {
  // Groups of 24 and 12 channels run on a reordered copy of the blocked
  // input (conv_dnnl.h); the residual, fused into c2, is reordered too.
  auto model = with_weights(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,48,10,10] x) => (float[1,48,5,5] y) {
  c1 = Conv <kernel_shape = [3,3], pads = [1,1,1,1], group = 2> (x, w1, b1)
  r1 = Relu(c1)
  c2 = Conv <kernel_shape = [3,3], pads = [1,1,1,1], group = 4> (r1, w2, b2)
  a = Add(c2, r1)
  c3 = Conv <kernel_shape = [3,3], pads = [1,0,1,1], strides = [2,2], group = 2> (a, w3)
  y = HardSigmoid(c3)
})",
                            {{"w1", {48, 24, 3, 3}}, {"b1", {48}}, {"w2", {48, 12, 3, 3}}, {"b2", {48}}, {"w3", {48, 24, 3, 3}}});
  // Relu into c1, the Add into c2, HardSigmoid into c3.
  expect_blocked_equals_plain(model, random_tensor({1, 48, 10, 10}, 4), 1, 3);
}

TEST(BlockedLayout, MaxPoolsWithPadsDilationsAndNegativeValues) {
  // Padding must never win a maximum: about half the conv outputs are negative.
  auto model = with_weights(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,16,11,12] x) => (float[1,10,6,7] y, float[1,10,5,4] z, float[1,10,10,4] wide) {
  c1 = Conv <kernel_shape = [1,1]> (x, w1, b1)
  y = MaxPool <kernel_shape = [3,2], strides = [2,2], pads = [1,1,1,1]> (c1)
  z = MaxPool <kernel_shape = [3,3], strides = [3,3], pads = [2,1,2,1], dilations = [2,2], ceil_mode = 1> (c1)
  wide = MaxPool <kernel_shape = [2,5], pads = [0,4,0,4], dilations = [1,4]> (c1)
})",
                            {{"w1", {10, 16, 1, 1}}, {"b1", {10}}});
  // wide's windows (17 columns) are wider than the rows: every column checks bounds.
  expect_blocked_equals_plain(model, random_tensor({1, 16, 11, 12}, 5), 1, 0);
}

TEST(BlockedLayout, MaxPoolSharesRowsOfSeveralPlanesAmongThreads) {
  // SqueezeNet's first pool, smaller: 48 channels (3 planes of 16 or 6 of 8)
  // of 37 x 37, enough work for both threads, whose ranges of output rows
  // end inside a plane.
  auto model = with_weights(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,3,37,37] x) => (float[1,48,18,18] y) {
  c1 = Conv <kernel_shape = [1,1]> (x, w1, b1)
  y = MaxPool <kernel_shape = [3,3], strides = [2,2], ceil_mode = 1> (c1)
})",
                            {{"w1", {48, 3, 1, 1}}, {"b1", {48}}});
  // The Conv reads the 3 plain channels itself: no ToBlocked.
  expect_blocked_equals_plain(model, random_tensor({1, 3, 37, 37}, 7), 0, 0);
}

TEST(BlockedLayout, MaxPoolSkipsNaNsAsThePlainKernelDoes) {
  // A NaN pixel of x is NaN in every channel after the 1x1 Conv; windows of
  // 3x2 at stride 2 meet those pixels first, in the middle and last.
  auto model = with_weights(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,16,11,12] x) => (float[1,10,5,6] y) {
  c1 = Conv <kernel_shape = [1,1]> (x, w1, b1)
  y = MaxPool <kernel_shape = [3,2], strides = [2,2]> (c1)
})",
                            {{"w1", {10, 16, 1, 1}}, {"b1", {10}}});
  Tensor x = random_tensor({1, 16, 11, 12}, 6);
  for (auto [h, w] : {std::pair{0, 0}, std::pair{3, 5}, std::pair{6, 9}, std::pair{8, 2}})
    x.mutable_data<float>()[h * 12 + w] = std::numeric_limits<float>::quiet_NaN();
  expect_blocked_equals_plain(model, x, 1, 0);
}

// DenseNet's pre-activation BatchNormalization -> ReLU and Inception's
// Pad -> AveragePool stay blocked, on 20 channels (partial blocks of 16 and
// of 8): the BN's zero scale and shift in the padded channels keep them
// zero, and the Clip after the second BN is applied by it. A Pad with a
// value other than zero runs plain. Were the BNs or the Pads plain, a
// ToBlocked would come back before c2 and nothing would fuse into the BNs.
TEST(BlockedLayout, NearestResizesOfHeightAndWidthStayBlocked) {
  // An FPN level: two maps upsampled 2x (torch's asymmetric floor), added
  // and convolved; a 1.5x half_pixel resize (rounded to the nearest); and
  // one that resizes C as well, which runs plain. 20 channels: a partial
  // block whose padding must stay zero through the copies.
  auto model = with_weights(
      R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,20,8,9] x) => (float[1,20,16,18] y, float[1,20,12,13] z, float[1,40,8,9] c) {
  c1 = Conv <kernel_shape = [1,1]> (x, w1, b1)
  c2 = Conv <kernel_shape = [1,1]> (x, w2, b2)
  twice = Constant <value = float[4] {1, 1, 2, 2}> ()
  u1 = Resize <mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"> (c1, , twice)
  u2 = Resize <mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"> (c2, , twice)
  sum = Add(u1, u2)
  y = Conv <kernel_shape = [3,3], pads = [1,1,1,1]> (sum, w3, b3)
  half = Constant <value = float[4] {1, 1, 1.5, 1.5}> ()
  z = Resize <mode = "nearest"> (c1, , half)
  channels = Constant <value = float[4] {1, 2, 1, 1}> ()
  c = Resize <mode = "nearest"> (c2, , channels)
})",
      {{"w1", {20, 20, 1, 1}}, {"b1", {20}}, {"w2", {20, 20, 1, 1}}, {"b2", {20}}, {"w3", {20, 20, 3, 3}}, {"b3", {20}}});
  expect_blocked_equals_plain(model, random_tensor({1, 20, 8, 9}, 13), 1, 0, std::nullopt, true,
                              [](const runtime::Session& session, bool blocked_layout) {
                                // y and z from blocked values, c2 out for c: three.
                                if (blocked_layout) {
                                  EXPECT_EQ(count_steps(session, "ToPlain"), 3u);
                                }
                              });
}

TEST(BlockedLayout, BatchNormsWithTheirActivationsAndZeroPadsStayBlocked) {
  std::string var;  // a positive variance per channel
  for (int c = 0; c < 20; ++c) var += (c > 0 ? ", " : "") + std::to_string(0.2 + 0.1 * c);
  auto model = with_weights(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,20,9,9] x) => (float[1,20,5,5] y, float[1,20,9,9] z, float[1,20,11,11] q, float[1,20,11,11] pv) {
  v = Constant <value = float[20] {)" +
                                var + R"(}> ()
  c1 = Conv <kernel_shape = [1,1]> (x, w1, b1)
  n1 = BatchNormalization <epsilon = 0.01> (c1, s1, t1, m1, v)
  r1 = Relu(n1)
  pads = Constant <value = int64[8] {0, 0, 1, 1, 0, 0, 1, 1}> ()
  none = Constant <value = int64[8] {0, 0, 0, 0, 0, 0, 0, 0}> ()
  zero = Constant <value = float {0}> ()
  one = Constant <value = float {1}> ()
  p = Pad(r1, pads, zero)
  a = AveragePool <kernel_shape = [3,3], strides = [2,2]> (p)
  c2 = Conv <kernel_shape = [1,1]> (a, w2)
  y = Sigmoid(c2)
  n2 = BatchNormalization(c1, s2, t2, m2, v)
  lo = Constant <value = float {-0.5}> ()
  hi = Constant <value = float {0.7}> ()
  k = Clip(n2, lo, hi)
  u = Pad(k, none)
  z = Mul(u, c1)
  q = Pad(c1, pads)
  pv = Pad(c1, pads, one)
})",
                            {{"w1", {20, 20, 1, 1}},
                             {"b1", {20}},
                             {"s1", {20}},
                             {"t1", {20}},
                             {"m1", {20}},
                             {"w2", {20, 20, 1, 1}},
                             {"s2", {20}},
                             {"t2", {20}},
                             {"m2", {20}}});
  // Relu into n1, Clip into n2 and Sigmoid into c2; only the last plain.
  expect_blocked_equals_plain(model, random_tensor({1, 20, 9, 9}, 9), 1, 3, 1);
}

TEST(BlockedLayout, ConvsWriteIntoTheirConcatInPlaceAndTheRestIsCopied) {
  // At batch 1 e1, e3 and c5 are written by their Convs into their places in
  // cat1 and cat2 (nn::plan_in_place_writes); the second e1 and the MaxPool m are copied,
  // as is e3 into cat2 (cat1 claimed it); t reads e3 after cat1. At batch 2
  // every input is copied.
  auto model = with_weights(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,16,8,8] x) => (float[N,80,8,8] cat1, float[N,64,8,8] cat2, float[N,32,8,8] t) {
  c0 = Conv <kernel_shape = [1,1]> (x, w0, b0)
  s = Relu(c0)
  c1 = Conv <kernel_shape = [1,1]> (s, w1, b1)
  e1 = Relu(c1)
  c3 = Conv <kernel_shape = [3,3], pads = [1,1,1,1]> (s, w3, b3)
  e3 = Relu(c3)
  m = MaxPool <kernel_shape = [3,3], pads = [1,1,1,1]> (s)
  cat1 = Concat <axis = 1> (e1, e3, e1, m)
  t = Sigmoid(e3)
  c5 = Conv <kernel_shape = [1,1]> (cat1, w5)
  cr = Conv <kernel_shape = [1,1]> (s, wr)
  r = Add(cr, s)
  cat2 = Concat <axis = 1> (e3, c5, r)
})",
                            {{"w0", {16, 16, 1, 1}},
                             {"b0", {16}},
                             {"w1", {16, 16, 1, 1}},
                             {"b1", {16}},
                             {"w3", {32, 16, 3, 3}},
                             {"b3", {32}},
                             {"w5", {16, 80, 1, 1}},
                             {"wr", {16, 16, 1, 1}}});
  for (int64_t batch : {1, 2}) {
    SCOPED_TRACE(batch);
    // The Relus go into c0, c1 and c3, the residual Add into cr.
    expect_blocked_equals_plain(model, random_tensor({batch, 16, 8, 8}, 8), 1, 4);
  }
}

TEST(BlockedLayout, ConcatsThatExtendTheOneBeforeShareItsBuffer) {
  // DenseNet's pattern at batch 1: k2, k3 and k4 each begin with all of the
  // Concat before's inputs, so the four share one buffer (k1's output is its
  // first blocks), into which the MaxPool m and the Convs f1, f2, f3 write;
  // t reads k2 after f3 has written beyond it. `side`, longer than k4 but
  // not beginning with its inputs, gets a buffer of its own and copies: in
  // k4's it would overwrite f2 before y reads it.
  // At batch 2 every input is copied.
  auto model = with_weights(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,16,8,8] x) => (float[N,64,4,4] y, float[N,80,8,8] side, float[N,16,8,8] t) {
  c0 = Conv <kernel_shape = [3,3], pads = [1,1,1,1]> (x, w0, b0)
  m = MaxPool <kernel_shape = [3,3], pads = [1,1,1,1]> (c0)
  k1 = Concat <axis = 1> (m)
  f1 = Conv <kernel_shape = [1,1]> (k1, w1)
  k2 = Concat <axis = 1> (m, f1)
  f2 = Conv <kernel_shape = [1,1]> (k2, w2)
  k3 = Concat <axis = 1> (m, f1, f2)
  f3 = Conv <kernel_shape = [1,1]> (k3, w3)
  k4 = Concat <axis = 1> (m, f1, f2, f3)
  t = Conv <kernel_shape = [1,1]> (k2, wt)
  side = Concat <axis = 1> (m, f1, f3, f2, f1)
  y = AveragePool <kernel_shape = [2,2], strides = [2,2]> (k4)
})",
                            {{"w0", {16, 16, 3, 3}},
                             {"b0", {16}},
                             {"w1", {16, 16, 1, 1}},
                             {"w2", {16, 32, 1, 1}},
                             {"w3", {16, 48, 1, 1}},
                             {"wt", {16, 32, 1, 1}}});
  for (int64_t batch : {1, 2}) {
    SCOPED_TRACE(batch);
    expect_blocked_equals_plain(model, random_tensor({batch, 16, 8, 8}, 10), 1, 0);
  }
}

// Squeeze-excitation on 20 channels (partial blocks of 16 and of 8): the
// HardSigmoid and Sigmoid gates leave 1/2 in the padded channels, which the
// Muls by blocked activations turn back to zeros, so the whole chain stays
// blocked. A gate that is also a graph output is read plain: it stays out.
TEST(BlockedLayout, SqueezeExcitationGatesOnPartialBlocksStayBlocked) {
  for (bool gate_returned : {false, true}) {
    SCOPED_TRACE(gate_returned ? "gate returned" : "gates read only by the Muls");
    const std::string outputs = gate_returned ? "float[1,12,10,12] y, float[1,20,1,1] g" : "float[1,12,10,12] y";
    auto model = with_weights(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,20,10,12] x) => ()" + outputs +
                                  R"() {
  c1 = Conv <kernel_shape = [1,1]> (x, w1, b1)
  r1 = Relu(c1)
  p1 = GlobalAveragePool(r1)
  f1 = Conv <kernel_shape = [1,1]> (p1, w2, b2)
  a1 = Relu(f1)
  f2 = Conv <kernel_shape = [1,1]> (a1, w3, b3)
  g = HardSigmoid <alpha = 0.25, beta = 0.375> (f2)
  m = Mul(r1, g)
  p2 = GlobalAveragePool(m)
  f3 = Conv <kernel_shape = [1,1]> (p2, w4, b4)
  g2 = Sigmoid(f3)
  m2 = Mul(g2, m)
  y = Conv <kernel_shape = [1,1]> (m2, w5)
})",
                              {{"w1", {20, 20, 1, 1}},
                               {"b1", {20}},
                               {"w2", {8, 20, 1, 1}},
                               {"b2", {8}},
                               {"w3", {20, 8, 1, 1}},
                               {"b3", {20}},
                               {"w4", {20, 20, 1, 1}},
                               {"b4", {20}},
                               {"w5", {12, 20, 1, 1}}});
    const Tensor x = random_tensor({1, 20, 10, 12}, 5);
    // Relu into c1 and f1, HardSigmoid into f2, Sigmoid into f3. Returned,
    // the gate is read plain, and so the Mul and what it reads: r1 and m go
    // to the plain layout and back.
    expect_blocked_equals_plain(model, x, gate_returned ? 3 : 1, 4);
    auto session = runtime::Session::create(model, {.threads = 1, .profile = true});
    ASSERT_TRUE(session.ok()) << session.error().message();
    ASSERT_TRUE((*session)->run({{"x", x}}).ok());
    EXPECT_EQ(count_steps(**session, "ToPlain"), gate_returned ? 4u : 1u);
  }
}

// A Transpose (0, 2, 3, 1) of a blocked value writes the plain
// channels-last tensor itself, with no reorder to plain before it:
// ConvNeXt's LayerNorm over channels (which plain runs as the fused
// Transpose+LayerNormalization) and a detection head's box map. 20
// channels leave a partial block; r is also returned, through a ToPlain.
TEST(BlockedLayout, TransposesToChannelsLastReadTheBlockedLayout) {
  auto model =
      with_weights(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,20,9,11] x) => (float[2,9,11,20] n, float[2,396,4] boxes, float[2,20,9,11] r) {
  d = Conv <kernel_shape = [7,7], pads = [3,3,3,3], group = 20> (x, w1, b1)
  t = Transpose <perm = [0,2,3,1]> (d)
  n = LayerNormalization <axis = -1, epsilon = 0.000001> (t, scale, bias)
  r = Relu(d)
  h = Conv <kernel_shape = [3,3], pads = [1,1,1,1]> (r, w2, b2)
  ht = Transpose <perm = [0,2,3,1]> (h)
  shape = Constant <value = int64[3] {2,-1,4}> ()
  boxes = Reshape(ht, shape)
})",
                   {{"w1", {20, 1, 7, 7}}, {"b1", {20}}, {"scale", {20}}, {"bias", {20}}, {"w2", {16, 20, 3, 3}}, {"b2", {16}}});
  // x (20 channels) is reordered into blocks; nothing fuses into a Conv (d
  // has three readers).
  expect_blocked_equals_plain(model, random_tensor({2, 20, 9, 11}, 12), 1, 0);
  auto session = runtime::Session::create(model, {.threads = 2, .profile = true});
  ASSERT_TRUE(session.ok()) << session.error().message();
  ASSERT_TRUE((*session)->run({{"x", random_tensor({2, 20, 9, 11}, 12)}}).ok());
  EXPECT_EQ(count_steps(**session, "ToPlain"), 1u);  // r's alone
  EXPECT_EQ(count_steps(**session, "Transpose+LayerNormalization"), 0u);
}

// MobileNet's expansion and depthwise layers: a 1x1 Conv runs the depthwise
// 3x3 Conv that alone reads it (conv_fusion.h's FusedDepthwise), as one
// oneDNN primitive with prepacked weights and as two without. Strides 1 and
// 2, a map of odd size, with and without biases and activations on either
// side; a 1x1 with Swish keeps its depthwise Conv apart (oneDNN would apply
// it inside the pair), and so does the 1x1 into 20 channels (a partial last
// block, where the pair runs faster as two primitives). With `expanded` 44
// (partial blocks of 16 and of 8) the Clips (0 to 6) run plain, and the
// first pair stays apart as well.
TEST(BlockedLayout, PointwiseConvsRunTheDepthwiseConvAfterThem) {
  for (int64_t expanded : {48, 44}) {
    SCOPED_TRACE(expanded);
    auto model = with_weights(fmt::format(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,20,13,14] x) => (float[2,20,4,4] y) {{
  lo = Constant <value = float {{0.0}}> ()
  hi = Constant <value = float {{6.0}}> ()
  c1 = Conv <kernel_shape = [1,1]> (x, w1, b1)
  r1 = Clip(c1, lo, hi)
  d1 = Conv <kernel_shape = [3,3], pads = [1,1,1,1], group = {0}> (r1, w2, b2)
  r2 = Clip(d1, lo, hi)
  c3 = Conv <kernel_shape = [1,1]> (r2, w3)
  d3 = Conv <kernel_shape = [3,3], pads = [1,1,1,1], strides = [2,2], group = 32> (c3, w4)
  h3 = HardSwish(d3)
  c5 = Conv <kernel_shape = [1,1]> (h3, w5, b5)
  s5 = Sigmoid(c5)
  m5 = Mul(c5, s5)
  d6 = Conv <kernel_shape = [3,3], pads = [1,1,1,1], strides = [2,2], group = 32> (m5, w6, b6)
  r6 = Relu(d6)
  c7 = Conv <kernel_shape = [1,1]> (r6, w7)
  y = Conv <kernel_shape = [3,3], pads = [1,1,1,1], group = 20> (c7, w8)
}})",
                                          expanded),
                              {{"w1", {expanded, 20, 1, 1}},
                               {"b1", {expanded}},
                               {"w2", {expanded, 1, 3, 3}},
                               {"b2", {expanded}},
                               {"w3", {32, expanded, 1, 1}},
                               {"w4", {32, 1, 3, 3}},
                               {"w5", {32, 32, 1, 1}},
                               {"b5", {32}},
                               {"w6", {32, 1, 3, 3}},
                               {"b6", {32}},
                               {"w7", {20, 32, 1, 1}},
                               {"w8", {20, 1, 3, 3}}});
    // Blocked: r1, d1 and r2 into c1 (with 44: r1 into c1, r2 into d1); d3
    // and h3 into c3; s5 and m5 into c5; r6 into d6. Plain, only the
    // activations: r1, r2, h3, s5, m5, r6. x (20 channels) is reordered into
    // blocks; with 44, so are r1 for d1 and r2 for c3.
    const bool pair = expanded == 48;
    for (bool prepack : {true, false}) {
      SCOPED_TRACE(prepack ? "prepacked weights" : "weights reordered per run");
      expect_blocked_equals_plain(model, random_tensor({2, 20, 13, 14}, 11), pair ? 1 : 3, pair ? 8 : 7, 6, prepack,
                                  [pair](const runtime::Session& session, bool blocked_layout) {
                                    EXPECT_EQ(count_steps(session, "Conv"), !blocked_layout ? 8u : pair ? 6u : 7u);
                                  });
    }
  }
}

// On maps as large as MobileNet's first (112 x 112), at one thread, oneDNN
// runs the pair in its 1x1 kernel alone, which reads the 1x1's bias whether
// the Conv has one or not: without one the run crashed. Pairs without
// biases, strides 1 and 2, at one thread and at two.
TEST(BlockedLayout, PointwiseAndDepthwisePairsWithoutBiasesOnALargeMap) {
  auto model = with_weights(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,16,112,112] x) => (float[1,32,56,56] y) {
  c1 = Conv <kernel_shape = [1,1]> (x, w1)
  d1 = Conv <kernel_shape = [3,3], pads = [1,1,1,1], group = 32> (c1, w2)
  c2 = Conv <kernel_shape = [1,1]> (d1, w3)
  y = Conv <kernel_shape = [3,3], pads = [1,1,1,1], strides = [2,2], group = 32> (c2, w4)
})",
                            {{"w1", {32, 16, 1, 1}}, {"w2", {32, 1, 3, 3}}, {"w3", {32, 32, 1, 1}}, {"w4", {32, 1, 3, 3}}});
  const Tensor x = random_tensor({1, 16, 112, 112}, 13);
  auto reference_session = runtime::Session::create(model, {.threads = 1, .blocked_layout = false, .fuse = false});
  ASSERT_TRUE(reference_session.ok()) << reference_session.error().message();
  auto reference = (*reference_session)->run({{"x", x}});
  ASSERT_TRUE(reference.ok()) << reference.error().message();
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    auto session = runtime::Session::create(model, {.threads = threads, .profile = true});
    ASSERT_TRUE(session.ok()) << session.error().message();
    auto ours = (*session)->run({{"x", x}});
    ASSERT_TRUE(ours.ok()) << ours.error().message();
    testing::expect_tensor_near((*ours)[0].tensor(), (*reference)[0].tensor(), 1e-5, 1e-5);
    EXPECT_EQ(count_steps(**session, "(fused into Conv)"), 2u);
  }
}

// The pair runs as one primitive wherever oneDNN has its JIT kernels
// (AVX2 and AVX-512), at one thread and at two: else the fusion would
// only add a copy.
TEST(BlockedLayout, OneDnnRunsAPointwiseAndDepthwisePairAsOnePrimitive) {
  const Tensor w = random_tensor({40, 24, 1, 1}, 1), b = random_tensor({40}, 2);
  runtime::nn::DepthwiseStage stage{std::make_shared<const Tensor>(random_tensor({40, 1, 3, 3}, 3)), nullptr, 1,
                                    runtime::nn::FusedActivation{runtime::nn::FusedActivation::Kind::relu}};
  for (int64_t stride : {1, 2})
    for (int threads : {1, 2}) {
      SCOPED_TRACE(fmt::format("stride {}, {} threads", stride, threads));
      stage.stride = stride;
      runtime::ConvParams p;
      p.batch = 1;
      p.in_channels = 24;
      p.out_channels = 40;
      p.window = {{28, 28}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, {28, 28}};
      const runtime::ThreadLimit limit(threads);
      EXPECT_NE(runtime::nn::DnnlConv::create(p, w, &b, {}, runtime::nn::ActivationLayout::blocked, nullptr, true, &stage),
                nullptr);
    }
}

TEST(BlockedLayout, FullyConnectedSqueezeExcitationLayersOnTwoThreads) {
  // MobileNetV3's widest gate (576 -> 144 -> 576 channels): its 1x1
  // convolutions on a 1x1 map run as a matrix times a vector, the threads
  // taking the output channels in halves; 150 and 570 are not whole blocks.
  // z's 1x1 output on the 1x1 map reads the leading padding: its bias alone.
  auto model = with_weights(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,570,3,3] x) => (float[1,570,3,3] y, float[1,150,1,1] z) {
  p = GlobalAveragePool(x)
  f1 = Conv <kernel_shape = [1,1]> (p, w1, b1)
  a1 = Relu(f1)
  f2 = Conv <kernel_shape = [1,1]> (a1, w2)
  g = HardSigmoid <alpha = 0.1666667, beta = 0.5> (f2)
  y = Mul(x, g)
  z = Conv <kernel_shape = [1,1], pads = [1,1,0,0], strides = [2,2]> (p, w1, b1)
})",
                            {{"w1", {150, 570, 1, 1}}, {"b1", {150}}, {"w2", {570, 150, 1, 1}}});
  expect_blocked_equals_plain(model, random_tensor({1, 570, 3, 3}, 7), 1, 2);
}

// GlobalAveragePool on blocked planes (kernels/nn/pool.cpp's
// global_average_blocked): maps large enough for both threads, 40 channels
// (partial blocks of 16 and whole ones of 8), pixel counts with and without
// a remainder after the four partial sums, values far from zero so that a
// dropped or doubled pixel shows.
TEST(BlockedLayout, GlobalAveragePoolsOfLargeMapsMatchPlain) {
  auto model = with_weights(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3,63,65] x) => (float[2,40] y, float[2,40,1,1] z) {
  c = Conv <kernel_shape = [1,1]> (x, w, b)
  g = GlobalAveragePool(c)
  y = Flatten(g)
  p = MaxPool <kernel_shape = [2,2], strides = [2,2]> (c)
  z = GlobalAveragePool(p)
})",
                            {{"w", {40, 3, 1, 1}}, {"b", {40}}});
  expect_blocked_equals_plain(model, far_from_zero({2, 3, 63, 65}, 3), 0, 0);
}

// Windowed pools on blocked planes (kernels/nn/pool.cpp's pool_rows):
// Inception's 3x3 stride-1 average with its padding counted, padding left
// out of the count (each side of a different width, so a count taken from
// the wrong side shows), ceil_mode's last window past the end, counting
// the pads but not the taps past them, a window as wide as the padded map,
// and GlobalMaxPool; 40 channels (partial blocks of 16), maps large enough
// for both threads, values far from zero so that a dropped or doubled tap
// shows.
TEST(BlockedLayout, WindowedPoolsMatchPlain) {
  auto model = with_weights(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,3,35,37] x) => (float[1,40,35,37] a, float[1,40,37,37] b, float[1,40,18,19] c, float[1,40,4,4] d,
                           float[1,40,1,1] e, float[1,40,12,13] f, float[1,40,18,19] h) {
  k = Conv <kernel_shape = [1,1]> (x, w, bias)
  a = AveragePool <kernel_shape = [3,3], pads = [1,1,1,1], count_include_pad = 1> (k)
  b = AveragePool <kernel_shape = [3,3], pads = [0,2,4,2]> (k)
  c = AveragePool <kernel_shape = [3,3], strides = [2,2], ceil_mode = 1> (k)
  d = AveragePool <kernel_shape = [9,11], strides = [9,9], pads = [1,2,1,2], count_include_pad = 1> (k)
  e = GlobalMaxPool(k)
  f = MaxPool <kernel_shape = [3,3], strides = [3,3], pads = [1,1,1,1], ceil_mode = 1> (k)
  h = AveragePool <kernel_shape = [3,3], strides = [2,2], pads = [1,1,0,0], ceil_mode = 1, count_include_pad = 1> (k)
})",
                            {{"w", {40, 3, 1, 1}}, {"bias", {40}}});
  expect_blocked_equals_plain(model, far_from_zero({1, 3, 35, 37}, 5), 0, 0);
}

// A Pad of zeros read only by an AveragePool is taken over by it (runtime/
// fusion.h), blocked and plain: Inception's 3x3 stride-1 average, and pads
// of different widths on each side merged with the pool's own counted
// ones. Left apart: the pool's own pads not counted, a Pad of ones, ceil_mode,
// and a Pad with a second reader.
TEST(BlockedLayout, ZeroPadsBeforeAveragePoolsAreTakenOver) {
  auto model = with_weights(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,3,17,19] x) => (float[1,20,17,19] a1, float[1,20,9,11] a2, float[1,20,19,21] a3, float[1,20,17,19] a4,
                           float[1,20,9,10] a5, float[1,20,17,19] a6, float[1,20,19,21] q6) {
  c = Conv <kernel_shape = [1,1]> (x, w, b)
  pads = Constant <value = int64[8] {0, 0, 1, 1, 0, 0, 1, 1}> ()
  uneven = Constant <value = int64[8] {0, 0, 0, 2, 0, 0, 1, 0}> ()
  zero = Constant <value = float {0}> ()
  one = Constant <value = float {1}> ()
  p1 = Pad(c, pads, zero)
  a1 = AveragePool <kernel_shape = [3,3]> (p1)
  p2 = Pad(c, uneven)
  a2 = AveragePool <kernel_shape = [3,3], strides = [2,2], pads = [1,1,1,1], count_include_pad = 1> (p2)
  p3 = Pad(c, pads)
  a3 = AveragePool <kernel_shape = [3,3], pads = [1,1,1,1]> (p3)
  p4 = Pad(c, pads, one)
  a4 = AveragePool <kernel_shape = [3,3]> (p4)
  p5 = Pad(c, pads)
  a5 = AveragePool <kernel_shape = [3,3], strides = [2,2], ceil_mode = 1> (p5)
  p6 = Pad(c, pads)
  a6 = AveragePool <kernel_shape = [3,3]> (p6)
  q6 = Relu(p6)
})",
                            {{"w", {20, 3, 1, 1}}, {"b", {20}}});
  expect_blocked_equals_plain(model, far_from_zero({1, 3, 17, 19}, 9), 0, 0, std::nullopt, true,
                              [](const runtime::Session& session, bool) {
                                EXPECT_EQ(count_steps(session, "Pad+AveragePool"), 2u);
                                EXPECT_EQ(count_steps(session, "Pad"), 4u);
                              });
}

// A blocked Conv keeps what its last input shape resolved to (blocked.cpp's
// BlockedConv::Resolved): runs of other shapes, and the first shape again,
// must each get their own output.
TEST(BlockedLayout, AConvMetWithAnotherShapeResolvesItAgain) {
  auto model = with_weights(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,16,h,w] x) => (float[1,24,h,w] y) {
  c1 = Conv <kernel_shape = [3,3], pads = [1,1,1,1]> (x, w1, b1)
  r1 = Relu(c1)
  y = Conv <kernel_shape = [1,1]> (r1, w2)
})",
                            {{"w1", {20, 16, 3, 3}}, {"b1", {20}}, {"w2", {24, 20, 1, 1}}});
  ASSERT_NE(model, nullptr);
  auto reference = runtime::Session::create(model, {.threads = 1, .blocked_layout = false, .fuse = false});
  auto blocked = runtime::Session::create(model, {.threads = 2, .profile = true});
  ASSERT_TRUE(reference.ok() && blocked.ok());
  unsigned seed = 11;
  for (auto [h, w] : {std::pair{9, 11}, std::pair{5, 7}, std::pair{9, 11}, std::pair{30, 40}}) {
    SCOPED_TRACE(std::to_string(h) + "x" + std::to_string(w));
    const Tensor x = random_tensor({1, 16, h, w}, seed++);
    auto expected = (*reference)->run({{"x", x}});
    auto ours = (*blocked)->run({{"x", x}});
    ASSERT_TRUE(expected.ok() && ours.ok());
    testing::expect_tensor_near((*ours)[0].tensor(), (*expected)[0].tensor(), 1e-5, 1e-5);
  }
  EXPECT_GT(count_steps(**blocked, "ToBlocked"), 0u);
}

// The model run with prepack_weights false against the default run: the
// same outputs, still on blocked activations (oneDNN's plain-layout kernels
// were 10x slower in simplify's check).
// `tolerance`: sums over many terms round differently in another order.
void expect_per_run_weights_match_prepacked(const std::shared_ptr<const ir::Model>& model, const Tensor& x,
                                            double tolerance = 1e-5) {
  ASSERT_NE(model, nullptr);
  auto prepacked = runtime::Session::create(model, {.threads = 2});
  auto in_place = runtime::Session::create(model, {.threads = 2, .profile = true, .prepack_weights = false});
  ASSERT_TRUE(prepacked.ok()) << prepacked.error().message();
  ASSERT_TRUE(in_place.ok()) << in_place.error().message();
  auto want = (*prepacked)->run({{"x", x}});
  auto got = (*in_place)->run({{"x", x}});
  ASSERT_TRUE(want.ok()) << want.error().message();
  ASSERT_TRUE(got.ok()) << got.error().message();
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < got->size(); ++i) {
    SCOPED_TRACE((*in_place)->outputs()[i].name);
    testing::expect_tensor_near((*got)[i].tensor(), (*want)[i].tensor(), tolerance, tolerance);
  }
  EXPECT_GT(count_steps(**in_place, "ToBlocked") + count_steps(**in_place, "ToPlain"), 0u);
}

// SessionOptions::prepack_weights false: convolutions reorder their weights
// for each run instead of keeping a copy, and MatMul/Gemm never transpose
// theirs (N = 1024 would), with the same results as the default run, which
// is checked by the plain unfused run above and conformance data.
TEST(BlockedLayout, WeightsReadInPlaceGiveWhatPrepackedWeightsGive) {
  auto model = with_weights(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,16,12,12] x) => (float[2,1024] y, float[2,1024] z, float[2,24,12,12] d) {
  c1 = Conv <kernel_shape = [3,3], pads = [1,1,1,1]> (x, w1, b1)
  r1 = Relu(c1)
  c2 = Conv <kernel_shape = [3,3], pads = [2,2,2,2], dilations = [2,2], group = 4> (r1, w2)
  d = Conv <kernel_shape = [1,1]> (c2, w3, b3)
  g = GlobalAveragePool(d)
  f = Flatten(g)
  m = MatMul(f, fc)
  y = Add(m, fcb)
  z = Gemm(f, fc, fcb)
})",
                            {{"w1", {32, 16, 3, 3}},
                             {"b1", {32}},
                             {"w2", {32, 8, 3, 3}},
                             {"w3", {24, 32, 1, 1}},
                             {"b3", {24}},
                             {"fc", {24, 1024}},
                             {"fcb", {1024}}});
  expect_per_run_weights_match_prepacked(model, random_tensor({2, 16, 12, 12}, 11));
}

// A weight too large to reorder for each run is read in place, on a plain
// copy of the blocked activations. 85 MB: buffers this test frees are then
// too large for the sizes Tensor.LargeBuffersServeLaterShapesUpToHalfTheirSize
// asks the buffer cache for.
TEST(BlockedLayout, AWeightTooLargeToReorderPerRunIsReadInPlace) {
  auto model = with_weights(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,2048,5,6] x) => (float[1,1152,5,6] y) {
  c = Conv <kernel_shape = [3,3], pads = [1,1,1,1]> (x, w, b)
  y = Relu(c)
})",
                            {{"w", {1152, 2048, 3, 3}}, {"b", {1152}}});
  expect_per_run_weights_match_prepacked(model, random_tensor({1, 2048, 5, 6}, 12), 1e-3);  // 18,432 terms
}

// The channel map of a shuffle, worked by hand: [2, 3] channels swapped to
// [3, 2] take channels 0, 3, 1, 4, 2, 5; three factors rotated likewise.
TEST(BlockedLayout, ShuffledChannelsByHand) {
  EXPECT_EQ(runtime::nn::shuffled_channels({2, 3}, {1, 0}), (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(runtime::nn::shuffled_channels({2, 3}, {0, 1}), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  // [2, 1, 2] -> axes (2, 0, 1): output (k, i, j) reads input (i, j, k) = 2i + 2j + k.
  EXPECT_EQ(runtime::nn::shuffled_channels({2, 1, 2}, {2, 0, 1}), (std::vector<int64_t>{0, 2, 1, 3}));
}

// ShuffleNetV2's units as torchvision exports them, with every dim symbolic:
// channel_shuffle's Reshape -> Transpose -> Reshape with its shapes computed
// from Shape at run time (groups 2 on 116 channels, groups 3 on 87 written
// with -1 and 0), chunk(2, dim=1)'s Slices with computed bounds, Concats of
// 58 channels (partial blocks). All of it stays blocked: nothing goes back
// to the plain layout but the outputs. Runs of other batches and sizes in
// one session give what the plain unfused kernels give.
TEST(BlockedLayout, ShuffleNetUnitsStayBlockedAcrossShapes) {
  auto model = with_weights(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[n,3,h,w] x) => (float[n,87,h,w] y, float[n,58,h,w] z) {
  i0 = Constant <value = int64 {0}> ()
  i1 = Constant <value = int64 {1}> ()
  i2 = Constant <value = int64 {2}> ()
  i3 = Constant <value = int64 {3}> ()
  two = Constant <value = int64[1] {2}> ()
  three = Constant <value = int64[1] {3}> ()
  minus = Constant <value = int64[1] {-1}> ()
  zero = Constant <value = int64[1] {0}> ()
  ax = Constant <value = int64[1] {1}> ()
  a = Conv <kernel_shape = [3,3], pads = [1,1,1,1]> (x, w1, b1)
  ra = Relu(a)
  b = Conv <kernel_shape = [1,1]> (ra, w2)
  cat = Concat <axis = 1> (ra, b)
  s = Shape(cat)
  sn = Gather <axis = 0> (s, i0)
  sc = Gather <axis = 0> (s, i1)
  sh = Gather <axis = 0> (s, i2)
  sw = Gather <axis = 0> (s, i3)
  half = Div(sc, i2)
  un = Unsqueeze(sn, zero)
  uhalf = Unsqueeze(half, zero)
  uh = Unsqueeze(sh, zero)
  uw = Unsqueeze(sw, zero)
  shape1 = Concat <axis = 0> (un, two, uhalf, uh, uw)
  r1 = Reshape(cat, shape1)
  t1 = Transpose <perm = [0,2,1,3,4]> (r1)
  shape2 = Concat <axis = 0> (un, minus, uh, uw)
  shuffled = Reshape(t1, shape2)
  s2 = Shape(shuffled)
  c2 = Gather <axis = 0> (s2, i1)
  mid = Div(c2, i2)
  umid = Unsqueeze(mid, zero)
  uc2 = Unsqueeze(c2, zero)
  z = Slice(shuffled, zero, umid, ax)
  hi = Slice(shuffled, umid, uc2, ax)
  d = Conv <kernel_shape = [3,3], pads = [1,1,1,1], group = 58> (hi, w3)
  e = Conv <kernel_shape = [1,1]> (d, w4, b4)
  cat2 = Concat <axis = 1> (z, e)
  f = Conv <kernel_shape = [1,1]> (cat2, w5)
  shape3 = Concat <axis = 0> (zero, three, minus, uh, uw)
  r3 = Reshape(f, shape3)
  t3 = Transpose <perm = [0,2,1,3,4]> (r3)
  shape4 = Concat <axis = 0> (zero, minus, uh, uw)
  g3 = Reshape(t3, shape4)
  y = Sigmoid(g3)
})",
                            {{"w1", {58, 3, 3, 3}},
                             {"b1", {58}},
                             {"w2", {58, 58, 1, 1}},
                             {"w3", {58, 1, 3, 3}},
                             {"w4", {58, 58, 1, 1}},
                             {"b4", {58}},
                             {"w5", {87, 116, 1, 1}}});
  ASSERT_NE(model, nullptr);
  auto reference = runtime::Session::create(model, {.threads = 1, .blocked_layout = false, .fuse = false});
  auto blocked = runtime::Session::create(model, {.threads = 2, .profile = true});
  ASSERT_TRUE(reference.ok() && blocked.ok());
  unsigned seed = 21;
  for (auto [n, h, w] : {std::tuple{2, 7, 9}, std::tuple{1, 12, 5}, std::tuple{3, 1, 1}, std::tuple{2, 7, 9}}) {
    SCOPED_TRACE(std::to_string(n) + "x" + std::to_string(h) + "x" + std::to_string(w));
    const Tensor x = random_tensor({n, 3, h, w}, seed++);
    auto expected = (*reference)->run({{"x", x}});
    auto ours = (*blocked)->run({{"x", x}});
    ASSERT_TRUE(expected.ok()) << expected.error().message();
    ASSERT_TRUE(ours.ok()) << ours.error().message();
    for (size_t i = 0; i < 2; ++i) testing::expect_tensor_near((*ours)[i].tensor(), (*expected)[i].tensor(), 1e-5, 1e-5);
  }
  // x's 3 channels are read plain by the first Conv; y and z go back to plain.
  EXPECT_EQ(count_steps(**blocked, "ToBlocked"), 0u);
  EXPECT_EQ(count_steps(**blocked, "ToPlain"), 2u);
}

// Reshape -> Transpose -> Reshape that moves more than channels (H into the
// channels), and a Slice of H: they run plain, as before, with the same results.
TEST(BlockedLayout, ReshapesAndSlicesThatAreNotChannelMovesRunPlain) {
  auto model = with_weights(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3,6,5] x) => (float[2,40,3,5] y, float[2,20,2,5] z) {
  shape1 = Constant <value = int64[5] {2, 20, 3, 2, 5}> ()
  shape2 = Constant <value = int64[4] {2, 40, 3, 5}> ()
  starts = Constant <value = int64[1] {1}> ()
  ends = Constant <value = int64[1] {3}> ()
  ax = Constant <value = int64[1] {2}> ()
  a = Conv <kernel_shape = [3,3], pads = [1,1,1,1]> (x, w1, b1)
  r1 = Reshape(a, shape1)
  t1 = Transpose <perm = [0,1,3,2,4]> (r1)
  y = Reshape(t1, shape2)
  z = Slice(a, starts, ends, ax)
})",
                            {{"w1", {20, 3, 3, 3}}, {"b1", {20}}});
  expect_blocked_equals_plain(model, random_tensor({2, 3, 6, 5}, 9), 0, 0);
}

}  // namespace
}  // namespace onnxkit
