// The driver: fixed point, determinism, sub-graphs, options.
#include "passes/simplify.h"

#include <gtest/gtest.h>

#include "passes/pass_test_support.h"

namespace onnxkit::testing {
namespace {

constexpr const char* kGlue = R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[N, 4, 2, 2] x, bool c) => (float[N, 16] y, float[2] z) <int64 zero = {0}, int64[1] axes = {0}, int64[1] minus_one = {-1}, float[2] a = {1, 2}> {
  s = Shape(x)
  n = Gather(s, zero)
  u = Unsqueeze(n, axes)
  shape = Concat <axis = 0> (u, minus_one)
  y = Reshape(x, shape)
  z = If (c) <then_branch = t () => (float[2] t_out) { k = Neg(a)  t_out = Abs(k) },
              else_branch = e () => (float[2] e_out) { e_out = Neg(a) }>
})";

std::string serialized(const ir::Model& model) {
  std::string bytes;
  ir::export_model(model).SerializeToString(&bytes);
  return bytes;
}

TEST(SimplifyDriver, RemovesGlueFoldsSubgraphsAndReachesAFixedPoint) {
  auto model = model_from_text(kGlue);
  auto before = clone(*model);
  auto report = passes::simplify_model(*model);
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_FALSE(report->hit_iteration_cap);
  EXPECT_EQ(count_ops(model->graph(), "Shape"), 0u);
  EXPECT_EQ(count_ops(model->graph(), "Neg"), 0u);  // folded in both branches
  EXPECT_EQ(count_ops(model->graph(), "Abs"), 0u);
  EXPECT_EQ(count_ops(model->graph(), "Reshape"), 1u);
  expect_same_outputs(*before, *model);
  // A second run finds nothing left to do.
  auto again = passes::simplify_model(*model);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->iterations, 1);
}

TEST(SimplifyDriver, DropsDeadNodesUnusedInitializersAndStaleValueInfo) {
  // d feeds nothing; w is unused; v's declared shape is wrong; u feeds
  // nothing and goes only when asked.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x, float[3] u) => (float[2] y) <float[4] w = {1, 2, 3, 4}> {
  d = Sigmoid(x)
  v = Exp(x)
  y = Relu(v)
})");
  ir::Graph& graph = model->graph();
  onnx::TypeProto wrong;
  wrong.mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  wrong.mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(7);
  *graph.find_value("v")->mutable_info().mutable_type() = wrong;
  graph.add_value_info(graph.find_value("v"));
  passes::SimplifyOptions options;
  options.passes.skipped_passes.insert("fold-constants");
  ASSERT_TRUE(passes::simplify_model(*model, options).ok());
  EXPECT_EQ(count_ops(graph, "Sigmoid"), 0u);
  EXPECT_EQ(graph.find_value("w"), nullptr);
  ASSERT_EQ(graph.value_info().size(), 1u);
  EXPECT_EQ(graph.value_info()[0]->static_shape(), (std::vector<int64_t>{2}));
  EXPECT_EQ(graph.inputs().size(), 2u);

  options.passes.remove_unused_inputs = true;
  ASSERT_TRUE(passes::simplify_model(*model, options).ok());
  ASSERT_EQ(graph.inputs().size(), 1u);
  EXPECT_EQ(graph.inputs()[0]->name(), "x");
}

TEST(SimplifyDriver, SameInputGivesByteIdenticalOutput) {
  auto a = model_from_text(kGlue);
  auto b = model_from_text(kGlue);
  ASSERT_TRUE(passes::simplify_model(*a).ok());
  ASSERT_TRUE(passes::simplify_model(*b).ok());
  EXPECT_EQ(serialized(*a), serialized(*b));
}

TEST(SimplifyDriver, SkippingEveryPassAndFoldingChangesNothingButDeadCode) {
  auto model = model_from_text(kGlue);
  passes::SimplifyOptions options;
  for (const auto& pass : passes::all_passes()) options.passes.skipped_passes.insert(std::string(pass->name()));
  auto report = passes::simplify_model(*model, options);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(count_ops(model->graph(), "Shape"), 1u);
  EXPECT_EQ(count_ops(model->graph(), "Neg"), 2u);
}

TEST(SimplifyDriver, UnknownPassNameIsAnError) {
  auto model = model_from_text(kGlue);
  passes::SimplifyOptions options;
  options.passes.skipped_passes.insert("no-such-pass");
  auto report = passes::simplify_model(*model, options);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.error().message().find("no-such-pass"), std::string::npos);
}

TEST(SimplifyDriver, ACallbackErrorStopsTheDriverAndNamesThePass) {
  auto model = model_from_text(kGlue);
  passes::SimplifyOptions options;
  options.after_change = [](const ir::Model&, std::string_view pass) -> Status {
    if (pass == "fold-constants") return make_error("numbers changed");
    return {};
  };
  auto report = passes::simplify_model(*model, options);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.error().message().find("after pass fold-constants"), std::string::npos) << report.error().message();
}

TEST(SimplifyDriver, IterationCapIsReported) {
  auto model = model_from_text(kGlue);
  passes::SimplifyOptions options;
  options.max_iterations = 1;  // the first round changes things, so the cap is hit
  auto report = passes::simplify_model(*model, options);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->hit_iteration_cap);
  ASSERT_FALSE(report->warnings.empty());
  EXPECT_NE(report->warnings.back().find("fixed point"), std::string::npos);
}

}  // namespace
}  // namespace onnxkit::testing
