// Attention (opsets 23-25) against the plain composition of its definition,
// written below in double: Q K^T times the scale, softcap, the mask and the
// causal frontier added, a softmax per row, times V, head by head with the
// key/value heads shared by groups of query heads. The cases cover what the
// ONNX backend data covers thinly: long sequences that span several query
// blocks and key tiles (the online softmax's rescaling), every mask form,
// caches with and without the present outputs, the four stages of
// qk_matmul_output, 16- and 64-bit floats, two threads, and bad inputs.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <random>

#include "runtime/kernels/common.h"
#include "support/node_runner.h"

namespace onnxkit {
namespace {

using runtime::DataType;
using runtime::Shape;
using runtime::Tensor;
using testing::attr;
using testing::expect_tensor_near;
using testing::NodeInput;
using testing::NodeSpec;
using Doubles = std::vector<double>;

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// One case: sizes, options, and the inputs in the 4-D form.
struct Case {
  int64_t batch = 2, q_heads = 2, kv_heads = 2, q_len = 3, kv_len = 4, past_len = 0, head = 8, v_head = 8;
  bool three_d = false;
  bool causal = false;
  std::optional<float> scale;
  float softcap = 0;
  int mode = -1;         // qk_matmul_output_mode; -1: the output is not asked for
  bool present = false;  // ask for present_key and present_value
  std::optional<Shape> mask_shape;
  bool bool_mask = false;
  std::vector<int64_t> nonpad;                  // nonpad_kv_seqlen (opset 24)
  int64_t left_window = -1, right_window = -1;  // opset 25; -1: unbounded
  int64_t opset = 23;
  int threads = 1;
  DataType type = DataType::float32;
  unsigned seed = 1;
};

struct Inputs {
  Doubles q, k, v, past_k, past_v, mask;  // q, k, v, caches: 4-D, row-major
};

int64_t count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Doubles uniform(int64_t n, std::mt19937& rng, double lo = -1, double hi = 1) {
  std::uniform_real_distribution<double> dist(lo, hi);
  Doubles v(static_cast<size_t>(n));
  for (double& x : v) x = dist(rng);
  return v;
}

Tensor make(DataType type, Shape shape, const Doubles& values);

// The values as the case's element type holds them, so that the definition
// reads the inputs the kernel reads.
Doubles rounded(const Case& c, Doubles v) {
  const Tensor t = make(c.type, {static_cast<int64_t>(v.size())}, v);
  Status s = runtime::dispatch_float(c.type, [&]<class T>() -> Status {
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(static_cast<runtime::compute_t<T>>(t.data<T>()[i]));
    return {};
  });
  EXPECT_TRUE(s.ok());
  return v;
}

Inputs make_inputs(const Case& c) {
  std::mt19937 rng(c.seed);
  Inputs in;
  in.q = rounded(c, uniform(c.batch * c.q_heads * c.q_len * c.head, rng));
  in.k = rounded(c, uniform(c.batch * c.kv_heads * c.kv_len * c.head, rng));
  in.v = rounded(c, uniform(c.batch * c.kv_heads * c.kv_len * c.v_head, rng));
  in.past_k = rounded(c, uniform(c.batch * c.kv_heads * c.past_len * c.head, rng));
  in.past_v = rounded(c, uniform(c.batch * c.kv_heads * c.past_len * c.v_head, rng));
  if (c.mask_shape) {
    in.mask = rounded(c, uniform(count(*c.mask_shape), rng, -2, 2));
    // A boolean mask keeps three keys in four.
    if (c.bool_mask)
      for (double& m : in.mask) m = m > -1 ? 1 : 0;
  }
  return in;
}

// --- the definition, in double --------------------------------------------------

struct Expected {
  Doubles y;   // (batch, q heads, q_len, v_head)
  Doubles qk;  // (batch, q heads, q_len, total) at the case's mode
  Doubles present_k, present_v;
};

// The mask's value at (b, h, i, j): numpy broadcasting from the right, and
// -inf (false) beyond a last dim shorter than the keys.
double mask_at(const Case& c, const Inputs& in, int64_t b, int64_t h, int64_t i, int64_t j) {
  const Shape& s = *c.mask_shape;
  if (j >= s.back()) return kNegInf;
  const int64_t idx[4] = {b, h, i, j};
  int64_t flat = 0;
  for (size_t d = 0; d < s.size(); ++d) {
    const int64_t at = s[d] == 1 ? 0 : idx[4 - s.size() + d];
    flat = flat * s[d] + at;
  }
  const double m = in.mask[static_cast<size_t>(flat)];
  return c.bool_mask ? (m != 0 ? 0.0 : kNegInf) : m;
}

Expected reference(const Case& c, const Inputs& in) {
  const int64_t total = c.past_len + c.kv_len, group = c.q_heads / c.kv_heads;
  Expected out;
  // present = concat(past, new) along the sequence.
  auto concat = [&](const Doubles& past, const Doubles& now, int64_t size) {
    Doubles r;
    for (int64_t bh = 0; bh < c.batch * c.kv_heads; ++bh) {
      r.insert(r.end(), past.begin() + bh * c.past_len * size, past.begin() + (bh + 1) * c.past_len * size);
      r.insert(r.end(), now.begin() + bh * c.kv_len * size, now.begin() + (bh + 1) * c.kv_len * size);
    }
    return r;
  };
  out.present_k = concat(in.past_k, in.k, c.head);
  out.present_v = concat(in.past_v, in.v, c.v_head);
  const double scale = c.scale ? *c.scale : 1.0 / std::sqrt(static_cast<double>(c.head));
  out.y.assign(static_cast<size_t>(c.batch * c.q_heads * c.q_len * c.v_head), 0.0);
  out.qk.assign(static_cast<size_t>(c.batch * c.q_heads * c.q_len * total), 0.0);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.q_heads; ++h) {
      const int64_t kvh = h / group;
      const double* K = &out.present_k[static_cast<size_t>((b * c.kv_heads + kvh) * total * c.head)];
      const double* V = &out.present_v[static_cast<size_t>((b * c.kv_heads + kvh) * total * c.v_head)];
      for (int64_t i = 0; i < c.q_len; ++i) {
        const double* Q = &in.q[static_cast<size_t>(((b * c.q_heads + h) * c.q_len + i) * c.head)];
        const int64_t valid = c.nonpad.empty() ? total : c.nonpad[static_cast<size_t>(b)];
        const int64_t offset = c.nonpad.empty() ? c.past_len : valid - c.q_len;
        Doubles s(static_cast<size_t>(total)), stage[4];
        bool any = false;
        for (int64_t j = 0; j < total; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < c.head; ++e) dot += Q[e] * K[j * c.head + e];
          stage[0].push_back(dot * scale);
          const double capped = c.softcap > 0 ? c.softcap * std::tanh(dot * scale / c.softcap) : dot * scale;
          stage[1].push_back(capped);
          double bias = c.mask_shape ? mask_at(c, in, b, h, i, j) : 0.0;
          if (c.causal && j > i + offset) bias = kNegInf;
          if (j >= valid) bias = kNegInf;
          if (c.left_window >= 0 && i + offset - j > c.left_window) bias = kNegInf;
          if (c.right_window >= 0 && j - (i + offset) > c.right_window) bias = kNegInf;
          any = any || bias != kNegInf;
          s[j] = capped + bias;
          stage[2].push_back(s[j]);
        }
        double top = kNegInf, sum = 0;
        for (double x : s) top = std::max(top, x);
        for (double& x : s) sum += x = any ? std::exp(x - top) : 0.0;
        for (double& x : s) x = any ? x / sum : 0.0;
        stage[3] = s;
        if (c.mode >= 0)
          std::copy(stage[c.mode].begin(), stage[c.mode].end(), out.qk.begin() + ((b * c.q_heads + h) * c.q_len + i) * total);
        for (int64_t e = 0; e < c.v_head; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < total; ++j) acc += s[j] * V[j * c.v_head + e];
          out.y[static_cast<size_t>(((b * c.q_heads + h) * c.q_len + i) * c.v_head + e)] = acc;
        }
      }
    }
  return out;
}

