// Threads as runs use them. A warm session creates no threads: every run at
// 2 threads reuses the OpenMP team the first run made. A parallel region
// opened inside another one (even an inactive `if (false)` one) gets
// threads created and joined on every entry, which made an LSTM 200 times
// slower at 2 threads than at 1; this binary counts pthread_create calls to
// catch any such nesting. And a run held to one thread (runtime/contention.h)
// leaves the other threads idle, oneDNN's convolutions included.
//
// Its own executable: it replaces pthread_create for the whole process.

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <pthread.h>

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "ir/model.h"
#include "runtime/kernels/nn/conv_dnnl.h"
#include "runtime/session.h"
#include "support/test_support.h"
#include "tools/inputs.h"

namespace {

std::atomic<int> threads_created{0};

}  // namespace

extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*), void* arg) {
  using Create = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static const Create real = reinterpret_cast<Create>(dlsym(RTLD_NEXT, "pthread_create"));
  threads_created.fetch_add(1);
  return real(thread, attr, start, arg);
}

// Parallel regions opened (libgomp's entry for `#pragma omp parallel`, the
// only one GCC emits for the regions of our kernels).
std::atomic<int> regions_opened{0};

extern "C" void GOMP_parallel(void (*fn)(void*), void* data, unsigned threads, unsigned flags) {
  using Open = void (*)(void (*)(void*), void*, unsigned, unsigned);
  static const Open real = reinterpret_cast<Open>(dlsym(RTLD_NEXT, "GOMP_parallel"));
  regions_opened.fetch_add(1);
  real(fn, data, threads, flags);
}

// The most threads a run may use, as the machine's contention would set
// it (runtime/contention.h holds runs to one thread by asking for one).
std::atomic<int> thread_cap{1 << 30};

extern "C" void omp_set_num_threads(int threads) noexcept {
  using Set = void (*)(int);
  static const Set real = reinterpret_cast<Set>(dlsym(RTLD_NEXT, "omp_set_num_threads"));
  real(std::min(threads, thread_cap.load()));
}

namespace onnxkit {
namespace {

// How far `counter` moves over `runs` more runs of a session that has run twice.
int counted_over_warm_runs(const std::atomic<int>& counter, std::shared_ptr<const ir::Model> model, int threads, int runs) {
  auto session = runtime::Session::create(std::move(model), {.threads = threads, .adapt_to_load = false});
  EXPECT_TRUE(session.ok()) << session.error().message();
  if (!session.ok()) return -1;
  auto feeds = tools::prepare_inputs(**session, {.random = true});
  EXPECT_TRUE(feeds.ok()) << feeds.error().message();
  if (!feeds.ok()) return -1;
  for (int i = 0; i < 2; ++i) EXPECT_TRUE((*session)->run(*feeds).ok());
  const int before = counter.load();
  for (int i = 0; i < runs; ++i) {
    auto out = (*session)->run(*feeds);
    EXPECT_TRUE(out.ok()) << out.error().message();
  }
  return counter.load() - before;
}

// Threads created by `runs` more runs of a session that has run twice.
int threads_created_by_warm_runs(std::shared_ptr<const ir::Model> model, int runs) {
  return counted_over_warm_runs(threads_created, std::move(model), 2, runs);
}

int threads_created_by_warm_runs(const std::string& text) {
  return threads_created_by_warm_runs(testing::model_from_text(text), 3);
}

TEST(ThreadCreation, TheCounterSeesTeamsNestedInAnInactiveRegion) {
  // Without this, a count of 0 below could mean the counter is blind.
  const int before = threads_created.load();
  const bool no = threads_created.load() < 0;
  std::atomic<int> inner_threads{0};
#pragma omp parallel if (no)
  {
#pragma omp parallel num_threads(2)
    inner_threads.fetch_add(1);
  }
  ASSERT_EQ(inner_threads.load(), 2);
  EXPECT_GT(threads_created.load(), before);
}

// Sizes large enough that every kernel below wants both threads somewhere.
TEST(ThreadCreation, RecurrentOps) {
  EXPECT_EQ(threads_created_by_warm_runs(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[32, 1, 64] x) => (float[32, 2, 1, 128] y) {
      w = RandomNormal <shape = [2, 512, 64], seed = 1.0> ()
      r = RandomNormal <shape = [2, 512, 128], seed = 2.0> ()
      y = LSTM <hidden_size = 128, direction = "bidirectional"> (x, w, r)
    })"),
            0)
      << "bidirectional LSTM";
  EXPECT_EQ(threads_created_by_warm_runs(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[32, 4, 64] x) => (float[32, 1, 4, 256] y) {
      w = RandomNormal <shape = [1, 768, 64], seed = 1.0> ()
      r = RandomNormal <shape = [1, 768, 256], seed = 2.0> ()
      y = GRU <hidden_size = 256> (x, w, r)
    })"),
            0)
      << "GRU";
}

