// Neural-network kernels on cases the backend data leaves out: group and
// dilation combinations, 16-bit and 64-bit floats, opset 18+ forms, and bad
// inputs. Expected values are worked out by hand or by the plain loops of
// the definitions below, never by the code under test.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/kernels/nn/conv.h"
#include "support/node_runner.h"

namespace onnxkit {
namespace {

using runtime::BFloat16;
using runtime::DataType;
using runtime::Float16;
using runtime::Shape;
using runtime::Tensor;
using testing::attr;
using testing::expect_tensor_near;
using testing::run_node;
using testing::try_run_node;
using Ints = std::vector<int64_t>;
using Doubles = std::vector<double>;

// A tensor of any float type holding `values`.
Tensor make(DataType type, Shape shape, const Doubles& values) {
  Tensor t(type, std::move(shape));
  Status s = runtime::dispatch_float(type, [&]<class T>() -> Status {
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_same_v<T, double>) t.mutable_data<T>()[i] = values[static_cast<size_t>(i)];
      else t.mutable_data<T>()[i] = static_cast<T>(static_cast<float>(values[static_cast<size_t>(i)]));
    }
    return {};
  });
  EXPECT_TRUE(s.ok());
  return t;
}

Tensor f32(Shape shape, const Doubles& values) { return make(DataType::float32, std::move(shape), values); }

// Deterministic values in [-1, 1) that are exact in float16 (multiples of 1/64).
Doubles pattern(int64_t n, int64_t seed) {
  Doubles v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<double>((i * 37 + seed * 11) % 128 - 64) / 64.0;
  return v;
}