// --- running the node -------------------------------------------------------------

Tensor make(DataType type, Shape shape, const Doubles& values) {
  Tensor t(type, std::move(shape));
  Status s = runtime::dispatch_all(type, [&]<class T>() -> Status {
    if constexpr (std::is_arithmetic_v<T> || runtime::is_half_v<T>) {
      for (int64_t i = 0; i < t.numel(); ++i) {
        if constexpr (std::is_same_v<T, bool>) t.mutable_data<T>()[i] = values[static_cast<size_t>(i)] != 0;
        else t.mutable_data<T>()[i] = static_cast<T>(static_cast<float>(values[static_cast<size_t>(i)]));
      }
    }
    return {};
  });
  EXPECT_TRUE(s.ok());
  if (type == DataType::float64)
    for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<double>()[i] = values[static_cast<size_t>(i)];
  return t;
}

// (batch, heads, seq, size) -> (batch, seq, heads * size).
Doubles to_3d(const Doubles& x, int64_t batch, int64_t heads, int64_t seq, int64_t size) {
  Doubles r(x.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t s = 0; s < seq; ++s)
        for (int64_t e = 0; e < size; ++e)
          r[static_cast<size_t>(((b * seq + s) * heads + h) * size + e)] =
              x[static_cast<size_t>(((b * heads + h) * seq + s) * size + e)];
  return r;
}

