// Signal kernels (windows, DFT, STFT, MelWeightMatrix) on what the backend
// data leaves out: DFT opset 20 with its axis input, lengths that are not
// powers of two, onesided and IRFFT, dft_length padding and truncation,
// complex inputs, other element types, and bad input.
//
// Expected values are worked by hand or computed with numpy (np.fft.*,
// np.hanning, np.blackman) by .venv/bin/python, as each comment says; long
// transforms are checked against the direct sum of the DFT's definition.

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>
#include <random>

#include "support/node_runner.h"

namespace onnxkit {
namespace {

using runtime::DataType;
using runtime::Float16;
using runtime::Tensor;
using testing::attr;
using testing::expect_tensor_near;
using testing::NodeSpec;
using testing::run_node;
using testing::try_run_node;

Tensor scalar(int64_t v) { return Tensor::from<int64_t>({}, {v}); }

Tensor run(const NodeSpec& spec) { return run_node(spec)[0].tensor(); }

void expect_error(const NodeSpec& spec, const std::string& needle) {
  auto out = try_run_node(spec);
  ASSERT_FALSE(out.ok()) << spec.op_type << ": expected an error containing '" << needle << "'";
  EXPECT_NE(out.error().message().find(needle), std::string::npos) << out.error().message();
}

// --- windows -------------------------------------------------------------------------

Tensor window(const std::string& op, int64_t size, int periodic) {
  return run({.op_type = op, .inputs = {{"size", scalar(size)}}, .attributes = {attr("periodic", periodic)}});
}

TEST(SignalWindow, HannPeriodicAndSymmetric) {
  // sin^2(pi n / N): N = 4 periodic, N = 4 symmetric over 5 points (by hand).
  expect_tensor_near(window("HannWindow", 4, 1), Tensor::from<float>({4}, {0, 0.5f, 1, 0.5f}));
  expect_tensor_near(window("HannWindow", 5, 0), Tensor::from<float>({5}, {0, 0.5f, 1, 0.5f, 0}));
  // np.hanning(8)[:7], the periodic window of 7 points.
  expect_tensor_near(window("HannWindow", 7, 1), Tensor::from<float>({7}, {0, 0.188255099f, 0.611260467f, 0.950484434f,
                                                                           0.950484434f, 0.611260467f, 0.188255099f}));
}

TEST(SignalWindow, HammingUsesTheSpecCoefficients) {
  // 25/46 - 21/46 cos(2 pi n / N) by hand: N = 4 gives 4/46, 25/46, 1, 25/46.
  const float a = 25.0f / 46, ends = 4.0f / 46;
  expect_tensor_near(window("HammingWindow", 4, 1), Tensor::from<float>({4}, {ends, a, 1, a}));
  expect_tensor_near(window("HammingWindow", 5, 0), Tensor::from<float>({5}, {ends, a, 1, a, ends}));
  // numpy: 25/46 - 21/46 * np.cos(2 * np.pi * np.arange(6) / 5)
  expect_tensor_near(window("HammingWindow", 6, 0), Tensor::from<float>({6}, {0.086956522f, 0.402405285f, 0.912812106f,
                                                                              0.912812106f, 0.402405285f, 0.086956522f}));
}

TEST(SignalWindow, BlackmanPeriodicAndSymmetric) {
  // 0.42 - 0.5 cos(2 pi n / 4) + 0.08 cos(4 pi n / 4) by hand: 0, 0.34, 1, 0.34.
  expect_tensor_near(window("BlackmanWindow", 4, 1), Tensor::from<float>({4}, {0, 0.34f, 1, 0.34f}));
  // np.blackman(7)
  expect_tensor_near(window("BlackmanWindow", 7, 0), Tensor::from<float>({7}, {0, 0.13f, 0.63f, 1, 0.63f, 0.13f, 0}));
}

TEST(SignalWindow, OutputDatatypeInt32SizeAndOnePoint) {
  auto hann = run({.op_type = "HannWindow",
                   .inputs = {{"size", Tensor::from<int32_t>({}, {4})}},
                   .attributes = {attr("output_datatype", static_cast<int64_t>(DataType::float64))}});
  expect_tensor_near(hann, Tensor::from<double>({4}, {0, 0.5, 1, 0.5}));
  // Integer outputs truncate: only the peak of a Hann window is 1.
  auto as_int = run({.op_type = "HannWindow",
                     .inputs = {{"size", scalar(4)}},
                     .attributes = {attr("output_datatype", static_cast<int64_t>(DataType::int64))}});
  expect_tensor_near(as_int, Tensor::from<int64_t>({4}, {0, 0, 1, 0}));
  // One symmetric point has no period; numpy (np.hanning(1)) gives 1.
  expect_tensor_near(window("HannWindow", 1, 0), Tensor::from<float>({1}, {1}));
}

TEST(SignalWindow, RejectsBadSizeAndType) {
  for (const std::string op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) {
    expect_error({.op_type = op, .inputs = {{"size", scalar(0)}}}, "size must be in [1,");
    expect_error({.op_type = op, .inputs = {{"size", scalar(-3)}}}, "got -3");
    expect_error({.op_type = op, .inputs = {{"size", Tensor::from<int64_t>({2}, {4, 4})}}}, "size must be a scalar");
    expect_error({.op_type = op, .inputs = {{"size", Tensor::from<float>({}, {4})}}}, "expected an int64");
    expect_error({.op_type = op,
                  .inputs = {{"size", scalar(4)}},
                  .attributes = {attr("output_datatype", static_cast<int64_t>(DataType::string))}},
                 "is not a number type");
  }
}

// --- DFT -----------------------------------------------------------------------------

// Interleaved (real, imaginary) pairs.
Tensor complex_tensor(std::vector<int64_t> shape, std::vector<float> pairs) {
  return Tensor::from<float>(std::move(shape), pairs);
}

TEST(SignalDft, FourPointTransformByHand) {
  // [1, 2, 3, 4] -> [10, -2+2i, -2, -2-2i], along the default axis 1 (opset 17).
  auto y = run({.op_type = "DFT", .inputs = {{"x", Tensor::from<float>({1, 4, 1}, {1, 2, 3, 4})}}});
  expect_tensor_near(y, complex_tensor({1, 4, 2}, {10, 0, -2, 2, -2, 0, -2, -2}));
}

TEST(SignalDft, Opset20AxisInputAndOddLengths) {
  // x is [5, 2, 1], the DFT runs down axis 0 (length 5) for each column.
  // numpy: np.fft.fft([[1,2],[3,-1],[0,4],[2,2],[-1,5]], axis=0)
  auto x = Tensor::from<float>({5, 2, 1}, {1, 2, 3, -1, 0, 4, 2, 2, -1, 5});
  auto y = run({.op_type = "DFT", .opset = 20, .inputs = {{"x", x}, {"", {}}, {"axis", scalar(0)}}});
  expect_tensor_near(y, complex_tensor({5, 2, 2}, {5, 0,          12,         0,         0, -2.628656f, -1.618034f, 4.530769f,
                                                   0, -4.253254f, 0.618034f,  5.428825f, 0, 4.253254f,  0.618034f,  -5.428825f,
                                                   0, 2.628656f,  -1.618034f, -4.530769f}));
  // Axis -2 is the default of opset 20. numpy: np.fft.fft([1,2,0,-1,3,5,2])
  auto x7 = Tensor::from<float>({1, 7, 1}, {1, 2, 0, -1, 3, 5, 2});
  auto y7 = run({.op_type = "DFT", .opset = 20, .inputs = {{"x", x7}}});
  expect_tensor_near(y7,
                     complex_tensor({1, 7, 2}, {12, 0, 0.5794168f, 6.610175f, -3.147948f, -5.296745f, 0.06853167f, -0.009445764f,
                                                0.06853167f, 0.009445764f, -3.147948f, 5.296745f, 0.5794168f, -6.610175f}));
}

TEST(SignalDft, ComplexInputForwardAndInverse) {
  // numpy: np.fft.fft([1+1j, 2-1j, 3j]) and np.fft.ifft of the same.
  auto z = complex_tensor({1, 3, 2}, {1, 1, 2, -1, 0, 3});
  expect_tensor_near(run({.op_type = "DFT", .inputs = {{"x", z}}}),
                     complex_tensor({1, 3, 2}, {3, 3, -3.464102f, -1.732051f, 3.464102f, 1.732051f}));
  expect_tensor_near(run({.op_type = "DFT", .inputs = {{"x", z}}, .attributes = {attr("inverse", 1)}}),
                     complex_tensor({1, 3, 2}, {1, 1, 1.154701f, 0.5773503f, -1.154701f, -0.5773503f}));
}

TEST(SignalDft, InverseUndoesForward) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (int64_t n : {12, 16}) {  // Bluestein and radix-2
    std::vector<float> values(static_cast<size_t>(3 * n * 2));
    for (float& v : values) v = uniform(rng);
    auto x = Tensor::from<float>({3, n, 2}, values);
    auto spectrum = run({.op_type = "DFT", .opset = 20, .inputs = {{"x", x}}});
    auto back = run({.op_type = "DFT", .opset = 20, .inputs = {{"x", spectrum}}, .attributes = {attr("inverse", 1)}});
    expect_tensor_near(back, x, 1e-5);
  }
}

TEST(SignalDft, OnesidedKeepsTheNonRedundantBins) {
  // numpy: np.fft.rfft([1,2,3,4,5,6]) has 6 / 2 + 1 = 4 bins.
  auto x = Tensor::from<float>({1, 6, 1}, {1, 2, 3, 4, 5, 6});
  expect_tensor_near(run({.op_type = "DFT", .inputs = {{"x", x}}, .attributes = {attr("onesided", 1)}}),
                     complex_tensor({1, 4, 2}, {21, 0, -3, 5.196152f, -3, 1.732051f, -3, 0}));
  // numpy: np.fft.rfft([1,2,3,4,5,6], n=5): truncated to 5, odd, 3 bins.
  expect_tensor_near(
      run({.op_type = "DFT", .inputs = {{"x", x}, {"dft_length", scalar(5)}}, .attributes = {attr("onesided", 1)}}),
      complex_tensor({1, 3, 2}, {15, 0, -2.5f, 3.440955f, -2.5f, 0.8122992f}));
}

TEST(SignalDft, DftLengthPadsWithZerosAndTruncates) {
  // [1, 2, 3] padded to [1, 2, 3, 0] -> [6, -2-2i, 2, -2+2i] (by hand).
  auto x3 = Tensor::from<float>({1, 3, 1}, {1, 2, 3});
  expect_tensor_near(run({.op_type = "DFT", .inputs = {{"x", x3}, {"dft_length", scalar(4)}}}),
                     complex_tensor({1, 4, 2}, {6, 0, -2, -2, 2, 0, -2, 2}));
  // [1, 2, 3, 4] truncated to [1, 2] -> [3, -1] (by hand), dft_length as int32.
  auto x4 = Tensor::from<float>({1, 4, 1}, {1, 2, 3, 4});
  expect_tensor_near(run({.op_type = "DFT", .inputs = {{"x", x4}, {"dft_length", Tensor::from<int32_t>({}, {2})}}}),
                     complex_tensor({1, 2, 2}, {3, 0, -1, 0}));
}

TEST(SignalDft, InverseOnesidedRebuildsTheRealSignal) {
  // The one-sided spectrum of [1..6] (np.fft.rfft above) back through IRFFT:
  // 4 bins default to dft_length 2 * (4 - 1) = 6, output last dim 1.
  auto half = complex_tensor({1, 4, 2}, {21, 0, -3, 5.196152f, -3, 1.732051f, -3, 0});
  auto y = run({.op_type = "DFT", .inputs = {{"x", half}}, .attributes = {attr("inverse", 1), attr("onesided", 1)}});
  expect_tensor_near(y, Tensor::from<float>({1, 6, 1}, {1, 2, 3, 4, 5, 6}), 1e-5);
  // dft_length 5 reads 3 bins: np.fft.irfft(np.fft.rfft([1,2,3,4,5]), n=5) is [1..5].
  auto odd = complex_tensor({1, 3, 2}, {15, 0, -2.5f, 3.440955f, -2.5f, 0.8122992f});
  auto y5 = run({.op_type = "DFT",
                 .inputs = {{"x", odd}, {"dft_length", scalar(5)}},
                 .attributes = {attr("inverse", 1), attr("onesided", 1)}});
  expect_tensor_near(y5, Tensor::from<float>({1, 5, 1}, {1, 2, 3, 4, 5}), 1e-5);
}

TEST(SignalDft, DoubleAndHalfInputs) {
  auto y64 = run({.op_type = "DFT", .inputs = {{"x", Tensor::from<double>({1, 4, 1}, {1, 2, 3, 4})}}});
  expect_tensor_near(y64, Tensor::from<double>({1, 4, 2}, {10, 0, -2, 2, -2, 0, -2, -2}), 1e-12);
  auto half = [](std::vector<float> v) {
    std::vector<Float16> h;
    for (float f : v) h.push_back(Float16(f));
    return h;
  };
  auto y16 = run({.op_type = "DFT", .inputs = {{"x", Tensor::from<Float16>({1, 4, 1}, half({1, 2, 3, 4}))}}});
  expect_tensor_near(y16, Tensor::from<Float16>({1, 4, 2}, half({10, 0, -2, 2, -2, 0, -2, -2})));
}

// The definition's direct sum, the obviously correct reference.
std::vector<std::complex<double>> direct_dft(const std::vector<std::complex<double>>& x) {
  const size_t n = x.size();
  std::vector<std::complex<double>> y(n);
  for (size_t k = 0; k < n; ++k)
    for (size_t t = 0; t < n; ++t)
      y[k] += x[t] * std::polar(1.0, -2 * std::numbers::pi * static_cast<double>((k * t) % n) / static_cast<double>(n));
  return y;
}

TEST(SignalDft, LongLinesMatchTheDirectSum) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> uniform(-1, 1);
  for (int64_t n : {1, 2, 3, 1000, 1024, 1031}) {  // radix-2 and Bluestein, 1031 prime
    SCOPED_TRACE(n);
    std::vector<std::complex<double>> x(static_cast<size_t>(n));
    std::vector<double> pairs;
    for (auto& v : x) {
      v = {uniform(rng), uniform(rng)};
      pairs.insert(pairs.end(), {v.real(), v.imag()});
    }
    std::vector<double> expected;
    for (const auto& v : direct_dft(x)) expected.insert(expected.end(), {v.real(), v.imag()});
    auto y = run({.op_type = "DFT", .opset = 20, .inputs = {{"x", Tensor::from<double>({1, n, 2}, pairs)}}});
    expect_tensor_near(y, Tensor::from<double>({1, n, 2}, expected), 1e-9);
  }
}

