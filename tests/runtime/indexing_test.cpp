// Indexing-family kernels on cases the backend data leaves out: opset 18+
// forms (Pad axes and wrap, Resize antialias/axes/keep_aspect_ratio_policy,
// half_pixel_symmetric, CenterCropPad, scatter max/min, N-D GridSample),
// strings, integer types, and out-of-range indices. Expected values are
// worked out by hand or by a small loop written here from the spec.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "support/node_runner.h"
#include "support/test_support.h"

namespace onnxkit {
namespace {

using runtime::DataType;
using runtime::Shape;
using runtime::Tensor;
using testing::attr;
using testing::expect_tensor_near;
using testing::NodeInput;
using testing::run_node;
using testing::try_run_node;

Tensor iota(Shape shape, float start = 0) {
  std::vector<float> v(static_cast<size_t>(runtime::shape_size(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<float>(i);
  return Tensor::from<float>(std::move(shape), v);
}

Tensor i64(std::vector<int64_t> v) { return Tensor::from<int64_t>({static_cast<int64_t>(v.size())}, v); }

Tensor f32(std::vector<float> v) { return Tensor::from<float>({static_cast<int64_t>(v.size())}, v); }

// A deterministic spread of values in [-1, 1).
std::vector<float> wavy(size_t n, float phase) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(0.37f * static_cast<float>(i) + phase);
  return v;
}

void expect_error(const Result<std::vector<runtime::Datum>>& out, const std::vector<std::string>& fragments) {
  ASSERT_FALSE(out.ok()) << "expected an error";
  for (const std::string& f : fragments)
    EXPECT_NE(out.error().message().find(f), std::string::npos) << "'" << f << "' not in: " << out.error().message();
}

// --- Gather family -----------------------------------------------------------------

TEST(Indexing, GatherWrapsNegativeIndicesAndRefusesOutOfRange) {
  auto out = run_node({.op_type = "Gather", .opset = 13, .inputs = {{"x", iota({3, 2})}, {"i", i64({-1, 0})}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 2}, {4, 5, 0, 1}));
  expect_error(try_run_node({.op_type = "Gather", .opset = 13, .inputs = {{"x", iota({3, 2})}, {"i", i64({0, 3})}}}),
               {"element 1 is 3", "[-3, 3)"});
  expect_error(try_run_node({.op_type = "Gather", .opset = 13, .inputs = {{"x", iota({3, 2})}, {"i", i64({-4})}}}),
               {"is -4", "[-3, 3)"});
}

TEST(Indexing, GatherStringsWithAScalarIndex) {
  auto s = Tensor::from<std::string>({2, 3}, {"a", "b", "c", "d", "e", "f"});
  auto out = run_node({.op_type = "Gather",
                       .opset = 13,
                       .inputs = {{"x", s}, {"i", Tensor::from<int32_t>({}, {2})}},
                       .attributes = {attr("axis", 1)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<std::string>({2}, {"c", "f"}));
}

TEST(Indexing, GatherElementsRefusesOutOfRange) {
  auto indices = Tensor::from<int64_t>({2, 2}, {0, 2, 1, 0});
  expect_error(try_run_node({.op_type = "GatherElements",
                             .opset = 13,
                             .inputs = {{"x", iota({2, 2})}, {"i", indices}},
                             .attributes = {attr("axis", 1)}}),
               {"is 2", "[-2, 2)"});
  auto ok = run_node({.op_type = "GatherElements",
                      .opset = 13,
                      .inputs = {{"x", iota({2, 2})}, {"i", Tensor::from<int64_t>({2, 2}, {0, -1, 1, 0})}},
                      .attributes = {attr("axis", 1)}});
  expect_tensor_near(ok[0].tensor(), Tensor::from<float>({2, 2}, {0, 1, 3, 2}));
}

TEST(Indexing, GatherNDBatchDimsAndBounds) {
  auto data = Tensor::from<int32_t>({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  // Spec example 5, then the same with a negative index.
  auto out = run_node({.op_type = "GatherND",
                       .inputs = {{"x", data}, {"i", Tensor::from<int64_t>({2, 1}, {1, 0})}},
                       .attributes = {attr("batch_dims", 1)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int32_t>({2, 2}, {2, 3, 4, 5}));
  auto neg = run_node({.op_type = "GatherND",
                       .inputs = {{"x", data}, {"i", Tensor::from<int64_t>({2, 1}, {-1, -2})}},
                       .attributes = {attr("batch_dims", 1)}});
  expect_tensor_near(neg[0].tensor(), Tensor::from<int32_t>({2, 2}, {2, 3, 4, 5}));
  expect_error(try_run_node({.op_type = "GatherND",
                             .inputs = {{"x", data}, {"i", Tensor::from<int64_t>({2, 1}, {0, 2})}},
                             .attributes = {attr("batch_dims", 1)}}),
               {"is 2", "[-2, 2)"});
  expect_error(try_run_node({.op_type = "GatherND", .inputs = {{"x", data}, {"i", Tensor::from<int64_t>({1, 4}, {0, 0, 0, 0})}}}),
               {"last dim is 4"});
}

// --- Scatter family ------------------------------------------------------------------

TEST(Indexing, ScatterNDMaxAndMinFromOpset18) {
  auto data = f32({1, 2, 3, 4});
  auto indices = Tensor::from<int64_t>({3, 1}, {0, 0, 2});
  auto updates = f32({5, 0, 1});
  auto max = run_node({.op_type = "ScatterND",
                       .opset = 18,
                       .inputs = {{"d", data}, {"i", indices}, {"u", updates}},
                       .attributes = {attr("reduction", "max")}});
  expect_tensor_near(max[0].tensor(), f32({5, 2, 3, 4}));
  auto min = run_node({.op_type = "ScatterND",
                       .opset = 18,
                       .inputs = {{"d", data}, {"i", indices}, {"u", updates}},
                       .attributes = {attr("reduction", "min")}});
  expect_tensor_near(min[0].tensor(), f32({0, 2, 1, 4}));
  expect_error(try_run_node({.op_type = "ScatterND",
                             .opset = 16,
                             .inputs = {{"d", data}, {"i", indices}, {"u", updates}},
                             .attributes = {attr("reduction", "max")}}),
               {"reduction", "max"});
}

TEST(Indexing, ScatterNDRefusesOutOfRangeAndBadUpdates) {
  auto data = f32({1, 2, 3, 4, 5, 6, 7, 8});
  expect_error(try_run_node({.op_type = "ScatterND",
                             .opset = 13,
                             .inputs = {{"d", data}, {"i", Tensor::from<int64_t>({2, 1}, {4, 8})}, {"u", f32({9, 10})}}}),
               {"is 8", "[-8, 8)"});
  expect_error(try_run_node({.op_type = "ScatterND",
                             .opset = 13,
                             .inputs = {{"d", data}, {"i", Tensor::from<int64_t>({2, 1}, {4, 5})}, {"u", f32({9})}}}),
               {"updates has shape [1]", "[2]"});
}

TEST(Indexing, ScatterElementsMinAndStrings) {
  auto out = run_node({.op_type = "ScatterElements",
                       .opset = 18,
                       .inputs = {{"d", Tensor::from<float>({1, 5}, {1, 2, 3, 4, 5})},
                                  {"i", Tensor::from<int64_t>({1, 2}, {1, 1})},
                                  {"u", Tensor::from<float>({1, 2}, {1.1f, 2.1f})}},
                       .attributes = {attr("axis", 1), attr("reduction", "min")}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({1, 5}, {1, 1.1f, 3, 4, 5}));
  auto s = run_node({.op_type = "ScatterElements",
                     .opset = 16,
                     .inputs = {{"d", Tensor::from<std::string>({3}, {"a", "b", "c"})},
                                {"i", Tensor::from<int32_t>({2}, {2, -3})},
                                {"u", Tensor::from<std::string>({2}, {"x", "y"})}}});
  expect_tensor_near(s[0].tensor(), Tensor::from<std::string>({3}, {"y", "b", "x"}));
  expect_error(try_run_node({.op_type = "ScatterElements",
                             .opset = 16,
                             .inputs = {{"d", Tensor::from<std::string>({3}, {"a", "b", "c"})},
                                        {"i", Tensor::from<int32_t>({1}, {0})},
                                        {"u", Tensor::from<std::string>({1}, {"x"})}},
                             .attributes = {attr("reduction", "add")}}),
               {"strings"});
  expect_error(try_run_node({.op_type = "Scatter",
                             .opset = 9,
                             .inputs = {{"d", f32({0, 0})}, {"i", Tensor::from<int64_t>({1}, {-3})}, {"u", f32({1})}}}),
               {"is -3", "[-2, 2)"});
}

// --- Pad and CenterCropPad --------------------------------------------------------------

TEST(Indexing, PadAxesInputFromOpset18) {
  auto expected = Tensor::from<float>({2, 6}, {9, 0, 1, 2, 9, 9, 9, 3, 4, 5, 9, 9});
  for (int64_t axis : {1, -1}) {
    auto out =
        run_node({.op_type = "Pad",
                  .opset = 18,
                  .inputs = {{"x", iota({2, 3})}, {"p", i64({1, 2})}, {"v", Tensor::from<float>({}, {9})}, {"a", i64({axis})}}});
    expect_tensor_near(out[0].tensor(), expected);
  }
  expect_error(try_run_node({.op_type = "Pad",
                             .opset = 18,
                             .inputs = {{"x", iota({2, 3})}, {"p", i64({1, 2, 3, 4})}, {"", Tensor()}, {"a", i64({1})}}}),
               {"pads has 4 values for 1 axes"});
}

TEST(Indexing, PadWrapModeFromOpset19) {
  // The spec's example 4.
  auto data = Tensor::from<float>({3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f});
  auto out = run_node(
      {.op_type = "Pad", .opset = 19, .inputs = {{"x", data}, {"p", i64({2, 1, 1, 1})}}, .attributes = {attr("mode", "wrap")}});
  expect_tensor_near(out[0].tensor(),
                     Tensor::from<float>({6, 4}, {3.4f, 2.3f, 3.4f, 2.3f, 5.7f, 4.5f, 5.7f, 4.5f, 1.2f, 1.0f, 1.2f, 1.0f,
                                                  3.4f, 2.3f, 3.4f, 2.3f, 5.7f, 4.5f, 5.7f, 4.5f, 1.2f, 1.0f, 1.2f, 1.0f}));
  expect_error(try_run_node({.op_type = "Pad",
                             .opset = 18,
                             .inputs = {{"x", data}, {"p", i64({2, 1, 1, 1})}},
                             .attributes = {attr("mode", "wrap")}}),
               {"wrap"});
}

TEST(Indexing, PadReflectEdgeAndNegativePads) {
  auto x = f32({1, 2, 3, 4});
  auto reflect = run_node(
      {.op_type = "Pad", .opset = 13, .inputs = {{"x", x}, {"p", i64({2, 3})}}, .attributes = {attr("mode", "reflect")}});
  expect_tensor_near(reflect[0].tensor(), f32({3, 2, 1, 2, 3, 4, 3, 2, 1}));
  auto edge =
      run_node({.op_type = "Pad", .opset = 13, .inputs = {{"x", x}, {"p", i64({2, 1})}}, .attributes = {attr("mode", "edge")}});
  expect_tensor_near(edge[0].tensor(), f32({1, 1, 1, 2, 3, 4, 4}));
  auto crop = run_node({.op_type = "Pad", .opset = 13, .inputs = {{"x", x}, {"p", i64({-1, 2})}}});
  expect_tensor_near(crop[0].tensor(), f32({2, 3, 4, 0, 0}));
  expect_error(try_run_node({.op_type = "Pad", .opset = 13, .inputs = {{"x", x}, {"p", i64({-3, -2})}}}),
               {"remove more than its 4 elements"});
}

TEST(Indexing, PadFromAttributesBeforeOpset11) {
  auto out = run_node({.op_type = "Pad",
                       .opset = 10,
                       .inputs = {{"x", iota({2, 2}, 1)}},
                       .attributes = {attr("pads", std::vector<int64_t>{0, 1, 1, 0}), attr("value", 7.5f)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({3, 3}, {7.5f, 1, 2, 7.5f, 3, 4, 7.5f, 7.5f, 7.5f}));
}

TEST(Indexing, PadStringsWithAConstantValue) {
  auto out = run_node(
      {.op_type = "Pad",
       .opset = 13,
       .inputs = {
           {"x", Tensor::from<std::string>({2}, {"a", "b"})}, {"p", i64({1, 1})}, {"v", Tensor::from<std::string>({}, {"z"})}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<std::string>({4}, {"z", "a", "b", "z"}));
  expect_error(try_run_node({.op_type = "Pad",
                             .opset = 13,
                             .inputs = {{"x", Tensor::from<std::string>({2}, {"a", "b"})},
                                        {"p", i64({1, 1})},
                                        {"v", Tensor::from<float>({}, {0})}}}),
               {"constant_value is float", "string"});
}

TEST(Indexing, CenterCropPadCropsAndPadsAroundTheCenter) {
  // Axis 0: 3 -> 2 drops the last row; axis 1: 4 -> 7 pads one before, two after.
  auto both = run_node({.op_type = "CenterCropPad", .opset = 18, .inputs = {{"x", iota({3, 4})}, {"s", i64({2, 7})}}});
  expect_tensor_near(both[0].tensor(), Tensor::from<float>({2, 7}, {0, 0, 1, 2, 3, 0, 0, 0, 4, 5, 6, 7, 0, 0}));
  auto last = run_node({.op_type = "CenterCropPad",
                        .opset = 18,
                        .inputs = {{"x", iota({3, 4})}, {"s", i64({2})}},
                        .attributes = {attr("axes", std::vector<int64_t>{-1})}});
  expect_tensor_near(last[0].tensor(), Tensor::from<float>({3, 2}, {1, 2, 5, 6, 9, 10}));
  expect_error(try_run_node({.op_type = "CenterCropPad", .opset = 18, .inputs = {{"x", iota({3, 4})}, {"s", i64({2})}}}),
               {"shape has 1 values for 2 axes"});
}

// --- Resize and Upsample --------------------------------------------------------------------

TEST(Indexing, ResizeAxesResizeOnlyTheListedAxes) {
  auto x = iota({1, 1, 2, 2}, 1);
  auto out = run_node({.op_type = "Resize",
                       .opset = 18,
                       .inputs = {{"x", x}, {"", Tensor()}, {"s", f32({2, 2})}},
                       .attributes = {attr("axes", std::vector<int64_t>{2, 3})}});
  // half_pixel + round_prefer_floor: output 0..3 reads input 0, 0, 1, 1.
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({1, 1, 4, 4}, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
  auto width = run_node({.op_type = "Resize",
                         .opset = 18,
                         .inputs = {{"x", x}, {"", Tensor()}, {"", Tensor()}, {"z", i64({4})}},
                         .attributes = {attr("axes", std::vector<int64_t>{-1})}});
  expect_tensor_near(width[0].tensor(), Tensor::from<float>({1, 1, 2, 4}, {1, 1, 2, 2, 3, 3, 4, 4}));
}

TEST(Indexing, ResizeKeepAspectRatioPolicy) {
  auto x = iota({1, 1, 2, 4});
  // not_larger: scale min(3/2, 3/4) = 0.75, sizes round(1.5) = 2 and 3.
  // Rows read 0, 1 (1.5 rounds down); columns 0, 1, 3 (x = 0.17, 1.5, 2.83).
  auto smaller =
      run_node({.op_type = "Resize",
                .opset = 18,
                .inputs = {{"x", x}, {"", Tensor()}, {"", Tensor()}, {"z", i64({3, 3})}},
                .attributes = {attr("axes", std::vector<int64_t>{2, 3}), attr("keep_aspect_ratio_policy", "not_larger")}});
  expect_tensor_near(smaller[0].tensor(), Tensor::from<float>({1, 1, 2, 3}, {0, 1, 3, 4, 5, 7}));
  // not_smaller: scale max(3/2, 3/4) = 1.5, sizes 3 and 6.
  auto larger =
      run_node({.op_type = "Resize",
                .opset = 18,
                .inputs = {{"x", x}, {"", Tensor()}, {"", Tensor()}, {"z", i64({3, 3})}},
                .attributes = {attr("axes", std::vector<int64_t>{2, 3}), attr("keep_aspect_ratio_policy", "not_smaller")}});
  expect_tensor_near(larger[0].tensor(),
                     Tensor::from<float>({1, 1, 3, 6}, {0, 0, 1, 2, 2, 3, 0, 0, 1, 2, 2, 3, 4, 4, 5, 6, 6, 7}));
  expect_error(try_run_node({.op_type = "Resize",
                             .opset = 18,
                             .inputs = {{"x", x}, {"", Tensor()}, {"s", f32({1, 1, 2, 2})}},
                             .attributes = {attr("keep_aspect_ratio_policy", "not_larger")}}),
               {"keep_aspect_ratio_policy"});
}

TEST(Indexing, ResizeHalfPixelSymmetricFromOpset19) {
  // x[i] = i, so linear interpolation returns the input coordinate itself.
  // 4 * 0.6 = 2.4 -> 2 outputs; offset = 2 * (1 - 2 / 2.4) = 1/3.
  auto x = f32({0, 1, 2, 3});
  auto out = run_node({.op_type = "Resize",
                       .opset = 19,
                       .inputs = {{"x", x}, {"", Tensor()}, {"s", f32({0.6f})}},
                       .attributes = {attr("mode", "linear"), attr("coordinate_transformation_mode", "half_pixel_symmetric")}});
  const double scale = static_cast<double>(0.6f), offset = 2.0 * (1.0 - 2.0 / (4.0 * scale));
  expect_tensor_near(out[0].tensor(),
                     f32({static_cast<float>(offset + 0.5 / scale - 0.5), static_cast<float>(offset + 1.5 / scale - 0.5)}));
  expect_error(try_run_node({.op_type = "Resize",
                             .opset = 18,
                             .inputs = {{"x", x}, {"", Tensor()}, {"s", f32({0.6f})}},
                             .attributes = {attr("coordinate_transformation_mode", "half_pixel_symmetric")}}),
               {"half_pixel_symmetric"});
}

// The antialiased filter written from the spec: the kernel stretched by
// 1/scale when downscaling, weights normalized, taps past the edges reading
// the edge element.
std::vector<double> antialiased_1d(const std::vector<double>& x, double scale, bool cubic) {
  const int64_t n = static_cast<int64_t>(x.size()), out = static_cast<int64_t>(std::floor(n * scale));
  const double s = std::min(scale, 1.0), a = -0.75;
  std::vector<double> y;
  for (int64_t o = 0; o < out; ++o) {
    const double c = (o + 0.5) / scale - 0.5;
    double sum = 0, wsum = 0;
    for (int64_t p = static_cast<int64_t>(std::floor(c)) - 20; p <= static_cast<int64_t>(std::floor(c)) + 20; ++p) {
      const double d = std::abs((p - c) * s);
      double w;
      if (!cubic) w = std::max(0.0, 1 - d);
      else if (d <= 1) w = (a + 2) * d * d * d - (a + 3) * d * d + 1;
      else if (d < 2) w = a * d * d * d - 5 * a * d * d + 8 * a * d - 4 * a;
      else w = 0;
      sum += w * x[static_cast<size_t>(std::clamp<int64_t>(p, 0, n - 1))];
      wsum += w;
    }
    y.push_back(sum / wsum);
  }
  return y;
}

TEST(Indexing, ResizeAntialiasStretchesTheFilterWhenDownscaling) {
  std::vector<double> x = {0, 1, 4, 9, 16, 25, 36, 49, 64, 81, 100};
  for (bool cubic : {false, true})
    for (float scale : {0.5f, 0.3f}) {
      const std::vector<double> expected = antialiased_1d(x, static_cast<double>(scale), cubic);
      const int64_t n = static_cast<int64_t>(expected.size());
      const auto attributes = std::vector<onnx::AttributeProto>{attr("mode", cubic ? "cubic" : "linear"), attr("antialias", 1)};
      auto d = run_node({.op_type = "Resize",
                         .opset = 18,
                         .inputs = {{"x", Tensor::from<double>({11}, x)}, {"", Tensor()}, {"s", f32({scale})}},
                         .attributes = attributes});
      expect_tensor_near(d[0].tensor(), Tensor::from<double>({n}, expected), 1e-9, 1e-9);
      // float32 as two identical rows, scaled on the last axis only.
      std::vector<float> rows(x.begin(), x.end()), expected_rows(expected.begin(), expected.end());
      rows.insert(rows.end(), x.begin(), x.end());
      expected_rows.insert(expected_rows.end(), expected.begin(), expected.end());
      auto f = run_node({.op_type = "Resize",
                         .opset = 18,
                         .inputs = {{"x", Tensor::from<float>({2, 11}, rows)}, {"", Tensor()}, {"s", f32({1, scale})}},
                         .attributes = attributes});
      expect_tensor_near(f[0].tensor(), Tensor::from<float>({2, n}, expected_rows), 1e-4, 1e-5);
    }
}

// Nearest integer upscales of the width, 2x (FPN's) and 3x, with the height
// 2x and 1x, on maps large enough for two threads: y[h, w] = x[h / fh, w / fw]
// (asymmetric coordinates rounded down, as torch exports its nearest
// upsampling; half_pixel with round_prefer_floor picks the same).
TEST(Indexing, ResizeNearestIntegerUpscales) {
  const Tensor x = testing::random_tensor({2, 3, 37, 50}, 12);
  for (auto [fh, fw] : {std::pair<int64_t, int64_t>{2, 2}, {1, 3}, {2, 3}})
    for (auto [coordinates, rounding] : {std::pair{"asymmetric", "floor"}, {"half_pixel", "round_prefer_floor"}})
      for (int threads : {1, 2}) {
        SCOPED_TRACE(::testing::Message() << fh << "x" << fw << ", " << coordinates << ", " << threads << " threads");
        auto out =
            run_node({.op_type = "Resize",
                      .opset = 13,
                      .inputs = {{"x", x}, {"", Tensor()}, {"s", f32({1, 1, static_cast<float>(fh), static_cast<float>(fw)})}},
                      .attributes = {attr("coordinate_transformation_mode", coordinates), attr("nearest_mode", rounding)},
                      .threads = threads});
        Tensor expected(DataType::float32, {2, 3, 37 * fh, 50 * fw});
        for (int64_t p = 0; p < 6; ++p)
          for (int64_t h = 0; h < 37 * fh; ++h)
            for (int64_t w = 0; w < 50 * fw; ++w)
              expected.mutable_data<float>()[(p * 37 * fh + h) * 50 * fw + w] = x.data<float>()[(p * 37 + h / fh) * 50 + w / fw];
        expect_tensor_near(out[0].tensor(), expected, 0, 0);
      }
}

TEST(Indexing, ResizeTfCropAndResizeExtrapolates) {
  // The spec's extrapolation example.
  auto out = run_node({.op_type = "Resize",
                       .opset = 13,
                       .inputs = {{"x", iota({1, 1, 4, 4}, 1)},
                                  {"r", f32({0, 0, 0.4f, 0.6f, 1, 1, 1.2f, 1.7f})},
                                  {"", Tensor()},
                                  {"z", i64({1, 1, 3, 3})}},
                       .attributes = {attr("mode", "linear"), attr("coordinate_transformation_mode", "tf_crop_and_resize"),
                                      attr("extrapolation_value", 10.0f)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({1, 1, 3, 3}, {7.6f, 10, 10, 12.4f, 10, 10, 10, 10, 10}), 1e-4, 1e-4);
}

TEST(Indexing, ResizeStringsAndIntegers) {
  auto s =
      run_node({.op_type = "Resize",
                .opset = 13,
                .inputs = {{"x", Tensor::from<std::string>({2}, {"a", "b"})}, {"", Tensor()}, {"", Tensor()}, {"z", i64({4})}}});
  expect_tensor_near(s[0].tensor(), Tensor::from<std::string>({4}, {"a", "a", "b", "b"}));
  // align_corners: outputs at 0, 0.5, 1; the midpoint 127.5 rounds to 128.
  auto u = run_node({.op_type = "Resize",
                     .opset = 13,
                     .inputs = {{"x", Tensor::from<uint8_t>({2}, {0, 255})}, {"", Tensor()}, {"", Tensor()}, {"z", i64({3})}},
                     .attributes = {attr("mode", "linear"), attr("coordinate_transformation_mode", "align_corners")}});
  expect_tensor_near(u[0].tensor(), Tensor::from<uint8_t>({3}, {0, 128, 255}));
  expect_error(
      try_run_node(
          {.op_type = "Resize",
           .opset = 13,
           .inputs = {{"x", Tensor::from<std::string>({2}, {"a", "b"})}, {"", Tensor()}, {"", Tensor()}, {"z", i64({4})}},
           .attributes = {attr("mode", "linear")}}),
      {"linear interpolation needs numbers"});
}

TEST(Indexing, ResizeRefusesBadScalesAndSizes) {
  auto x = iota({1, 1, 2, 2});
  expect_error(try_run_node({.op_type = "Resize",
                             .opset = 13,
                             .inputs = {{"x", x}, {"", Tensor()}, {"s", f32({1, 1, 2, 2})}, {"z", i64({1, 1, 4, 4})}}}),
               {"both scales and sizes"});
  expect_error(try_run_node({.op_type = "Resize", .opset = 13, .inputs = {{"x", x}, {"", Tensor()}, {"s", f32({1, 1, -2, 2})}}}),
               {"scales element 2 is -2"});
  expect_error(try_run_node({.op_type = "Resize", .opset = 13, .inputs = {{"x", x}, {"", Tensor()}, {"s", f32({2, 2})}}}),
               {"scales has 2 values"});
  expect_error(
      try_run_node({.op_type = "Resize", .opset = 13, .inputs = {{"x", x}, {"", Tensor()}, {"s", f32({1, 1, 1e30f, 1e30f})}}}),
      {"scales element 2"});
}

// Bilinear resampling of [N, C, H, W] written from the spec: half_pixel
// coordinates, neighbours clamped to the edge.
std::vector<double> bilinear(const std::vector<float>& x, Shape in, int64_t oh, int64_t ow) {
  const int64_t planes = in[0] * in[1], h = in[2], w = in[3];
  const double sh = static_cast<double>(oh) / h, sw = static_cast<double>(ow) / w;
  std::vector<double> y;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        const double cy = std::clamp((i + 0.5) / sh - 0.5, 0.0, h - 1.0), cx = std::clamp((j + 0.5) / sw - 0.5, 0.0, w - 1.0);
        const int64_t y0 = static_cast<int64_t>(cy), x0 = static_cast<int64_t>(cx);
        const int64_t y1 = std::min(y0 + 1, h - 1), x1 = std::min(x0 + 1, w - 1);
        const double fy = cy - y0, fx = cx - x0;
        auto at = [&](int64_t r, int64_t c) { return static_cast<double>(x[static_cast<size_t>((p * h + r) * w + c)]); };
        y.push_back((1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x1)) + fy * ((1 - fx) * at(y1, x0) + fx * at(y1, x1)));
      }
  return y;
}

TEST(Indexing, ResizeBilinearImageMatchesAnIndependentLoop) {
  struct Case {
    Shape in;
    int64_t oh, ow;
  };
  // Up, down and unchanged axes; the last cases are large enough to split
  // across threads: by planes, and by rows of one plane (upscaling runs in
  // two passes, across then down).
  for (const Case& c : {Case{{2, 3, 17, 23}, 40, 11}, Case{{2, 3, 17, 23}, 17, 60}, Case{{2, 3, 17, 23}, 5, 23},
                        Case{{1, 4, 64, 64}, 128, 96}, Case{{1, 21, 28, 28}, 224, 224}, Case{{1, 1, 40, 30}, 300, 200}}) {
    const int64_t n = c.in[0], ch = c.in[1];
    std::vector<float> data = wavy(static_cast<size_t>(runtime::shape_size(c.in)), 0.3f);
    std::vector<double> expected = bilinear(data, c.in, c.oh, c.ow);
    const Shape out{n, ch, c.oh, c.ow};
    for (int threads : {1, 2}) {
      auto f = run_node({.op_type = "Resize",
                         .opset = 13,
                         .inputs = {{"x", Tensor::from<float>(c.in, data)}, {"", Tensor()}, {"", Tensor()}, {"z", i64(out)}},
                         .attributes = {attr("mode", "linear")},
                         .threads = threads});
      std::vector<float> ef(expected.begin(), expected.end());
      expect_tensor_near(f[0].tensor(), Tensor::from<float>(out, ef), 1e-5, 1e-5);
    }
    // float64 takes the general N-D path.
    std::vector<double> data64(data.begin(), data.end());
    auto d = run_node({.op_type = "Resize",
                       .opset = 13,
                       .inputs = {{"x", Tensor::from<double>(c.in, data64)}, {"", Tensor()}, {"", Tensor()}, {"z", i64(out)}},
                       .attributes = {attr("mode", "linear")}});
    expect_tensor_near(d[0].tensor(), Tensor::from<double>(out, expected), 1e-9, 1e-9);
  }
}

TEST(Indexing, UpsampleScalesAttributeAtOpset7) {
  auto out = run_node({.op_type = "Upsample",
                       .opset = 7,
                       .inputs = {{"x", iota({1, 1, 2, 2}, 1)}},
                       .attributes = {attr("scales", std::vector<float>{1, 1, 2, 3})}});
  expect_tensor_near(out[0].tensor(),
                     Tensor::from<float>({1, 1, 4, 6}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}));
}

// --- selection ops ---------------------------------------------------------------------------

TEST(Indexing, NonZeroOnStrings) {
  auto out =
      run_node({.op_type = "NonZero", .opset = 13, .inputs = {{"x", Tensor::from<std::string>({2, 2}, {"", "a", "b", ""})}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<int64_t>({2, 2}, {0, 1, 1, 0}));
}

TEST(Indexing, OneHotNegativeIndicesCountFromTheEndFromOpset11) {
  auto indices = Tensor::from<int64_t>({2}, {-1, 1});
  auto values = f32({0, 1});
  auto v11 = run_node(
      {.op_type = "OneHot", .opset = 11, .inputs = {{"i", indices}, {"d", Tensor::from<float>({}, {3.0f})}, {"v", values}}});
  expect_tensor_near(v11[0].tensor(), Tensor::from<float>({2, 3}, {0, 0, 1, 0, 1, 0}));
  auto v9 = run_node(
      {.op_type = "OneHot", .opset = 9, .inputs = {{"i", indices}, {"d", Tensor::from<float>({}, {3.0f})}, {"v", values}}});
  expect_tensor_near(v9[0].tensor(), Tensor::from<float>({2, 3}, {0, 0, 0, 0, 1, 0}));
  expect_error(
      try_run_node(
          {.op_type = "OneHot", .opset = 11, .inputs = {{"i", indices}, {"d", Tensor::from<int64_t>({}, {-2})}, {"v", values}}}),
      {"depth must be a positive number"});
}

TEST(Indexing, CompressRefusesATrueConditionPastTheAxis) {
  auto cond = Tensor::from<bool>({4}, {false, true, false, true});
  expect_error(
      try_run_node(
          {.op_type = "Compress", .opset = 11, .inputs = {{"x", iota({2, 3})}, {"c", cond}}, .attributes = {attr("axis", 1)}}),
      {"condition element 3 is true", "only 3"});
  auto ok = run_node({.op_type = "Compress",
                      .opset = 11,
                      .inputs = {{"x", Tensor::from<std::string>({3}, {"a", "b", "c"})},
                                 {"c", Tensor::from<bool>({4}, {true, false, true, false})}}});
  expect_tensor_near(ok[0].tensor(), Tensor::from<std::string>({2}, {"a", "c"}));
}

TEST(Indexing, ReverseSequenceRefusesLengthsPastTheTimeAxis) {
  expect_error(try_run_node({.op_type = "ReverseSequence", .opset = 10, .inputs = {{"x", iota({3, 2})}, {"l", i64({3, 4})}}}),
               {"element 1 is 4", "[0, 3]"});
}

TEST(Indexing, UniqueSortedStringsAndUnsortedSlices) {
  auto s = run_node({.op_type = "Unique",
                     .opset = 11,
                     .inputs = {{"x", Tensor::from<std::string>({4}, {"b", "a", "b", "c"})}},
                     .num_outputs = 4});
  expect_tensor_near(s[0].tensor(), Tensor::from<std::string>({3}, {"a", "b", "c"}));
  expect_tensor_near(s[1].tensor(), i64({1, 0, 3}));
  expect_tensor_near(s[2].tensor(), i64({1, 0, 1, 2}));
  expect_tensor_near(s[3].tensor(), i64({1, 2, 1}));
  auto rows = run_node({.op_type = "Unique",
                        .opset = 11,
                        .inputs = {{"x", Tensor::from<int32_t>({3, 3}, {2, 3, 4, 1, 0, 0, 2, 3, 4})}},
                        .attributes = {attr("axis", 0), attr("sorted", 0)},
                        .num_outputs = 4});
  expect_tensor_near(rows[0].tensor(), Tensor::from<int32_t>({2, 3}, {2, 3, 4, 1, 0, 0}));
  expect_tensor_near(rows[1].tensor(), i64({0, 1}));
  expect_tensor_near(rows[2].tensor(), i64({0, 1, 0}));
  expect_tensor_near(rows[3].tensor(), i64({2, 1}));
}

// --- GridSample ------------------------------------------------------------------------------

// Trilinear sampling of one [C, D, H, W] volume written from the spec
// (zeros padding: taps outside read 0).
double trilinear(const std::vector<float>& x, int64_t c, const int64_t dims[3], const float g[3], bool align) {
  double coord[3];
  for (int k = 0; k < 3; ++k) {
    const double n = g[2 - k], size = static_cast<double>(dims[k]);  // grid lists (x, y, z)
    coord[k] = align ? (n + 1) / 2 * (size - 1) : ((n + 1) * size - 1) / 2;
  }
  double sum = 0;
  for (int corner = 0; corner < 8; ++corner) {
    double w = 1;
    int64_t offset = c;
    bool inside = true;
    for (int k = 0; k < 3; ++k) {
      const int64_t base = static_cast<int64_t>(std::floor(coord[k]));
      const int64_t p = base + ((corner >> k) & 1);
      const double f = coord[k] - base;
      w *= ((corner >> k) & 1) ? f : 1 - f;
      inside = inside && p >= 0 && p < dims[k];
      offset = offset * dims[k] + p;
    }
    if (inside) sum += w * x[static_cast<size_t>(offset)];
  }
  return sum;
}

TEST(Indexing, GridSampleVolumetricLinearFromOpset20) {
  const int64_t dims[3] = {2, 3, 4};
  std::vector<float> x = wavy(2 * 2 * 3 * 4, 1.0f);
  std::vector<float> grid = wavy(1 * 2 * 3 * 2 * 3, 0.2f);
  for (float& v : grid) v *= 1.2f;  // some points fall outside
  for (bool align : {false, true}) {
    auto out =
        run_node({.op_type = "GridSample",
                  .opset = 20,
                  .inputs = {{"x", Tensor::from<float>({1, 2, 2, 3, 4}, x)}, {"g", Tensor::from<float>({1, 2, 3, 2, 3}, grid)}},
                  .attributes = {attr("align_corners", align ? 1 : 0)}});
    std::vector<float> expected;
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t p = 0; p < 12; ++p)
        expected.push_back(static_cast<float>(trilinear(x, c, dims, &grid[static_cast<size_t>(p * 3)], align)));
    expect_tensor_near(out[0].tensor(), Tensor::from<float>({1, 2, 2, 3, 2}, expected), 1e-5, 1e-5);
  }
}

TEST(Indexing, GridSampleNearestBorderAndRankChecks) {
  // 1x1x2x3 image; points far outside clamp to the border.
  auto x = iota({1, 1, 2, 3});
  auto grid = Tensor::from<float>({1, 1, 3, 2}, {-5, -5, 5, 5, 0, 0});
  auto out = run_node({.op_type = "GridSample",
                       .opset = 16,
                       .inputs = {{"x", x}, {"g", grid}},
                       .attributes = {attr("mode", "nearest"), attr("padding_mode", "border")}});
  // (0, 0) is x = 1, y = 0.5: ties go to the even index, row 0.
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({1, 1, 1, 3}, {0, 5, 1}));
  expect_error(try_run_node({.op_type = "GridSample",
                             .opset = 16,
                             .inputs = {{"x", iota({1, 1, 2, 2, 2})}, {"g", Tensor::from<float>({1, 1, 1, 1, 3}, {0, 0, 0})}}}),
               {"4-D"});
  expect_error(
      try_run_node(
          {.op_type = "GridSample", .opset = 20, .inputs = {{"x", x}, {"g", Tensor::from<float>({1, 1, 1, 3}, {0, 0, 0})}}}),
      {"grid has shape"});
}

TEST(Indexing, GridSampleNearestOnStrings) {
  // Width 2: x = -1 lands on pixel 0, 0.9 on pixel 1 (at 1.4), 3 outside (zeros: "").
  auto out = run_node({.op_type = "GridSample",
                       .opset = 20,
                       .inputs = {{"x", Tensor::from<std::string>({1, 1, 1, 2}, {"a", "b"})},
                                  {"g", Tensor::from<float>({1, 1, 3, 2}, {-1, 0, 0.9f, 0, 3, 0})}},
                       .attributes = {attr("mode", "nearest")}});
  expect_tensor_near(out[0].tensor(), Tensor::from<std::string>({1, 1, 1, 3}, {"a", "b", ""}));
  expect_error(try_run_node({.op_type = "GridSample",
                             .opset = 20,
                             .inputs = {{"x", Tensor::from<std::string>({1, 1, 1, 2}, {"a", "b"})},
                                        {"g", Tensor::from<float>({1, 1, 1, 2}, {0, 0})}}}),
               {"linear sampling needs numbers"});
}

// AffineGrid (opset 20) against torch.nn.functional.affine_grid (torch 1.13),
// whose outputs are pasted.
TEST(AffineGrid, MatchesTorchIn2DBothAlignments) {
  auto theta = Tensor::from<float>({1, 2, 3}, {1.0f, 0.5f, 0.1f, -0.2f, 2.0f, 0.3f});
  auto size = Tensor::from<int64_t>({4}, {1, 1, 2, 3});
  auto edges = run_node({.op_type = "AffineGrid", .opset = 20, .inputs = {{"theta", theta}, {"size", size}}});
  expect_tensor_near(edges[0].tensor(),
                     Tensor::from<float>({1, 2, 3, 2}, {-0.81666666f, -0.56666666f, -0.15f, -0.7f, 0.51666671f, -0.83333331f,
                                                        -0.31666669f, 1.4333334f, 0.35f, 1.3f, 1.0166667f, 1.1666667f}));
  auto centers = run_node({.op_type = "AffineGrid",
                           .opset = 20,
                           .inputs = {{"theta", theta}, {"size", size}},
                           .attributes = {attr("align_corners", int64_t{1})}});
  expect_tensor_near(centers[0].tensor(), Tensor::from<float>({1, 2, 3, 2}, {-1.4f, -1.5f, -0.4f, -1.7f, 0.6f, -1.9f, -0.4f, 2.5f,
                                                                             0.6f, 2.3f, 1.6f, 2.1f}));
}

TEST(AffineGrid, MatchesTorchIn3D) {
  auto theta = Tensor::from<float>({1, 3, 4}, {1, 0, 0.5f, 0.1f, 0, 1, 0, 0, 0.25f, 0, 2, -1});
  auto out = run_node({.op_type = "AffineGrid",
                       .opset = 20,
                       .inputs = {{"theta", theta}, {"size", Tensor::from<int64_t>({5}, {1, 2, 2, 1, 2})}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({1, 2, 1, 2, 3}, {-0.65f, 0, -2.125f, 0.35f, 0, -1.875f, -0.15f, 0,
                                                                            -0.125f, 0.85f, 0, 0.125f}));
  auto bad = try_run_node(
      {.op_type = "AffineGrid", .opset = 20, .inputs = {{"theta", theta}, {"size", Tensor::from<int64_t>({4}, {1, 2, 2, 2})}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("theta must be [1, 2, 3]"), std::string::npos) << bad.error().message();
}

// TensorScatter (opset 24): per-batch write indices in linear mode (the
// backend data writes at one index), the same wrapping in circular mode,
// and a linear write past the cache's end.
TEST(IndexingTensorScatter, WriteIndicesPerBatchEntry) {
  // Caches [batch 2, sequence 3, 1], updates of 2 positions.
  auto past = Tensor::from<float>({2, 3, 1}, {0, 0, 0, 0, 0, 0});
  auto update = Tensor::from<float>({2, 2, 1}, {1, 2, 3, 4});
  auto out = run_node({.op_type = "TensorScatter",
                       .opset = 24,
                       .inputs = {{"past", past}, {"update", update}, {"w", Tensor::from<int64_t>({2}, {1, 0})}}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 3, 1}, {0, 1, 2, 3, 4, 0}));
  out = run_node({.op_type = "TensorScatter",
                  .opset = 24,
                  .inputs = {{"past", past}, {"update", update}, {"w", Tensor::from<int64_t>({2}, {2, 0})}},
                  .attributes = {attr("mode", "circular")}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 3, 1}, {2, 0, 1, 3, 4, 0}));
  auto bad = try_run_node({.op_type = "TensorScatter",
                           .opset = 24,
                           .inputs = {{"past", past}, {"update", update}, {"w", Tensor::from<int64_t>({2}, {2, 0})}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("write_indices[0] is 2"), std::string::npos) << bad.error().message();
}

}  // namespace
}  // namespace onnxkit
