// Session: reusable and safe to run from several threads at once.

#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <random>
#include <thread>

#include "ir/model.h"
#include "runtime/executor.h"
#include "runtime/kernel.h"
#include "runtime/session.h"
#include "support/node_runner.h"
#include "support/test_support.h"

namespace onnxkit {
namespace {

using runtime::Tensor;

std::shared_ptr<const ir::Model> load(const std::string& name) {
  auto model = ir::load_model(std::string(TEST_MODELS_DIR) + "/" + name);
  EXPECT_TRUE(model.ok()) << (model.ok() ? "" : model.error().message());
  return model.ok() ? std::shared_ptr<const ir::Model>(std::move(model).value()) : nullptr;
}

// Noise around a brightness of its own: white noise alone averages out in
// the pooling, and every image would give the same output.
Tensor random_image(unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> unit(0, 1);
  const float brightness = 0.5f * static_cast<float>(seed);
  Tensor t(runtime::DataType::float32, {1, 3, 224, 224});
  for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<float>()[i] = brightness + 0.2f * unit(rng);
  return t;
}

TEST(Session, ConcurrentRunsGiveTheSerialResults) {
  auto model = load("mobilenet_v2_opset13.onnx");
  ASSERT_NE(model, nullptr);
  auto session = runtime::Session::create(model, {.threads = 2});
  ASSERT_TRUE(session.ok()) << session.error().message();
  const std::string input = (*session)->inputs()[0].name;
  constexpr int kThreads = 4;
  std::vector<Tensor> images, serial;
  for (int i = 0; i < kThreads; ++i) {
    images.push_back(random_image(static_cast<unsigned>(i)));
    auto out = (*session)->run({{input, images.back()}});
    ASSERT_TRUE(out.ok()) << out.error().message();
    serial.push_back((*out)[0].tensor());
  }
  std::vector<std::vector<Tensor>> concurrent(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int round = 0; round < 3; ++round) {
        auto out = (*session)->run({{input, images[static_cast<size_t>(i)]}});
        if (out.ok()) concurrent[static_cast<size_t>(i)].push_back((*out)[0].tensor());
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_EQ(concurrent[static_cast<size_t>(i)].size(), 3u);
    for (const Tensor& t : concurrent[static_cast<size_t>(i)])
      testing::expect_tensor_near(t, serial[static_cast<size_t>(i)], 1e-6, 1e-5);
  }
  // Different inputs really give different outputs (the comparison above can fail).
  double difference = 0;
  for (int64_t k = 0; k < serial[0].numel(); ++k)
    difference = std::max<double>(difference, std::abs(serial[0].data<float>()[k] - serial[1].data<float>()[k]));
  EXPECT_GT(difference, 1e-5);
}

// The OpenMP threads each of `runs` concurrent runs of a one-node session
// may use, seen from inside its kernel while all of them are in progress.
std::vector<int> threads_seen_by_concurrent_runs(int session_threads, int runs) {
  std::atomic<int> arrived{0};
  std::mutex seen_mutex;
  std::vector<int> seen;
  runtime::KernelRegistry registry;
  registry.add("test", "Probe", 1, runtime::kLatestOpset, runtime::make_kernel([&](runtime::KernelContext& ctx) -> Status {
                 arrived.fetch_add(1);
                 const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
                 while (arrived.load() < runs && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
                 {
                   std::lock_guard lock(seen_mutex);
                   seen.push_back(omp_get_max_threads());
                 }
                 ctx.output(0, runtime::DataType::float32, {1}).mutable_data<float>()[0] = 1;
                 return {};
               }));
  auto model = testing::model_from_text(R"(
    <ir_version: 8, opset_import: ["" : 17, "test" : 1]>
    g (float[1] x) => (float[1] y) { y = test.Probe (x) })");
  auto session =
      runtime::Session::create(std::move(model), {.threads = session_threads, .adapt_to_load = false, .registry = &registry});
  EXPECT_TRUE(session.ok()) << session.error().message();
  if (!session.ok()) return {};
  // Each run starts once the ones before it are inside the kernel.
  std::vector<std::thread> callers;
  for (int i = 0; i < runs; ++i) {
    callers.emplace_back([&] { EXPECT_TRUE((*session)->run({{"x", Tensor::from<float>({1}, {0})}}).ok()); });
    while (arrived.load() < i + 1) std::this_thread::yield();
  }
  for (auto& t : callers) t.join();
  std::sort(seen.begin(), seen.end());
  return seen;
}

TEST(Session, ConcurrentRunsShareTheCoresUnlessTheThreadCountIsExplicit) {
  // A run takes its share of the cores when it starts: the k-th of runs
  // started one after another gets cores / k.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<int> shares;
  for (int k = 1; k <= 4; ++k) shares.push_back(std::max(1, cores / k));
  std::sort(shares.begin(), shares.end());
  EXPECT_EQ(threads_seen_by_concurrent_runs(0, 4), shares);
  EXPECT_EQ(threads_seen_by_concurrent_runs(0, 1), std::vector<int>({cores}));
  EXPECT_EQ(threads_seen_by_concurrent_runs(3, 2), std::vector<int>(2, 3));
}

TEST(Session, ReportsInputsAndOutputsAndRefusesUnknownOutputs) {
  auto model = load("resnet18_opset13.onnx");
  ASSERT_NE(model, nullptr);
  auto session = runtime::Session::create(model);
  ASSERT_TRUE(session.ok());
  ASSERT_EQ((*session)->inputs().size(), 1u);
  EXPECT_EQ((*session)->inputs()[0].name, "input");
  EXPECT_EQ((*session)->outputs()[0].name, "output");
  auto bad = runtime::Session::create(model, {.outputs = {"outptu"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("did you mean 'output'"), std::string::npos) << bad.error().message();
}

// 3x3 "same" convolution of a 4x4 image and x a (2x3) times m (3x2) plus
// bias, in double.
std::vector<float> conv_same(const std::vector<float>& image, const std::vector<float>& w) {
  std::vector<float> y(16);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) {
      double sum = 0;
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
          if (r + i - 1 >= 0 && r + i - 1 < 4 && c + j - 1 >= 0 && c + j - 1 < 4)
            sum += static_cast<double>(image[(r + i - 1) * 4 + c + j - 1]) * w[i * 3 + j];
      y[r * 4 + c] = static_cast<float>(sum);
    }
  return y;
}
std::vector<float> affine(const std::vector<float>& a, const std::vector<float>& m, const std::vector<float>& bias) {
  std::vector<float> z;
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 2; ++c) {
      double sum = bias[c];
      for (int k = 0; k < 3; ++k) sum += static_cast<double>(a[r * 3 + k]) * m[k * 2 + c];
      z.push_back(static_cast<float>(sum));
    }
  return z;
}

TEST(Session, AnInitializerThatIsAlsoAnInputIsADefaultTheRunMayReplace) {
  // Conv prepacks its weights and MatMul -> Add fuses with its B transposed
  // at build, but only for constants: w and m here are inputs too.
  std::shared_ptr<const ir::Model> model = testing::model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 1, 4, 4] x, float[1, 1, 3, 3] w, float[2, 3] a, float[3, 2] m) => (float[1, 1, 4, 4] y, float[2, 2] z)
  <float[1, 1, 3, 3] w = {1, 0, -1, 2, 0, -2, 1, 0, -1}, float[3, 2] m = {1, 2, 3, 4, 5, 6}, float[2] bias = {0.5, -0.5}> {
  y = Conv<pads = [1, 1, 1, 1]>(x, w)
  p = MatMul(a, m)
  z = Add(p, bias)
})");
  const std::vector<float> image = {1, 2, 0, -1, 3, 1, 4, 2, 0, -2, 1, 5, 2, 3, -1, 0};
  const std::vector<float> a = {1, -1, 2, 0.5, 3, -2};
  const std::vector<float> w_default = {1, 0, -1, 2, 0, -2, 1, 0, -1}, m_default = {1, 2, 3, 4, 5, 6};
  const std::vector<float> w_fed = {0, 1, 0, 1, -4, 1, 0, 1, 0}, m_fed = {-1, 0, 2, 1, 0, 3};
  const std::vector<float> bias = {0.5, -0.5};
  for (int threads : {1, 2}) {
    auto session = runtime::Session::create(model, {.threads = threads});
    ASSERT_TRUE(session.ok()) << session.error().message();
    runtime::NamedValues feeds = {{"x", Tensor::from<float>({1, 1, 4, 4}, image)}, {"a", Tensor::from<float>({2, 3}, a)}};
    auto defaults = (*session)->run(feeds);
    ASSERT_TRUE(defaults.ok()) << defaults.error().message();
    testing::expect_tensor_near((*defaults)[0].tensor(), Tensor::from<float>({1, 1, 4, 4}, conv_same(image, w_default)));
    testing::expect_tensor_near((*defaults)[1].tensor(), Tensor::from<float>({2, 2}, affine(a, m_default, bias)));
    feeds.emplace_back("w", Tensor::from<float>({1, 1, 3, 3}, w_fed));
    feeds.emplace_back("m", Tensor::from<float>({3, 2}, m_fed));
    auto replaced = (*session)->run(feeds);
    ASSERT_TRUE(replaced.ok()) << replaced.error().message();
    testing::expect_tensor_near((*replaced)[0].tensor(), Tensor::from<float>({1, 1, 4, 4}, conv_same(image, w_fed)));
    testing::expect_tensor_near((*replaced)[1].tensor(), Tensor::from<float>({2, 2}, affine(a, m_fed, bias)));
  }
}