TEST(SignalDft, RejectsBadInput) {
  auto x = Tensor::from<float>({1, 4, 1}, {1, 2, 3, 4});
  auto z = Tensor::from<float>({1, 2, 2}, {1, 0, 0, 1});
  expect_error({.op_type = "DFT", .inputs = {{"x", Tensor::from<float>({4}, {1, 2, 3, 4})}}}, "input must be [...");
  expect_error({.op_type = "DFT", .inputs = {{"x", Tensor::from<float>({1, 2, 3}, {1, 2, 3, 4, 5, 6})}}},
               "1 (real) or 2 (complex)");
  expect_error({.op_type = "DFT", .inputs = {{"x", x}}, .attributes = {attr("axis", 2)}}, "real/imaginary dim");
  expect_error({.op_type = "DFT", .opset = 20, .inputs = {{"x", x}, {"", {}}, {"axis", scalar(-1)}}}, "real/imaginary dim");
  expect_error({.op_type = "DFT", .opset = 20, .inputs = {{"x", x}, {"", {}}, {"axis", scalar(3)}}}, "out of range");
  expect_error({.op_type = "DFT", .inputs = {{"x", x}, {"dft_length", scalar(0)}}}, "DFT length must be in [1,");
  expect_error({.op_type = "DFT", .inputs = {{"x", z}}, .attributes = {attr("onesided", 1)}}, "takes a real input");
  expect_error({.op_type = "DFT", .inputs = {{"x", x}}, .attributes = {attr("onesided", 1), attr("inverse", 1)}},
               "takes a complex input");
  // One bin: the IRFFT default length 2 * (1 - 1) is empty.
  expect_error({.op_type = "DFT",
                .inputs = {{"x", Tensor::from<float>({1, 1, 2}, {1, 0})}},
                .attributes = {attr("onesided", 1), attr("inverse", 1)}},
               "got 0");
  expect_error({.op_type = "DFT", .inputs = {{"x", Tensor::from<int32_t>({1, 2, 1}, {1, 2})}}}, "floating point only");
}