Shape shape_of(const Case& c, int64_t heads, int64_t seq, int64_t size) {
  return c.three_d ? Shape{c.batch, seq, heads * size} : Shape{c.batch, heads, seq, size};
}

NodeSpec spec_of(const Case& c, const Inputs& in) {
  NodeSpec spec{.op_type = "Attention", .opset = c.opset, .threads = c.threads};
  auto form = [&](const Doubles& x, int64_t heads, int64_t seq, int64_t size) {
    return make(c.type, shape_of(c, heads, seq, size), c.three_d ? to_3d(x, c.batch, heads, seq, size) : x);
  };
  spec.inputs = {{"Q", form(in.q, c.q_heads, c.q_len, c.head)},
                 {"K", form(in.k, c.kv_heads, c.kv_len, c.head)},
                 {"V", form(in.v, c.kv_heads, c.kv_len, c.v_head)}};
  const bool past = c.past_len > 0;
  if (c.mask_shape || past || !c.nonpad.empty())
    spec.inputs.push_back(c.mask_shape ? NodeInput{"mask", make(c.bool_mask ? DataType::boolean : c.type, *c.mask_shape, in.mask)}
                                       : NodeInput{"", {}});
  if (past || !c.nonpad.empty()) {
    spec.inputs.push_back(past ? NodeInput{"past_key", make(c.type, {c.batch, c.kv_heads, c.past_len, c.head}, in.past_k)}
                               : NodeInput{"", {}});
    spec.inputs.push_back(past ? NodeInput{"past_value", make(c.type, {c.batch, c.kv_heads, c.past_len, c.v_head}, in.past_v)}
                               : NodeInput{"", {}});
  }
  if (!c.nonpad.empty()) spec.inputs.push_back({"nonpad", Tensor::from<int64_t>({c.batch}, c.nonpad)});
  if (c.three_d) spec.attributes = {attr("q_num_heads", c.q_heads), attr("kv_num_heads", c.kv_heads)};
  if (c.causal) spec.attributes.push_back(attr("is_causal", 1));
  if (c.scale) spec.attributes.push_back(attr("scale", *c.scale));
  if (c.softcap > 0) spec.attributes.push_back(attr("softcap", c.softcap));
  if (c.mode >= 0) spec.attributes.push_back(attr("qk_matmul_output_mode", c.mode));
  if (c.left_window >= 0) spec.attributes.push_back(attr("left_window_size", c.left_window));
  if (c.right_window >= 0) spec.attributes.push_back(attr("right_window_size", c.right_window));
  spec.num_outputs = c.mode >= 0 ? 4 : c.present ? 3 : 1;
  return spec;
}