TEST(Session, StepsOfShapesGiveEachRunItsOwnShapes) {
  // The Reshape target comes from Shape -> Gather -> Unsqueeze -> Concat,
  // steps the executor takes from the last run when their inputs are the
  // same; the Mul also reads k, an initializer a run may replace.
  std::shared_ptr<const ir::Model> model = testing::model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N, C, 4] x, int64[2] k) => (float[N, D] y, int64[2] z)
  <int64[2] k = {1, 1}, int64[1] minus_one = {-1}, int64 zero = {0}, int64[1] axes = {0}, int64[2] none = {0, 0}> {
  s = Shape(x)
  n = Gather<axis = 0>(s, zero)
  n1 = Unsqueeze(n, axes)
  target = Concat<axis = 0>(n1, minus_one)
  y = Reshape(x, target)
  ys = Shape(y)
  scaled = Mul(ys, k)
  z = Add(scaled, none)
})");
  auto session = runtime::Session::create(model, {.threads = 1});
  ASSERT_TRUE(session.ok()) << session.error().message();
  auto image = [](runtime::Shape shape, float first) {
    Tensor t(runtime::DataType::float32, shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<float>()[i] = first + static_cast<float>(i);
    return t;
  };
  auto ints = [](const Tensor& t) {
    auto v = t.values<int64_t>();
    return std::vector<int64_t>(v.begin(), v.end());
  };
  auto check = [&](runtime::Shape shape, float first, std::vector<int64_t> k, std::vector<int64_t> z) {
    SCOPED_TRACE(runtime::shape_to_string(shape));
    runtime::NamedValues feeds = {{"x", image(shape, first)}};
    if (!k.empty()) feeds.emplace_back("k", Tensor::from<int64_t>({2}, k));
    auto out = (*session)->run(feeds);
    ASSERT_TRUE(out.ok()) << out.error().message();
    const Tensor& y = (*out)[0].tensor();
    ASSERT_EQ(y.shape(), (runtime::Shape{shape[0], shape[1] * shape[2]}));
    for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(y.data<float>()[i], first + static_cast<float>(i));
    EXPECT_EQ(ints((*out)[1].tensor()), z);
  };
  check({2, 3, 4}, 0, {}, {2, 12});
  check({2, 3, 4}, 100, {}, {2, 12});
  check({5, 1, 4}, 7, {}, {5, 4});
  check({2, 3, 4}, 1, {3, 10}, {6, 120});
  check({2, 3, 4}, 1, {}, {2, 12});
  // Runs on several threads at once, each with shapes of its own.
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round) {
        const int64_t n = 1 + (t + round) % 3, c = 1 + t;
        auto out = (*session)->run({{"x", image({n, c, 4}, 0)}});
        if (!out.ok() || (*out)[0].tensor().shape() != runtime::Shape{n, 4 * c} ||
            ints((*out)[1].tensor()) != std::vector<int64_t>{n, 4 * c})
          ++wrong;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

std::string build_error(const testing::NodeSpec& spec) {
  auto out = testing::try_run_node(spec);
  EXPECT_FALSE(out.ok()) << spec.op_type << " ran";
  return out.ok() ? "" : out.error().message();
}

TEST(Session, NodesAreHeldToTheirSchemasInputAndOutputCounts) {
  // Once for every kernel, before any runs: a Relu given two inputs ran on
  // the first, and a node with no outputs crashed its kernel.
  const Tensor x = Tensor::from<float>({2}, {-1, 1});
  EXPECT_CONTAINS(build_error({.op_type = "Relu", .inputs = {{"x", x}, {"x2", x}}}), "Relu takes 1 input, got 2");
  EXPECT_CONTAINS(build_error({.op_type = "Relu", .inputs = {{"x", x}}, .num_outputs = 0}), "Relu has 1 output, got 0");
  EXPECT_CONTAINS(build_error({.op_type = "Add", .inputs = {{"x", x}}}), "Add takes 2 inputs, got 1");
  EXPECT_CONTAINS(build_error({.op_type = "Where", .inputs = {{"x", x}, {"", x}, {"y", x}}}),
                  "input 1 ('X') of Where is required but omitted");
  EXPECT_CONTAINS(build_error({.op_type = "Relu", .inputs = {{"x", x}}, .num_outputs = 0}), "node 'under_test'");
  // Optional inputs and outputs may be left out.
  EXPECT_TRUE(
      testing::try_run_node({.op_type = "Clip", .inputs = {{"x", x}, {"", x}, {"hi", Tensor::from<float>({}, {0.5f})}}}).ok());
  EXPECT_TRUE(testing::try_run_node({.op_type = "Dropout", .inputs = {{"x", x}}, .num_outputs = 1}).ok());
  EXPECT_CONTAINS(build_error({.op_type = "TopK", .inputs = {{"x", x}, {"k", Tensor::from<int64_t>({1}, {1})}}}),
                  "TopK has 2 outputs, got 1");
}

TEST(Session, EachStepSeesOnlyItsOwnInputsAndOutputs) {
  // The executor hands every step its inputs and takes its outputs through
  // arrays shared by all the steps of a run: a step after a wider one must
  // see neither the earlier step's extra inputs (Sum counts what it gets)
  // nor its outputs (Split's second).
  std::shared_ptr<const ir::Model> model = testing::model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] a, float[2] b, float[2] c) => (float[2] s, float[2] t, float[1] h, float[1] u, float[2] b, float[2] c) {
  s = Sum(a, b, c)
  t = Sum(s)
  h, k = Split<num_outputs = 2>(t)
  u = Sum(h)
})");
  for (int threads : {1, 2}) {
    auto session = runtime::Session::create(model, {.threads = threads});
    ASSERT_TRUE(session.ok()) << session.error().message();
    auto out = (*session)->run({{"a", Tensor::from<float>({2}, {1, 2})},
                                {"b", Tensor::from<float>({2}, {10, 20})},
                                {"c", Tensor::from<float>({2}, {100, 200})}});
    ASSERT_TRUE(out.ok()) << out.error().message();
    testing::expect_tensor_near((*out)[0].tensor(), Tensor::from<float>({2}, {111, 222}));
    testing::expect_tensor_near((*out)[1].tensor(), Tensor::from<float>({2}, {111, 222}));
    testing::expect_tensor_near((*out)[2].tensor(), Tensor::from<float>({1}, {111}));
    testing::expect_tensor_near((*out)[3].tensor(), Tensor::from<float>({1}, {111}));
  }
}

