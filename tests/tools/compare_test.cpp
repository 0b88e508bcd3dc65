// The comparison library: tensor statistics against numbers worked by hand,
// and two small models compared node by node, with the altered node named
// and names paired by structure where they differ.

#include <gtest/gtest.h>

#include <cmath>

#include "support/test_support.h"
#include "tools/compare.h"

namespace onnxkit {
namespace {

using runtime::Tensor;
using tools::TensorStats;
using tools::Tolerance;

Tolerance tolerance(double rtol, double atol, tools::ErrorStat stat = tools::ErrorStat::elemwise, double q = 0.99) {
  Tolerance t;
  t.rtol = rtol;
  t.atol = atol;
  t.stat = stat;
  t.quantile = q;
  return t;
}

TEST(CompareStats, EveryStatisticWorkedByHand) {
  // errors |a - e| = [0, 0.5, 0, 4]; |e| = [1, 2, 3, 4]
  Tensor e = Tensor::from<float>({4}, {1, 2, 3, 4});
  Tensor a = Tensor::from<float>({4}, {1, 2.5f, 3, 0});
  TensorStats s = tools::compare_tensor_stats(e, a, tolerance(0.1, 0.1, tools::ErrorStat::elemwise, 0.75));
  EXPECT_FALSE(s.passed);
  EXPECT_EQ(s.elements, 4);
  EXPECT_EQ(s.mismatches, 2);  // 0.5 > 0.1 + 0.1 * 2 and 4 > 0.1 + 0.1 * 4
  EXPECT_DOUBLE_EQ(s.max_abs, 4);
  EXPECT_DOUBLE_EQ(s.max_rel, 1);                    // 4 / 4 (0.5 / 2 = 0.25 is less)
  EXPECT_DOUBLE_EQ(s.mean_abs, 1.125);               // 4.5 / 4
  EXPECT_DOUBLE_EQ(s.median_abs, 0.25);              // sorted [0, 0, 0.5, 4]: (0 + 0.5) / 2
  EXPECT_DOUBLE_EQ(s.quantile_abs, 1.375);           // position 0.75 * 3 = 2.25: 0.5 + 0.25 * (4 - 0.5)
  EXPECT_NEAR(s.cosine, 0.6793662204867575, 1e-12);  // 15 / sqrt(30 * 16.25)
  EXPECT_NEAR(s.snr_db, 2.6626788940476924, 1e-12);  // 10 log10(30 / 16.25)
  EXPECT_NEAR(s.required_atol, 3.6, 1e-6);           // 4 - 0.1 * 4
  EXPECT_NEAR(s.required_rtol, 0.975, 1e-6);         // (4 - 0.1) / 4
  EXPECT_EQ(s.mismatch, "at [1]: expected 2, got 2.5");
  // The required tolerances do pass.
  EXPECT_TRUE(tools::compare_tensor_stats(e, a, tolerance(0.1, 3.6 + 1e-6)).passed);
  EXPECT_TRUE(tools::compare_tensor_stats(e, a, tolerance(0.975 + 1e-6, 0.1)).passed);
}

TEST(CompareStats, AggregateStatisticsDecideAgainstTheSameStatisticOfTheReference) {
  Tensor e = Tensor::from<float>({4}, {1, 1, 1, 1});
  Tensor a = Tensor::from<float>({4}, {1, 1, 1, 1.2f});
  EXPECT_FALSE(tools::compare_tensor_stats(e, a, tolerance(0.1, 0.01)).passed);  // element 3: 0.2 > 0.11
  // mean error 0.05 <= 0.01 + 0.1 * 1; max error 0.2 > 0.01 + 0.1 * 1; median 0 passes.
  EXPECT_TRUE(tools::compare_tensor_stats(e, a, tolerance(0.1, 0.01, tools::ErrorStat::mean)).passed);
  TensorStats max = tools::compare_tensor_stats(e, a, tolerance(0.1, 0.01, tools::ErrorStat::max));
  EXPECT_FALSE(max.passed);
  EXPECT_NE(max.mismatch.find("max abs error 0.2"), std::string::npos) << max.mismatch;
  EXPECT_TRUE(tools::compare_tensor_stats(e, a, tolerance(0.1, 0.01, tools::ErrorStat::median)).passed);
  // The 0.9 quantile of [0, 0, 0, 0.2] (position 2.7) is 0.7 * 0.2 = 0.14: above 0.13, below 0.15.
  EXPECT_FALSE(tools::compare_tensor_stats(e, a, tolerance(0.1, 0.03, tools::ErrorStat::quantile, 0.9)).passed);
  EXPECT_TRUE(tools::compare_tensor_stats(e, a, tolerance(0.1, 0.05, tools::ErrorStat::quantile, 0.9)).passed);
}

TEST(CompareStats, NaNAndInfinityAreCountedOnEachSide) {
  const float nan = NAN, inf = INFINITY;
  Tensor e = Tensor::from<float>({5}, {nan, inf, 1, nan, 2});
  Tensor a = Tensor::from<float>({5}, {nan, inf, nan, 2, 2});
  TensorStats s = tools::compare_tensor_stats(e, a, tolerance(1, 1, tools::ErrorStat::mean));
  EXPECT_EQ(s.nan_expected, 2);
  EXPECT_EQ(s.nan_actual, 2);
  EXPECT_EQ(s.inf_expected, 1);
  EXPECT_EQ(s.inf_actual, 1);
  EXPECT_EQ(s.mismatches, 2);  // NaN against NaN and inf against inf agree
  EXPECT_FALSE(s.passed);      // whatever the statistic
  EXPECT_TRUE(std::isinf(s.max_abs));
  EXPECT_TRUE(std::isinf(s.snr_db) && s.snr_db < 0);
}

TEST(CompareStats, IntegersMustBeEqualAndShapesMustAgree) {
  Tensor e = Tensor::from<int64_t>({2}, {1, 2});
  EXPECT_FALSE(tools::compare_tensor_stats(e, Tensor::from<int64_t>({2}, {1, 3}), tolerance(1, 1)).passed);
  EXPECT_TRUE(tools::compare_tensor_stats(e, Tensor::from<int64_t>({2}, {1, 2}), tolerance(0, 0)).passed);
  TensorStats s = tools::compare_tensor_stats(e, Tensor::from<int64_t>({3}, {1, 2, 3}), tolerance(1, 1));
  EXPECT_FALSE(s.passed);
  EXPECT_FALSE(s.comparable);
  EXPECT_EQ(s.mismatch, "int64[2] vs int64[3]");
  EXPECT_FALSE(tools::compare_tensor_stats(e, Tensor::from<int32_t>({2}, {1, 2}), tolerance(1, 1)).comparable);
}

// y = Relu(x * 2 + 1) * 3, then Sigmoid. B changes one constant of one node.
constexpr const char* kModel = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  g (float[2, 3] x) => (float[2, 3] y) {
    two = Constant <value = float[1] {2.0}> ()
    one = Constant <value = float[1] {1.0}> ()
    three = Constant <value = float[1] {3.0}> ()
    m = Mul (x, two)
    s = Add (m, one)
    r = Relu (s)
    t = Mul (r, three)
    y = Sigmoid (t)
  }
)";

std::shared_ptr<const ir::Model> shared(std::unique_ptr<ir::Model> m) { return std::shared_ptr<const ir::Model>(std::move(m)); }

runtime::NamedValues feeds() {
  return {{"x", runtime::Datum(Tensor::from<float>({2, 3}, {0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f}))}};
}

TEST(CompareModels, TheAlteredNodeIsTheCulpritAndItsConsumersAreClean) {
  std::string altered = kModel;
  altered.replace(altered.find("{1.0}"), 5, "{1.5}");  // the Add's constant
  auto report = tools::compare_models_on(shared(testing::model_from_text(kModel)), shared(testing::model_from_text(altered)),
                                         {feeds()}, {});
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_FALSE(report->passed);
  ASSERT_TRUE(report->first_divergent.has_value());
  EXPECT_EQ(report->tensors[*report->first_divergent].name, "s");
  ASSERT_TRUE(report->culprit.has_value());
  const tools::NodeReport& culprit = report->nodes[*report->culprit];
  EXPECT_EQ(culprit.op_type, "Add");
  ASSERT_TRUE(culprit.local.has_value());
  EXPECT_DOUBLE_EQ(culprit.local->max_abs, 0.5);  // (x*2 + 1.5) - (x*2 + 1), exactly
  // Relu, Mul and Sigmoid re-run on A's inputs agree with A exactly.
  for (const tools::NodeReport& n : report->nodes)
    if (n.op_type != "Add") {
      ASSERT_TRUE(n.local.has_value()) << n.name;
      EXPECT_EQ(n.local->max_abs, 0) << n.op_type;
      EXPECT_FALSE(n.suspect);
    }
}

TEST(CompareModels, RenamedTensorsPairByStructure) {
  // kModel as another exporter might write it: other tensor names, Add's operands swapped.
  const std::string renamed = R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2, 3] x) => (float[2, 3] y) {
      c2 = Constant <value = float[1] {2.0}> ()
      c1 = Constant <value = float[1] {1.0}> ()
      c3 = Constant <value = float[1] {3.0}> ()
      nm = Mul (x, c2)
      ns = Add (c1, nm)
      nr = Relu (ns)
      nt = Mul (nr, c3)
      y = Sigmoid (nt)
    }
  )";
  auto report = tools::compare_models_on(shared(testing::model_from_text(kModel)), shared(testing::model_from_text(renamed)),
                                         {feeds()}, {});
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_TRUE(report->passed);
  EXPECT_FALSE(report->culprit.has_value());
  EXPECT_EQ(report->pairing.by_structure, 4u);
  for (const tools::TensorReport& t : report->tensors)
    if (t.name != "y") {
      EXPECT_EQ(t.name_b, "n" + t.name);
      EXPECT_EQ(t.paired_by, tools::Pairing::structure);
    }
}

TEST(CompareModels, DifferentInputsAreOneError) {
  auto report = tools::compare_models(
      shared(testing::model_from_text(kModel)),
      shared(testing::model_from_text(
          R"(<ir_version: 8, opset_import: ["" : 17]> g (float[2, 3] a, float[2, 3] b) => (float[2, 3] y) { y = Add (a, b) })")),
      {});
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.error().message().find("the models take different inputs: A takes 'x', B takes 'a', 'b'"), std::string::npos)
      << report.error().message();
}

}  // namespace
}  // namespace onnxkit
