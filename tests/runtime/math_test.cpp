// Math kernels on what the backend data leaves out: the blocked gemm against
// a naive loop (odd sizes, transposes, alpha/beta, threads), every Gemm
// version, numpy MatMul shapes, Einsum equations and their errors, integer
// and 16-bit types, TopK ties, bad inputs.

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>

#include "runtime/kernels/gemm.h"
#include "runtime/kernels/math/packed_matmul.h"
#include "support/node_runner.h"
#include "support/test_support.h"

namespace onnxkit {
namespace {

using runtime::DataType;
using runtime::Float16;
using runtime::Shape;
using runtime::Tensor;
using testing::attr;
using testing::expect_tensor_near;
using testing::run_node;
using testing::try_run_node;

// n values of testing::random_tensor, as a plain vector.
std::vector<float> random_floats(size_t n, unsigned seed) {
  const Tensor t = testing::random_tensor({static_cast<int64_t>(n)}, seed);
  return std::vector<float>(t.data<float>(), t.data<float>() + n);
}

// C = alpha * op(A) op(B) + beta * C, one dot product at a time, in double.
template <class T>
void naive_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const T* a, int64_t lda, const T* b, int64_t ldb,
                double beta, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s +=
            static_cast<double>(ta ? a[p * lda + i] : a[i * lda + p]) * static_cast<double>(tb ? b[j * ldb + p] : b[p * ldb + j]);
      c[i * ldc + j] = static_cast<T>(alpha * s + (beta == 0 ? 0.0 : beta * static_cast<double>(c[i * ldc + j])));
    }
}

void expect_close(const std::vector<float>& actual, const std::vector<float>& expected, double tol, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    ASSERT_NEAR(actual[i], expected[i], tol * (1 + std::abs(expected[i]))) << what << ", element " << i;
}

struct GemmCase {
  int64_t m, n, k;
  bool ta, tb;
  float alpha, beta;
};

// Runs the blocked gemm and the naive loop on one case, with leading
// dimensions wider than the matrices so stray reads or writes show.
void check_gemm_case(const GemmCase& g, int threads, bool portable) {
  const int64_t pad = 3;
  const int64_t a_rows = g.ta ? g.k : g.m, a_cols = g.ta ? g.m : g.k;
  const int64_t b_rows = g.tb ? g.n : g.k, b_cols = g.tb ? g.k : g.n;
  const int64_t lda = a_cols + pad, ldb = b_cols + pad, ldc = g.n + pad;
  const auto a = random_floats(static_cast<size_t>(a_rows * lda), 1);
  const auto b = random_floats(static_cast<size_t>(b_rows * ldb), 2);
  auto c = random_floats(static_cast<size_t>(g.m * ldc), 3);
  if (g.beta == 0) std::fill(c.begin(), c.end(), std::numeric_limits<float>::quiet_NaN());  // must not be read
  auto expected = c;
  naive_gemm<float>(g.ta, g.tb, g.m, g.n, g.k, g.alpha, a.data(), lda, b.data(), ldb, g.beta, expected.data(), ldc);
  if (g.beta == 0)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = g.n; j < ldc; ++j) expected[i * ldc + j] = std::numeric_limits<float>::quiet_NaN();
  omp_set_num_threads(threads);
  if (portable) runtime::gemm_portable(g.ta, g.tb, g.m, g.n, g.k, g.alpha, a.data(), lda, b.data(), ldb, g.beta, c.data(), ldc);
  else runtime::gemm(g.ta, g.tb, g.m, g.n, g.k, g.alpha, a.data(), lda, b.data(), ldb, g.beta, c.data(), ldc);
  omp_set_num_threads(1);
  const std::string what = ::testing::PrintToString(std::vector<int64_t>{g.m, g.n, g.k, g.ta, g.tb}) + " alpha " +
                           std::to_string(g.alpha) + " beta " + std::to_string(g.beta) + " threads " + std::to_string(threads) +
                           (portable ? " portable" : " oneDNN");
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      const float e = expected[i * ldc + j], x = c[i * ldc + j];
      if (std::isnan(e)) {
        ASSERT_TRUE(std::isnan(x)) << what << ": the padding of row " << i << " was written";
      } else {
        ASSERT_NEAR(x, e, 1e-4 * (1 + std::abs(e))) << what << ", element (" << i << ", " << j << ")";
      }
    }
}

TEST(MathGemm, BlockedMatchesNaiveLoopOnOddSizes) {
  for (int threads : {1, 2})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        for (bool portable : {false, true}) check_gemm_case({67, 129, 33, ta, tb, 1.0f, 0.0f}, threads, portable);
        for (bool portable : {false, true}) check_gemm_case({67, 129, 33, ta, tb, -0.75f, 0.5f}, threads, portable);
      }
}

TEST(MathGemm, BlockedCrossesEveryBlockBoundary) {
  // Deeper than one depth slice, taller than one row block, wider than one
  // column block; also one row, one column, and nothing to multiply.
  for (int threads : {1, 2}) {
    for (bool portable : {false, true}) check_gemm_case({150, 301, 517, false, false, 1.5f, 1.0f}, threads, portable);
    for (bool portable : {false, true}) check_gemm_case({150, 301, 517, true, true, 1.0f, 0.0f}, threads, portable);
    for (bool portable : {false, true}) check_gemm_case({1, 301, 517, false, true, 1.0f, 0.25f}, threads, portable);
    for (bool portable : {false, true}) check_gemm_case({1, 301, 517, true, false, 1.0f, 0.0f}, threads, portable);
    for (bool portable : {false, true}) check_gemm_case({301, 1, 517, false, false, 2.0f, 0.0f}, threads, portable);
    for (bool portable : {false, true}) check_gemm_case({301, 1, 517, true, true, 1.0f, -1.0f}, threads, portable);
    for (bool portable : {false, true}) check_gemm_case({5, 7, 0, false, false, 1.0f, 0.5f}, threads, portable);
    for (bool portable : {false, true}) check_gemm_case({5, 7, 0, false, false, 1.0f, 0.0f}, threads, portable);
    for (bool portable : {false, true}) check_gemm_case({7, 5, 3, false, false, 0.0f, 2.0f}, threads, portable);
  }
}