// Runs the case and compares every output asked for with the definition.
void check(const Case& c, double tolerance = 2e-5) {
  const Inputs in = make_inputs(c);
  const Expected want = reference(c, in);
  const std::vector<runtime::Datum> got = testing::run_node(spec_of(c, in));
  const int64_t total = c.past_len + c.kv_len;
  ASSERT_FALSE(got.empty());
  expect_tensor_near(got[0].tensor(),
                     make(c.type, shape_of(c, c.q_heads, c.q_len, c.v_head),
                          c.three_d ? to_3d(want.y, c.batch, c.q_heads, c.q_len, c.v_head) : want.y),
                     tolerance, tolerance);
  if (got.size() >= 3) {
    expect_tensor_near(got[1].tensor(), make(c.type, {c.batch, c.kv_heads, total, c.head}, want.present_k), 0, 0);
    expect_tensor_near(got[2].tensor(), make(c.type, {c.batch, c.kv_heads, total, c.v_head}, want.present_v), 0, 0);
  }
  if (got.size() == 4)
    expect_tensor_near(got[3].tensor(), make(c.type, {c.batch, c.q_heads, c.q_len, total}, want.qk), tolerance, tolerance);
}

// --- cases ------------------------------------------------------------------------

TEST(Attention, MultiHead4d) { check({}); }

TEST(Attention, GroupedQuery4d) { check({.q_heads = 6, .kv_heads = 2, .q_len = 5, .kv_len = 7}); }

TEST(Attention, MultiQuery3dWithOtherValueSize) {
  check({.batch = 3, .q_heads = 4, .kv_heads = 1, .q_len = 2, .kv_len = 9, .head = 6, .v_head = 10, .three_d = true});
}

TEST(Attention, ScaleAndSoftcap) { check({.q_heads = 4, .kv_heads = 2, .three_d = true, .scale = 0.9f, .softcap = 1.5f}); }

TEST(Attention, CausalSquare) { check({.q_len = 7, .kv_len = 7, .causal = true}); }

TEST(Attention, CausalCrossIsTopLeftWithoutCache) {
  // Without a cache the offset is 0 whatever the lengths: query i sees keys 0..i.
  check({.q_len = 3, .kv_len = 8, .causal = true});
}

TEST(Attention, CausalWithPastIsBottomRight) {
  for (bool present : {false, true}) {
    SCOPED_TRACE(present ? "present asked for" : "past only");
    check({.q_heads = 4, .kv_heads = 2, .q_len = 3, .kv_len = 3, .past_len = 5, .causal = true, .present = present});
    check({.q_len = 2, .kv_len = 2, .past_len = 4, .three_d = true, .causal = true, .present = present});
  }
}

TEST(Attention, DecodeStepWithCache) {
  check({.batch = 1,
         .q_heads = 4,
         .kv_heads = 4,
         .q_len = 1,
         .kv_len = 1,
         .past_len = 11,
         .three_d = true,
         .causal = true,
         .present = true});
}

TEST(Attention, FloatMasksBroadcast) {
  for (Shape s : {Shape{4}, Shape{3, 4}, Shape{2, 3, 4}, Shape{2, 1, 3, 4}, Shape{1, 2, 1, 4}, Shape{2, 2, 3, 4}}) {
    SCOPED_TRACE(::testing::PrintToString(s));
    check({.mask_shape = s});
  }
}

TEST(Attention, BoolMaskWithCausal) {
  check({.mask_shape = Shape{2, 1, 3, 4}, .bool_mask = true});
  check({.q_len = 4, .kv_len = 4, .causal = true, .mask_shape = Shape{4, 4}, .bool_mask = true});
}

TEST(Attention, ShortMaskIsPaddedWithMinusInfinity) {
  check({.kv_len = 4, .past_len = 3, .mask_shape = Shape{3, 5}});
  check({.kv_len = 6, .mask_shape = Shape{3, 4}, .bool_mask = true});
}