// --- STFT ----------------------------------------------------------------------------

// The signal 0..7 as [1, 8, 1]; frames of 4 every 2 samples: [0..3], [2..5], [4..7].
Tensor ramp8() { return Tensor::from<float>({1, 8, 1}, {0, 1, 2, 3, 4, 5, 6, 7}); }

TEST(SignalStft, FramesWithoutWindow) {
  // numpy: np.fft.rfft of the three frames (onesided is the default).
  auto y =
      run({.op_type = "STFT", .inputs = {{"signal", ramp8()}, {"frame_step", scalar(2)}, {"", {}}, {"frame_length", scalar(4)}}});
  expect_tensor_near(y, Tensor::from<float>({1, 3, 3, 2}, {6, 0, -2, 2, -2, 0, 14, 0, -2, 2, -2, 0, 22, 0, -2, 2, -2, 0}));
}

TEST(SignalStft, WindowedTwoSided) {
  // The periodic Hann window [0, .5, 1, .5] gives frame_length 4.
  // numpy: np.fft.fft(frames * np.hanning(5)[:4], axis=1)
  auto y =
      run({.op_type = "STFT",
           .inputs = {{"signal", ramp8()}, {"frame_step", scalar(2)}, {"window", Tensor::from<float>({4}, {0, 0.5f, 1, 0.5f})}},
           .attributes = {attr("onesided", 0)}});
  expect_tensor_near(
      y, Tensor::from<float>({1, 3, 4, 2}, {4, 0, -2, 1, 0, 0, -2, -1, 8, 0, -4, 1, 0, 0, -4, -1, 12, 0, -6, 1, 0, 0, -6, -1}));
  // The same window with frame_length given too; a trailing partial frame is dropped.
  auto x9 = Tensor::from<float>({1, 9, 1}, {0, 1, 2, 3, 4, 5, 6, 7, 100});
  auto y9 = run({.op_type = "STFT",
                 .inputs = {{"signal", x9},
                            {"frame_step", scalar(2)},
                            {"window", Tensor::from<float>({4}, {0, 0.5f, 1, 0.5f})},
                            {"frame_length", scalar(4)}},
                 .attributes = {attr("onesided", 0)}});
  expect_tensor_near(y9, y);
}