TEST(MathGemm, OneRowCrossesItsColumnBlocksAndThreadSplits) {
  // The one-row path (no sgemm): depths that leave a tail of its four-row
  // steps (and, transposed, of its four-vector and one-vector steps: 117),
  // widths past its 1024-column block and thread splits that are no whole
  // cache line, products too small to share among threads.
  for (int threads : {1, 2})
    for (bool tb : {false, true}) {
      check_gemm_case({1, 2500, 519, false, tb, -0.75f, 0.5f}, threads, false);
      check_gemm_case({1, 45, 117, false, tb, 1.0f, 0.0f}, threads, false);
      check_gemm_case({1, 1030, 130, false, tb, 1.0f, 0.0f}, threads, false);
      check_gemm_case({1, 37, 67, false, tb, 2.0f, 0.0f}, threads, false);
    }
}

TEST(MathGemm, DoubleMatchesNaiveLoop) {
  const int64_t m = 41, n = 77, k = 300;
  std::vector<double> a(m * k), b(k * n), c(m * n, 0.5), expected(m * n, 0.5);
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(0.1 * static_cast<double>(i));
  for (size_t i = 0; i < b.size(); ++i) b[i] = std::cos(0.07 * static_cast<double>(i));
  naive_gemm<double>(false, true, m, n, k, 2.0, a.data(), k, b.data(), k, -1.0, expected.data(), n);
  runtime::gemm(false, true, m, n, k, 2.0, a.data(), k, b.data(), k, -1.0, c.data(), n);
  for (size_t i = 0; i < c.size(); ++i) ASSERT_NEAR(c[i], expected[i], 1e-10) << i;
}

TEST(MathGemm, ReferenceMatchesNaiveLoop) {
  // The oracle other engines are tested against is itself checked here.
  const int64_t m = 9, n = 11, k = 13;
  const auto a = random_floats(m * k, 4), b = random_floats(k * n, 5);
  auto c = random_floats(m * n, 6);
  auto expected = c;
  naive_gemm<float>(true, false, m, n, k, 0.5, a.data(), m, b.data(), n, 2.0, expected.data(), n);
  runtime::gemm_reference<float>(true, false, m, n, k, 0.5f, a.data(), m, b.data(), n, 2.0f, c.data(), n);
  expect_close(c, expected, 1e-5, "gemm_reference");
  // Integers wrap instead of overflowing.
  const int32_t big[2] = {0x40000000, 0x40000000};
  int32_t out = 0;
  runtime::gemm_reference<int32_t>(false, false, 1, 1, 2, 1, big, 2, big, 1, 0, &out, 1);
  EXPECT_EQ(out, 0);  // 2 * 2^60 mod 2^32
}

TEST(MathGemm, IntegerProductsSubtractZeroPoints) {
  const uint8_t a[6] = {1, 2, 3, 250, 255, 0};    // 2x3
  const int8_t b[6] = {-1, 2, 3, -4, 127, -128};  // 3x2
  const int32_t za[2] = {1, 200}, zb[2] = {0, -2};
  int32_t c[4];
  runtime::gemm_integer<uint8_t, int8_t>(2, 2, 3, a, 3, za, b, 2, zb, c, 2);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      int32_t s = 0;
      for (int p = 0; p < 3; ++p) s += (a[i * 3 + p] - za[i]) * (b[p * 2 + j] - zb[j]);
      EXPECT_EQ(c[i * 2 + j], s) << i << "," << j;
    }
}

Tensor half_tensor(const runtime::Shape& shape, const std::vector<float>& values) {
  Tensor t(DataType::float16, shape);
  for (size_t i = 0; i < values.size(); ++i) t.mutable_data<Float16>()[i] = Float16(values[i]);
  return t;
}

TEST(MathGemmOp, BiasBroadcastsFromEveryShape) {
  auto a = Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto b = Tensor::from<float>({3, 2}, {1, 0, 0, 1, 1, 1});
  // A*B = [[4,5],[10,11]]
  struct Case {
    Tensor c;
    std::vector<float> expected;
  };
  std::vector<Case> cases = {
      {Tensor::from<float>({}, {1}), {5, 6, 11, 12}},
      {Tensor::from<float>({2}, {1, 2}), {5, 7, 11, 13}},
      {Tensor::from<float>({2, 1}, {1, 2}), {5, 6, 12, 13}},
      {Tensor::from<float>({1, 2}, {1, 2}), {5, 7, 11, 13}},
      {Tensor::from<float>({2, 2}, {1, 2, 3, 4}), {5, 7, 13, 15}},
  };
  for (const Case& c : cases) {
    for (bool constant : {false, true}) {
      auto out = run_node({.op_type = "Gemm", .opset = 13, .inputs = {{"a", a}, {"b", b, constant}, {"c", c.c}}});
      expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 2}, c.expected));
    }
  }
  // alpha, beta and both transposes: A^T is given as [3,2], B^T as [2,3].
  auto at = Tensor::from<float>({3, 2}, {1, 4, 2, 5, 3, 6});
  auto bt = Tensor::from<float>({2, 3}, {1, 0, 1, 0, 1, 1});
  auto out = run_node({.op_type = "Gemm",
                       .opset = 13,
                       .inputs = {{"a", at}, {"b", bt}, {"c", Tensor::from<float>({2}, {1, 2})}},
                       .attributes = {attr("transA", 1), attr("transB", 1), attr("alpha", 2.0f), attr("beta", -1.0f)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 2}, {7, 8, 19, 20}));
}