int64_t product(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Unflattens a row-major index.
Ints unflatten(int64_t i, const Ints& dims) {
  Ints idx(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    idx[d] = i % dims[d];
    i /= dims[d];
  }
  return idx;
}

struct ConvCase {
  Ints strides, pads, dilations;
  int64_t group = 1;
};

// Convolution by its definition: every output element as one sum over the
// window, out-of-range taps skipped (zero padding).
Doubles naive_conv(const Doubles& x, const Shape& xs, const Doubles& w, const Shape& ws, const Doubles* b, const ConvCase& c,
                   Shape& ys) {
  const size_t rank = xs.size() - 2;
  const int64_t n_batch = xs[0], channels = xs[1], m_out = ws[0], cg = ws[1], mg = m_out / c.group;
  Ints in(xs.begin() + 2, xs.end()), k(ws.begin() + 2, ws.end()), out(rank);
  for (size_t d = 0; d < rank; ++d)
    out[d] = (in[d] + c.pads[d] + c.pads[rank + d] - ((k[d] - 1) * c.dilations[d] + 1)) / c.strides[d] + 1;
  ys = {n_batch, m_out};
  ys.insert(ys.end(), out.begin(), out.end());
  Doubles y(static_cast<size_t>(product(ys)));
  for (int64_t n = 0; n < n_batch; ++n)
    for (int64_t m = 0; m < m_out; ++m)
      for (int64_t o = 0; o < product(out); ++o) {
        const Ints oi = unflatten(o, out);
        double sum = b ? (*b)[static_cast<size_t>(m)] : 0.0;
        for (int64_t ci = 0; ci < cg; ++ci)
          for (int64_t kk = 0; kk < product(k); ++kk) {
            const Ints ki = unflatten(kk, k);
            int64_t at = 0;
            bool inside = true;
            for (size_t d = 0; d < rank; ++d) {
              const int64_t i = oi[d] * c.strides[d] + ki[d] * c.dilations[d] - c.pads[d];
              inside = inside && i >= 0 && i < in[d];
              at = at * in[d] + i;
            }
            if (!inside) continue;
            const int64_t channel = (m / mg) * cg + ci;
            sum += x[static_cast<size_t>((n * channels + channel) * product(in) + at)] *
                   w[static_cast<size_t>((m * cg + ci) * product(k) + kk)];
          }
        y[static_cast<size_t>((n * m_out + m) * product(out) + o)] = sum;
      }
  return y;
}

// Runs Conv on x, w (and b) of `type` and compares with naive_conv.
void check_conv(DataType type, const Shape& xs, const Shape& ws, bool with_bias, const ConvCase& c, double tol, int threads = 1) {
  const Doubles x = pattern(product(xs), 1), w = pattern(product(ws), 2), b = pattern(ws[0], 3);
  Shape ys;
  const Doubles y = naive_conv(x, xs, w, ws, with_bias ? &b : nullptr, c, ys);
  std::vector<testing::NodeInput> inputs = {{"x", make(type, xs, x)}, {"w", make(type, ws, w), true}};
  if (with_bias) inputs.push_back({"b", make(type, {ws[0]}, b)});
  auto out = run_node(
      {.op_type = "Conv",
       .opset = 13,
       .inputs = inputs,
       .attributes = {attr("strides", c.strides), attr("pads", c.pads), attr("dilations", c.dilations), attr("group", c.group)},
       .threads = threads});
  expect_tensor_near(out[0].tensor(), make(type, ys, y), tol, tol);
}

TEST(NnConv, OneTwoAndThreeDimsWithStridesPadsAndDilations) {
  check_conv(DataType::float32, {2, 3, 11}, {4, 3, 3}, true, {{2}, {1, 2}, {2}}, 1e-5);
  // A Silero-style encoder's 1-D convolutions (run channels-last).
  for (int threads : {1, 2}) {
    check_conv(DataType::float32, {1, 129, 126}, {64, 129, 3}, true, {{1}, {1, 1}, {1}}, 1e-4, threads);
    check_conv(DataType::float32, {2, 64, 126}, {64, 64, 3}, false, {{2}, {1, 1}, {1}}, 1e-4, threads);
  }
  check_conv(DataType::float32, {1, 2, 7, 6}, {3, 2, 3, 2}, true, {{2, 1}, {1, 0, 2, 1}, {1, 2}}, 1e-5);
  check_conv(DataType::float32, {1, 2, 5, 4, 6}, {2, 2, 2, 3, 2}, false, {{1, 2, 1}, {0, 1, 1, 1, 0, 0}, {2, 1, 3}}, 1e-5);
}

TEST(NnConv, GroupsWithDilationAndDepthwiseMultiplier) {
  // Two groups, dilated, strided, asymmetric padding.
  check_conv(DataType::float32, {2, 4, 9, 8}, {6, 2, 3, 3}, true, {{2, 1}, {2, 1, 0, 2}, {2, 2}, 2}, 1e-5);
  // Depthwise (group == C) with a channel multiplier of 2.
  check_conv(DataType::float32, {1, 3, 6, 7}, {6, 1, 3, 3}, true, {{1, 2}, {1, 1, 1, 1}, {1, 1}, 3}, 1e-5);
  // Depthwise, dilated, 1-D.
  check_conv(DataType::float32, {2, 4, 12}, {4, 1, 3}, false, {{1}, {2, 2}, {3}, 4}, 1e-5);
  // 1x1 kernels read the image directly; with a stride they do not.
  check_conv(DataType::float32, {2, 4, 5, 5}, {3, 4, 1, 1}, true, {{1, 1}, {0, 0, 0, 0}, {1, 1}}, 1e-5);
  check_conv(DataType::float32, {2, 4, 5, 5}, {3, 4, 1, 1}, true, {{2, 2}, {0, 0, 0, 0}, {1, 1}}, 1e-5);
}

TEST(NnConv, DilatedTapsThatReadOnlyPaddingAreLeftOut) {
  // DeepLabV3's ASPP: rate 12 on a 6x6 map, only the centre tap reads the map.
  check_conv(DataType::float32, {1, 8, 6, 6}, {4, 8, 3, 3}, true, {{1, 1}, {12, 12, 12, 12}, {12, 12}}, 1e-5);
  // One dim trimmed (rate 6 on 5 rows), the other not (rate 2 on 7 columns).
  check_conv(DataType::float32, {2, 3, 5, 7}, {2, 3, 3, 3}, false, {{1, 1}, {6, 2, 6, 2}, {6, 2}}, 1e-5);
  // Asymmetric pads: the dead tap is the last one, then the first one, and
  // the pads left after trimming are not zero.
  check_conv(DataType::float32, {1, 2, 4}, {3, 2, 3}, true, {{1}, {3, 7}, {5}}, 1e-5);
  check_conv(DataType::float32, {1, 2, 4}, {3, 2, 3}, true, {{1}, {8, 2}, {5}}, 1e-5);
  // Strided, grouped, depthwise and 3-D.
  check_conv(DataType::float32, {1, 4, 6, 6}, {4, 2, 3, 3}, true, {{3, 3}, {7, 7, 7, 7}, {7, 7}, 2}, 1e-5);
  check_conv(DataType::float32, {1, 4, 5, 5}, {4, 1, 3, 3}, false, {{1, 1}, {9, 9, 9, 9}, {9, 9}, 4}, 1e-5);
  check_conv(DataType::float32, {1, 2, 3, 4, 4}, {2, 2, 3, 3, 3}, true, {{1, 1, 1}, {4, 1, 5, 4, 1, 5}, {4, 1, 5}}, 1e-5);
}

TEST(NnConv, OneDimConvsWhoseStrideDividesTheKernelRunAsFrameProducts) {
  // An STFT's shape: kernel 2 and 4 frames of the stride, 1 and 3 channels,
  // pads of whole frames (1 and 2 of them) or none, kernel equal to the stride.
  check_conv(DataType::float32, {2, 1, 64}, {5, 1, 16}, true, {{8}, {0, 0}, {1}}, 1e-5);
  check_conv(DataType::float32, {1, 3, 96}, {4, 3, 32}, true, {{8}, {8, 16}, {1}}, 1e-5);
  check_conv(DataType::float32, {1, 1, 80}, {6, 1, 16}, false, {{16}, {16, 16}, {1}}, 1e-5);
  // The threads share the outputs: ranges that start in the leading pad
  // frames and end in the trailing ones.
  for (int threads : {1, 2}) {
    check_conv(DataType::float32, {2, 1, 4096}, {130, 1, 256}, true, {{128}, {0, 0}, {1}}, 1e-4, threads);
    check_conv(DataType::float32, {1, 2, 16000}, {16, 2, 64}, true, {{32}, {64, 32}, {1}}, 1e-4, threads);
  }
  // Pads and lengths that are not whole frames take the other path.
  check_conv(DataType::float32, {1, 1, 84}, {4, 1, 16}, true, {{8}, {3, 0}, {1}}, 1e-5);
  check_conv(DataType::float32, {1, 2, 85}, {4, 2, 16}, true, {{8}, {8, 8}, {1}}, 1e-5);
}

TEST(NnConv, LargeConvIsTheSameOnOneOrTwoThreads) {
  // Big enough to be split into tiles across threads (and over several k slices).
  for (int threads : {1, 2})
    check_conv(DataType::float32, {2, 64, 20, 21}, {48, 32, 3, 3}, true, {{1, 1}, {1, 1, 1, 1}, {1, 1}, 2}, 1e-4, threads);
}

TEST(NnConv, GroupsThatSplitTheChannelBlocksRunBlocked) {
  // Groups of 24 (RegNetX), 12, 8 and 4 (ResNeXt) channels do not cover
  // whole blocks of 16 (of 8 under AVX2, but for 24): oneDNN runs them on a
  // reordered copy of the blocked input (conv_dnnl.h). With W and B constant
  // the session runs the node blocked, reordering x into blocks first.
  struct Case {
    Shape xs, ws;
    ConvCase c;
  };
  const Case cases[] = {
      {{1, 48, 9, 10}, {48, 24, 3, 3}, {{1, 1}, {1, 1, 1, 1}, {1, 1}, 2}},
      {{2, 36, 11, 9}, {36, 12, 3, 3}, {{2, 2}, {1, 0, 2, 1}, {1, 1}, 3}},  // strided, asymmetric pads
      {{1, 72, 12, 12}, {72, 24, 3, 3}, {{2, 2}, {1, 1, 1, 1}, {1, 1}, 3}},
      {{1, 32, 8, 8}, {32, 8, 3, 3}, {{2, 2}, {1, 1, 1, 1}, {1, 1}, 4}},
      {{1, 32, 7, 7}, {64, 4, 3, 3}, {{1, 1}, {2, 2, 2, 2}, {2, 2}, 8}},  // 4 in, 8 out per group, dilated
  };
  for (const Case& k : cases)
    for (int threads : {1, 2}) {
      SCOPED_TRACE(::testing::Message() << "W " << runtime::shape_to_string(k.ws) << ", " << threads << " threads");
      const Doubles x = pattern(product(k.xs), 1), w = pattern(product(k.ws), 2), b = pattern(k.ws[0], 3);
      Shape ys;
      const Doubles y = naive_conv(x, k.xs, w, k.ws, &b, k.c, ys);
      auto node =
          testing::make_node_session({.op_type = "Conv",
                                      .inputs = {{"x", f32(k.xs, x)}, {"w", f32(k.ws, w), true}, {"b", f32({k.ws[0]}, b), true}},
                                      .attributes = {attr("strides", k.c.strides), attr("pads", k.c.pads),
                                                     attr("dilations", k.c.dilations), attr("group", k.c.group)},
                                      .threads = threads,
                                      .profile = true});
      ASSERT_TRUE(node.ok()) << node.error().message();
      auto out = node->session->run(node->feeds);
      ASSERT_TRUE(out.ok()) << out.error().message();
      expect_tensor_near((*out)[0].tensor(), f32(ys, y), 1e-4, 1e-4);
      const std::vector<std::string> steps = testing::step_kinds(*node->session);
      EXPECT_EQ(std::count(steps.begin(), steps.end(), "ToBlocked"), 1);
    }
}

TEST(NnConv, Float64AndSixteenBitFloats) {
  check_conv(DataType::float64, {1, 4, 6, 5}, {4, 2, 2, 3}, true, {{1, 2}, {1, 0, 1, 1}, {2, 1}, 2}, 1e-12);
  // Inputs are exact in half; the sums round once on the way out.
  check_conv(DataType::float16, {1, 2, 5, 5}, {3, 2, 3, 3}, true, {{1, 1}, {1, 1, 1, 1}, {1, 1}}, 5e-3);
  check_conv(DataType::bfloat16, {1, 2, 5, 5}, {3, 2, 3, 3}, false, {{2, 2}, {0, 0, 0, 0}, {1, 1}}, 2e-2);
}

TEST(NnConv, AutoPadSameAndValid) {
  // 1-D, x = 1..5, w = [1, 1, 1], stride 2: SAME gives ceil(5 / 2) = 3 outputs
  // with 2 pixels of padding, the odd one at the end (UPPER) or start (LOWER).
  auto x = f32({1, 1, 5}, {1, 2, 3, 4, 5});
  auto w = f32({1, 1, 3}, {1, 1, 1});
  auto upper = run_node({.op_type = "Conv",
                         .inputs = {{"x", x}, {"w", w}},
                         .attributes = {attr("auto_pad", "SAME_UPPER"), attr("strides", Ints{2})}});
  expect_tensor_near(upper[0].tensor(), f32({1, 1, 3}, {3, 9, 9}));  // pads 1, 1: [0+1+2, 2+3+4, 4+5+0]
  auto x6 = f32({1, 1, 6}, {1, 2, 3, 4, 5, 6});
  // Six inputs, stride 2: 3 outputs, total padding 1.
  upper = run_node({.op_type = "Conv",
                    .inputs = {{"x", x6}, {"w", w}},
                    .attributes = {attr("auto_pad", "SAME_UPPER"), attr("strides", Ints{2})}});
  expect_tensor_near(upper[0].tensor(), f32({1, 1, 3}, {6, 12, 11}));  // [1+2+3, 3+4+5, 5+6+0]
  auto lower = run_node({.op_type = "Conv",
                         .inputs = {{"x", x6}, {"w", w}},
                         .attributes = {attr("auto_pad", "SAME_LOWER"), attr("strides", Ints{2})}});
  expect_tensor_near(lower[0].tensor(), f32({1, 1, 3}, {3, 9, 15}));  // [0+1+2, 2+3+4, 4+5+6]
  auto valid = run_node({.op_type = "Conv",
                         .inputs = {{"x", x6}, {"w", w}},
                         .attributes = {attr("auto_pad", "VALID"), attr("strides", Ints{2}), attr("pads", Ints{5, 5})}});
  expect_tensor_near(valid[0].tensor(), f32({1, 1, 2}, {6, 12}));  // pads are ignored
}

TEST(NnConv, BadInputsAreErrorsNamingTheProblem) {
  auto expect_error = [](const testing::NodeSpec& spec, const std::string& text) {
    auto out = try_run_node(spec);
    ASSERT_FALSE(out.ok()) << "expected an error containing: " << text;
    EXPECT_NE(out.error().message().find(text), std::string::npos) << out.error().message();
    EXPECT_NE(out.error().message().find("under_test"), std::string::npos) << out.error().message();
  };
  auto x = f32({1, 3, 5, 5}, pattern(75, 1));
  expect_error({.op_type = "Conv", .inputs = {{"x", x}, {"w", f32({2, 2, 3, 3}, pattern(36, 2))}}}, "input channels per group");
  expect_error({.op_type = "Conv", .inputs = {{"x", f32({3, 5}, pattern(15, 1))}, {"w", f32({2, 3}, pattern(6, 2))}}},
               "at least one spatial dim");
  expect_error({.op_type = "Conv", .inputs = {{"x", x}, {"w", f32({2, 3, 3}, pattern(18, 2))}}}, "must match");
  expect_error(
      {.op_type = "Conv", .inputs = {{"x", x}, {"w", f32({2, 1, 3, 3}, pattern(18, 2))}}, .attributes = {attr("group", 2)}},
      "group 2 does not divide");
  expect_error({.op_type = "Conv", .inputs = {{"x", x}, {"w", f32({2, 3, 3, 3}, pattern(54, 2))}, {"b", f32({3}, {1, 2, 3})}}},
               "B must have shape [2]");
  expect_error({.op_type = "Conv", .inputs = {{"x", f32({1, 1, 2, 2}, {1, 2, 3, 4})}, {"w", f32({1, 1, 3, 3}, pattern(9, 2))}}},
               "larger than the padded input");
  expect_error({.op_type = "Conv",
                .inputs = {{"x", x}, {"w", f32({2, 3, 3, 3}, pattern(54, 2))}},
                .attributes = {attr("kernel_shape", Ints{2, 2})}},
               "does not match");
  expect_error({.op_type = "Conv",
                .inputs = {{"x", x}, {"w", f32({2, 3, 3, 3}, pattern(54, 2))}},
                .attributes = {attr("strides", Ints{1, 1, 1})}},
               "strides");
  expect_error({.op_type = "Conv",
                .inputs = {{"x", x}, {"w", f32({2, 3, 3, 3}, pattern(54, 2))}},
                .attributes = {attr("strides", Ints{0, 1})}},
               "below 1");
  expect_error({.op_type = "Conv", .inputs = {{"x", x}, {"w", make(DataType::float64, {2, 3, 3, 3}, pattern(54, 2))}}},
               "W has type float64");
  expect_error({.op_type = "Conv",
                .inputs = {{"x", x}, {"w", f32({2, 3, 3, 3}, pattern(54, 2))}},
                .attributes = {attr("auto_pad", "SAME")}},
               "auto_pad 'SAME'");
  // Absurd sizes are refused before any index arithmetic could overflow.
  expect_error({.op_type = "Conv",
                .inputs = {{"x", x}, {"w", f32({2, 3, 3, 3}, pattern(54, 2))}},
                .attributes = {attr("pads", Ints{int64_t{1} << 40, 0, 0, 0})}},
               "has a value above");
  // W an initializer and X declared with a static shape: the same error.
  expect_error({.op_type = "Conv", .inputs = {{"x", x}, {"w", f32({2, 2, 3, 3}, pattern(36, 2)), true}}},
               "input channels per group");
}

TEST(NnConv, ReferenceChecksItsTensorsAgainstTheParams) {
  runtime::ConvAttributes attrs;
  auto params = runtime::make_conv_params(attrs, {1, 2, 4, 4}, {3, 2, 3, 3});
  ASSERT_TRUE(params.ok());
  EXPECT_EQ(params->y_shape(), (Shape{1, 3, 2, 2}));
  Tensor x = f32({1, 2, 4, 4}, pattern(32, 1)), w = f32({3, 2, 3, 3}, pattern(54, 2));
  Tensor wrong_y(DataType::float32, {1, 3, 3, 3});
  Status s = runtime::nn::conv_reference(*params, x, w, nullptr, wrong_y);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("Y has shape"), std::string::npos);
  Tensor y(DataType::float32, {1, 3, 2, 2});
  Tensor bad_bias = f32({2}, {1, 2});
  EXPECT_FALSE(runtime::nn::conv_reference(*params, x, w, &bad_bias, y).ok());
  EXPECT_TRUE(runtime::nn::conv_reference(*params, x, w, nullptr, y).ok());
}

