// Reduce kernels on what the backend data (opset <= 17) leaves out: axes as
// an input (opset 18), noop_with_empty_axes, empty reductions, integer and
// 16-bit types, large inputs across threads, NaN, bad axes.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "support/node_runner.h"

namespace onnxkit {
namespace {

using runtime::DataType;
using runtime::Float16;
using runtime::Tensor;
using testing::attr;
using testing::expect_tensor_near;
using testing::NodeInput;
using testing::run_node;
using testing::try_run_node;

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// x = [[1, -2, 3], [-4, 5, -6]] reduced with axes given as an input.
Tensor reduce18(const std::string& op, const std::vector<int64_t>& axes, int keepdims = 1) {
  auto x = Tensor::from<float>({2, 3}, {1, -2, 3, -4, 5, -6});
  auto out = run_node({.op_type = op,
                       .opset = 18,
                       .inputs = {{"x", x}, {"axes", Tensor::from<int64_t>({static_cast<int64_t>(axes.size())}, axes)}},
                       .attributes = {attr("keepdims", keepdims)}});
  return out[0].tensor();
}

TEST(Reduce, Opset18TakesAxesAsAnInput) {
  expect_tensor_near(reduce18("ReduceSum", {1}), Tensor::from<float>({2, 1}, {2, -5}));
  expect_tensor_near(reduce18("ReduceMean", {0}), Tensor::from<float>({1, 3}, {-1.5f, 1.5f, -1.5f}));
  expect_tensor_near(reduce18("ReduceMax", {1}, 0), Tensor::from<float>({2}, {3, 5}));
  expect_tensor_near(reduce18("ReduceMin", {-1}, 0), Tensor::from<float>({2}, {-2, -6}));
  expect_tensor_near(reduce18("ReduceProd", {0, 1}, 0), Tensor::from<float>({}, {-720}));
  expect_tensor_near(reduce18("ReduceL1", {1}), Tensor::from<float>({2, 1}, {6, 15}));
  expect_tensor_near(reduce18("ReduceL2", {1}), Tensor::from<float>({2, 1}, {std::sqrt(14.0f), std::sqrt(77.0f)}));
  expect_tensor_near(reduce18("ReduceSumSquare", {0}, 0), Tensor::from<float>({3}, {17, 29, 45}));
  expect_tensor_near(reduce18("ReduceLogSum", {0}, 0),
                     Tensor::from<float>({3}, {std::log(-3.0f), std::log(3.0f), std::log(-3.0f)}));
  expect_tensor_near(reduce18("ReduceLogSumExp", {1}, 0),
                     Tensor::from<float>({2}, {std::log(std::exp(1.0f) + std::exp(-2.0f) + std::exp(3.0f)),
                                               std::log(std::exp(-4.0f) + std::exp(5.0f) + std::exp(-6.0f))}));
}

TEST(Reduce, AbsentOrEmptyAxesReduceAllUnlessNoop) {
  auto x = Tensor::from<float>({2, 2}, {1, -2, 3, 4});
  for (const std::string op : {"ReduceSum", "ReduceSumSquare", "ReduceL1"}) {
    const int64_t opset = op == "ReduceSum" ? 13 : 18;
    auto all = run_node({.op_type = op, .opset = opset, .inputs = {{"x", x}}, .attributes = {attr("keepdims", 0)}});
    auto empty = run_node({.op_type = op, .opset = opset, .inputs = {{"x", x}, {"axes", Tensor::from<int64_t>({0}, {})}}});
    auto noop = run_node({.op_type = op, .opset = opset, .inputs = {{"x", x}}, .attributes = {attr("noop_with_empty_axes", 1)}});
    // Reducing over no axes folds each element alone: x, x^2, |x|.
    if (op == "ReduceSum") {
      expect_tensor_near(all[0].tensor(), Tensor::from<float>({}, {6}));
      expect_tensor_near(empty[0].tensor(), Tensor::from<float>({1, 1}, {6}));
      expect_tensor_near(noop[0].tensor(), x);
    } else if (op == "ReduceSumSquare") {
      expect_tensor_near(all[0].tensor(), Tensor::from<float>({}, {30}));
      expect_tensor_near(noop[0].tensor(), Tensor::from<float>({2, 2}, {1, 4, 9, 16}));
    } else {
      expect_tensor_near(all[0].tensor(), Tensor::from<float>({}, {10}));
      expect_tensor_near(noop[0].tensor(), Tensor::from<float>({2, 2}, {1, 2, 3, 4}));
    }
  }
}

TEST(Reduce, EmptySetsGiveTheIdentity) {
  auto x = Tensor::from<float>({2, 0}, {});
  auto reduce = [&](const std::string& op) {
    return run_node({.op_type = op,
                     .opset = 18,
                     .inputs = {{"x", x}, {"axes", Tensor::from<int64_t>({1}, {1})}},
                     .attributes = {attr("keepdims", 0)}})[0]
        .tensor();
  };
  expect_tensor_near(reduce("ReduceSum"), Tensor::from<float>({2}, {0, 0}));
  expect_tensor_near(reduce("ReduceProd"), Tensor::from<float>({2}, {1, 1}));
  expect_tensor_near(reduce("ReduceMax"), Tensor::from<float>({2}, {-kInf, -kInf}));
  expect_tensor_near(reduce("ReduceMin"), Tensor::from<float>({2}, {kInf, kInf}));
  expect_tensor_near(reduce("ReduceL2"), Tensor::from<float>({2}, {0, 0}));
  expect_tensor_near(reduce("ReduceLogSum"), Tensor::from<float>({2}, {-kInf, -kInf}));
  expect_tensor_near(reduce("ReduceLogSumExp"), Tensor::from<float>({2}, {-kInf, -kInf}));
  expect_tensor_near(reduce("ReduceMean"), Tensor::from<float>({2}, {kNaN, kNaN}));
  auto ints = run_node({.op_type = "ReduceMax",
                        .opset = 18,
                        .inputs = {{"x", Tensor::from<int32_t>({0, 3}, {})}, {"axes", Tensor::from<int64_t>({1}, {0})}}});
  expect_tensor_near(ints[0].tensor(), Tensor::from<int32_t>({1, 3}, std::vector<int32_t>(3, INT32_MIN)));
  auto mean = try_run_node({.op_type = "ReduceMean",
                            .opset = 18,
                            .inputs = {{"x", Tensor::from<int32_t>({0, 3}, {})}, {"axes", Tensor::from<int64_t>({1}, {0})}}});
  ASSERT_FALSE(mean.ok());
  EXPECT_NE(mean.error().message().find("empty set"), std::string::npos) << mean.error().message();
}

TEST(Reduce, IntegerAndHalfTypes) {
  auto x = Tensor::from<int32_t>({2, 3}, {7, -8, 2, 1, 2, 4});
  auto out = run_node(
      {.op_type = "ReduceMean", .opset = 13, .inputs = {{"x", x}}, .attributes = {attr("axes", std::vector<int64_t>{1})}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int32_t>({2, 1}, {0, 2}));  // 1/3 and 7/3 truncate
  out = run_node({.op_type = "ReduceProd", .opset = 13, .inputs = {{"x", x}}, .attributes = {attr("keepdims", 0)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int32_t>({}, {-896}));
  out = run_node({.op_type = "ReduceL1",
                  .opset = 13,
                  .inputs = {{"x", Tensor::from<int8_t>({3}, {-128, 1, 2})}},
                  .attributes = {attr("keepdims", 0)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int8_t>({}, {-125}));  // 131 wraps like int8 arithmetic
  Tensor h(DataType::float16, {2, 2});
  const float hv[4] = {0.5f, 1.5f, -2.0f, 4.0f};
  for (int i = 0; i < 4; ++i) h.mutable_data<Float16>()[i] = Float16(hv[i]);
  out = run_node({.op_type = "ReduceSum", .opset = 13, .inputs = {{"x", h}, {"axes", Tensor::from<int64_t>({1}, {0})}}});
  ASSERT_EQ(out[0].tensor().dtype(), DataType::float16);
  EXPECT_FLOAT_EQ(static_cast<float>(out[0].tensor().data<Float16>()[0]), -1.5f);
  EXPECT_FLOAT_EQ(static_cast<float>(out[0].tensor().data<Float16>()[1]), 5.5f);
  // ReduceMax on bool (opset 20) is "any".
  out = run_node(
      {.op_type = "ReduceMax",
       .opset = 20,
       .inputs = {{"x", Tensor::from<bool>({2, 2}, {false, true, false, false})}, {"axes", Tensor::from<int64_t>({1}, {1})}},
       .attributes = {attr("keepdims", 0)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<bool>({2}, {true, false}));
}

TEST(Reduce, NaNAndInfinities) {
  auto x = Tensor::from<float>({2, 2}, {1, kNaN, 1000, 1000});
  auto out = run_node(
      {.op_type = "ReduceMax", .opset = 13, .inputs = {{"x", x}}, .attributes = {attr("axes", std::vector<int64_t>{1})}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 1}, {kNaN, 1000}));
  // LogSumExp stays finite where exp would overflow, and an infinite
  // maximum is the answer.
  out = run_node({.op_type = "ReduceLogSumExp",
                  .opset = 13,
                  .inputs = {{"x", Tensor::from<float>({2, 2}, {1000, 1000, kInf, 1})}},
                  .attributes = {attr("axes", std::vector<int64_t>{1})}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 1}, {1000 + std::log(2.0f), kInf}));
}

// Sum over `axes` of a row-major tensor, by a plain loop over every element.
std::vector<double> naive_sum(const std::vector<float>& x, const runtime::Shape& shape, const std::vector<bool>& reduced) {
  runtime::Shape out_shape;
  for (size_t d = 0; d < shape.size(); ++d) out_shape.push_back(reduced[d] ? 1 : shape[d]);
  std::vector<double> out(static_cast<size_t>(runtime::shape_size(out_shape)), 0.0);
  std::vector<int64_t> index(shape.size(), 0);
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t o = 0;
    for (size_t d = 0; d < shape.size(); ++d) o = o * out_shape[d] + (reduced[d] ? 0 : index[d]);
    out[o] += x[i];
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

TEST(Reduce, LargeReductionsAgreeAcrossThreadsAndLayouts) {
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> dist(-1, 1);
  struct Case {
    runtime::Shape shape;
    std::vector<int64_t> axes;
  };
  // All of it; the leading axis with few outputs; middle axes; alternating.
  const std::vector<Case> cases = {
      {{1 << 18}, {0}}, {{4096, 64}, {0}}, {{64, 4096}, {1}}, {{8, 300, 7, 40}, {1, 3}}, {{30, 2, 50, 3, 40}, {0, 2, 4}}};
  for (const Case& c : cases) {
    std::vector<float> x(static_cast<size_t>(runtime::shape_size(c.shape)));
    for (float& v : x) v = dist(gen);
    std::vector<bool> reduced(c.shape.size(), false);
    for (int64_t a : c.axes) reduced[a] = true;
    const std::vector<double> sums = naive_sum(x, c.shape, reduced);
    runtime::Shape out_shape;
    for (size_t d = 0; d < c.shape.size(); ++d) out_shape.push_back(reduced[d] ? 1 : c.shape[d]);
    std::vector<float> expected(sums.begin(), sums.end());
    for (int threads : {1, 2}) {
      auto out = run_node({.op_type = "ReduceSum",
                           .opset = 13,
                           .inputs = {{"x", Tensor::from<float>(c.shape, x)},
                                      {"axes", Tensor::from<int64_t>({static_cast<int64_t>(c.axes.size())}, c.axes)}},
                           .threads = threads});
      expect_tensor_near(out[0].tensor(), Tensor::from<float>(out_shape, expected), 1e-3, 1e-4);
    }
  }
}

TEST(Reduce, BadAxesAreErrors) {
  auto x = Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  struct Case {
    testing::NodeSpec spec;
    std::string needle;
  };
  std::vector<Case> cases;
  cases.push_back({{.op_type = "ReduceSum", .opset = 13, .inputs = {{"x", x}, {"axes", Tensor::from<int64_t>({1}, {2})}}},
                   "axis 2 is out of range for input data of rank 2"});
  cases.push_back(
      {{.op_type = "ReduceMean", .opset = 11, .inputs = {{"x", x}}, .attributes = {attr("axes", std::vector<int64_t>{-3})}},
       "axis -3 is out of range"});
  cases.push_back({{.op_type = "ReduceMax", .opset = 18, .inputs = {{"x", x}, {"axes", Tensor::from<int64_t>({2}, {1, -1})}}},
                   "given twice"});
  cases.push_back({{.op_type = "ReduceL2", .opset = 18, .inputs = {{"x", x}, {"axes", Tensor::from<int32_t>({1}, {1})}}},
                   "axes must be int64"});
  cases.push_back(
      {{.op_type = "ArgMax", .opset = 13, .inputs = {{"x", x}}, .attributes = {attr("axis", 2)}}, "axis 2 is out of range"});
  cases.push_back(
      {{.op_type = "ArgMin", .opset = 13, .inputs = {{"x", Tensor::from<float>({2, 0}, {})}}, .attributes = {attr("axis", 1)}},
       "is empty"});
  for (const Case& c : cases) {
    auto out = try_run_node(c.spec);
    ASSERT_FALSE(out.ok()) << c.needle;
    EXPECT_NE(out.error().message().find(c.needle), std::string::npos) << out.error().message();
  }
}

TEST(ReduceArg, TiesNaNAndLastIndex) {
  auto x = Tensor::from<float>({2, 4}, {1, 3, 3, 0, 2, kNaN, 5, kNaN});
  auto out = run_node({.op_type = "ArgMax", .opset = 13, .inputs = {{"x", x}}, .attributes = {attr("axis", 1)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int64_t>({2, 1}, {1, 1}));
  out = run_node({.op_type = "ArgMax",
                  .opset = 13,
                  .inputs = {{"x", x}},
                  .attributes = {attr("axis", 1), attr("select_last_index", 1), attr("keepdims", 0)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int64_t>({2}, {2, 3}));
  out = run_node({.op_type = "ArgMin",
                  .opset = 13,
                  .inputs = {{"x", Tensor::from<int32_t>({2, 3}, {4, 1, 1, 0, 9, 0})}},
                  .attributes = {attr("axis", 0), attr("select_last_index", 1)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int64_t>({1, 3}, {1, 0, 1}));
}

}  // namespace
}  // namespace onnxkit