TEST(MathGemmOp, ConstantWeightsMatchNaiveLoop) {
  // A constant B runs on weights packed once (from two rows on, with alpha
  // 1 and a bias of one row or none); one row, other scalings and biases of
  // other shapes take gemm(). Rows past one register tile and one thread's
  // share, depths past one cache slice, widths that are no multiple of a
  // vector, a detection head's transB weights.
  struct Case {
    int64_t m, n, k;
    bool tb;
    float alpha, beta;
    Shape c;  // empty: no C
  };
  const std::vector<Case> cases = {
      {33, 1024, 12544 / 4, true, 1.0f, 1.0f, {1024}},
      {150, 91, 1024, true, 1.0f, 1.0f, {91}},
      {7, 37, 300, false, 1.0f, 1.0f, {1, 37}},
      {2, 5, 3, true, 1.0f, 1.0f, {}},
      {48, 64, 129, false, 1.0f, 0.0f, {64}},
      {1, 300, 517, true, 1.0f, 1.0f, {300}},
      {20, 30, 40, true, 2.0f, 1.0f, {30}},
      {20, 30, 40, true, 1.0f, 0.5f, {30}},
      {20, 30, 40, false, 1.0f, 1.0f, {20, 30}},
      {20, 30, 40, false, 1.0f, 1.0f, {20, 1}},
  };
  for (const Case& g : cases)
    for (int threads : {1, 2}) {
      const auto av = random_floats(static_cast<size_t>(g.m * g.k), 1), bv = random_floats(static_cast<size_t>(g.n * g.k), 2);
      const int64_t c_size = runtime::shape_size(g.c);
      const auto cv = random_floats(static_cast<size_t>(std::max<int64_t>(c_size, 1)), 3);
      std::vector<float> expected(static_cast<size_t>(g.m * g.n), 0.0f);
      if (!g.c.empty()) {
        const int64_t rows = g.c.size() == 2 ? g.c[0] : 1, cols = g.c.back();
        for (int64_t i = 0; i < g.m; ++i)
          for (int64_t j = 0; j < g.n; ++j)
            expected[static_cast<size_t>(i * g.n + j)] =
                cv[static_cast<size_t>((rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j))];
      }
      naive_gemm<float>(false, g.tb, g.m, g.n, g.k, g.alpha, av.data(), g.k, bv.data(), g.tb ? g.k : g.n,
                        g.c.empty() ? 0.0 : g.beta, expected.data(), g.n);
      std::vector<testing::NodeInput> inputs = {{"a", Tensor::from<float>({g.m, g.k}, av)},
                                                {"b", Tensor::from<float>(g.tb ? Shape{g.n, g.k} : Shape{g.k, g.n}, bv), true}};
      if (!g.c.empty()) inputs.push_back({"c", Tensor::from<float>(g.c, std::vector<float>(cv.begin(), cv.begin() + c_size))});
      auto out = run_node({.op_type = "Gemm",
                           .opset = 13,
                           .inputs = inputs,
                           .attributes = {attr("transB", int64_t{g.tb}), attr("alpha", g.alpha), attr("beta", g.beta)},
                           .threads = threads});
      expect_tensor_near(out[0].tensor(), Tensor::from<float>({g.m, g.n}, expected), 1e-4, 1e-4);
    }
}