TEST(Session, SubGraphsRunOverAndOverGiveEachRunItsOwnValues) {
  // A sub-graph run hands its buffers back to the frame that ran it for
  // the next run of the same plan, nested runs' buffers with them: an
  // outer Loop whose body takes one If branch or the other and runs an
  // inner Loop of i + 1 iterations, so every plan runs several times from
  // one frame, with different values. Worked by hand from x = 1:
  //   i = 0: even, 1 + 10 = 11; + 0            -> 11
  //   i = 1: odd, -11;          + 0 + 1        -> -10
  //   i = 2: even, -10 + 10 = 0; + 0 + 1 + 2   -> 3
  std::shared_ptr<const ir::Model> model = testing::model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1] x) => (float[1] y, float[3, 1] trace) <int64 n = {3}> {
  y, trace = Loop(n, , x) <body = outer (int64 i, bool c, float[1] acc) => (bool c_out, float[1] acc_out, float[1] seen)
      <int64 two = {2}, int64 one = {1}> {
    c_out = Identity(c)
    r = Mod(i, two)
    odd = Cast<to = 9>(r)
    start = If(odd) <
      then_branch = flip () => (float[1] s) <float[1] minus_one = {-1.0}> { s = Mul(acc, minus_one) },
      else_branch = lift () => (float[1] t) <float[1] ten = {10.0}> { t = Add(acc, ten) }>
    k = Add(i, one)
    acc_out = Loop(k, , start) <body = inner (int64 j, bool c2, float[1] v) => (bool c2_out, float[1] v_out) {
      c2_out = Identity(c2)
      jf = Cast<to = 1>(j)
      v_out = Add(v, jf)
    }>
    seen = Identity(acc_out)
  }>
})");
  auto session = runtime::Session::create(model);
  ASSERT_TRUE(session.ok()) << session.error().message();
  for (int run = 0; run < 2; ++run) {
    auto out = (*session)->run({{"x", Tensor::from<float>({1}, {1})}});
    ASSERT_TRUE(out.ok()) << out.error().message();
    testing::expect_tensor_near((*out)[0].tensor(), Tensor::from<float>({1}, {3}));
    testing::expect_tensor_near((*out)[1].tensor(), Tensor::from<float>({3, 1}, {11, -10, 3}));
  }
}

