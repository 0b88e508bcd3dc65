// Detection kernels on what the backend data leaves out: MaxRoiPool has no
// backend test; its truth is torchvision.ops.roi_pool (torchvision 0.14),
// whose outputs are pasted. RoiAlign against torchvision.ops.roi_align
// (pasted) and against its definition sample by sample on random data. NonMaxSuppression's bad inputs, on boxes whose
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
#include "support/test_support.h"

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

// RoiAlign as torchvision.ops.roi_align (torchvision 0.14) computes it on
// roi_input() and five regions (inside, fractional, partly and mostly
// outside, smaller than a pixel), 2 x 3 bins: aligned=True is
// half_pixel, aligned=False output_half_pixel; sampling_ratio 0 is the
// adaptive grid in both. Outputs pasted.
TEST(RoiAlign, MatchesTorchvisionRoiAlign) {
  struct Case {
    bool aligned;
    int64_t sampling_ratio;
    float scale;
    std::vector<float> expected;
  };
  const std::vector<Case> cases = {
      {false, 2, 1.0f, {0.3125f,     0.75f,      0.375f,      0.875f,     0.5f,        0.125f,      0.125f,      -0.25f,
                        1.0f,        0.6875f,    0.3125f,     0.75f,      0.7666668f,  -0.3916667f, 0.3f,        0.6422917f,
                        0.8733333f,  0.175625f,  0.2677082f,  0.9916667f, -0.375f,     0.2895833f,  0.6479167f,  -0.7187499f,
                        0.0f,        -0.5f,      -0.1875f,    0.0f,       -0.0625f,    0.0546875f,  0.0f,        0.625f,
                        0.125f,      0.0f,       1.171875f,   0.171875f,  0.2083334f,  0.0f,        0.0f,        0.0f,
                        0.0f,        0.0f,       -0.2916666f, 0.0f,       0.0f,        0.0f,        0.0f,        0.0f,
                        0.4583333f,  0.1640625f, 0.4791667f,  0.6041666f, 0.07291667f, 0.3541668f,  -0.2708333f, -0.8020833f,
                        -0.5208332f, 0.1458334f, -0.1822917f, -0.1041666f}},
      {false, 2, 0.5f, {-0.140625f,  0.078125f,  0.5f,        0.953125f,  0.359375f,  0.375f,      0.6875f,    -0.3125f,
                        -0.5f,       0.5625f,    -0.4375f,    -0.625f,    0.2218749f, 0.7125f,     1.108333f,  0.1416666f,
                        0.5375f,     0.9333335f, -0.6833334f, -0.2875f,   0.3791666f, 0.1275001f,  0.10625f,   0.2610416f,
                        -1.0f,       -1.0f,      -0.6875f,    -0.53125f,  -0.53125f,  -0.3457031f, 1.25f,      1.25f,
                        0.75f,       1.210938f,  1.210938f,   0.7109375f, 0.6486002f, 0.2216797f,  0.15625f,   0.4270833f,
                        0.7161459f,  0.0f,       0.3383789f,  0.5885417f, -0.84375f,  0.09635419f, 0.2161459f, -0.5f,
                        0.34375f,    0.21875f,   0.2291667f,  1.048177f,  0.4492187f, 0.1041667f,  0.2916666f, -0.3750001f,
                        -0.7708333f, 0.2513021f, -0.3476563f, -0.7096354f}},
      {false, 0, 1.0f, {0.3125f,     0.75f,      0.375f,      0.875f,     0.5f,       0.125f,      0.125f,      -0.25f,
                        1.0f,        0.6875f,    0.3125f,     0.75f,      0.7666668f, -0.3916667f, 0.3f,        0.6422917f,
                        0.8733333f,  0.175625f,  0.2677082f,  0.9916667f, -0.375f,    0.2895833f,  0.6479167f,  -0.7187499f,
                        0.0f,        -0.5f,      -0.1875f,    0.0f,       -0.0625f,   0.0546875f,  0.0f,        0.625f,
                        0.125f,      0.0f,       1.171875f,   0.171875f,  0.1018519f, 0.0f,        0.0f,        0.0f,
                        0.0f,        0.0f,       -0.1481481f, 0.0f,       0.0f,       0.0f,        0.0f,        0.0f,
                        0.4583333f,  0.0625f,    0.4791667f,  0.6041666f, -0.0625f,   0.3541667f,  -0.2708334f, -0.9375f,
                        -0.5208333f, 0.1458333f, -0.25f,      -0.1041667f}},
      {false, 0, 0.5f, {-0.140625f,  0.078125f,  0.5f,        0.953125f,  0.359375f,  0.375f,      0.6875f,    -0.3125f,
                        -0.5f,       0.5625f,    -0.4375f,    -0.625f,    0.11625f,   0.7125f,     1.270833f,  -0.02083328f,
                        0.5375f,     1.095833f,  -0.8458332f, -0.2875f,   0.3791666f, 0.07875013f, 0.10625f,   0.2041666f,
                        -1.0f,       -1.0f,      -0.6875f,    -0.625f,    -0.625f,    -0.4140625f, 1.25f,      1.25f,
                        0.75f,       1.21875f,   1.21875f,    0.71875f,   0.6486002f, 0.2216797f,  0.15625f,   0.4270833f,
                        0.7161459f,  0.0f,       0.3383789f,  0.5885417f, -0.84375f,  0.09635419f, 0.2161459f, -0.5f,
                        0.34375f,    0.21875f,   0.2291667f,  1.166667f,  0.4999999f, 0.1041667f,  0.2916666f, -0.3750001f,
                        -0.7708333f, 0.1666666f, -0.5000001f, -0.8958333f}},
      {true, 2, 1.0f, {-0.5195312f, 0.2695312f,  1.0625f,      1.394531f,   0.3554688f,   0.84375f,     0.96875f,     -0.375f,
                       0.46875f,    0.8007812f,  -0.2890625f,  0.3007812f,  0.5916666f,   0.3000005f,   0.008333243f, 0.2416665f,
                       0.3968754f,  0.04562508f, -0.2702083f,  0.9249997f,  0.4166667f,   0.9452085f,   0.5749997f,   0.06666678f,
                       0.0f,        0.0f,        0.0f,         0.0f,        -0.40625f,    -0.6816406f,  0.0f,         0.0f,
                       0.0f,        0.0f,        0.6171875f,   0.984375f,   0.4583334f,   0.0f,         0.0f,         0.0f,
                       0.0f,        0.0f,        -0.04166663f, 0.0f,        0.0f,         0.0f,         0.0f,         0.0f,
                       -0.6691667f, -0.6075f,    -0.5458333f,  -0.0908334f, -0.07250007f, -0.05416674f, 1.158333f,    1.025f,
                       0.8916667f,  1.108333f,   0.975f,       0.8416667f}},
      {true, 2, 0.5f, {-1.0f,      -0.6875f,   -0.0625f,   -0.25f,      -0.140625f,  0.078125f,    1.25f,       0.75f,
                       -0.25f,     1.1875f,    0.6875f,    -0.3125f,    -0.175625f,  0.2445832f,   0.8760417f,  0.8225001f,
                       0.2189583f, 0.7041665f, 0.2760417f, -0.5739583f, -0.1239584f, 0.1231251f,   -0.7106249f, -0.276875f,
                       0.0f,       -0.5f,      -0.5f,      0.0f,        -1.0f,       -1.0f,        0.0f,        0.625f,
                       0.625f,     0.0f,       1.25f,      1.25f,       0.5104166f,  -0.04134114f, 0.1420898f,  0.1145833f,
                       0.8098959f, 0.1875f,    0.4837239f, 0.9010417f,  -0.34375f,   0.2916667f,   0.3098959f,  -0.3125f,
                       -1.0f,      -1.0f,      -1.0f,      -1.0f,       -1.0f,       -1.0f,        1.25f,       1.25f,
                       1.25f,      1.25f,      1.25f,      1.25f}},
      {true, 0, 1.0f, {-1.0f,        0.25f,       1.5f,         2.0f,         0.0f,         1.25f,      1.25f,
                       -0.75f,       0.5f,        1.0f,         -1.0f,        0.25f,        0.5916666f, 0.3000005f,
                       0.008333243f, 0.2416665f,  0.3968754f,   0.04562508f,  -0.2702083f,  0.9249997f, 0.4166667f,
                       0.9452085f,   0.5749997f,  0.06666678f,  0.0f,         0.0f,         0.0f,       0.0f,
                       -0.8125f,     -0.8125f,    0.0f,         0.0f,         0.0f,         0.0f,       1.234375f,
                       1.234375f,    0.4045139f,  0.0f,         0.0f,         0.0f,         0.0f,       0.0f,
                       -0.07479741f, 0.0f,        0.0f,         0.0f,         0.0f,         0.0f,       -0.6691667f,
                       -0.6075f,     -0.5458333f, -0.09083343f, -0.07250011f, -0.05416673f, 1.158333f,  1.025f,
                       0.8916667f,   1.108333f,   0.9750001f,   0.8416668f}},
      {true, 0, 0.5f, {-1.0f,       -0.6875f,   -0.0625f,   -0.25f,      -0.140625f,  0.078125f,    1.25f,       0.75f,
                       -0.25f,      1.1875f,    0.6875f,    -0.3125f,    -0.1941666f, 0.2124999f,   0.8791667f,  0.8441669f,
                       0.03750007f, 0.7041666f, 0.2791667f, -0.7874999f, -0.1208334f, 0.1041667f,   -0.9624999f, -0.2958334f,
                       0.0f,        0.0f,       0.0f,       0.0f,        -1.0f,       -1.0f,        0.0f,        0.0f,
                       0.0f,        0.0f,       1.25f,      1.25f,       0.5104166f,  -0.04134114f, 0.1420898f,  0.1145833f,
                       0.8098959f,  0.1875f,    0.4837239f, 0.9010417f,  -0.34375f,   0.2916667f,   0.3098959f,  -0.3125f,
                       -1.0f,       -1.0f,      -1.0f,      -1.0f,       -1.0f,       -1.0f,        1.25f,       1.25f,
                       1.25f,       1.25f,      1.25f,      1.25f}},
  };
  const Tensor rois =
      Tensor::from<float>({5, 4}, {0, 0, 3, 2, 1.4f, 0.6f, 4.6f, 3.4f, -2, -2, 1, 1, 3, 3, 10, 10, 0.5f, 0.5f, 0.7f, 0.9f});
  for (const Case& c : cases)
    for (int threads : {1, 2}) {
      auto out = run_node(
          {.op_type = "RoiAlign",
           .opset = 16,
           .inputs = {{"x", roi_input()}, {"rois", rois}, {"batch_indices", Tensor::from<int64_t>({5}, {0, 0, 0, 0, 0})}},
           .attributes = {attr("output_height", int64_t{2}), attr("output_width", int64_t{3}),
                          attr("sampling_ratio", c.sampling_ratio), attr("spatial_scale", c.scale),
                          attr("coordinate_transformation_mode", c.aligned ? "half_pixel" : "output_half_pixel")},
           .threads = threads});
      SCOPED_TRACE(::testing::Message() << "aligned " << c.aligned << " sampling_ratio " << c.sampling_ratio << " scale "
                                        << c.scale << " threads " << threads);
      expect_tensor_near(out[0].tensor(), Tensor::from<float>({5, 2, 2, 3}, c.expected));
    }
}