TEST(MathGemmOp, VersionsDifferOnC) {
  auto a = Tensor::from<float>({1, 2}, {1, 2});
  auto b = Tensor::from<float>({2, 1}, {3, 4});
  // C optional from opset 11 only.
  auto out = run_node({.op_type = "Gemm", .opset = 11, .inputs = {{"a", a}, {"b", b}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({1, 1}, {11}));
  auto missing = try_run_node({.op_type = "Gemm", .opset = 9, .inputs = {{"a", a}, {"b", b}}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("input C is missing"), std::string::npos) << missing.error().message();
  // Opset 6: broadcast=0 wants C of the output's exact shape.
  auto a2 = Tensor::from<float>({2, 2}, {1, 0, 0, 1});
  auto row = Tensor::from<float>({2}, {5, 6});
  auto strict = try_run_node({.op_type = "Gemm", .opset = 6, .inputs = {{"a", a2}, {"b", a2}, {"c", row}}});
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.error().message().find("broadcast=0"), std::string::npos) << strict.error().message();
  out = run_node(
      {.op_type = "Gemm", .opset = 6, .inputs = {{"a", a2}, {"b", a2}, {"c", row}}, .attributes = {attr("broadcast", 1)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 2}, {6, 6, 5, 7}));
}

TEST(MathGemmOp, OtherTypes) {
  auto out = run_node({.op_type = "Gemm",
                       .opset = 13,
                       .inputs = {{"a", half_tensor({1, 3}, {0.5f, 1, 2})},
                                  {"b", half_tensor({3, 2}, {1, 2, 3, 4, 5, 6})},
                                  {"c", half_tensor({2}, {0.25f, 0})}}});
  expect_tensor_near(out[0].tensor(), half_tensor({1, 2}, {13.75f, 17}));
  out = run_node({.op_type = "Gemm",
                  .opset = 13,
                  .inputs = {{"a", Tensor::from<int64_t>({1, 2}, {3000000000LL, 2})},
                             {"b", Tensor::from<int64_t>({2, 1}, {3, -5})},
                             {"c", Tensor::from<int64_t>({1}, {7})}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int64_t>({1, 1}, {8999999997LL}));
  out = run_node({.op_type = "Gemm",
                  .opset = 13,
                  .inputs = {{"a", Tensor::from<double>({1, 2}, {0.1, 0.2})}, {"b", Tensor::from<double>({2, 1}, {10, 20})}},
                  .attributes = {attr("alpha", 0.5f)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<double>({1, 1}, {2.5}), 1e-12, 1e-12);
}

TEST(MathGemmOp, BadShapesAreErrorsNamingTheInput) {
  auto check = [](const std::vector<testing::NodeInput>& inputs, const std::string& needle,
                  std::vector<onnx::AttributeProto> attributes = {}) {
    auto out = try_run_node({.op_type = "Gemm", .opset = 13, .inputs = inputs, .attributes = attributes});
    ASSERT_FALSE(out.ok()) << needle;
    EXPECT_NE(out.error().message().find(needle), std::string::npos) << out.error().message();
  };
  auto m23 = Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  check({{"a", m23}, {"b", m23}}, "inner dimensions differ");
  check({{"a", m23}, {"b", m23}}, "inner dimensions differ", {attr("transA", 1), attr("transB", 1)});
  check({{"a", Tensor::from<float>({3}, {1, 2, 3})}, {"b", m23}}, "input A must be a matrix");
  check({{"a", m23}, {"b", Tensor::from<float>({3}, {1, 2, 3})}}, "input B must be a matrix");
  check({{"a", m23}, {"b", m23}, {"c", Tensor::from<float>({3}, {1, 2, 3})}}, "input C has shape [3]", {attr("transB", 1)});
  check({{"a", m23}, {"b", Tensor::from<double>({3, 1}, {1, 2, 3})}}, "different element types");
}

// out = a @ b for row-major matrices given as flat vectors, in double.
std::vector<float> naive_matmul(const std::vector<float>& a, const std::vector<float>& b, int64_t m, int64_t k, int64_t n) {
  std::vector<float> c(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += static_cast<double>(a[i * k + p]) * b[p * n + j];
      c[i * n + j] = static_cast<float>(s);
    }
  return c;
}

TEST(MathMatMul, VectorsArePromotedAndDropped) {
  auto v = Tensor::from<float>({3}, {1, 2, 3});
  auto out = run_node({.op_type = "MatMul", .inputs = {{"a", v}, {"b", v}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({}, {14}));
  // [3] x [2,3,2] -> [2,2]; [2,2,3] x [3] -> [2,2].
  auto batch = Tensor::from<float>({2, 3, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  out = run_node({.op_type = "MatMul", .inputs = {{"a", v}, {"b", batch}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 2}, {22, 28, 58, 64}));
  auto left = Tensor::from<float>({2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  out = run_node({.op_type = "MatMul", .inputs = {{"a", left}, {"b", v}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 2}, {14, 32, 50, 68}));
  // [3] x constant [3,2] -> [2].
  out = run_node({.op_type = "MatMul", .inputs = {{"a", v}, {"b", Tensor::from<float>({3, 2}, {1, 2, 3, 4, 5, 6}), true}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2}, {22, 28}));
}

TEST(MathMatMul, BatchDimsBroadcast) {
  // [2,1,2,3] x [3,3,2] -> [2,3,2,2]
  const auto a = random_floats(2 * 2 * 3, 7), b = random_floats(3 * 3 * 2, 8);
  auto out = run_node(
      {.op_type = "MatMul", .inputs = {{"a", Tensor::from<float>({2, 1, 2, 3}, a)}, {"b", Tensor::from<float>({3, 3, 2}, b)}}});
  std::vector<float> expected;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      auto c = naive_matmul({a.begin() + i * 6, a.begin() + i * 6 + 6}, {b.begin() + j * 6, b.begin() + j * 6 + 6}, 2, 3, 2);
      expected.insert(expected.end(), c.begin(), c.end());
    }
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 3, 2, 2}, expected));
}

TEST(MathMatMul, LargeBatchesAgreeAcrossThreads) {
  // Folded ([16,40,70] x [70,n]) and per-matrix ([16,40,70] x [16,70,n]). A
  // constant B is read in place at n = 50 and transposed at build (in 16x16
  // tiles, here cut along the depth) at n = 1024.
  const int64_t batch = 16, m = 40, k = 70;
  for (int64_t n : {50, 1024}) {
    const auto a = random_floats(batch * m * k, 9), b = random_floats(batch * k * n, 10);
    const std::vector<float> b0(b.begin(), b.begin() + k * n);
    std::vector<float> folded, each;
    for (int64_t e = 0; e < batch; ++e) {
      const std::vector<float> ae(a.begin() + e * m * k, a.begin() + (e + 1) * m * k);
      auto c = naive_matmul(ae, b0, m, k, n);
      folded.insert(folded.end(), c.begin(), c.end());
      c = naive_matmul(ae, {b.begin() + e * k * n, b.begin() + (e + 1) * k * n}, m, k, n);
      each.insert(each.end(), c.begin(), c.end());
    }
    for (int threads : {1, 2}) {
      for (bool constant : {false, true}) {
        auto out =
            run_node({.op_type = "MatMul",
                      .inputs = {{"a", Tensor::from<float>({batch, m, k}, a)}, {"b", Tensor::from<float>({k, n}, b0), constant}},
                      .threads = threads});
        expect_tensor_near(out[0].tensor(), Tensor::from<float>({batch, m, n}, folded), 1e-4, 1e-4);
      }
      auto out = run_node({.op_type = "MatMul",
                           .inputs = {{"a", Tensor::from<float>({batch, m, k}, a)}, {"b", Tensor::from<float>({batch, k, n}, b)}},
                           .threads = threads});
      expect_tensor_near(out[0].tensor(), Tensor::from<float>({batch, m, n}, each), 1e-4, 1e-4);
    }
  }
}

TEST(MathMatMul, OneRowTimesAConstantBAgreesAcrossThreads) {
  // A decoding step's [1, 1, k] x constant [k, n]: its own one-row product,
  // against the naive loop. k leaves a tail of the four-row steps; n = 37
  // runs on one thread, n = 1030 (k * n past the parallel threshold) splits
  // its columns with a tail that is no whole cache line, and n = 2048 is
  // transposed at build.
  for (auto [k, n] : {std::pair<int64_t, int64_t>{67, 37}, {263, 1030}, {130, 2048}}) {
    const auto a = random_floats(static_cast<size_t>(k), 11), b = random_floats(static_cast<size_t>(k * n), 12);
    const auto expected = naive_matmul(a, b, 1, k, n);
    for (int threads : {1, 2}) {
      auto out = run_node({.op_type = "MatMul",
                           .inputs = {{"a", Tensor::from<float>({1, 1, k}, a)}, {"b", Tensor::from<float>({k, n}, b), true}},
                           .threads = threads});
      SCOPED_TRACE(::testing::PrintToString(std::vector<int64_t>{k, n, threads}));
      expect_tensor_near(out[0].tensor(), Tensor::from<float>({1, 1, n}, expected), 1e-4, 1e-4);
    }
  }
}

TEST(MathGemmOp, AConstantBOf1024ColumnsIsTransposedAtBuild) {
  // y = 0.5 A B - 2 c, B [5,1024] constant and read untransposed (transB=0),
  // c one value per column; against the product summed here.
  const int64_t m = 3, k = 5, n = 1024;
  const auto a = random_floats(m * k, 21), b = random_floats(k * n, 22), c = random_floats(n, 23);
  std::vector<float> expected = naive_matmul(a, b, m, k, n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) expected[i * n + j] = 0.5f * expected[i * n + j] - 2.0f * c[j];
  auto out = run_node({.op_type = "Gemm",
                       .opset = 13,
                       .inputs = {{"a", Tensor::from<float>({m, k}, a)},
                                  {"b", Tensor::from<float>({k, n}, b), true},
                                  {"c", Tensor::from<float>({n}, c)}},
                       .attributes = {attr("alpha", 0.5f), attr("beta", -2.0f)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({m, n}, expected), 1e-5, 1e-5);
}

TEST(MathMatMul, AConstantBOf1024ColumnsIsPackedOrTransposedAtBuild) {
  // y = A B with B [k, 1024] constant: stored packed where oneDNN has
  // blocked kernels for it, else transposed; A of one row (read against B
  // where it lies), of 2 x 3 rows in a batch, on 1 and 2 threads, against
  // the product summed here.
  const int64_t k = 40, n = 1024;
  const auto b = random_floats(k * n, 32);
  for (const runtime::Shape& a_shape : {runtime::Shape{1, k}, runtime::Shape{2, 3, k}}) {
    const int64_t m = runtime::shape_size(a_shape) / k;
    const auto a = random_floats(static_cast<size_t>(m * k), 31);
    const std::vector<float> expected = naive_matmul(a, b, m, k, n);
    runtime::Shape y_shape = a_shape;
    y_shape.back() = n;
    for (int threads : {1, 2}) {
      auto out = run_node({.op_type = "MatMul",
                           .opset = 13,
                           .inputs = {{"a", Tensor::from<float>(a_shape, a)}, {"b", Tensor::from<float>({k, n}, b), true}},
                           .threads = threads});
      SCOPED_TRACE(::testing::PrintToString(std::vector<int64_t>{m, threads}));
      expect_tensor_near(out[0].tensor(), Tensor::from<float>(y_shape, expected), 1e-5, 1e-5);
    }
  }
}

// Constant weights are packed once wherever oneDNN has JIT kernels: its
// matmul reads them with AVX-512, its 1x1 convolution with AVX2 (the
// onednn_avx2 test runs this again so). Without a packed copy
// sgemm would pack B again on every call. B [K, N] and [N, K] read
// transposed, a bias and the fused GELU, against the sums done here.
TEST(MathPackedMatMul, PacksConstantWeightsWhereOneDnnHasJitKernels) {
  const int64_t k = 24, n = 40, m = 7;
  const auto b = random_floats(k * n, 41), a = random_floats(m * k, 42), bias = random_floats(n, 43);
  std::vector<float> bt(static_cast<size_t>(k * n));
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < n; ++j) bt[static_cast<size_t>(j * k + i)] = b[static_cast<size_t>(i * n + j)];
  const std::vector<float> product = naive_matmul(a, b, m, k, n);
  for (bool trans_b : {false, true})
    for (bool gelu : {false, true}) {
      SCOPED_TRACE(::testing::PrintToString(std::vector<bool>{trans_b, gelu}));
      const auto packed = runtime::math::PackedMatMul::create(
          trans_b ? Tensor::from<float>({n, k}, bt) : Tensor::from<float>({k, n}, b), trans_b);
      ASSERT_NE(packed, nullptr);
      std::vector<float> y(static_cast<size_t>(m * n)), expected(y.size());
      for (size_t i = 0; i < y.size(); ++i) {
        const double v = static_cast<double>(product[i]) + bias[i % static_cast<size_t>(n)];
        expected[i] = static_cast<float>(gelu ? 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))) : v);
      }
      auto ran = packed->run(m, a.data(), bias.data(), y.data(), gelu);
      ASSERT_TRUE(ran.ok()) << ran.error().message();
      ASSERT_TRUE(*ran);
      expect_tensor_near(Tensor::from<float>({m, n}, y), Tensor::from<float>({m, n}, expected), 1e-5, 1e-5);
    }
}

TEST(MathMatMul, IntegerAndHalfTypes) {
  auto out =
      run_node({.op_type = "MatMul",
                .opset = 13,
                .inputs = {{"a", Tensor::from<int32_t>({2, 2}, {1, -2, 3, 4})}, {"b", Tensor::from<int32_t>({2, 1}, {5, 6})}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int32_t>({2, 1}, {-7, 39}));
  out = run_node({.op_type = "MatMul",
                  .opset = 13,
                  .inputs = {{"a", half_tensor({1, 2}, {0.5f, -1})}, {"b", half_tensor({2, 2}, {2, 4, 1, 0.25f})}}});
  expect_tensor_near(out[0].tensor(), half_tensor({1, 2}, {0, 1.75f}));
}

TEST(MathMatMul, EmptyDimsGiveZerosOrNothing) {
  // An empty inner dimension sums nothing: zeros, not garbage.
  for (bool constant : {false, true}) {
    auto out = run_node({.op_type = "MatMul",
                         .inputs = {{"a", Tensor::from<float>({2, 0}, {})}, {"b", Tensor::from<float>({0, 3}, {}), constant}}});
    expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 3}, std::vector<float>(6, 0)));
    out = run_node({.op_type = "MatMul",
                    .inputs = {{"a", Tensor::from<float>({0, 4}, {})},
                               {"b", Tensor::from<float>({4, 3}, std::vector<float>(12, 1)), constant}}});
    EXPECT_EQ(out[0].tensor().shape(), (runtime::Shape{0, 3}));
  }
  auto out = run_node({.op_type = "Gemm",
                       .opset = 13,
                       .inputs = {{"a", Tensor::from<float>({2, 0}, {})},
                                  {"b", Tensor::from<float>({0, 2}, {})},
                                  {"c", Tensor::from<float>({2}, {1, 2})}},
                       .attributes = {attr("beta", 3.0f)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 2}, {3, 6, 3, 6}));
}

TEST(MathMatMul, BadShapesAreErrors) {
  auto out = try_run_node({.op_type = "MatMul",
                           .inputs = {{"a", Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6})},
                                      {"b", Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6})}}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("inner dimensions differ"), std::string::npos) << out.error().message();
  out = try_run_node({.op_type = "MatMul",
                      .inputs = {{"a", Tensor::from<float>({2, 1, 2}, {1, 2, 3, 4})},
                                 {"b", Tensor::from<float>({3, 2, 2}, std::vector<float>(12, 1))}}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("batch dimensions do not broadcast"), std::string::npos) << out.error().message();
  out =
      try_run_node({.op_type = "MatMul", .inputs = {{"a", Tensor::from<float>({}, {1})}, {"b", Tensor::from<float>({1}, {1})}}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("scalar"), std::string::npos) << out.error().message();
}

TEST(MathMatMulInteger, ZeroPointsPerRowAndColumn) {
  auto a = Tensor::from<uint8_t>({2, 3}, {10, 20, 30, 40, 50, 60});
  auto b = Tensor::from<int8_t>({3, 2}, {1, -1, 2, -2, 3, -3});
  auto za = Tensor::from<uint8_t>({2}, {10, 40});
  auto zb = Tensor::from<int8_t>({2}, {1, 0});
  auto out = run_node({.op_type = "MatMulInteger", .opset = 10, .inputs = {{"a", a}, {"b", b}, {"za", za}, {"zb", zb}}});
  // Rows: [0,10,20], [0,10,20]; B - zb: [[0,-1],[1,-2],[2,-3]].
  expect_tensor_near(out[0].tensor(), Tensor::from<int32_t>({2, 2}, {50, -80, 50, -80}));
  // Batched A with a per-matrix, per-row zero point [2,2,1].
  auto a3 = Tensor::from<int8_t>({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto b2 = Tensor::from<int8_t>({2, 1}, {1, 1});
  auto z3 = Tensor::from<int8_t>({2, 2, 1}, {1, 2, 3, 4});
  out = run_node({.op_type = "MatMulInteger", .opset = 10, .inputs = {{"a", a3}, {"b", b2}, {"za", z3}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int32_t>({2, 2, 1}, {1, 3, 5, 7}));
  auto bad = try_run_node(
      {.op_type = "MatMulInteger", .opset = 10, .inputs = {{"a", a}, {"b", b}, {"za", Tensor::from<uint8_t>({3}, {1, 2, 3})}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("a_zero_point"), std::string::npos) << bad.error().message();
}

testing::NodeSpec einsum(const std::string& equation, std::vector<testing::NodeInput> inputs) {
  return {.op_type = "Einsum", .opset = 12, .inputs = std::move(inputs), .attributes = {attr("equation", equation)}};
}

TEST(MathEinsum, ImplicitAndExplicitOutputs) {
  auto a = Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto b = Tensor::from<float>({3, 2}, {1, 0, 0, 1, 1, 1});
  // Implicit: the labels seen once, sorted: "ij,jk" -> "ik".
  auto out = run_node(einsum("ij,jk", {{"a", a}, {"b", b}}));
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 2}, {4, 5, 10, 11}));
  // "ba" implicitly is "ab": a transpose.
  out = run_node(einsum("ba", {{"a", a}}));
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({3, 2}, {1, 4, 2, 5, 3, 6}));
  out = run_node(einsum("ij->", {{"a", a}}));
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({}, {21}));
  out = run_node(einsum("ij -> j", {{"a", a}}));
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({3}, {5, 7, 9}));
  out = run_node(einsum("i,j->ij", {{"x", Tensor::from<float>({2}, {1, 2})}, {"y", Tensor::from<float>({3}, {1, 10, 100})}}));
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 3}, {1, 10, 100, 2, 20, 200}));
  out = run_node(einsum("ij,ij->ij", {{"a", a}, {"b", a}}));
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 3}, {1, 4, 9, 16, 25, 36}));
  // A label only one operand has is summed before the product.
  out = run_node(einsum("ij,k->i", {{"a", a}, {"k", Tensor::from<float>({2}, {1, 1})}}));
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2}, {12, 30}));
}

