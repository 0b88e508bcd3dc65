// The fusion family as the driver runs it: one sweep in its order, and
// chains of fusions reaching one node.
#include <gtest/gtest.h>

#include "passes/fuse/fuse_test_support.h"
#include "passes/registry.h"
#include "passes/simplify.h"

namespace onnxkit::testing {
namespace {

TEST(FuseFamily, OneSweepFoldsABatchNormAndTheAddAfterIt) {
  // Each pass of the family once, as registered: BN must fold before the Add
  // fusion runs, which then finds the Conv's sole reader to be the Add and
  // folds it into the bias BN gave the Conv. The other way round the Add
  // would wait for the driver's next sweep.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 3, 3] x) => (float[1, 2, 3, 3] y)
  <float[2, 2, 1, 1] w = {1, -2, 0.5, 3},
   float[2] gamma = {2, 0.5}, float[2] beta = {1, -1}, float[2] mean = {0.25, -0.5}, float[2] var = {4, 1},
   float[2, 1, 1] k = {-3, 2}>
{
  c = Conv (x, w)
  n = BatchNormalization (c, gamma, beta, mean, var)
  y = Add (n, k)
})");
  auto before = clone(*model);
  std::vector<std::unique_ptr<passes::Pass>> family;
  passes::add_fusion_passes(family);
  size_t changes = 0;
  for (const auto& pass : family) {
    ASSERT_NE(passes::find_pass(pass->name()), nullptr) << pass->name() << " is not in all_passes()";
    EXPECT_FALSE(pass->summary().empty()) << pass->name();
    changes += run_pass(pass->name(), *model);
  }
  EXPECT_EQ(changes, 2u);
  ASSERT_EQ(model->graph().nodes().size(), 1u);
  EXPECT_EQ(model->graph().nodes().front().op_type(), "Conv");
  expect_same_outputs(*before, *model);
}

TEST(FuseFamily, PadConvBnMulAddChainBecomesOneConvUnderTheDriver) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 4, 4] x) => (float[1, 3, 4, 4] y)
  <float[3, 2, 3, 3] w = {1, -2, 3, 0.5, 1, 2, -1, 0, 1, 2, 1, 0, 0.5, -0.5, 1, 1, 2, 3,
                          0, 1, 0, 1, -1, 1, 0, 1, 0, 2, 2, -2, 0.25, 1, 0.75, -1, 1, 0,
                          1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, 0, 0, 0, 3, 2, 1},
   int64[8] pads = {0, 0, 1, 1, 0, 0, 1, 1},
   float[3] gamma = {1, 2, 3}, float[3] beta = {0, 0.5, -1}, float[3] mean = {0.5, 0, 1}, float[3] var = {1, 4, 9},
   float[3, 1, 1] m = {2, -1, 0.5}, float[1, 3, 1, 1] k = {1, 2, 3}>
{
  p = Pad (x, pads)
  c = Conv (p, w)
  n = BatchNormalization (c, gamma, beta, mean, var)
  s = Mul (n, m)
  y = Add (s, k)
})");
  auto before = clone(*model);
  auto report = passes::simplify_model(*model);
  ASSERT_TRUE(report.ok()) << report.error().message();
  ASSERT_EQ(model->graph().nodes().size(), 1u);
  EXPECT_EQ(model->graph().nodes().front().op_type(), "Conv");
  EXPECT_EQ(model->graph().outputs()[0]->name(), "y");
  EXPECT_EQ(model->graph().initializers().size(), 2u) << "cleanup leaves only W and B";
  // One note per rewrite, each naming the nodes: Pad, BN, Mul, Add.
  size_t fusion_notes = 0;
  for (const std::string& note : report->notes) fusion_notes += note.find("Conv node") != std::string::npos;
  EXPECT_EQ(fusion_notes, 4u);
  expect_same_outputs(*before, *model);
}

}  // namespace
}  // namespace onnxkit::testing