// RoiAlign one sample at a time, as the spec and Mask R-CNN define it: a
// bin's samples sit at the centres of a grid_h x grid_w split of the bin,
// each is read bilinearly (0 more than a pixel outside X, moved onto the
// border less than a pixel outside), and the bin takes their average or the
// largest of them (samples outside X count as zeros in both).
std::vector<float> roi_align_by_samples(const std::vector<float>& x, int64_t channels, int64_t height, int64_t width,
                                        const std::vector<float>& rois, const std::vector<int64_t>& batch, int64_t oh, int64_t ow,
                                        int64_t sampling_ratio, double scale, bool half_pixel, bool max_mode) {
  const int64_t n = static_cast<int64_t>(batch.size());
  std::vector<float> y;
  auto read = [&](const float* plane, double py, double px) -> double {
    if (py < -1 || py > height || px < -1 || px > width) return 0;
    py = std::max(py, 0.0);
    px = std::max(px, 0.0);
    int64_t y0 = static_cast<int64_t>(py), x0 = static_cast<int64_t>(px), y1 = y0 + 1, x1 = x0 + 1;
    if (y0 >= height - 1) y0 = y1 = height - 1, py = static_cast<double>(y0);
    if (x0 >= width - 1) x0 = x1 = width - 1, px = static_cast<double>(x0);
    const double fy = py - static_cast<double>(y0), fx = px - static_cast<double>(x0);
    return (1 - fy) * (1 - fx) * plane[y0 * width + x0] + (1 - fy) * fx * plane[y0 * width + x1] +
           fy * (1 - fx) * plane[y1 * width + x0] + fy * fx * plane[y1 * width + x1];
  };
  for (int64_t r = 0; r < n; ++r) {
    const double offset = half_pixel ? 0.5 : 0;
    const double x1 = rois[r * 4] * scale - offset, y1 = rois[r * 4 + 1] * scale - offset;
    double rw = rois[r * 4 + 2] * scale - offset - x1, rh = rois[r * 4 + 3] * scale - offset - y1;
    if (!half_pixel) rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);
    const double bh = rh / static_cast<double>(oh), bw = rw / static_cast<double>(ow);
    const int64_t gh = sampling_ratio > 0 ? sampling_ratio : static_cast<int64_t>(std::max(0.0, std::ceil(bh)));
    const int64_t gw = sampling_ratio > 0 ? sampling_ratio : static_cast<int64_t>(std::max(0.0, std::ceil(bw)));
    for (int64_t c = 0; c < channels; ++c) {
      const float* plane = x.data() + (batch[r] * channels + c) * height * width;
      for (int64_t ph = 0; ph < oh; ++ph)
        for (int64_t pw = 0; pw < ow; ++pw) {
          double sum = 0, best = gh * gw > 0 ? -INFINITY : 0;
          for (int64_t iy = 0; iy < gh; ++iy)
            for (int64_t ix = 0; ix < gw; ++ix) {
              const double v =
                  read(plane, y1 + (static_cast<double>(ph) + (static_cast<double>(iy) + 0.5) / static_cast<double>(gh)) * bh,
                       x1 + (static_cast<double>(pw) + (static_cast<double>(ix) + 0.5) / static_cast<double>(gw)) * bw);
              sum += v;
              best = std::max(best, v);
            }
          y.push_back(static_cast<float>(max_mode ? best : sum / static_cast<double>(std::max<int64_t>(gh * gw, 1))));
        }
    }
  }
  return y;
}