TEST(MathEinsum, RepeatedLabelsReadDiagonals) {
  auto sq = Tensor::from<float>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  auto out = run_node(einsum("ii", {{"a", sq}}));
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({}, {15}));
  out = run_node(einsum("ii->i", {{"a", sq}}));
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({3}, {1, 5, 9}));
  // A diagonal inside a contraction: sum_i A[i,i] * v[i].
  out = run_node(einsum("ii,i->", {{"a", sq}, {"v", Tensor::from<float>({3}, {1, 10, 100})}}));
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({}, {951}));
}

TEST(MathEinsum, EllipsisBroadcastsBatchDims) {
  // [2,1,2,2] and [3,2,2]: batch dims broadcast to [2,3].
  const auto a = random_floats(2 * 2 * 2, 11), b = random_floats(3 * 2 * 2, 12);
  auto out = run_node(
      einsum("...ij,...jk->...ik", {{"a", Tensor::from<float>({2, 1, 2, 2}, a)}, {"b", Tensor::from<float>({3, 2, 2}, b)}}));
  std::vector<float> expected;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      auto c = naive_matmul({a.begin() + i * 4, a.begin() + i * 4 + 4}, {b.begin() + j * 4, b.begin() + j * 4 + 4}, 2, 2, 2);
      expected.insert(expected.end(), c.begin(), c.end());
    }
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 3, 2, 2}, expected));
  // Implicit output puts '...' first: "...i,i" on [2,3] and [3] -> [2].
  out = run_node(
      einsum("...i,i", {{"a", Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6})}, {"v", Tensor::from<float>({3}, {1, 1, 1})}}));
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2}, {6, 15}));
  // '...' missing from an explicit output: its dims are summed.
  out = run_node(einsum("...i->i", {{"a", Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6})}}));
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({3}, {5, 7, 9}));
}