TEST(SignalStft, ComplexSignal) {
  // numpy: s = [1+2j, -1j, 3, -2+1j, 1+1j]; np.fft.fft([s[0:3], s[2:5]], axis=1)
  auto s = Tensor::from<float>({1, 5, 2}, {1, 2, 0, -1, 3, 0, -2, 1, 1, 1});
  auto y = run({.op_type = "STFT",
                .inputs = {{"signal", s}, {"frame_step", scalar(2)}, {"", {}}, {"frame_length", scalar(3)}},
                .attributes = {attr("onesided", 0)}});
  expect_tensor_near(y, Tensor::from<float>({1, 2, 3, 2}, {4, 1, -1.366025f, 5.098076f, 0.3660254f, -0.09807621f, 2, 2, 3.5f,
                                                           1.598076f, 3.5f, -3.598076f}));
}

TEST(SignalStft, RejectsBadInput) {
  auto step = scalar(2);
  expect_error({.op_type = "STFT", .inputs = {{"signal", Tensor::from<float>({8, 1}, {})}, {"frame_step", step}}},
               "signal must be [batch, length");
  expect_error({.op_type = "STFT", .inputs = {{"signal", ramp8()}, {"frame_step", scalar(0)}}}, "frame_step must be positive");
  expect_error({.op_type = "STFT", .inputs = {{"signal", ramp8()}, {"frame_step", step}, {"", {}}, {"frame_length", scalar(9)}}},
               "frame_length must be in [1, 8]");
  expect_error({.op_type = "STFT",
                .inputs = {{"signal", ramp8()},
                           {"frame_step", step},
                           {"window", Tensor::from<float>({3}, {1, 1, 1})},
                           {"frame_length", scalar(4)}}},
               "differs from the window's length 3");
  expect_error({.op_type = "STFT",
                .inputs = {{"signal", ramp8()}, {"frame_step", step}, {"window", Tensor::from<double>({4}, {1, 1, 1, 1})}}},
               "window is float64 but signal is float32");
  expect_error({.op_type = "STFT", .inputs = {{"signal", Tensor::from<float>({1, 4, 2}, {})}, {"frame_step", step}}},
               "onesided=1 needs a real signal");
}

