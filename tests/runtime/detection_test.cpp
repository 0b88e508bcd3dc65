// Detection kernels on what the backend data leaves out: MaxRoiPool has no
// backend test; its truth is torchvision.ops.roi_pool (torchvision 0.14),
// whose outputs are pasted. NonMaxSuppression's bad inputs, on boxes whose
// selection is worked out by hand.

#include <gtest/gtest.h>

#include "support/node_runner.h"

namespace onnxkit {
namespace {

using runtime::Tensor;
using testing::attr;
using testing::expect_tensor_near;
using testing::run_node;
using testing::try_run_node;

// X [1, 2, 4, 5] with x[i] = ((5 i) % 13) / 4 - 1, and regions that are
// inside, fractional, partly outside and mostly outside X.
Tensor roi_input() {
  std::vector<float> v;
  for (int i = 0; i < 40; ++i) v.push_back(static_cast<float>((i * 5) % 13) / 4 - 1);
  return Tensor::from<float>({1, 2, 4, 5}, v);
}

Tensor regions() {
  return Tensor::from<float>({4, 5}, {0, 0, 0, 3, 2, 0, 1.4f, 0.6f, 4.6f, 3.4f, 0, -2, -2, 1, 1, 0, 3, 3, 10, 10});
}

TEST(MaxRoiPool, MatchesTorchvisionRoiPool) {
  auto ints = std::vector<int64_t>{2, 2};
  auto full = run_node({.op_type = "MaxRoiPool", .opset = 1, .inputs = {{"x", roi_input()}, {"rois", regions()}},
                        .attributes = {attr("pooled_shape", ints)}});
  expect_tensor_near(full[0].tensor(),
                     Tensor::from<float>({4, 2, 2, 2}, {2, 1.5f, 2, 1.25f, 1.25f, 1.75f, 2, 1.5f, 1.25f, 0.5f, 2,
                                                        2, 2, 1.5f, 2, 1.25f, 0, 0, 0, 2, 0, 0, 0, 1.25f, 2, 0, 0,
                                                        0, 1, 0, 0, 0}));
  auto half = run_node({.op_type = "MaxRoiPool", .opset = 1, .inputs = {{"x", roi_input()}, {"rois", regions()}},
                        .attributes = {attr("pooled_shape", ints), attr("spatial_scale", 0.5f)}});
  expect_tensor_near(half[0].tensor(),
                     Tensor::from<float>({4, 2, 2, 2}, {0.25f, 1.5f, 2, 1.25f, 1.25f, 0.5f, 1, 0.25f, 0.25f, 1.5f,
                                                        0, 1.25f, -0.75f, 0.5f, 2, 0.25f, -1, 0.25f, 2, 2, 1.25f,
                                                        1.25f, 1.25f, 1.25f, 2, 0.25f, 0, 0, 1.25f, -0.75f, 0, 0}));
}

TEST(MaxRoiPool, RefusesABatchIndexOutsideX) {
  auto bad = try_run_node({.op_type = "MaxRoiPool", .opset = 1,
                           .inputs = {{"x", roi_input()}, {"rois", Tensor::from<float>({1, 5}, {1, 0, 0, 1, 1})}},
                           .attributes = {attr("pooled_shape", std::vector<int64_t>{1, 1})}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("batch index 1"), std::string::npos) << bad.error().message();
}

TEST(NonMaxSuppression, ABadMaxOutputIsNamed) {
  // Two overlapping boxes (IoU 0.9) and one apart: with threshold 0.5 the
  // better of the pair and the lone box are kept, at most max_output of them.
  const Tensor boxes = Tensor::from<float>({1, 3, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1, 2, 2, 3, 3});
  const Tensor scores = Tensor::from<float>({1, 1, 3}, {0.9f, 0.95f, 0.5f});
  auto with = [&](Tensor max_output) {
    return try_run_node({.op_type = "NonMaxSuppression", .opset = 11,
                         .inputs = {{"boxes", boxes}, {"scores", scores}, {"max_output", max_output},
                                    {"iou_threshold", Tensor::from<float>({1}, {0.5f})}}});
  };
  auto one = with(Tensor::from<int64_t>({1}, {1}));
  ASSERT_TRUE(one.ok()) << one.error().message();
  expect_tensor_near((*one)[0].tensor(), Tensor::from<int64_t>({1, 3}, {0, 0, 1}));
  auto all = with(Tensor::from<int32_t>({}, {5}));
  ASSERT_TRUE(all.ok()) << all.error().message();
  expect_tensor_near((*all)[0].tensor(), Tensor::from<int64_t>({2, 3}, {0, 0, 1, 0, 0, 2}));
  for (const Tensor& bad : {Tensor::from<float>({1}, {2}), Tensor::from<int64_t>({2}, {1, 2})}) {
    auto refused = with(bad);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message().find("max_output_boxes_per_class"), std::string::npos)
        << refused.error().message();
  }
}

}  // namespace
}  // namespace onnxkit