TEST(MathEinsum, ThreeOperandsAndOtherTypes) {
  // ij,jk,kl->il = A B C, computed by hand: A B = [[4,5],[10,11]].
  auto a = Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto b = Tensor::from<float>({3, 2}, {1, 0, 0, 1, 1, 1});
  auto c = Tensor::from<float>({2, 1}, {1, -1});
  auto out = run_node(einsum("ij,jk,kl->il", {{"a", a}, {"b", b}, {"c", c}}));
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 1}, {-1, -1}));
  out = run_node(
      einsum("ij,j->i", {{"a", Tensor::from<int64_t>({2, 2}, {1, 2, 3, 4})}, {"v", Tensor::from<int64_t>({2}, {10, -1})}}));
  expect_tensor_near(out[0].tensor(), Tensor::from<int64_t>({2}, {8, 26}));
  out = run_node(einsum("i,i->", {{"x", half_tensor({2}, {1.5f, 2})}, {"y", half_tensor({2}, {2, 0.25f})}}));
  expect_tensor_near(out[0].tensor(), half_tensor({}, {3.5f}));
}

TEST(MathEinsum, MalformedEquationsAreErrors) {
  auto a = Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto v = Tensor::from<float>({3}, {1, 2, 3});
  struct Case {
    std::string equation;
    std::vector<testing::NodeInput> inputs;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {"ij,j->i->j", {{"a", a}, {"v", v}}, "more than one '->'"},
      {"i1,j->i", {{"a", a}, {"v", v}}, "invalid character '1'"},
      {"i.j,j->i", {{"a", a}, {"v", v}}, "does not start '...'"},
      {"......,j", {{"a", a}, {"v", v}}, "more than one '...'"},
      {"ij,j->k", {{"a", a}, {"v", v}}, "which no input has"},
      {"ij,j->ii", {{"a", a}, {"v", v}}, "repeats"},
      {"ij->i", {{"a", a}, {"v", v}}, "has 1 operand term, but the node has 2 inputs"},
      {"ijk,j->i", {{"a", a}, {"v", v}}, "input 0 has rank 2"},
      {"ij,i->j", {{"a", a}, {"v", v}}, "label 'i' has size 3 in input 1"},
      {"ii", {{"a", a}}, "repeats in input 0"},
  };
  for (const Case& c : cases) {
    auto out = try_run_node(einsum(c.equation, c.inputs));
    ASSERT_FALSE(out.ok()) << c.equation;
    EXPECT_NE(out.error().message().find(c.needle), std::string::npos) << c.equation << ": " << out.error().message();
  }
}