TEST(RoiAlign, MatchesTheSampleBySampleDefinition) {
  // Two images of 40 channels (more than a thread's block of them), regions
  // inside, straddling an edge, outside, wider than X, smaller than a
  // pixel; adaptive and fixed grids, both coordinate modes, avg and max.
  const int64_t channels = 40, height = 9, width = 11, oh = 3, ow = 4;
  const Tensor x = testing::random_tensor({2, channels, height, width}, 7);
  const std::vector<float> xv(x.data<float>(), x.data<float>() + x.numel());
  const std::vector<float> rois = {1,  1,  7,  5,  -3, 2,  4,    12,   0.5f, 0.5f, 0.7f, 0.9f, 20, 20,
                                   30, 30, -6, -6, 30, 25, 8.6f, 0.2f, 12,   3.9f, 2,    3,    2,  3};
  const std::vector<int64_t> batch = {0, 1, 1, 0, 0, 1, 0};
  const int64_t n = static_cast<int64_t>(batch.size());
  for (bool max_mode : {false, true})
    for (bool half_pixel : {false, true})
      for (int64_t sampling_ratio : {int64_t{0}, int64_t{3}})
        for (int threads : {1, 2}) {
          const double scale = 0.75;
          auto out = run_node(
              {.op_type = "RoiAlign",
               .opset = 16,
               .inputs = {{"x", x},
                          {"rois", Tensor::from<float>({n, 4}, rois)},
                          {"batch_indices", Tensor::from<int64_t>({n}, batch)}},
               .attributes = {attr("output_height", oh), attr("output_width", ow), attr("sampling_ratio", sampling_ratio),
                              attr("spatial_scale", static_cast<float>(scale)), attr("mode", max_mode ? "max" : "avg"),
                              attr("coordinate_transformation_mode", half_pixel ? "half_pixel" : "output_half_pixel")},
               .threads = threads});
          SCOPED_TRACE(::testing::Message() << (max_mode ? "max" : "avg") << " half_pixel " << half_pixel << " sampling_ratio "
                                            << sampling_ratio << " threads " << threads);
          expect_tensor_near(
              out[0].tensor(),
              Tensor::from<float>({n, channels, oh, ow}, roi_align_by_samples(xv, channels, height, width, rois, batch, oh, ow,
                                                                              sampling_ratio, scale, half_pixel, max_mode)),
              1e-5, 1e-4);
        }
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
