// Detection kernels on what the backend data leaves out: MaxRoiPool has no
// backend test; its truth is torchvision.ops.roi_pool (torchvision 0.14),
// whose outputs are pasted. NonMaxSuppression's bad inputs, on boxes whose
// selection is worked out by hand; its fast selection against the plain
// greedy loop of the spec (which the backend data checks) on random boxes
// with tied scores, NaNs, infinities and torchvision's per-class offsets.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <random>

#include "runtime/kernels/detection/nms.h"

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
  auto full = run_node({.op_type = "MaxRoiPool",
                        .opset = 1,
                        .inputs = {{"x", roi_input()}, {"rois", regions()}},
                        .attributes = {attr("pooled_shape", ints)}});
  expect_tensor_near(
      full[0].tensor(),
      Tensor::from<float>({4, 2, 2, 2}, {2, 1.5f, 2, 1.25f, 1.25f, 1.75f, 2, 1.5f,  1.25f, 0.5f, 2, 2, 2, 1.5f, 2, 1.25f,
                                         0, 0,    0, 2,     0,     0,     0, 1.25f, 2,     0,    0, 0, 1, 0,    0, 0}));
  auto half = run_node({.op_type = "MaxRoiPool",
                        .opset = 1,
                        .inputs = {{"x", roi_input()}, {"rois", regions()}},
                        .attributes = {attr("pooled_shape", ints), attr("spatial_scale", 0.5f)}});
  expect_tensor_near(half[0].tensor(), Tensor::from<float>({4, 2, 2, 2}, {0.25f, 1.5f,  2, 1.25f, 1.25f,  0.5f,   1,     0.25f,
                                                                          0.25f, 1.5f,  0, 1.25f, -0.75f, 0.5f,   2,     0.25f,
                                                                          -1,    0.25f, 2, 2,     1.25f,  1.25f,  1.25f, 1.25f,
                                                                          2,     0.25f, 0, 0,     1.25f,  -0.75f, 0,     0}));
}

