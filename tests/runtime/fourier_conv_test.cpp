// A Conv whose filters are a windowed Fourier basis runs as FFTs
// (kernels/nn/fourier_conv.h): which filters are taken, and the results
// against the convolution's direct sum in double precision, written here,
// through the class and through a Conv node at 1 and 2 threads.

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <numbers>

#include "runtime/kernels/nn/fourier_conv.h"
#include "support/node_runner.h"
#include "support/test_support.h"

namespace onnxkit {
namespace {

using runtime::Tensor;
using runtime::nn::FourierConv;

struct Basis {
  int64_t length = 256, bins = 129;
  int64_t window_length = 0;  // 0: the whole frame; else a centred Hann of this length, zeros around it
  double imaginary_sign = 1;  // rows bins.. = -sign w sin
  bool float_angles = false;  // angles rounded to float32 first, as torch computes them by default
};

// The DFT rows times a periodic Hann window, made in double precision and
// rounded once, as np.fft.fft(np.eye(N)) * window is.
Tensor make_basis(const Basis& b) {
  const int64_t n = b.length, span = b.window_length > 0 ? b.window_length : n, offset = (n - span) / 2;
  Tensor w(runtime::DataType::float32, {2 * b.bins, 1, n});
  for (int64_t k = 0; k < b.bins; ++k)
    for (int64_t t = 0; t < n; ++t) {
      const double window = t < offset || t >= offset + span
                                ? 0.0
                                : 0.5 - 0.5 * std::cos(2 * std::numbers::pi * static_cast<double>(t - offset) / span);
      double angle = 2 * std::numbers::pi * static_cast<double>(k * t) / static_cast<double>(n);
      if (b.float_angles) angle = static_cast<float>(2 * std::numbers::pi) * static_cast<float>(k * t) / static_cast<float>(n);
      w.mutable_data<float>()[k * n + t] = static_cast<float>(window * std::cos(angle));
      w.mutable_data<float>()[(b.bins + k) * n + t] = static_cast<float>(-b.imaginary_sign * window * std::sin(angle));
    }
  return w;
}

TEST(FourierConv, TakesWindowedBasesMadeInDoublePrecision) {
  EXPECT_TRUE(FourierConv::recognize(make_basis({})));                                                   // Silero's 258 x 256
  EXPECT_TRUE(FourierConv::recognize(make_basis({.imaginary_sign = -1})));                               // +sin rows
  EXPECT_TRUE(FourierConv::recognize(make_basis({.length = 64, .bins = 20})));                           // fewer bins
  EXPECT_TRUE(FourierConv::recognize(make_basis({.length = 1024, .bins = 513, .window_length = 800})));  // Tacotron 2
  EXPECT_TRUE(FourierConv::recognize(make_basis({.length = 8, .bins = 5})));
}

TEST(FourierConv, LeavesOtherFiltersToTheConvolution) {
  // Rounded angles put the rows 4e-5 off the basis: the FFT would not
  // compute what the model's filters say.
  EXPECT_FALSE(FourierConv::recognize(make_basis({.float_angles = true})));
  Tensor nudged = make_basis({});
  nudged.mutable_data<float>()[3 * 256 + 100] += 2e-6f;
  EXPECT_FALSE(FourierConv::recognize(nudged));
  Tensor with_nan = make_basis({});
  with_nan.mutable_data<float>()[200 * 256 + 7] = std::nanf("");
  EXPECT_FALSE(FourierConv::recognize(with_nan));
  EXPECT_FALSE(FourierConv::recognize(Tensor::from<float>({258, 1, 256}, std::vector<float>(258 * 256))));  // zero window
  EXPECT_FALSE(FourierConv::recognize(testing::random_tensor({258, 1, 256}, 1)));                           // learned filters
  // N not a power of two; an odd row count; more bins than N/2 + 1; two input channels.
  Tensor not_power_of_two(runtime::DataType::float32, {2 * 101, 1, 200});
  for (int64_t k = 0; k < 101; ++k)
    for (int64_t t = 0; t < 200; ++t)
      not_power_of_two.mutable_data<float>()[k * 200 + t] =
          static_cast<float>(std::cos(2 * std::numbers::pi * static_cast<double>(k * t) / 200));
  EXPECT_FALSE(FourierConv::recognize(not_power_of_two));
  const Tensor basis = make_basis({.length = 16, .bins = 9});
  EXPECT_FALSE(FourierConv::recognize(
      Tensor::from<float>({17, 1, 16}, std::vector<float>(basis.data<float>(), basis.data<float>() + 17 * 16))));
  EXPECT_FALSE(FourierConv::recognize(make_basis({.length = 16, .bins = 10})));
  // Two input channels whose first 18 x 16 values are the whole basis: read
  // as one channel they would pass.
  std::vector<float> two_channels(basis.data<float>(), basis.data<float>() + 18 * 16);
  two_channels.insert(two_channels.end(), two_channels.begin(), two_channels.end());
  EXPECT_FALSE(FourierConv::recognize(Tensor::from<float>({18, 2, 16}, two_channels)));
}

struct Signal {
  Basis basis;
  int64_t batch = 1, samples = 16256, stride = 128, pad_begin = 0, pad_end = 0;
  bool bias = false;
};

// y[b, o, t] = bias[o] + sum_n x[b, t * stride + n - pad_begin] w[o, n].
Tensor direct_sum(const Signal& s, const Tensor& x, const Tensor& w, const Tensor* bias) {
  const int64_t n = w.dim(2), rows = w.dim(0), out = (s.samples + s.pad_begin + s.pad_end - n) / s.stride + 1;
  Tensor y(runtime::DataType::float32, {s.batch, rows, out});
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t o = 0; o < rows; ++o)
      for (int64_t t = 0; t < out; ++t) {
        double sum = bias != nullptr ? bias->data<float>()[o] : 0.0;
        for (int64_t i = 0; i < n; ++i) {
          const int64_t at = t * s.stride + i - s.pad_begin;
          if (at >= 0 && at < s.samples)
            sum += static_cast<double>(x.data<float>()[b * s.samples + at]) * w.data<float>()[o * n + i];
        }
        y.mutable_data<float>()[(b * rows + o) * out + t] = static_cast<float>(sum);
      }
  return y;
}

void expect_matches_direct_sum(const Signal& s) {
  SCOPED_TRACE(fmt::format("N {}, {} bins, {} samples, stride {}, pads {} {}", s.basis.length, s.basis.bins, s.samples, s.stride,
                           s.pad_begin, s.pad_end));
  const Tensor w = make_basis(s.basis), x = testing::random_tensor({s.batch, 1, s.samples}, 2);
  const Tensor bias = testing::random_tensor({2 * s.basis.bins}, 3);
  const Tensor expected = direct_sum(s, x, w, s.bias ? &bias : nullptr);
  // Sums of up to N/2 products of magnitude <= 1.
  const double atol = 2e-6 * static_cast<double>(s.basis.length);

  const std::optional<FourierConv> conv = FourierConv::recognize(w);
  ASSERT_TRUE(conv);
  runtime::ConvParams p{.batch = s.batch, .in_channels = 1, .out_channels = 2 * s.basis.bins};
  p.window = {.in = {s.samples},
              .kernel = {s.basis.length},
              .strides = {s.stride},
              .dilations = {1},
              .pads_begin = {s.pad_begin},
              .pads_end = {s.pad_end},
              .out = {expected.dim(2)}};
  ASSERT_TRUE(FourierConv::fits(p));
  Tensor y(runtime::DataType::float32, expected.shape());
  conv->run(p, x.data<float>(), s.bias ? bias.data<float>() : nullptr, y.mutable_data<float>());
  testing::expect_tensor_near(y, expected, atol, 1e-5);

  for (int threads : {1, 2}) {
    SCOPED_TRACE(fmt::format("Conv node, {} threads", threads));
    testing::NodeSpec spec{.op_type = "Conv", .threads = threads};
    spec.inputs = {{"x", x}, {"w", w, true}};
    if (s.bias) spec.inputs.push_back({"b", bias, true});
    spec.attributes = {testing::attr("strides", std::vector<int64_t>{s.stride}),
                       testing::attr("pads", std::vector<int64_t>{s.pad_begin, s.pad_end})};
    testing::expect_tensor_near(testing::run_node(spec)[0].tensor(), expected, atol, 1e-5);
  }
}

TEST(FourierConv, MatchesTheDirectSum) {
  expect_matches_direct_sum({});  // Silero over a second of reflect-padded audio: 126 frames, 8 blocks
  expect_matches_direct_sum({.batch = 2, .samples = 640, .bias = true});  // a streaming chunk: 4 frames
  // Frames reaching into the pads, a stride that does not divide N, a last
  // block of 5 frames, +sin rows, fewer bins.
  expect_matches_direct_sum({.basis = {.length = 64, .bins = 20, .imaginary_sign = -1},
                             .batch = 3,
                             .samples = 500,
                             .stride = 7,
                             .pad_begin = 40,
                             .pad_end = 17});
  // A window shorter than the frame; frames longer than the signal.
  expect_matches_direct_sum({.basis = {.length = 1024, .bins = 513, .window_length = 800},
                             .samples = 700,
                             .stride = 256,
                             .pad_begin = 512,
                             .pad_end = 512});
  expect_matches_direct_sum({.basis = {.length = 8, .bins = 5}, .samples = 41, .stride = 1});
}

}  // namespace
}  // namespace onnxkit