TEST(MathCumSum, AxesDirectionsAndTypes) {
  auto x = Tensor::from<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto axis = Tensor::from<int32_t>({}, {1});
  auto out = run_node({.op_type = "CumSum",
                       .opset = 14,
                       .inputs = {{"x", x}, {"axis", axis}},
                       .attributes = {attr("reverse", 1), attr("exclusive", 1)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int32_t>({2, 3}, {5, 3, 0, 11, 6, 0}));
  out = run_node({.op_type = "CumSum", .opset = 14, .inputs = {{"x", x}, {"axis", Tensor::from<int64_t>({}, {-2})}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int32_t>({2, 3}, {1, 2, 3, 5, 7, 9}));
  out = run_node({.op_type = "CumSum",
                  .opset = 14,
                  .inputs = {{"x", half_tensor({3}, {0.5f, 0.25f, 1})}, {"axis", Tensor::from<int64_t>({}, {0})}}});
  expect_tensor_near(out[0].tensor(), half_tensor({3}, {0.5f, 0.75f, 1.75f}));
  auto bad = try_run_node({.op_type = "CumSum", .opset = 14, .inputs = {{"x", x}, {"axis", Tensor::from<int64_t>({}, {2})}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("axis 2 is out of range"), std::string::npos) << bad.error().message();
}

TEST(MathTopK, TiesGoToTheLowerIndex) {
  auto x = Tensor::from<float>({2, 4}, {3, 1, 3, 2, 5, 5, 5, 5});
  auto out =
      run_node({.op_type = "TopK", .opset = 11, .inputs = {{"x", x}, {"k", Tensor::from<int64_t>({1}, {2})}}, .num_outputs = 2});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 2}, {3, 3, 5, 5}));
  expect_tensor_near(out[1].tensor(), Tensor::from<int64_t>({2, 2}, {0, 2, 0, 1}));
  out = run_node({.op_type = "TopK",
                  .opset = 11,
                  .inputs = {{"x", x}, {"k", Tensor::from<int64_t>({1}, {3})}},
                  .attributes = {attr("largest", 0)},
                  .num_outputs = 2});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 3}, {1, 2, 3, 5, 5, 5}));
  expect_tensor_near(out[1].tensor(), Tensor::from<int64_t>({2, 3}, {1, 3, 0, 0, 1, 2}));
}