TEST(ThreadCreation, BatchedMatMul) {
  // Small products, threads across the batch; large ones, threads in each.
  EXPECT_EQ(threads_created_by_warm_runs(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[12, 64, 64] a, float[12, 64, 64] b) => (float[12, 64, 64] y) { y = MatMul (a, b) })"),
            0);
  EXPECT_EQ(threads_created_by_warm_runs(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2, 256, 256] a, float[2, 256, 256] b) => (float[2, 256, 256] y) { y = MatMul (a, b) })"),
            0);
}

TEST(ThreadCreation, Convolutions) {
  // Maps too small to share out, products large enough for two threads:
  // float64 takes the reference convolution, ConvTranspose its own path.
  EXPECT_EQ(threads_created_by_warm_runs(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (double[1, 256, 8, 8] x) => (double[1, 256, 8, 8] y) {
      w = RandomNormal <shape = [256, 256, 3, 3], dtype = 11> ()
      y = Conv <pads = [2, 2, 2, 2], dilations = [2, 2]> (x, w)
    })"),
            0)
      << "Conv";
  EXPECT_EQ(threads_created_by_warm_runs(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1, 256, 16, 16] x) => (float[1, 256, 32, 32] y) {
      w = RandomNormal <shape = [256, 256, 2, 2]> ()
      y = ConvTranspose <strides = [2, 2]> (x, w)
    })"),
            0)
      << "ConvTranspose";
}

TEST(ThreadCreation, ExportedModels) {
  for (const char* name : {"resnet18_opset17.onnx", "bert_encoder_opset17.onnx", "mobilenet_v2_opset17.onnx"}) {
    auto model = ir::load_model(std::filesystem::path(TEST_MODELS_DIR) / name);
    ASSERT_TRUE(model.ok()) << model.error().message();
    EXPECT_EQ(threads_created_by_warm_runs(std::shared_ptr<const ir::Model>(std::move(model).value()), 2), 0) << name;
  }
}

// Parallel regions opened by `runs` more runs of a session that has run twice.
int regions_opened_by_warm_runs(const std::string& text, int threads, int runs = 3) {
  return counted_over_warm_runs(regions_opened, testing::model_from_text(text), threads, runs);
}

// A region costs about half a microsecond even with one thread or an `if`
// that is false: a model of small ops (control flow, a scalar's arithmetic)
// would spend more in opening regions than in its kernels.
TEST(ParallelRegions, SmallOpsOpenNone) {
  const std::string small = R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1, 64] x, float[16, 64] w, float[16] b, int64 n)
      => (float[1, 16] y, int64[1] k, float[1] m, float[1, 3] top, float[1, 19] padded) {
      h = Gemm <transB = 1> (x, w, b)
      s = Sigmoid (h)
      t = Tanh (s)
      r = Relu (t)
      a = Add (r, s)
      f = Cast <to = 1> (n)
      y = Mul (a, f)
      k = ArgMax <keepdims = 0> (y)
      m = ReduceMean <keepdims = 0, axes = [1]> (y)
      three = Constant <value = int64[1] {3}> ()
      top, where = TopK (y, three)
      pads = Constant <value = int64[4] {0, 1, 0, 2}> ()
      padded = Pad (y, pads)
    })";
  EXPECT_EQ(regions_opened_by_warm_runs(small, 1), 0) << "at 1 thread";
  EXPECT_EQ(regions_opened_by_warm_runs(small, 2), 0) << "at 2 threads";
}

TEST(ParallelRegions, LargeOpsStillShareTheirWork) {
  // Also shows the counter sees the regions the kernels open.
  const std::string large = R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1024, 1024] a, float[1024, 1024] b) => (float[1024, 1024] y) {
      s = Add (a, b)
      y = Sigmoid (s)
    })";
  EXPECT_GE(regions_opened_by_warm_runs(large, 2, 1), 2);
}