// x + 1, `n` times, by a Loop whose body is two nodes.
std::shared_ptr<const ir::Model> counting_loop(int64_t n) {
  std::shared_ptr<ir::Model> model = testing::model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1] x) => (float[1] y) <int64 n = {3}> {
  y = Loop(n, , x) <body = body (int64 i, bool c, float[1] v) => (bool c_out, float[1] v_out) <float[1] one = {1.0}> {
    c_out = Identity(c)
    v_out = Add(v, one)
  }>
})");
  if (model) model->graph().find_value("n")->mutable_initializer()->set_int64_data(0, n);
  return model;
}

TEST(Session, RunLimitsStopALoopThatWouldNotEnd) {
  const runtime::NamedValues feeds = {{"x", Tensor::from<float>({1}, {0})}};
  auto three = runtime::Session::create(counting_loop(3));
  ASSERT_TRUE(three.ok()) << three.error().message();
  auto y = (*three)->run(feeds, {.timeout = std::chrono::seconds(10)});
  ASSERT_TRUE(y.ok()) << y.error().message();
  testing::expect_tensor_near((*y)[0].tensor(), Tensor::from<float>({1}, {3}));

  auto endless = runtime::Session::create(counting_loop(int64_t{1} << 62));
  ASSERT_TRUE(endless.ok()) << endless.error().message();
  const auto start = std::chrono::steady_clock::now();
  auto timed = (*endless)->run(feeds, {.timeout = std::chrono::milliseconds(200)});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(timed.ok());
  EXPECT_CONTAINS(timed.error().message(), "stopped at the run's time limit (0.2 s)");
  EXPECT_CONTAINS(timed.error().message(), "Loop node");
  EXPECT_LT(seconds, 5);
  auto counted = (*endless)->run(feeds, {.max_subgraph_runs = 1000});
  ASSERT_FALSE(counted.ok());
  EXPECT_CONTAINS(counted.error().message(), "limit of 1000 sub-graph runs");
  // Each iteration allocates one element for v_out: 100 of them, then the budget.
  auto budget = (*endless)->run(feeds, {.max_elements = 100});
  ASSERT_FALSE(budget.ok());
  EXPECT_CONTAINS(budget.error().message(), "budget of 100 elements");
}