// --- MelWeightMatrix -----------------------------------------------------------------

NodeSpec mel_spec(int64_t bins, int64_t dft_length, int64_t sample_rate, float lower, float upper) {
  return {.op_type = "MelWeightMatrix",
          .inputs = {{"num_mel_bins", scalar(bins)},
                     {"dft_length", scalar(dft_length)},
                     {"sample_rate", scalar(sample_rate)},
                     {"lower_edge_hertz", Tensor::from<float>({}, {lower})},
                     {"upper_edge_hertz", Tensor::from<float>({}, {upper})}}};
}

TEST(SignalMel, TrianglesByHand) {
  // 3 bins from 300 Hz to 6000 Hz, dft_length 32 at 16 kHz. mel(300) = 401.97,
  // mel(6000) = 2642.27, step (2642.27 - 401.97) / 5 = 448.06; the 5 edges
  // 300, 762.9, 1440.1, 2430.7, 3879.9 Hz go to bins floor(33 f / 16000) =
  // 0, 1, 2, 5, 8. Filter m rises over [edge m, edge m+1] and falls until
  // edge m+2: (0,1,2), (1,2,5), (2,5,8). The onnx.reference implementation
  // gives the same matrix.
  const float t = 1.0f / 3, tt = 2.0f / 3;
  std::vector<float> expected(17 * 3, 0.0f);
  const std::vector<std::vector<float>> rows = {{0, 0, 0},  {1, 0, 0}, {0, 1, 0},  {0, tt, t},
                                                {0, t, tt}, {0, 0, 1}, {0, 0, tt}, {0, 0, t}};
  for (size_t r = 0; r < rows.size(); ++r) std::copy(rows[r].begin(), rows[r].end(), expected.begin() + 3 * r);
  expect_tensor_near(run(mel_spec(3, 32, 16000, 300, 6000)), Tensor::from<float>({17, 3}, expected));

  NodeSpec as_double = mel_spec(3, 32, 16000, 300, 6000);
  as_double.attributes = {attr("output_datatype", static_cast<int64_t>(DataType::float64))};
  EXPECT_EQ(run(as_double).dtype(), DataType::float64);
}

TEST(SignalMel, RejectsBadInput) {
  expect_error(mel_spec(0, 32, 16000, 300, 6000), "num_mel_bins must be in [1,");
  expect_error(mel_spec(3, 0, 16000, 300, 6000), "dft_length must be in [1,");
  expect_error(mel_spec(3, 32, 0, 300, 6000), "sample_rate must be positive");
  expect_error(mel_spec(3, 32, 16000, 6000, 300), "lower_edge_hertz < upper_edge_hertz");
  expect_error(mel_spec(3, 32, 16000, 300, 1e6f), "keep it below sample_rate / 2 = 8000");
}

}  // namespace
}  // namespace onnxkit