// --- ConvTranspose ------------------------------------------------------------------

// Transposed convolution by its definition: every input element scatters
// x * w over its window; positions shifted by the begin pads and clipped.
Doubles naive_conv_transpose(const Doubles& x, const Shape& xs, const Doubles& w, const Shape& ws, const ConvCase& c,
                             const Ints& out_pad, Shape& ys) {
  const size_t rank = xs.size() - 2;
  const int64_t n_batch = xs[0], channels = xs[1], mg = ws[1], m_out = mg * c.group, cg = channels / c.group;
  Ints in(xs.begin() + 2, xs.end()), k(ws.begin() + 2, ws.end()), out(rank);
  for (size_t d = 0; d < rank; ++d)
    out[d] = c.strides[d] * (in[d] - 1) + out_pad[d] + (k[d] - 1) * c.dilations[d] + 1 - c.pads[d] - c.pads[rank + d];
  ys = {n_batch, m_out};
  ys.insert(ys.end(), out.begin(), out.end());
  Doubles y(static_cast<size_t>(product(ys)), 0.0);
  for (int64_t n = 0; n < n_batch; ++n)
    for (int64_t ch = 0; ch < channels; ++ch)
      for (int64_t i = 0; i < product(in); ++i) {
        const Ints ii = unflatten(i, in);
        for (int64_t m = 0; m < mg; ++m)
          for (int64_t kk = 0; kk < product(k); ++kk) {
            const Ints ki = unflatten(kk, k);
            int64_t at = 0;
            bool inside = true;
            for (size_t d = 0; d < rank; ++d) {
              const int64_t o = ii[d] * c.strides[d] + ki[d] * c.dilations[d] - c.pads[d];
              inside = inside && o >= 0 && o < out[d];
              at = at * out[d] + o;
            }
            if (!inside) continue;
            const int64_t oc = (ch / cg) * mg + m;
            y[static_cast<size_t>((n * m_out + oc) * product(out) + at)] +=
                x[static_cast<size_t>((n * channels + ch) * product(in) + i)] *
                w[static_cast<size_t>((ch * mg + m) * product(k) + kk)];
          }
      }
  return y;
}

TEST(NnConvTranspose, GroupsStridesDilationsPadsAndOutputPadding) {
  const Shape xs{2, 4, 3, 4}, ws{4, 3, 3, 2};
  const ConvCase c{{2, 1}, {1, 0, 0, 1}, {1, 2}, 2};
  const Ints out_pad{1, 0};
  const Doubles x = pattern(product(xs), 4), w = pattern(product(ws), 5), b = pattern(6, 6);
  Shape ys;
  Doubles y = naive_conv_transpose(x, xs, w, ws, c, out_pad, ys);
  for (int64_t q = 0; q < product(ys); ++q) y[static_cast<size_t>(q)] += b[static_cast<size_t>((q / (ys[2] * ys[3])) % 6)];
  // W an input, and W a constant (laid out for the products at build).
  for (DataType type : {DataType::float32, DataType::float64})
    for (bool constant : {false, true}) {
      auto out = run_node({.op_type = "ConvTranspose",
                           .inputs = {{"x", make(type, xs, x)}, {"w", make(type, ws, w), constant}, {"b", make(type, {6}, b)}},
                           .attributes = {attr("strides", c.strides), attr("pads", c.pads), attr("dilations", c.dilations),
                                          attr("group", c.group), attr("output_padding", out_pad)}});
      expect_tensor_near(out[0].tensor(), make(type, ys, y), 1e-5, 1e-5);
    }
  // 3-D, no bias.
  const Shape xs3{1, 2, 2, 3, 2}, ws3{2, 2, 2, 2, 3};
  const ConvCase c3{{1, 2, 2}, {0, 1, 0, 1, 0, 1}, {2, 1, 1}, 1};
  const Doubles x3 = pattern(product(xs3), 7), w3 = pattern(product(ws3), 8);
  Doubles y3 = naive_conv_transpose(x3, xs3, w3, ws3, c3, {0, 0, 0}, ys);
  auto out = run_node({.op_type = "ConvTranspose",
                       .inputs = {{"x", f32(xs3, x3)}, {"w", f32(ws3, w3)}},
                       .attributes = {attr("strides", c3.strides), attr("pads", c3.pads), attr("dilations", c3.dilations)}});
  expect_tensor_near(out[0].tensor(), f32(ys, y3));
}

// Kernel = stride: patches that do not overlap (conv.cpp's per-row
// products), 2-D with groups, bias and a batch of 2, large enough for two
// threads; 1-D; and the same geometry with output padding (overlap-free but
// not the path) and with a kernel wider than its stride (the general path).
// 2x2 of stride 2 takes AVX2 tiles of 3 output channels by 8 inputs (24
// with one channel), the row's last inputs summed one by one: DBNet's 24 ->
// 24 and 24 -> 1 heads in small, rows of 21 and 37 inputs, and groups of 5
// output channels (a tile of 3, then of 2).
TEST(NnConvTranspose, KernelEqualToStride) {
  struct Case {
    Shape xs, ws;
    ConvCase c;
    Ints out_pad;
  };
  for (const Case& k : {Case{{1, 24, 5, 21}, {24, 24, 2, 2}, {{2, 2}, {0, 0, 0, 0}, {1, 1}, 1}, {0, 0}},
                        Case{{2, 24, 6, 37}, {24, 1, 2, 2}, {{2, 2}, {0, 0, 0, 0}, {1, 1}, 1}, {0, 0}},
                        Case{{1, 8, 4, 16}, {8, 5, 2, 2}, {{2, 2}, {0, 0, 0, 0}, {1, 1}, 2}, {0, 0}},
                        Case{{2, 6, 40, 48}, {6, 4, 2, 3}, {{2, 3}, {0, 0, 0, 0}, {1, 1}, 2}, {0, 0}},
                        Case{{1, 3, 9}, {3, 5, 4}, {{4}, {0, 0}, {1}, 1}, {0}},
                        Case{{1, 2, 5, 4}, {2, 3, 2, 2}, {{2, 2}, {0, 0, 0, 0}, {1, 1}, 1}, {1, 1}},
                        Case{{1, 2, 5, 4}, {2, 3, 3, 3}, {{2, 2}, {1, 1, 1, 1}, {1, 1}, 1}, {0, 0}}}) {
    const Doubles x = pattern(product(k.xs), 9), w = pattern(product(k.ws), 10);
    Shape ys;
    Doubles y = naive_conv_transpose(x, k.xs, w, k.ws, k.c, k.out_pad, ys);
    const int64_t channels = ys[1], plane = product(ys) / (ys[0] * channels);
    const Doubles b = pattern(channels, 11);
    for (int64_t q = 0; q < product(ys); ++q) y[static_cast<size_t>(q)] += b[static_cast<size_t>(q / plane % channels)];
    for (int threads : {1, 2})
      for (bool constant : {true, false}) {  // W packed once at build, or on every run
        SCOPED_TRACE(::testing::Message() << "X " << runtime::shape_to_string(k.xs) << ", W " << runtime::shape_to_string(k.ws)
                                          << ", " << threads << " threads" << (constant ? "" : ", W an input"));
        auto out = run_node({.op_type = "ConvTranspose",
                             .inputs = {{"x", f32(k.xs, x)}, {"w", f32(k.ws, w), constant}, {"b", f32({channels}, b), true}},
                             .attributes = {attr("strides", k.c.strides), attr("pads", k.c.pads), attr("group", k.c.group),
                                            attr("output_padding", k.out_pad)},
                             .threads = threads});
        expect_tensor_near(out[0].tensor(), f32(ys, y), 1e-4, 1e-5);
      }
  }
}

TEST(NnConvTranspose, AutoPadAndOutputShape) {
  // x = [1, 2, 3], w = [1, 1, 1], stride 2: the full scatter is
  // [1, 1, 1+2, 2, 2+3, 3, 3] = [1, 1, 3, 2, 5, 3, 3] (7 positions).
  auto x = f32({1, 1, 3}, {1, 2, 3});
  auto w = f32({1, 1, 3}, {1, 1, 1});
  auto run = [&](std::vector<onnx::AttributeProto> attrs) {
    attrs.push_back(attr("strides", Ints{2}));
    return run_node({.op_type = "ConvTranspose", .inputs = {{"x", x}, {"w", w}}, .attributes = attrs})[0].tensor();
  };
  // SAME: 3 * 2 = 6 outputs, one position cut at the end (UPPER) or start (LOWER).
  expect_tensor_near(run({attr("auto_pad", "SAME_UPPER")}), f32({1, 1, 6}, {1, 1, 3, 2, 5, 3}));
  expect_tensor_near(run({attr("auto_pad", "SAME_LOWER")}), f32({1, 1, 6}, {1, 3, 2, 5, 3, 3}));
  // output_shape 5: two cut, one at each end; 8: one position past the scatter.
  expect_tensor_near(run({attr("output_shape", Ints{5})}), f32({1, 1, 5}, {1, 3, 2, 5, 3}));
  expect_tensor_near(run({attr("output_shape", Ints{8})}), f32({1, 1, 8}, {1, 1, 3, 2, 5, 3, 3, 0}));
  expect_tensor_near(run({attr("output_shape", Ints{1, 1, 7})}), f32({1, 1, 7}, {1, 1, 3, 2, 5, 3, 3}));
}