// A run past its SpreadBudget (runtime/contention.h): the calling thread's
// steps take one thread from the time given on, not before, and not from
// inside a parallel region, where the setting would be a worker's own.
TEST(RunControl, StepsPastTheTimeGivenTakeOneThread) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(2);
  int asked = 0;
  auto yes = [&asked] { return ++asked > 0; };
  runtime::RunControl later;
  later.go_single_threaded_at(std::chrono::steady_clock::now() + std::chrono::hours(1), yes);
  ASSERT_TRUE(later.check_time().ok());
  EXPECT_FALSE(later.went_single_threaded());
  EXPECT_EQ(omp_get_max_threads(), 2);
  EXPECT_EQ(asked, 0);

  // Past the time, unconfirmed: asked once, and nothing changes.
  runtime::RunControl declined;
  declined.go_single_threaded_at(std::chrono::steady_clock::now(), [&asked] { return ++asked < 0; });
  for (int step = 0; step < 3; ++step) ASSERT_TRUE(declined.check_time().ok());
  EXPECT_FALSE(declined.went_single_threaded());
  EXPECT_EQ(omp_get_max_threads(), 2);
  EXPECT_EQ(asked, 1);

  runtime::RunControl past;
  past.go_single_threaded_at(std::chrono::steady_clock::now(), yes);
  const runtime::RunControl frame_copy = past;  // as a sub-graph's frame holds it
#pragma omp parallel num_threads(2)
  { EXPECT_TRUE(frame_copy.check_time().ok()); }
  EXPECT_FALSE(past.went_single_threaded());
  EXPECT_EQ(omp_get_max_threads(), 2);
  EXPECT_EQ(asked, 1);
  ASSERT_TRUE(frame_copy.check_time().ok());
  EXPECT_TRUE(past.went_single_threaded());
  EXPECT_EQ(omp_get_max_threads(), 1);
  EXPECT_EQ(asked, 2);
  omp_set_num_threads(saved);
}

}  // namespace
}  // namespace onnxkit