// Nanoseconds on a CPU, over their lives, of this process's threads other
// than the calling one.
int64_t other_threads_cpu_ns() {
  int64_t total = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    if (task.path().filename() == std::to_string(gettid())) continue;
    std::ifstream stat(task.path() / "schedstat");
    int64_t on_cpu = 0;
    if (stat >> on_cpu) total += on_cpu;
  }
  return total;
}

TEST(HeldToOneThread, ConvolutionsLeaveTheWorkerIdle) {
  // oneDNN fixes a convolution's thread count when the primitive is made:
  // one made for a 2-thread run would take the worker on a 1-thread run too.
  using namespace runtime::nn;
  const runtime::Tensor x = testing::random_tensor({1, 64, 56, 56}, 1);
  const runtime::Tensor w = testing::random_tensor({64, 64, 3, 3}, 2);
  runtime::ConvAttributes attrs;
  attrs.window.pads = {1, 1, 1, 1};
  auto params = runtime::make_conv_params(attrs, x.shape(), w.shape());
  ASSERT_TRUE(params.ok()) << params.error().message();
  DnnlConvCache cache(std::make_shared<const runtime::Tensor>(w), nullptr, {}, ActivationLayout::plain);
  runtime::Tensor on_two(runtime::DataType::float32, params->y_shape());
  runtime::Tensor on_one(runtime::DataType::float32, params->y_shape());

  omp_set_num_threads(2);
  auto two = cache.get(*params);
  ASSERT_NE(two, nullptr);
  const int64_t before_two = other_threads_cpu_ns();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(two->run(x, on_two).ok());
  const int64_t worker_on_two = other_threads_cpu_ns() - before_two;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the worker stops spinning and sleeps

  omp_set_num_threads(1);
  auto one = cache.get(*params);
  ASSERT_NE(one, nullptr);
  EXPECT_NE(one, two);
  const int64_t before_one = other_threads_cpu_ns();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(one->run(x, on_one).ok());
  const int64_t worker_on_one = other_threads_cpu_ns() - before_one;
  omp_set_num_threads(2);

  EXPECT_GT(worker_on_two, 0) << "the worker never ran: the measurement sees nothing";
  EXPECT_LT(worker_on_one, worker_on_two / 10) << worker_on_one << " ns against " << worker_on_two;
  // The same convolution, on weights the two primitives share.
  for (int64_t i = 0; i < on_one.numel(); ++i) ASSERT_NEAR(on_one.data<float>()[i], on_two.data<float>()[i], 1e-4) << i;
}

TEST(HeldToOneThread, ExportedModelsLeaveTheWorkerIdle) {
  // Every oneDNN primitive a 2-thread run made (convolutions, mobilenet's
  // blocked GlobalAveragePool) has a 1-thread twin for the held runs.
  for (const char* name : {"mobilenet_v2_opset17.onnx", "resnet18_opset17.onnx", "squeezenet1_1_opset17.onnx"}) {
    auto model = ir::load_model(std::filesystem::path(TEST_MODELS_DIR) / name);
    ASSERT_TRUE(model.ok()) << model.error().message();
    auto session = runtime::Session::create(std::shared_ptr<const ir::Model>(std::move(model).value()),
                                            {.threads = 2, .adapt_to_load = false});
    ASSERT_TRUE(session.ok()) << session.error().message();
    auto feeds = tools::prepare_inputs(**session, {.random = true});
    ASSERT_TRUE(feeds.ok()) << feeds.error().message();

    const int64_t before_two = other_threads_cpu_ns();
    for (int i = 0; i < 3; ++i) ASSERT_TRUE((*session)->run(*feeds).ok());
    const int64_t worker_on_two = other_threads_cpu_ns() - before_two;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the worker stops spinning and sleeps

    thread_cap = 1;
    const int64_t before_one = other_threads_cpu_ns();
    for (int i = 0; i < 3; ++i) ASSERT_TRUE((*session)->run(*feeds).ok());
    const int64_t worker_on_one = other_threads_cpu_ns() - before_one;
    thread_cap = 1 << 30;

    EXPECT_GT(worker_on_two, 0) << name << ": the worker never ran: the measurement sees nothing";
    EXPECT_LT(worker_on_one, worker_on_two / 10) << name << ": " << worker_on_one << " ns against " << worker_on_two;
  }
}

}  // namespace
}  // namespace onnxkit