TEST(MaxRoiPool, RefusesABatchIndexOutsideX) {
  auto bad = try_run_node({.op_type = "MaxRoiPool",
                           .opset = 1,
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
    return try_run_node({.op_type = "NonMaxSuppression",
                         .opset = 11,
                         .inputs = {{"boxes", boxes},
                                    {"scores", scores},
                                    {"max_output", max_output},
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
    EXPECT_NE(refused.error().message().find("max_output_boxes_per_class"), std::string::npos) << refused.error().message();
  }
}

// One random NonMaxSuppression problem: `batches` x `classes` scores over
// `count` boxes. The boxes' layout varies with `seed`.
struct NmsCase {
  int64_t batches, classes, count;
  bool center_point;
  int64_t max_output;
  float iou_threshold;
  std::optional<float> score_threshold;
  uint32_t seed;
};

struct NmsProblem {
  std::vector<float> coords, scores;
};

NmsProblem nms_problem(const NmsCase& c) {
  std::mt19937 rng(c.seed);
  std::uniform_real_distribution<float> unit(0, 1);
  NmsProblem p;
  const int64_t boxes = c.batches * c.count;
  for (int64_t i = 0; i < boxes; ++i) {
    float cx = 100 * unit(rng), cy = 100 * unit(rng), w = 5 + 40 * unit(rng), h = 5 + 40 * unit(rng);
    switch (c.seed % 4) {
      case 1:  // torchvision's batched_nms: each tenth of the boxes shifted 101 away
        cx += 101 * static_cast<float>(i % 10);
        cy += 101 * static_cast<float>(i % 10);
        break;
      case 2:  // a few boxes covering everything
        if (i % 17 == 0) w = h = 400;
        break;
      case 3:  // near-duplicates, degenerate and non-finite boxes
        if (i % 5 == 0) cx = std::round(cx / 20) * 20, w = 30;
        if (i % 23 == 0) w = 0;
        if (i % 29 == 0) cx = std::numeric_limits<float>::quiet_NaN();
        if (i % 31 == 0) w = std::numeric_limits<float>::infinity();
        if (c.center_point && i % 37 == 0) w = -w;
        break;
    }
    if (c.center_point) {
      p.coords.insert(p.coords.end(), {cx, cy, w, h});
    } else if (i % 2 == 0) {  // [y1, x1, y2, x2], the corners either way round
      p.coords.insert(p.coords.end(), {cy - h / 2, cx - w / 2, cy + h / 2, cx + w / 2});
    } else {
      p.coords.insert(p.coords.end(), {cy + h / 2, cx + w / 2, cy - h / 2, cx - w / 2});
    }
  }
  for (int64_t i = 0; i < c.batches * c.classes * c.count; ++i) {
    // Ten score levels: many ties, which the lower index wins.
    float score = std::floor(10 * unit(rng)) / 10;
    if (c.seed % 4 == 3 && i % 19 == 0) score = std::numeric_limits<float>::quiet_NaN();
    p.scores.push_back(score);
  }
  return p;
}

// The rows the plain greedy loop selects.
Tensor nms_reference_rows(const NmsCase& c, const NmsProblem& p) {
  using runtime::detection::NmsBox;
  std::vector<int64_t> rows;
  const runtime::detection::NmsLimits limits{
      .max_output = std::min(c.max_output, c.count), .iou_limit = c.iou_threshold, .score_threshold = c.score_threshold};
  for (int64_t n = 0; n < c.batches; ++n) {
    std::vector<NmsBox> boxes;
    for (int64_t i = 0; i < c.count; ++i) {
      double v[4];
      for (int j = 0; j < 4; ++j) v[j] = p.coords[static_cast<size_t>((n * c.count + i) * 4 + j)];
      boxes.push_back(runtime::detection::nms_box(v, c.center_point));
    }
    for (int64_t k = 0; k < c.classes; ++k) {
      std::vector<double> scores(p.scores.begin() + (n * c.classes + k) * c.count,
                                 p.scores.begin() + (n * c.classes + k + 1) * c.count);
      std::vector<int64_t> kept;
      runtime::detection::nms_select_reference(boxes, scores.data(), limits, kept);
      for (int64_t i : kept) rows.insert(rows.end(), {n, k, i});
    }
  }
  return Tensor::from<int64_t>({static_cast<int64_t>(rows.size() / 3), 3}, rows);
}

TEST(NonMaxSuppression, FastSelectionMatchesThePlainGreedyLoop) {
  int selected = 0;
  uint32_t seed = 0;
  for (bool center : {false, true})
    for (float iou : {0.0f, 0.3f, 0.6f, 1.0f})
      for (int64_t max_output : {int64_t{3}, int64_t{1000}})
        for (std::optional<float> score_threshold : {std::optional<float>(), std::optional<float>(0.25f)})
          for (int layout = 0; layout < 4; ++layout) {
            const NmsCase c{.batches = 2,
                            .classes = 3,
                            .count = 150,
                            .center_point = center,
                            .max_output = max_output,
                            .iou_threshold = iou,
                            .score_threshold = score_threshold,
                            .seed = 4 * seed++ + static_cast<uint32_t>(layout)};
            const NmsProblem p = nms_problem(c);
            std::vector<testing::NodeInput> inputs{{"boxes", Tensor::from<float>({c.batches, c.count, 4}, p.coords)},
                                                   {"scores", Tensor::from<float>({c.batches, c.classes, c.count}, p.scores)},
                                                   {"max_output", Tensor::from<int64_t>({1}, {c.max_output})},
                                                   {"iou_threshold", Tensor::from<float>({1}, {c.iou_threshold})}};
            if (c.score_threshold) inputs.push_back({"score_threshold", Tensor::from<float>({1}, {*c.score_threshold})});
            auto out = run_node({.op_type = "NonMaxSuppression",
                                 .opset = 11,
                                 .inputs = inputs,
                                 .attributes = {attr("center_point_box", int64_t{center ? 1 : 0})}});
            SCOPED_TRACE(::testing::Message()
                         << "seed " << c.seed << " center " << center << " iou " << iou << " max_output " << max_output);
            const Tensor expected = nms_reference_rows(c, p);
            expect_tensor_near(out[0].tensor(), expected);
            selected += static_cast<int>(expected.dim(0));
          }
  // The sweep selects boxes, and suppresses some: not a vacuous comparison.
  EXPECT_GT(selected, 1000);
  EXPECT_LT(selected, 64 * 2 * 3 * 150);
}

}  // namespace
}  // namespace onnxkit
