// onnxkit's own opset steps above the converter's newest (tools/opset_upgrade.h),
// through convert_opset as edit --opset and simplify --target-opset call it.
#include <gtest/gtest.h>

#include "passes/pass.h"
#include "runtime/session.h"
#include "support/test_support.h"
#include "tools/edit.h"
#include "tools/opset_upgrade.h"

namespace onnxkit {
namespace {

std::vector<float> run_first_output(const ir::Model& model, const runtime::NamedValues& feeds) {
  auto copy = ir::import_model(ir::export_model(model));
  EXPECT_TRUE(copy.ok());
  auto session = runtime::Session::create(std::shared_ptr<const ir::Model>(std::move(copy).value()));
  EXPECT_TRUE(session.ok()) << session.error().message();
  if (!session.ok()) return {};
  auto out = (*session)->run(feeds);
  EXPECT_TRUE(out.ok()) << out.error().message();
  if (!out.ok()) return {};
  auto values = (*out)[0].tensor().values<float>();
  return {values.begin(), values.end()};
}

std::vector<int64_t> constant_ints(ir::Model& model, const ir::Value* value) {
  passes::PassOptions options;
  passes::PassContext context(model, options);
  return context.constant_ints(value).value_or(std::vector<int64_t>{});
}

TEST(OpsetUpgrade, ReduceAxesBecomeAnInputAt18) {
  auto model = testing::model_from_text(R"(
<ir_version: 7, opset_import: ["" : 13]>
g (float[2, 2] x) => (float[2] y, float[2, 1] z) {
  y = ReduceMean <axes = [1], keepdims = 0> (x)
  z = ReduceMax <axes = [-1]> (x)
}
)");
  auto converted = tools::convert_opset(*model, 18);
  ASSERT_TRUE(converted.ok()) << converted.error().message();
  ir::Model& result = **converted;
  EXPECT_EQ(result.opset(""), 18);
  EXPECT_GE(result.header().ir_version(), 8);
  for (const ir::Node& node : result.graph().nodes()) {
    EXPECT_EQ(node.attribute("axes"), nullptr) << node.describe();
    ASSERT_EQ(node.inputs().size(), 2u) << node.describe();
  }
  EXPECT_EQ(constant_ints(result, result.graph().nodes().front().input(1)), (std::vector<int64_t>{1}));
  // Worked by hand: the mean of each row of [[1, 2], [3, 5]].
  runtime::NamedValues feeds{{"x", runtime::Tensor::from<float>({2, 2}, {1, 2, 3, 5})}};
  EXPECT_EQ(run_first_output(result, feeds), (std::vector<float>{1.5f, 4.0f}));
}

TEST(OpsetUpgrade, DftAxisAndGridSampleModesAt20) {
  auto model = testing::model_from_text(R"(
<ir_version: 8, opset_import: ["" : 18]>
g (float[1, 8, 1] x, float[1, 1, 4, 4] img, float[1, 2, 2, 2] grid) => (float[1, 8, 2] y, float[1, 1, 2, 2] z) {
  y = DFT <axis = 1> (x)
  z = GridSample <mode = "bilinear"> (img, grid)
}
)");
  auto converted = tools::convert_opset(*model, 20);
  ASSERT_TRUE(converted.ok()) << converted.error().message();
  ir::Model& result = **converted;
  EXPECT_EQ(result.opset(""), 20);
  const ir::Node& dft = result.graph().nodes().front();
  EXPECT_EQ(dft.attribute("axis"), nullptr);
  ASSERT_EQ(dft.inputs().size(), 3u);
  EXPECT_EQ(dft.input(1), nullptr);  // dft_length stays omitted
  EXPECT_EQ(constant_ints(result, dft.input(2)), (std::vector<int64_t>{1}));
  EXPECT_EQ(result.graph().nodes().back().attr_string("mode", ""), "linear");
}

TEST(OpsetUpgrade, GroupNormScaleAndBiasPerChannelAt21) {
  auto model = testing::model_from_text(R"(
<ir_version: 8, opset_import: ["" : 18]>
g (float[1, 4, 2] x) => (float[1, 4, 2] y) <float[2] scale = {2, 3}, float[2] bias = {0.5, -1}> {
  y = GroupNormalization <num_groups = 2> (x, scale, bias)
}
)");
  auto converted = tools::convert_opset(*model, 21);
  ASSERT_TRUE(converted.ok()) << converted.error().message();
  ir::Model& result = **converted;
  EXPECT_EQ(result.opset(""), 21);
  EXPECT_GE(result.header().ir_version(), 10);
  const ir::Node& norm = result.graph().nodes().front();
  passes::PassOptions options;
  passes::PassContext context(result, options);
  auto scale = context.constant(norm.input(1));
  ASSERT_TRUE(scale.has_value());
  auto values = scale->values<float>();
  EXPECT_EQ(std::vector<float>(values.begin(), values.end()), (std::vector<float>{2, 2, 3, 3}));
  // Group 0 is channels 0-1 ({0, 2} and {1, 3}: mean 1.5, variance 1.25),
  // group 1 channels 2-3 (all 4: variance 0, so only the bias is left).
  runtime::NamedValues feeds{{"x", runtime::Tensor::from<float>({1, 4, 2}, {0, 2, 1, 3, 4, 4, 4, 4})}};
  const std::vector<float> before = run_first_output(*model, feeds), after = run_first_output(result, feeds);
  ASSERT_EQ(after.size(), 8u);
  EXPECT_EQ(before, after);
  EXPECT_NEAR(after[0], 2 * (0 - 1.5) / std::sqrt(1.25 + 1e-5) + 0.5, 1e-4);
  EXPECT_NEAR(after[7], -1.0, 1e-4);
}

TEST(OpsetUpgrade, RefusalsNameWhatIsWrong) {
  auto computed_scale = testing::model_from_text(R"(
<ir_version: 8, opset_import: ["" : 18]>
g (float[1, 4, 2] x, float[2] scale, float[2] bias) => (float[1, 4, 2] y) {
  y = GroupNormalization <num_groups = 2> (x, scale, bias)
}
)");
  auto refused = tools::convert_opset(*computed_scale, 21);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("GroupNormalization"), std::string::npos) << refused.error().message();
  EXPECT_NE(refused.error().message().find("20 to 21"), std::string::npos) << refused.error().message();
  auto model = testing::model_from_text(R"(
<ir_version: 8, opset_import: ["" : 18]>
g (float[2] x) => (float[2] y) { y = Relu(x) }
)");
  EXPECT_FALSE(tools::convert_opset(*model, tools::kNewestUpgradableOpset + 1).ok());
  auto down = tools::convert_opset(*model, 13);
  ASSERT_FALSE(down.ok());
  EXPECT_NE(down.error().message().find("down from opset 18"), std::string::npos) << down.error().message();
}

}  // namespace
}  // namespace onnxkit