TEST(NnConvTranspose, BadInputsAreErrors) {
  auto x = f32({1, 2, 3}, pattern(6, 1));
  auto out = try_run_node({.op_type = "ConvTranspose", .inputs = {{"x", x}, {"w", f32({3, 1, 2}, pattern(6, 2))}}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("input channels (dim 0)"), std::string::npos) << out.error().message();
  out = try_run_node({.op_type = "ConvTranspose",
                      .inputs = {{"x", x}, {"w", f32({2, 1, 3}, pattern(6, 2))}},
                      .attributes = {attr("pads", Ints{4, 4})}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("pads"), std::string::npos) << out.error().message();
  out = try_run_node({.op_type = "ConvTranspose",
                      .inputs = {{"x", x}, {"w", f32({2, 1, 3}, pattern(6, 2))}},
                      .attributes = {attr("output_shape", Ints{1, 2})}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("output_shape"), std::string::npos) << out.error().message();
  out = try_run_node(
      {.op_type = "ConvTranspose", .inputs = {{"x", f32({2, 3}, pattern(6, 1))}, {"w", f32({2, 3}, pattern(6, 2))}}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("at least one spatial dim"), std::string::npos) << out.error().message();
  out = try_run_node({.op_type = "ConvTranspose", .inputs = {{"x", x}, {"w", f32({2, 1, 3, 1}, pattern(6, 2))}}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("must match"), std::string::npos) << out.error().message();
}

// --- Col2Im ---------------------------------------------------------------------------

TEST(NnCol2Im, CountsOverlapsAndHandlesStridesDilationsPads) {
  // 3x3 image, 2x2 blocks at stride 1: 4 blocks; summing ones counts how
  // many blocks cover each pixel.
  auto ones = f32({1, 4, 4}, Doubles(16, 1.0));
  auto out = run_node(
      {.op_type = "Col2Im",
       .opset = 18,
       .inputs = {{"x", ones}, {"image", Tensor::from<int64_t>({2}, {3, 3})}, {"block", Tensor::from<int64_t>({2}, {2, 2})}}});
  expect_tensor_near(out[0].tensor(), f32({1, 1, 3, 3}, {1, 2, 1, 2, 4, 2, 1, 2, 1}));

  // 2 channels, 5x4 image, 2x2 blocks, dilations [2, 1], strides [1, 2], pads [1, 0, 0, 1]:
  // blocks per axis: (5 + 1 - 3) / 1 + 1 = 4 and (4 + 1 - 2) / 2 + 1 = 2.
  const Ints image{5, 4}, block{2, 2}, strides{1, 2}, dil{2, 1}, pads{1, 0, 0, 1}, grid{4, 2};
  const int64_t channels = 2, rows = channels * 4, cols = 8;
  const Doubles col = pattern(rows * cols, 3);
  Doubles expected(static_cast<size_t>(channels * 20), 0.0);
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t kr = 0; kr < 4; ++kr)
      for (int64_t p = 0; p < cols; ++p) {
        const int64_t ih = (p / 2) * strides[0] + (kr / 2) * dil[0] - pads[0];
        const int64_t iw = (p % 2) * strides[1] + (kr % 2) * dil[1] - pads[1];
        if (ih < 0 || ih >= 5 || iw < 0 || iw >= 4) continue;
        expected[static_cast<size_t>(c * 20 + ih * 4 + iw)] += col[static_cast<size_t>((c * 4 + kr) * cols + p)];
      }
  out = run_node({.op_type = "Col2Im",
                  .opset = 18,
                  .inputs = {{"x", f32({1, rows, cols}, col)},
                             {"image", Tensor::from<int64_t>({2}, image)},
                             {"block", Tensor::from<int64_t>({2}, block)}},
                  .attributes = {attr("strides", strides), attr("dilations", dil), attr("pads", pads)}});
  expect_tensor_near(out[0].tensor(), f32({1, channels, 5, 4}, expected));

  auto bad = try_run_node({.op_type = "Col2Im",
                           .opset = 18,
                           .inputs = {{"x", f32({1, 4, 5}, Doubles(20, 1.0))},
                                      {"image", Tensor::from<int64_t>({2}, {3, 3})},
                                      {"block", Tensor::from<int64_t>({2}, {2, 2})}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("input dim 2 is 5"), std::string::npos) << bad.error().message();
}

// --- pooling --------------------------------------------------------------------------

TEST(NnPool, MaxPoolIndicesIncludeThePlaneOffsetAndFollowStorageOrder) {
  auto x = f32({2, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 8, 7, 6, 5, 4, 3, 2, 1});
  auto out =
      run_node({.op_type = "MaxPool", .inputs = {{"x", x}}, .attributes = {attr("kernel_shape", Ints{2, 2})}, .num_outputs = 2});
  expect_tensor_near(out[0].tensor(), f32({2, 1, 2, 2}, {5, 6, 8, 9, 9, 8, 6, 5}));
  expect_tensor_near(out[1].tensor(), Tensor::from<int64_t>({2, 1, 2, 2}, {4, 5, 7, 8, 9, 10, 12, 13}));
  // Column major: (h, w) counts as w * H + h inside the plane.
  out = run_node({.op_type = "MaxPool",
                  .inputs = {{"x", x}},
                  .attributes = {attr("kernel_shape", Ints{2, 2}), attr("storage_order", 1)},
                  .num_outputs = 2});
  expect_tensor_near(out[1].tensor(), Tensor::from<int64_t>({2, 1, 2, 2}, {4, 7, 5, 8, 9, 12, 10, 13}));
}

TEST(NnPool, CeilModeDropsWindowsStartingInTheEndPadding) {
  // 1..5, kernel 2, stride 2, pads 1: ceil gives 4 windows, but the 4th would
  // start in the end padding, so 3 remain: [-1, 0], [1, 2], [3, 4].
  auto x = f32({1, 1, 5}, {1, 2, 3, 4, 5});
  std::vector<onnx::AttributeProto> a = {attr("kernel_shape", Ints{2}), attr("strides", Ints{2}), attr("pads", Ints{1, 1}),
                                         attr("ceil_mode", 1)};
  expect_tensor_near(run_node({.op_type = "MaxPool", .inputs = {{"x", x}}, .attributes = a})[0].tensor(),
                     f32({1, 1, 3}, {1, 3, 5}));
  auto with_pad = a;
  with_pad.push_back(attr("count_include_pad", 1));
  expect_tensor_near(run_node({.op_type = "AveragePool", .inputs = {{"x", x}}, .attributes = with_pad})[0].tensor(),
                     f32({1, 1, 3}, {0.5, 2.5, 4.5}));
  expect_tensor_near(run_node({.op_type = "AveragePool", .inputs = {{"x", x}}, .attributes = a})[0].tensor(),
                     f32({1, 1, 3}, {1, 2.5, 4.5}));
}

TEST(NnPool, CeilModeWindowsPastThePaddingCountOnlyPaddedTaps) {
  // 1..6, kernel 3, stride 2, pads 1: 4 windows over input indices
  // [-1..1], [1..3], [3..5], [5..7]; index 6 is end padding, 7 is outside it.
  auto x = f32({1, 1, 6}, {1, 2, 3, 4, 5, 6});
  std::vector<onnx::AttributeProto> a = {attr("kernel_shape", Ints{3}), attr("strides", Ints{2}), attr("pads", Ints{1, 1}),
                                         attr("ceil_mode", 1)};
  auto with_pad = a;
  with_pad.push_back(attr("count_include_pad", 1));
  expect_tensor_near(run_node({.op_type = "AveragePool", .inputs = {{"x", x}}, .attributes = with_pad})[0].tensor(),
                     f32({1, 1, 4}, {1, 3, 5, 3}));
  expect_tensor_near(run_node({.op_type = "AveragePool", .inputs = {{"x", x}}, .attributes = a})[0].tensor(),
                     f32({1, 1, 4}, {1.5, 3, 5, 6}));
  expect_tensor_near(run_node({.op_type = "MaxPool", .inputs = {{"x", x}}, .attributes = a})[0].tensor(),
                     f32({1, 1, 4}, {2, 4, 6, 6}));
}

TEST(NnPool, DilationsInMaxAverageAndLpPool) {
  // 1-D, kernel 2, dilation 2: windows {0, 2}, {1, 3}, {2, 4}.
  auto x = f32({1, 1, 5}, {1, 5, 2, 4, 3});
  std::vector<onnx::AttributeProto> a = {attr("kernel_shape", Ints{2}), attr("dilations", Ints{2})};
  expect_tensor_near(run_node({.op_type = "MaxPool", .inputs = {{"x", x}}, .attributes = a})[0].tensor(),
                     f32({1, 1, 3}, {2, 5, 3}));
  expect_tensor_near(run_node({.op_type = "AveragePool", .opset = 19, .inputs = {{"x", x}}, .attributes = a})[0].tensor(),
                     f32({1, 1, 3}, {1.5, 4.5, 2.5}));
  a.push_back(attr("p", 1));
  expect_tensor_near(run_node({.op_type = "LpPool", .opset = 18, .inputs = {{"x", x}}, .attributes = a})[0].tensor(),
                     f32({1, 1, 3}, {3, 9, 5}));
}

TEST(NnPool, MaxPoolOnIntegersAnd3D) {
  auto x = Tensor::from<int8_t>({1, 1, 4}, {-5, 3, -1, 7});
  auto out = run_node({.op_type = "MaxPool",
                       .inputs = {{"x", x}},
                       .attributes = {attr("kernel_shape", Ints{2}), attr("strides", Ints{2})},
                       .num_outputs = 2});
  expect_tensor_near(out[0].tensor(), Tensor::from<int8_t>({1, 1, 2}, {3, 7}));
  expect_tensor_near(out[1].tensor(), Tensor::from<int64_t>({1, 1, 2}, {1, 3}));
  auto u = Tensor::from<uint8_t>({1, 1, 2}, {200, 9});
  expect_tensor_near(
      run_node({.op_type = "MaxPool", .inputs = {{"x", u}}, .attributes = {attr("kernel_shape", Ints{2})}})[0].tensor(),
      Tensor::from<uint8_t>({1, 1, 1}, {200}));
  // 2x2x2 cube, kernel covering all of it.
  auto cube = f32({1, 1, 2, 2, 2}, {1, 8, 3, 4, 5, 6, 7, 2});
  out = run_node(
      {.op_type = "MaxPool", .inputs = {{"x", cube}}, .attributes = {attr("kernel_shape", Ints{2, 2, 2})}, .num_outputs = 2});
  expect_tensor_near(out[0].tensor(), f32({1, 1, 1, 1, 1}, {8}));
  expect_tensor_near(out[1].tensor(), Tensor::from<int64_t>({1, 1, 1, 1, 1}, {1}));
}

TEST(NnPool, LpPoolReadsAFloatPBeforeOpset2) {
  auto x = f32({1, 1, 4}, {3, 4, 0, 0});
  std::vector<onnx::AttributeProto> a = {attr("kernel_shape", Ints{2}), attr("strides", Ints{2})};
  expect_tensor_near(run_node({.op_type = "LpPool", .opset = 11, .inputs = {{"x", x}}, .attributes = a})[0].tensor(),
                     f32({1, 1, 2}, {5, 0}));
  a.push_back(attr("p", 1.0f));
  expect_tensor_near(run_node({.op_type = "LpPool", .opset = 1, .inputs = {{"x", x}}, .attributes = a})[0].tensor(),
                     f32({1, 1, 2}, {7, 0}));
  auto g = run_node({.op_type = "GlobalLpPool", .inputs = {{"x", f32({1, 1, 2, 2}, {1, 2, 2, 4})}}});
  expect_tensor_near(g[0].tensor(), f32({1, 1, 1, 1}, {5}));
}

TEST(NnPool, GlobalPoolsInHalfAndDouble) {
  auto h = make(DataType::float16, {1, 2, 2}, {1, 2, 3, 5});
  expect_tensor_near(run_node({.op_type = "GlobalAveragePool", .inputs = {{"x", h}}})[0].tensor(),
                     make(DataType::float16, {1, 2, 1}, {1.5, 4}));
  auto d = make(DataType::float64, {1, 2, 2}, {1, 2, 3, 5});
  expect_tensor_near(run_node({.op_type = "GlobalMaxPool", .inputs = {{"x", d}}})[0].tensor(),
                     make(DataType::float64, {1, 2, 1}, {2, 5}));
}

TEST(NnPool, BadInputsAreErrors) {
  auto x = f32({1, 1, 4, 4}, pattern(16, 1));
  auto out = try_run_node({.op_type = "MaxPool", .inputs = {{"x", x}}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("kernel_shape is required"), std::string::npos);
  out = try_run_node({.op_type = "MaxPool", .inputs = {{"x", x}}, .attributes = {attr("kernel_shape", Ints{2})}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("expected rank 3"), std::string::npos) << out.error().message();
  out = try_run_node({.op_type = "AveragePool", .inputs = {{"x", x}}, .attributes = {attr("kernel_shape", Ints{5, 5})}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("larger than the padded input"), std::string::npos) << out.error().message();
  out = try_run_node({.op_type = "AveragePool",
                      .inputs = {{"x", Tensor::from<int32_t>({1, 1, 2}, {1, 2})}},
                      .attributes = {attr("kernel_shape", Ints{2})}});
  ASSERT_FALSE(out.ok());
  out = try_run_node({.op_type = "MaxUnpool",
                      .inputs = {{"x", f32({1, 1, 2}, {5, 6})}, {"i", Tensor::from<int64_t>({1, 1, 2}, {1, 4})}},
                      .attributes = {attr("kernel_shape", Ints{2}), attr("strides", Ints{2})}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("I[1] = 4 is outside"), std::string::npos) << out.error().message();
}

TEST(NnPool, MaxUnpoolInvertsMaxPool) {
  auto out = run_node({.op_type = "MaxUnpool",
                       .inputs = {{"x", f32({1, 2, 2}, {5, 6, 7, 8})}, {"i", Tensor::from<int64_t>({1, 2, 2}, {1, 2, 4, 7})}},
                       .attributes = {attr("kernel_shape", Ints{2}), attr("strides", Ints{2})}});
  expect_tensor_near(out[0].tensor(), f32({1, 2, 4}, {0, 5, 6, 0, 7, 0, 0, 8}));
}

// --- normalization -----------------------------------------------------------------------

TEST(NnNorm, BatchNormInferenceInEveryFloatType) {
  // (x - mean) / sqrt(var) * scale + B with epsilon 0: channel 0 has mean 1,
  // std 2, scale 1, B 0; channel 1 mean 3, std 1, scale 2, B 1.
  for (DataType type : {DataType::float32, DataType::float64, DataType::float16}) {
    auto out = run_node({.op_type = "BatchNormalization",
                         .opset = 9,
                         .inputs = {{"x", make(type, {1, 2, 1, 2}, {1, 2, 3, 4})},
                                    {"s", make(type, {2}, {1, 2})},
                                    {"b", make(type, {2}, {0, 1})},
                                    {"m", make(type, {2}, {1, 3})},
                                    {"v", make(type, {2}, {4, 1})}},
                         .attributes = {attr("epsilon", 0.0f)}});
    expect_tensor_near(out[0].tensor(), make(type, {1, 2, 1, 2}, {0, 0.5, 1, 3}));
  }
}

TEST(NnNorm, BatchNormSpatialZeroBeforeOpset9) {
  // One parameter per element of a sample: x is [N=2, C=1, 2].
  auto out = run_node({.op_type = "BatchNormalization",
                       .opset = 7,
                       .inputs = {{"x", f32({2, 1, 2}, {1, 2, 3, 4})},
                                  {"s", f32({1, 2}, {1, 1})},
                                  {"b", f32({1, 2}, {0, 0})},
                                  {"m", f32({1, 2}, {0, 10})},
                                  {"v", f32({1, 2}, {1, 4})}},
                       .attributes = {attr("epsilon", 0.0f), attr("spatial", 0)}});
  expect_tensor_near(out[0].tensor(), f32({2, 1, 2}, {1, -4, 3, -3}));
}

TEST(NnNorm, BatchNormTrainingModeUpdatesRunningStatistics) {
  // Batch statistics of 1, 2, 3, 4: mean 2.5, population variance 1.25.
  const double inv = 1.0 / std::sqrt(1.25);
  auto out = run_node({.op_type = "BatchNormalization",
                       .opset = 15,
                       .inputs = {{"x", f32({2, 1, 2}, {1, 2, 3, 4})},
                                  {"s", f32({1}, {1})},
                                  {"b", f32({1}, {0})},
                                  {"m", f32({1}, {0})},
                                  {"v", f32({1}, {1})}},
                       .attributes = {attr("epsilon", 0.0f), attr("training_mode", 1)},
                       .num_outputs = 3});
  expect_tensor_near(out[0].tensor(), f32({2, 1, 2}, {-1.5 * inv, -0.5 * inv, 0.5 * inv, 1.5 * inv}));
  expect_tensor_near(out[1].tensor(), f32({1}, {0.25}));         // 0 * 0.9 + 2.5 * 0.1
  expect_tensor_near(out[2].tensor(), f32({1}, {0.9 + 0.125}));  // 1 * 0.9 + 1.25 * 0.1
}

TEST(NnNorm, BatchNormParameterOfTheWrongLengthIsAnError) {
  auto out = try_run_node({.op_type = "BatchNormalization",
                           .inputs = {{"x", f32({1, 2, 2}, {1, 2, 3, 4})},
                                      {"s", f32({3}, {1, 1, 1})},
                                      {"b", f32({2}, {0, 0})},
                                      {"m", f32({2}, {0, 0})},
                                      {"v", f32({2}, {1, 1})}}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("scale has shape [3]"), std::string::npos) << out.error().message();
}

TEST(NnNorm, LayerNormWithStatisticsOutputs) {
  // Rows [1, 2, 3] and [2, 4, 6]: means 2 and 4, variances 2/3 and 8/3; both
  // normalize to [-a, 0, a] with a = sqrt(1.5).
  const double a = std::sqrt(1.5);
  auto out = run_node({.op_type = "LayerNormalization",
                       .opset = 17,
                       .inputs = {{"x", f32({2, 3}, {1, 2, 3, 2, 4, 6})}, {"s", f32({3}, {1, 1, 2})}, {"b", f32({3}, {0, 0, 1})}},
                       .attributes = {attr("epsilon", 0.0f)},
                       .num_outputs = 3});
  expect_tensor_near(out[0].tensor(), f32({2, 3}, {-a, 0, 2 * a + 1, -a, 0, 2 * a + 1}));
  expect_tensor_near(out[1].tensor(), f32({2, 1}, {2, 4}));
  expect_tensor_near(out[2].tensor(), f32({2, 1}, {std::sqrt(1.5), std::sqrt(3.0 / 8.0)}));
}

TEST(NnNorm, LayerNormAxisZeroBroadcastScaleAndHalf) {
  // All four values form one row: mean 4, variance 5.
  const double inv = 1 / std::sqrt(5.0);
  for (DataType type : {DataType::float32, DataType::float16}) {
    auto out = run_node({.op_type = "LayerNormalization",
                         .opset = 17,
                         .inputs = {{"x", make(type, {2, 2}, {1, 3, 5, 7})}, {"s", make(type, {1}, {2})}},
                         .attributes = {attr("axis", 0), attr("epsilon", 0.0f)},
                         .num_outputs = 2});
    expect_tensor_near(out[0].tensor(), make(type, {2, 2}, {-6 * inv, -2 * inv, 2 * inv, 6 * inv}), 2e-3, 2e-3);
    expect_tensor_near(out[1].tensor(), f32({1, 1}, {4}));  // stash_type 1: float32 statistics
  }
  auto bad = try_run_node(
      {.op_type = "LayerNormalization", .opset = 17, .inputs = {{"x", f32({2, 3}, pattern(6, 1))}, {"s", f32({2}, {1, 1})}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("does not broadcast"), std::string::npos) << bad.error().message();
}

TEST(NnNorm, GroupNormOpset18ScalesPerGroupAndOpset21PerChannel) {
  // Groups {1, 3} and {2, 6}: means 2 and 4, std 1 and 2: both give [-1, 1].
  auto x = f32({1, 4, 1}, {1, 3, 2, 6});
  auto old = run_node({.op_type = "GroupNormalization",
                       .opset = 18,
                       .inputs = {{"x", x}, {"s", f32({2}, {2, 3})}, {"b", f32({2}, {0, 1})}},
                       .attributes = {attr("num_groups", 2), attr("epsilon", 0.0f)}});
  expect_tensor_near(old[0].tensor(), f32({1, 4, 1}, {-2, 2, -2, 4}));
  auto now = run_node({.op_type = "GroupNormalization",
                       .opset = 21,
                       .inputs = {{"x", x}, {"s", f32({4}, {1, 2, 3, 4})}, {"b", f32({4}, {0, 0, 0, 1})}},
                       .attributes = {attr("num_groups", 2), attr("epsilon", 0.0f)}});
  expect_tensor_near(now[0].tensor(), f32({1, 4, 1}, {-1, 2, -3, 5}));
  // The opset 18 shapes are wrong at 21, and 3 groups do not divide 4 channels.
  auto bad = try_run_node({.op_type = "GroupNormalization",
                           .opset = 21,
                           .inputs = {{"x", x}, {"s", f32({2}, {2, 3})}, {"b", f32({2}, {0, 1})}},
                           .attributes = {attr("num_groups", 2)}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("one per channel"), std::string::npos) << bad.error().message();
  bad = try_run_node({.op_type = "GroupNormalization",
                      .opset = 18,
                      .inputs = {{"x", x}, {"s", f32({3}, {1, 1, 1})}, {"b", f32({3}, {0, 0, 0})}},
                      .attributes = {attr("num_groups", 3)}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("does not divide"), std::string::npos) << bad.error().message();
}

TEST(NnNorm, InstanceNormInDouble) {
  // 1, 2, 3, 4: mean 2.5, variance 1.25; scale 2, B 1.
  const double inv = 1 / std::sqrt(1.25);
  auto out = run_node({.op_type = "InstanceNormalization",
                       .inputs = {{"x", make(DataType::float64, {1, 1, 4}, {1, 2, 3, 4})},
                                  {"s", make(DataType::float64, {1}, {2})},
                                  {"b", make(DataType::float64, {1}, {1})}},
                       .attributes = {attr("epsilon", 0.0f)}});
  expect_tensor_near(out[0].tensor(), make(DataType::float64, {1, 1, 4}, {1 - 3 * inv, 1 - inv, 1 + inv, 1 + 3 * inv}), 1e-12,
                     1e-12);
}

TEST(NnNorm, LrnWindowIsAsymmetricForEvenSizes) {
  // x = [1, 2, 3] over channels, alpha / size = 1, beta 1, bias 1.
  auto x = f32({1, 3, 1}, {1, 2, 3});
  auto odd = run_node({.op_type = "LRN",
                       .inputs = {{"x", x}},
                       .attributes = {attr("size", 3), attr("alpha", 3.0f), attr("beta", 1.0f), attr("bias", 1.0f)}});
  expect_tensor_near(odd[0].tensor(), f32({1, 3, 1}, {1.0 / 6, 2.0 / 15, 3.0 / 14}));
  // size 2: channels c and c + 1.
  auto even = run_node({.op_type = "LRN",
                        .inputs = {{"x", x}},
                        .attributes = {attr("size", 2), attr("alpha", 2.0f), attr("beta", 1.0f), attr("bias", 1.0f)}});
  expect_tensor_near(even[0].tensor(), f32({1, 3, 1}, {1.0 / 6, 2.0 / 14, 3.0 / 10}));
}

TEST(NnNorm, LpNormalizationAndMeanVarianceNormalization) {
  auto x = f32({2, 2}, {3, 4, 0, 0});
  expect_tensor_near(run_node({.op_type = "LpNormalization", .inputs = {{"x", x}}})[0].tensor(), f32({2, 2}, {0.6, 0.8, 0, 0}));
  expect_tensor_near(run_node({.op_type = "LpNormalization", .inputs = {{"x", x}}, .attributes = {attr("p", 1)}})[0].tensor(),
                     f32({2, 2}, {3.0 / 7, 4.0 / 7, 0, 0}));
  expect_tensor_near(
      run_node({.op_type = "LpNormalization", .inputs = {{"x", f32({2, 2}, {3, 1, 4, 0})}}, .attributes = {attr("axis", 0)}})[0]
          .tensor(),
      f32({2, 2}, {0.6, 1, 0.8, 0}));
  auto bad = try_run_node({.op_type = "LpNormalization", .inputs = {{"x", x}}, .attributes = {attr("p", 3)}});
  ASSERT_FALSE(bad.ok());
  // Rows [1, 3] (mean 2, std 1) and [2, 2] (std 0: stays 0).
  expect_tensor_near(run_node({.op_type = "MeanVarianceNormalization",
                               .inputs = {{"x", f32({2, 2}, {1, 3, 2, 2})}},
                               .attributes = {attr("axes", Ints{1})}})[0]
                         .tensor(),
                     f32({2, 2}, {-1, 1, 0, 0}));
  bad = try_run_node({.op_type = "MeanVarianceNormalization", .inputs = {{"x", f32({2, 2}, {1, 3, 2, 2})}}});
  ASSERT_FALSE(bad.ok());  // default axes [0, 2, 3] need rank 4
  EXPECT_NE(bad.error().message().find("out of range"), std::string::npos) << bad.error().message();
}

// --- softmax ---------------------------------------------------------------------------------

TEST(NnSoftmax, Opset11CoercesTo2DAndOpset13UsesOneAxis) {
  auto x = f32({1, 2, 2}, {1, 2, 3, 4});
  // Opset 11, axis 1: one row of four values.
  double sum = std::exp(1.0) + std::exp(2.0) + std::exp(3.0) + std::exp(4.0);
  auto old = run_node({.op_type = "Softmax", .opset = 11, .inputs = {{"x", x}}, .attributes = {attr("axis", 1)}});
  expect_tensor_near(old[0].tensor(),
                     f32({1, 2, 2}, {std::exp(1.0) / sum, std::exp(2.0) / sum, std::exp(3.0) / sum, std::exp(4.0) / sum}));
  // Opset 13, axis 1: pairs (1, 3) and (2, 4).
  const double lo = 1 / (1 + std::exp(2.0)), hi = 1 - lo;
  auto now = run_node({.op_type = "Softmax", .opset = 13, .inputs = {{"x", x}}, .attributes = {attr("axis", 1)}});
  expect_tensor_near(now[0].tensor(), f32({1, 2, 2}, {lo, lo, hi, hi}));
  auto log = run_node({.op_type = "LogSoftmax", .opset = 13, .inputs = {{"x", x}}, .attributes = {attr("axis", 1)}});
  expect_tensor_near(log[0].tensor(), f32({1, 2, 2}, {std::log(lo), std::log(lo), std::log(hi), std::log(hi)}));
  auto hard = run_node({.op_type = "Hardmax", .opset = 11, .inputs = {{"x", x}}, .attributes = {attr("axis", 1)}});
  expect_tensor_near(hard[0].tensor(), f32({1, 2, 2}, {0, 0, 0, 1}));
  hard = run_node({.op_type = "Hardmax", .opset = 13, .inputs = {{"x", x}}, .attributes = {attr("axis", 1)}});
  expect_tensor_near(hard[0].tensor(), f32({1, 2, 2}, {0, 0, 1, 1}));
}

TEST(NnSoftmax, RowsOfAnyLengthWithMaskedEntries) {
  // Lengths around the 16 lanes the float path keeps (its last block
  // overlapping the one before), -inf entries (masked attention) that must
  // give exactly 0, the row's largest entry last in the second row; the
  // truth is computed in double.
  for (int64_t n : {1, 7, 8, 13, 15, 16, 17, 31, 33, 49, 130}) {
    std::vector<float> x;
    for (int64_t i = 0; i < 2 * n; ++i)
      x.push_back(i % 5 == 3 && n > 1 ? -std::numeric_limits<float>::infinity() : static_cast<float>((i * 7) % 11) - 4.5f);
    x.back() = 9.0f;
    std::vector<double> expected(x.size());
    for (int64_t r = 0; r < 2; ++r) {
      double max = -INFINITY, sum = 0;
      for (int64_t i = 0; i < n; ++i) max = std::max(max, static_cast<double>(x[r * n + i]));
      for (int64_t i = 0; i < n; ++i) sum += std::exp(x[r * n + i] - max);
      for (int64_t i = 0; i < n; ++i) expected[r * n + i] = std::exp(x[r * n + i] - max) / sum;
    }
    auto out = run_node({.op_type = "Softmax", .opset = 13, .inputs = {{"x", f32({2, n}, Doubles(x.begin(), x.end()))}}});
    expect_tensor_near(out[0].tensor(), make(DataType::float32, {2, n}, expected), 1e-7, 1e-6);
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::isinf(x[i])) {
        EXPECT_EQ(out[0].tensor().data<float>()[i], 0.0f);
      }
    }
  }
}

TEST(NnSoftmax, HardmaxPicksTheFirstOfTiesAndHalfWorks) {
  auto hard = run_node({.op_type = "Hardmax", .inputs = {{"x", f32({3}, {3, 1, 3})}}});
  expect_tensor_near(hard[0].tensor(), f32({3}, {1, 0, 0}));
  auto h = run_node({.op_type = "LogSoftmax", .inputs = {{"x", make(DataType::float16, {2}, {0, 0})}}});
  expect_tensor_near(h[0].tensor(), make(DataType::float16, {2}, {-std::log(2.0), -std::log(2.0)}), 1e-3, 1e-3);
  auto big = run_node({.op_type = "Softmax", .inputs = {{"x", f32({2}, {1000, 0})}}});
  expect_tensor_near(big[0].tensor(), f32({2}, {1, 0}));
  auto bad = try_run_node({.op_type = "Softmax", .inputs = {{"x", f32({2}, {1, 2})}}, .attributes = {attr("axis", 1)}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("axis 1 is out of range"), std::string::npos) << bad.error().message();
}

// --- dropout ---------------------------------------------------------------------------------

TEST(NnDropout, InferenceMasksChangeTypeAtOpset10) {
  auto x = f32({3}, {-1, 0, 1});
  auto old = run_node({.op_type = "Dropout", .opset = 7, .inputs = {{"x", x}}, .num_outputs = 2});
  expect_tensor_near(old[0].tensor(), x);
  expect_tensor_near(old[1].tensor(), f32({3}, {1, 1, 1}));
  auto mid = run_node({.op_type = "Dropout", .opset = 10, .inputs = {{"x", x}}, .num_outputs = 2});
  expect_tensor_near(mid[1].tensor(), Tensor::from<bool>({3}, {true, true, true}));
  auto now = run_node({.op_type = "Dropout",
                       .opset = 13,
                       .inputs = {{"x", x}, {"r", f32({}, {0.9})}, {"t", Tensor::from<bool>({}, {false})}},
                       .num_outputs = 2});
  expect_tensor_near(now[0].tensor(), x);
  expect_tensor_near(now[1].tensor(), Tensor::from<bool>({3}, {true, true, true}));
}

TEST(NnDropout, TrainingDropsAboutRatioAndScalesTheRest) {
  const int64_t n = 4000;
  auto x = f32({n}, Doubles(static_cast<size_t>(n), 1.0));
  auto spec = testing::NodeSpec{.op_type = "Dropout",
                                .opset = 13,
                                .inputs = {{"x", x}, {"r", f32({}, {0.25})}, {"t", Tensor::from<bool>({}, {true})}},
                                .attributes = {attr("seed", 7)},
                                .num_outputs = 2};
  auto first = run_node(spec);
  auto second = run_node(spec);
  const Tensor& y = first[0].tensor();
  const Tensor& mask = first[1].tensor();
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool keep = mask.data<bool>()[i];
    kept += keep;
    EXPECT_FLOAT_EQ(y.data<float>()[i], keep ? 1.0f / 0.75f : 0.0f);
    EXPECT_EQ(keep, second[1].tensor().data<bool>()[i]) << "a seed gives one mask";
  }
  EXPECT_NEAR(static_cast<double>(kept) / n, 0.75, 0.03);
  auto bad = try_run_node(
      {.op_type = "Dropout", .opset = 13, .inputs = {{"x", x}, {"r", f32({}, {1.0})}, {"t", Tensor::from<bool>({}, {true})}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("ratio is 1"), std::string::npos) << bad.error().message();
}

// --- losses ----------------------------------------------------------------------------------

TEST(NnLoss, NegativeLogLikelihoodReductionsWeightsAndIgnoreIndex) {
  auto input = f32({2, 3}, {-1, -2, -3, -0.5, -1.5, -2.5});
  auto target = Tensor::from<int64_t>({2}, {2, 0});
  auto weight = f32({3}, {1, 2, 3});
  auto run = [&](std::vector<onnx::AttributeProto> a, const Tensor& t) {
    return run_node({.op_type = "NegativeLogLikelihoodLoss",
                     .opset = 13,
                     .inputs = {{"x", input}, {"t", t}, {"w", weight}},
                     .attributes = a})[0]
        .tensor();
  };
  // Losses 3 * 3 = 9 and 0.5 * 1 = 0.5; weights 3 and 1.
  expect_tensor_near(run({attr("reduction", "none")}, target), f32({2}, {9, 0.5}));
  expect_tensor_near(run({attr("reduction", "sum")}, target), f32({}, {9.5}));
  expect_tensor_near(run({}, target), f32({}, {9.5 / 4}));
  expect_tensor_near(run({attr("ignore_index", 0)}, target), f32({}, {3}));
  expect_tensor_near(run({attr("ignore_index", 0), attr("reduction", "none")}, Tensor::from<int32_t>({2}, {2, 0})),
                     f32({2}, {9, 0}));
  // Every target ignored: the mean is 0 / 0.
  Tensor all = run({attr("ignore_index", 0)}, Tensor::from<int64_t>({2}, {0, 0}));
  EXPECT_TRUE(std::isnan(all.data<float>()[0]));

  auto bad = try_run_node(
      {.op_type = "NegativeLogLikelihoodLoss", .opset = 13, .inputs = {{"x", input}, {"t", Tensor::from<int64_t>({2}, {2, 3})}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("target[1] = 3 is not a class index"), std::string::npos) << bad.error().message();
  bad = try_run_node({.op_type = "NegativeLogLikelihoodLoss",
                      .opset = 13,
                      .inputs = {{"x", input}, {"t", Tensor::from<int64_t>({3}, {0, 0, 0})}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("target has shape [3]"), std::string::npos) << bad.error().message();
}

TEST(NnLoss, SoftmaxCrossEntropyInDoubleWithLogProb) {
  // Two equal scores: log_prob = -ln 2 for both, loss ln 2.
  auto out = run_node({.op_type = "SoftmaxCrossEntropyLoss",
                       .opset = 13,
                       .inputs = {{"x", make(DataType::float64, {1, 2}, {0, 0})}, {"t", Tensor::from<int64_t>({1}, {1})}},
                       .num_outputs = 2});
  expect_tensor_near(out[0].tensor(), make(DataType::float64, {}, {std::log(2.0)}), 1e-12, 1e-12);
  expect_tensor_near(out[1].tensor(), make(DataType::float64, {1, 2}, {-std::log(2.0), -std::log(2.0)}), 1e-12, 1e-12);
  // [N=1, C=2, d=2], scores (0, ln 3) at d0 and (ln 3, 0) at d1, labels 1 and 1:
  // log_prob of class 1 is ln(3/4) then ln(1/4).
  auto scores = f32({1, 2, 2}, {0, std::log(3.0), std::log(3.0), 0});
  out = run_node({.op_type = "SoftmaxCrossEntropyLoss",
                  .opset = 13,
                  .inputs = {{"x", scores}, {"t", Tensor::from<int64_t>({1, 2}, {1, 1})}},
                  .attributes = {attr("reduction", "none")}});
  expect_tensor_near(out[0].tensor(), f32({1, 2}, {-std::log(0.75), -std::log(0.25)}));
}

// ((i * a) % m) / d - s for i in [0, n): inputs a Python script rebuilds
// exactly, to compare with torchvision.ops.deform_conv2d (torchvision 0.14,
// float64) whose outputs are pasted below.
Tensor deform_sequence(Shape shape, int a, int m, double d, double s) {
  std::vector<double> v;
  int64_t n = 1;
  for (int64_t dim : shape) n *= dim;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<double>((i * a) % m) / d - s);
  return Tensor::from<double>(std::move(shape), v);
}

TEST(DeformConv, MatchesTorchvisionWithMaskBiasAndOffsetGroups) {
  // Padding 1 sends taps outside X (they read 0); two offset groups.
  auto out = run_node({.op_type = "DeformConv",
                       .opset = 19,
                       .inputs = {{"x", deform_sequence({1, 2, 3, 3}, 5, 13, 4, 1)},
                                  {"w", deform_sequence({2, 2, 2, 2}, 3, 7, 5, 0.6)},
                                  {"offset", deform_sequence({1, 16, 4, 4}, 7, 11, 10, 0.5)},
                                  {"b", Tensor::from<double>({2}, {0.5, -0.25})},
                                  {"mask", deform_sequence({1, 8, 4, 4}, 2, 5, 4, 0)}},
                       .attributes = {attr("pads", Ints{1, 1, 1, 1}), attr("offset_group", int64_t{2})}});
  expect_tensor_near(
      out[0].tensor(),
      Tensor::from<double>({1, 2, 4, 4}, {-0.2275, 0.1575,    0.449375,  0.416,     0.2475,    0.84275,  0.686375,  0.59675,
                                          0.5645,  0.80525,   0.98375,   0.087625,  -0.12225,  0.6745,   0.225,     0.4115,
                                          -0.213,  -0.113125, -0.461125, -0.2455,   -0.125625, -0.43925, 0.204625,  -0.44275,
                                          -0.478,  -0.28775,  -0.32,     -0.478375, -0.05625,  -0.222,   -0.198125, -0.3025}),
      1e-9);
}

TEST(DeformConv, MatchesTorchvisionWithGroupsStridesAndDilations) {
  auto out = run_node({.op_type = "DeformConv",
                       .opset = 19,
                       .inputs = {{"x", deform_sequence({1, 2, 5, 5}, 5, 13, 4, 1)},
                                  {"w", deform_sequence({4, 1, 3, 3}, 3, 7, 5, 0.6)},
                                  {"offset", deform_sequence({1, 18, 3, 3}, 7, 11, 10, 0.5)}},
                       .attributes = {attr("group", int64_t{2}), attr("strides", Ints{2, 2}), attr("dilations", Ints{2, 2}),
                                      attr("pads", Ints{2, 2, 2, 2})}});
  expect_tensor_near(out[0].tensor(),
                     Tensor::from<double>({1, 4, 3, 3}, {-0.697, 0.0275, 0.023,  1.03,  0.392,   -0.52,  0.475,  -0.956, -0.245,
                                                         -0.051, 0.613,  -0.551, 1.163, -0.5145, 0.2025, -0.29,  0.323,  0.102,
                                                         0.34,   -0.593, -0.294, 0.475, -0.64,   0.87,   -0.265, 0.845,  0.376,
                                                         0.014,  -0.256, -0.06,  0.08,  -0.362,  0.885,  -0.225, 0.62,   0.059}),
                     1e-9);
}

TEST(DeformConv, ZeroOffsetsMakeAPlainConvolutionInFloat32) {
  auto x = deform_sequence({1, 3, 6, 5}, 5, 13, 4, 1), w = deform_sequence({4, 3, 3, 2}, 3, 7, 5, 0.6);
  auto to_float = [](const Tensor& t) {
    std::vector<float> v;
    for (int64_t i = 0; i < t.numel(); ++i) v.push_back(static_cast<float>(t.data<double>()[i]));
    return Tensor::from<float>(t.shape(), v);
  };
  std::vector<float> zeros(12 * 4 * 6, 0.0f);  // 2 x 6 taps, 4 x 6 positions
  auto deform =
      run_node({.op_type = "DeformConv",
                .opset = 19,
                .inputs = {{"x", to_float(x)}, {"w", to_float(w)}, {"offset", Tensor::from<float>({1, 12, 4, 6}, zeros)}},
                .attributes = {attr("pads", Ints{0, 1, 0, 1})}});
  auto conv = run_node(
      {.op_type = "Conv", .inputs = {{"x", to_float(x)}, {"w", to_float(w)}}, .attributes = {attr("pads", Ints{0, 1, 0, 1})}});
  expect_tensor_near(deform[0].tensor(), conv[0].tensor(), 1e-5);
}

TEST(DeformConv, RefusesAnOffsetOfTheWrongShape) {
  auto bad = try_run_node({.op_type = "DeformConv",
                           .opset = 19,
                           .inputs = {{"x", deform_sequence({1, 2, 3, 3}, 5, 13, 4, 1)},
                                      {"w", deform_sequence({2, 2, 2, 2}, 3, 7, 5, 0.6)},
                                      {"offset", deform_sequence({1, 8, 3, 3}, 7, 11, 10, 0.5)}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("offset must be [1,8,2,2]"), std::string::npos) << bad.error().message();
}

// RMSNormalization (opset 23) where the backend data has no case: a Scale
// that varies over the rows, and Y in Scale's type when X's differs.
TEST(NnRmsNormalization, RowScalesAndScaleType) {
  // Rows [3, 4] and [0, 5]: mean squares 12.5 both, RMS sqrt(12.5).
  const double rms = std::sqrt(12.5);
  auto x = Tensor::from<float>({2, 2}, {3, 4, 0, 5});
  auto out = run_node({.op_type = "RMSNormalization",
                       .opset = 23,
                       .inputs = {{"x", x}, {"scale", Tensor::from<float>({2, 1}, {1, 2})}},
                       .attributes = {attr("axis", 1), attr("epsilon", 0.0f)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 2}, {float(3 / rms), float(4 / rms), 0, float(2 * 5 / rms)}));
  // float16 X, float Scale: Y is float. X = [1, -1, 1, -1] has RMS 1.
  std::vector<Float16> halves = {Float16(1.0f), Float16(-1.0f), Float16(1.0f), Float16(-1.0f)};
  out = run_node({.op_type = "RMSNormalization",
                  .opset = 23,
                  .inputs = {{"x", Tensor::from<Float16>({4}, halves)}, {"scale", Tensor::from<float>({4}, {1, 2, 3, 4})}},
                  .attributes = {attr("epsilon", 0.0f)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({4}, {1, -2, 3, -4}));
  auto bad = try_run_node(
      {.op_type = "RMSNormalization", .opset = 23, .inputs = {{"x", x}, {"scale", Tensor::from<float>({3}, {1, 1, 1})}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("does not broadcast"), std::string::npos) << bad.error().message();
}

// RotaryEmbedding (opset 23): a [sequence, half] cache without position_ids
// (numpy broadcasts it over the batch in the spec's definition), partial
// rotation, and bad position ids.
TEST(NnRotaryEmbedding, SharedCachePartialRotationAndBadPositions) {
  // [B=1, H=1, S=2, D=6], rotary dim 4: pairs (x0, x2) and (x1, x3); x4, x5 pass.
  auto x = Tensor::from<float>({1, 1, 2, 6}, {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6});
  // Token 0 is not turned (cos 1, sin 0); token 1 by 90 degrees (cos 0, sin 1).
  auto cos = Tensor::from<float>({2, 2}, {1, 1, 0, 0});
  auto sin = Tensor::from<float>({2, 2}, {0, 0, 1, 1});
  auto out = run_node({.op_type = "RotaryEmbedding",
                       .opset = 23,
                       .inputs = {{"x", x}, {"cos", cos}, {"sin", sin}},
                       .attributes = {attr("rotary_embedding_dim", 4)}});
  // Turned by 90 degrees: (x1, x2) -> (-x2, x1).
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({1, 1, 2, 6}, {1, 2, 3, 4, 5, 6, -3, -4, 1, 2, 5, 6}));
  // Interleaved: pairs (x0, x1) and (x2, x3).
  out = run_node({.op_type = "RotaryEmbedding",
                  .opset = 23,
                  .inputs = {{"x", x}, {"cos", cos}, {"sin", sin}},
                  .attributes = {attr("rotary_embedding_dim", 4), attr("interleaved", 1)}});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({1, 1, 2, 6}, {1, 2, 3, 4, 5, 6, -2, 1, -4, 3, 5, 6}));
  auto bad =
      try_run_node({.op_type = "RotaryEmbedding",
                    .opset = 23,
                    .inputs = {{"x", x}, {"cos", cos}, {"sin", sin}, {"position_ids", Tensor::from<int64_t>({1, 2}, {0, 2})}},
                    .attributes = {attr("rotary_embedding_dim", 4)}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("position_ids element 1 is 2"), std::string::npos) << bad.error().message();
  bad = try_run_node({.op_type = "RotaryEmbedding",
                      .opset = 23,
                      .inputs = {{"x", x}, {"cos", cos}, {"sin", sin}},
                      .attributes = {attr("rotary_embedding_dim", 3)}});
  ASSERT_FALSE(bad.ok());
}

// CausalConvWithState (opset 27) by hand: k = 2, the carried position first.
TEST(NnCausalConvWithState, CarriesThePastAndChecksItsShape) {
  // P = [10, 1, 2, 3]: y[t] = P[t] + P[t + 1] + bias; present = the last k - 1 = 1.
  auto x = Tensor::from<float>({1, 1, 3}, {1, 2, 3});
  auto w = Tensor::from<float>({1, 1, 2}, {1, 1});
  auto out = run_node(
      {.op_type = "CausalConvWithState",
       .opset = 27,
       .inputs = {{"x", x}, {"w", w}, {"b", Tensor::from<float>({1}, {0.5f})}, {"past", Tensor::from<float>({1, 1, 1}, {10})}},
       .num_outputs = 2});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({1, 1, 3}, {11.5f, 3.5f, 5.5f}));
  expect_tensor_near(out[1].tensor(), Tensor::from<float>({1, 1, 1}, {3}));
  auto bad = try_run_node({.op_type = "CausalConvWithState",
                           .opset = 27,
                           .inputs = {{"x", x}, {"w", w}, {"", Tensor()}, {"past", Tensor::from<float>({1, 1, 2}, {0, 0})}},
                           .num_outputs = 2});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("past_state must be [batch, channels, k - 1] = [1, 1, 1]"), std::string::npos)
      << bad.error().message();
}

// LinearAttention (opset 27) by hand, one head with d_k = d_v = 1, scale 1:
// q = [1, 2], k = [1, 1], v = [3, 4] over two tokens.
TEST(NnLinearAttention, RecurrencesByHand) {
  auto q = Tensor::from<float>({1, 2, 1}, {1, 2});
  auto k = Tensor::from<float>({1, 2, 1}, {1, 1});
  auto v = Tensor::from<float>({1, 2, 1}, {3, 4});
  auto heads = [](const char* rule) {
    return std::vector<onnx::AttributeProto>{attr("q_num_heads", int64_t{1}), attr("kv_num_heads", int64_t{1}),
                                             attr("scale", 1.0f), attr("update_rule", rule)};
  };
  // linear: S = 3, then 7; o = 1 * 3, 2 * 7.
  auto out = run_node({.op_type = "LinearAttention",
                       .opset = 27,
                       .inputs = {{"q", q}, {"k", k}, {"v", v}},
                       .attributes = heads("linear"),
                       .num_outputs = 2});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({1, 2, 1}, {3, 14}));
  expect_tensor_near(out[1].tensor(), Tensor::from<float>({1, 1, 1, 1}, {7}));
  // gated_delta, decay exp(g) = 1/2, beta 1/2, past 2:
  // S' = 1, S = 1 + (3 - 1) / 2 = 2; then S' = 1, S = 1 + (4 - 1) / 2 = 2.5.
  const float g = std::log(0.5f);
  out = run_node({.op_type = "LinearAttention",
                  .opset = 27,
                  .inputs = {{"q", q},
                             {"k", k},
                             {"v", v},
                             {"past", Tensor::from<float>({1, 1, 1, 1}, {2})},
                             {"decay", Tensor::from<float>({1, 2, 1}, {g, g})},
                             {"beta", Tensor::from<float>({1, 2, 1}, {0.5f, 0.5f})}},
                  .attributes = heads("gated_delta"),
                  .num_outputs = 2});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({1, 2, 1}, {2, 5}));
  expect_tensor_near(out[1].tensor(), Tensor::from<float>({1, 1, 1, 1}, {2.5f}));
  auto bad = try_run_node({.op_type = "LinearAttention",
                           .opset = 27,
                           .inputs = {{"q", q}, {"k", k}, {"v", v}},
                           .attributes = heads("delta"),
                           .num_outputs = 2});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("needs the beta input"), std::string::npos) << bad.error().message();
}

}  // namespace
}  // namespace onnxkit