TEST(MathTopK, VersionsAxesAndEdges) {
  // Opset 1: k is an attribute; the axis here is the first of three.
  auto x = Tensor::from<int32_t>({3, 1, 2}, {1, 6, 5, 2, 3, 4});
  auto out = run_node(
      {.op_type = "TopK", .opset = 1, .inputs = {{"x", x}}, .attributes = {attr("k", 1), attr("axis", 0)}, .num_outputs = 2});
  expect_tensor_near(out[0].tensor(), Tensor::from<int32_t>({1, 1, 2}, {5, 6}));
  expect_tensor_near(out[1].tensor(), Tensor::from<int64_t>({1, 1, 2}, {1, 0}));
  // NaN ranks above every number.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  out = run_node({.op_type = "TopK",
                  .opset = 11,
                  .inputs = {{"x", Tensor::from<float>({3}, {1, nan, 2})}, {"k", Tensor::from<int64_t>({1}, {2})}},
                  .num_outputs = 2});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2}, {nan, 2}));
  out = run_node({.op_type = "TopK",
                  .opset = 11,
                  .inputs = {{"x", Tensor::from<float>({3}, {1, 3, 2})}, {"k", Tensor::from<int64_t>({1}, {0})}},
                  .num_outputs = 2});
  EXPECT_EQ(out[0].tensor().shape(), runtime::Shape{0});
  auto bad = try_run_node({.op_type = "TopK",
                           .opset = 11,
                           .inputs = {{"x", Tensor::from<float>({3}, {1, 3, 2})}, {"k", Tensor::from<int64_t>({1}, {4})}},
                           .num_outputs = 2});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("k = 4 is out of range"), std::string::npos) << bad.error().message();
  bad = try_run_node({.op_type = "TopK",
                      .opset = 11,
                      .inputs = {{"x", Tensor::from<float>({3}, {1, 3, 2})}, {"k", Tensor::from<int64_t>({1}, {1})}},
                      .attributes = {attr("axis", 1)},
                      .num_outputs = 2});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("axis 1 is out of range"), std::string::npos) << bad.error().message();
}

TEST(MathTopK, LargeInputAgreesAcrossThreads) {
  const int64_t rows = 64, n = 1000, k = 10;
  auto values = random_floats(rows * n, 13);
  for (size_t i = 0; i < values.size(); i += 7) values[i] = 0.5f;  // plenty of ties
  std::vector<float> expected_v;
  std::vector<int64_t> expected_i;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int64_t> order(n);
    for (int64_t i = 0; i < n; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return values[r * n + a] > values[r * n + b]; });
    for (int64_t i = 0; i < k; ++i) {
      expected_v.push_back(values[r * n + order[i]]);
      expected_i.push_back(order[i]);
    }
  }
  for (int threads : {1, 2}) {
    auto out = run_node({.op_type = "TopK",
                         .opset = 11,
                         .inputs = {{"x", Tensor::from<float>({rows, n}, values)}, {"k", Tensor::from<int64_t>({1}, {k})}},
                         .num_outputs = 2,
                         .threads = threads});
    expect_tensor_near(out[0].tensor(), Tensor::from<float>({rows, k}, expected_v), 0, 0);
    expect_tensor_near(out[1].tensor(), Tensor::from<int64_t>({rows, k}, expected_i));
  }
}

TEST(MathDet, BatchesSingularAndErrors) {
  // det [[2,1,0],[1,3,1],[0,1,4]] = 2*(12-1) - 1*(4-0) = 18; a singular one; a swap.
  auto x = Tensor::from<double>({3, 3, 3}, {2, 1, 0, 1, 3, 1, 0, 1, 4,  //
                                            1, 2, 3, 2, 4, 6, 0, 1, 1,  //
                                            0, 1, 0, 1, 0, 0, 0, 0, 1});
  auto out = run_node({.op_type = "Det", .opset = 11, .inputs = {{"x", x}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<double>({3}, {18, 0, -1}), 1e-12, 1e-12);
  out = run_node({.op_type = "Det", .opset = 11, .inputs = {{"x", half_tensor({2, 2}, {1, 2, 3, 4})}}});
  expect_tensor_near(out[0].tensor(), half_tensor({}, {-2}));
  auto bad = try_run_node({.op_type = "Det", .opset = 11, .inputs = {{"x", Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6})}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("square"), std::string::npos) << bad.error().message();
}

// CumProd (opset 26): integer products wrap modulo 2^bits as CumSum's sums
// do (the backend data has no overflow), exclusive and reverse together.
TEST(MathCumProd, WrapsIntegersAndRunsBothWays) {
  auto axis = Tensor::from<int64_t>({}, {0});
  auto out = run_node(
      {.op_type = "CumProd", .opset = 26, .inputs = {{"x", Tensor::from<int32_t>({3}, {65536, 65536, 3})}, {"axis", axis}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int32_t>({3}, {65536, 0, 0}));
  out = run_node({.op_type = "CumProd",
                  .opset = 26,
                  .inputs = {{"x", Tensor::from<uint64_t>({4}, {2, 3, 4, 5})}, {"axis", axis}},
                  .attributes = {attr("exclusive", 1), attr("reverse", 1)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<uint64_t>({4}, {60, 20, 5, 1}));
}

}  // namespace
}  // namespace onnxkit