TEST(Attention, FullyMaskedRowIsZero) {
  Case c{.mask_shape = Shape{3, 4}, .bool_mask = true, .seed = 7};
  Inputs in = make_inputs(c);
  std::fill(in.mask.begin() + 4, in.mask.begin() + 8, 0.0);  // query 1 sees no key
  c.mode = 3;
  const Expected want = reference(c, in);
  const auto got = testing::run_node(spec_of(c, in));
  expect_tensor_near(got[0].tensor(), make(c.type, {2, 2, 3, 8}, want.y), 2e-5, 2e-5);
  expect_tensor_near(got[3].tensor(), make(c.type, {2, 2, 3, 4}, want.qk), 2e-5, 2e-5);
  for (int64_t e = 0; e < 8; ++e) EXPECT_EQ(got[0].tensor().data<float>()[8 + e], 0.0f);
}

TEST(Attention, QkMatmulOutputStages) {
  for (int mode = 0; mode <= 3; ++mode) {
    SCOPED_TRACE(mode);
    check({.q_len = 4, .kv_len = 3, .past_len = 2, .causal = true, .softcap = 0.8f, .mode = mode, .mask_shape = Shape{1, 4, 5}});
  }
}

TEST(Attention, LongSequencesSpanBlocksAndTiles) {
  // 150 queries make three blocks, 300 past + 340 new keys several tiles on
  // both sides of the cache boundary; large scores move the row maximum from
  // tile to tile.
  check({.batch = 1,
         .q_heads = 2,
         .kv_heads = 1,
         .q_len = 150,
         .kv_len = 340,
         .past_len = 300,
         .head = 16,
         .v_head = 12,
         .causal = true,
         .scale = 3.0f,
         .present = true},
        1e-4);
  check({.batch = 1,
         .q_heads = 2,
         .kv_heads = 2,
         .q_len = 70,
         .kv_len = 600,
         .head = 8,
         .v_head = 8,
         .three_d = true,
         .scale = 2.0f,
         .mask_shape = Shape{70, 600}},
        1e-4);
}

TEST(Attention, TwoThreadsGiveTheSameResult) {
  check({.batch = 2, .q_heads = 4, .kv_heads = 2, .q_len = 130, .kv_len = 300, .causal = true, .threads = 2}, 1e-4);
}

TEST(Attention, NonpadKvSeqlenMasksPaddingAndShiftsCausal) {
  check({.q_len = 2, .kv_len = 6, .causal = true, .nonpad = {3, 6}, .opset = 24});
  check({.q_len = 3, .kv_len = 5, .mode = 2, .nonpad = {5, 1}, .opset = 24});
}

TEST(Attention, SlidingWindow) {
  check({.q_len = 5, .kv_len = 5, .past_len = 3, .causal = true, .left_window = 2, .opset = 25});
  check({.q_len = 6, .kv_len = 9, .mode = 3, .left_window = 1, .right_window = 2, .opset = 25});
}

TEST(Attention, OtherFloatTypes) {
  check({.q_heads = 4, .kv_heads = 2, .causal = true, .type = DataType::float64}, 1e-12);
  check({.q_heads = 4, .kv_heads = 2, .causal = true, .type = DataType::float16}, 1e-3);
  check({.q_heads = 4, .kv_heads = 2, .causal = true, .type = DataType::bfloat16}, 8e-3);
}

TEST(Attention, BadInputsAreErrors) {
  Case c{.three_d = true};
  Inputs in = make_inputs(c);
  NodeSpec spec = spec_of(c, in);
  spec.attributes.clear();  // 3-D inputs without head counts
  auto r = testing::try_run_node(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("q_num_heads"), std::string::npos) << r.error().message();

  Case odd{.q_heads = 3, .kv_heads = 2};
  r = testing::try_run_node(spec_of(odd, make_inputs(odd)));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("multiple"), std::string::npos) << r.error().message();

  Case past{.past_len = 2};
  spec = spec_of(past, make_inputs(past));
  spec.inputs[5] = {"", {}};  // past_key without past_value
  r = testing::try_run_node(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("together"), std::string::npos) << r.error().message();

  Case wide{.mask_shape = Shape{3, 9}};
  r = testing::try_run_node(spec_of(wide, make_inputs(wide)));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("longer"), std::string::npos) << r.error().message();
}

}  // namespace
}  // namespace onnxkit
