#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/cpu_clones.h"
#include "runtime/kernels/lanes.h"

#include <algorithm>
#include <utility>

// GCC builds these twice, for x86-64-v3 (AVX2, FMA) and for the baseline,
// and the loader picks one by the CPU. Compiled with -fno-trapping-math
// (CMakeLists.txt) so that the selects vectorize.
// GELU also for x86-64-v4 (AVX-512): its rational erf is arithmetic-bound,
// and twice the lanes took a transformer MLP's GELU from 0.64 to 0.54 ms
// (1.2 M elements, Zen 4).

namespace onnxkit::runtime {

ONNXKIT_AVX2_CLONES void erf_floats(const float* __restrict x, float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fast_erf(x[i]);
}

ONNXKIT_AVX2_CLONES void sigmoid_floats(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float e = fast_exp(-std::fabs(v));
    const float s = 1.0f / (1.0f + e);
    y[i] = v >= 0.0f ? s : e * s;
  }
}

ONNXKIT_AVX2_CLONES void tanh_floats(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fast_tanh(x[i]);
}

ONNXKIT_AVX2_CLONES void hard_sigmoid_floats(const float* x, float* y, int64_t n, float alpha, float beta, bool times_x) {
  // Written as selects that a NaN fails, so that it goes through.
  auto gate = [alpha, beta](float v) {
    float g = alpha * v + beta;
    g = g < 0.0f ? 0.0f : g;
    return g > 1.0f ? 1.0f : g;
  };
  if (times_x) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * gate(x[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = gate(x[i]);
  }
}

// Also built for AVX-512, where it runs in 0.28 ns an element against 0.41
// for AVX2 on Zen 4: EfficientNet applies it to 5 million elements a run,
// after its convolutions. x / (1 + e^-ax) needs no select: for very negative
// ax, fast_exp saturates and the quotient is a tiny x / 1e38.
ONNXKIT_AVX512_CLONES void swish_floats(const float* x, float* y, int64_t n, float alpha) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + fast_exp(-alpha * x[i]));
}

ONNXKIT_AVX512_CLONES void gelu_floats(const float* x, const float* bias, float* y, int64_t n) {
  constexpr float kInvSqrt2 = 0.707106781186547524f;
  if (bias == nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + fast_erf(x[i] * kInvSqrt2));
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const float v = x[i] + bias[i];
      y[i] = 0.5f * v * (1.0f + fast_erf(v * kInvSqrt2));
    }
  }
}

namespace {

// The vectors below (Lanes) never cross a call: the helpers taking or
// returning them are inlined into the clones (always_inline where GCC would
// not), so the ABI GCC warns of for the baseline clone does not arise.
#pragma GCC diagnostic ignored "-Wpsabi"

// For floats and vectors alike.
constexpr auto kLarger = [](auto a, auto b) { return b > a ? b : a; };
constexpr auto kPlus = [](auto a, auto b) { return a + b; };

// Lanes (lanes.h) for reductions over rows too short for a vectorized
// loop's horizontal sum through memory and scalar tail: Swin's 49-wide
// softmax rows, LayerNorm over 96 channels. W is 16 under AVX-512 and 8
// otherwise: the functions below pick it with wide_lanes().

inline bool wide_lanes() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
#else
  return false;
#endif
}

template <int W> inline Lanes<W> load_lanes(const float* x) {
  Lanes<W> v;
  std::memcpy(&v, x, sizeof v);
  return v;
}

template <int W, size_t... I> inline Lanes<W / 2> low_half(Lanes<W> v, std::index_sequence<I...>) {
  return __builtin_shufflevector(v, v, I...);
}
template <int W, size_t... I> inline Lanes<W / 2> high_half(Lanes<W> v, std::index_sequence<I...>) {
  return __builtin_shufflevector(v, v, (I + W / 2)...);
}

// combine over v's lanes, folded in halves.
template <int W, class Combine> inline float fold_lanes(Lanes<W> v, Combine combine) {
  if constexpr (W == 2) {
    return combine(v[0], v[1]);
  } else {
    const auto halves = std::make_index_sequence<W / 2>();
    return fold_lanes<W / 2>(combine(low_half<W>(v, halves), high_half<W>(v, halves)), combine);
  }
}

// 16 zeros, 16 ones: from kTailWeights + 16 - W + r, the weights of a block
// of W whose last r lanes count.
alignas(64) constexpr float kTailWeights[32] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                                1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

// The sum of terms 0..n-1: block(i) gives terms [i, i + W), term(i) one.
// Past the whole blocks, last(n - W, weights) gives the last W terms
// again, times weights that are 0 for those counted already; with fewer
// than W terms, one by one.
template <int W, class Block, class Last, class Term> inline float sum_lanes(int64_t n, Block block, Last last, Term term) {
  Lanes<W> acc = {};
  const int64_t whole = n / W * W;
  for (int64_t i = 0; i < whole; i += W) acc += block(i);
  float rest = 0.0f;
  if (whole < n && n >= W) {
    acc += last(n - W, load_lanes<W>(kTailWeights + 16 - W + (n - whole)));
  } else {
    for (int64_t i = whole; i < n; ++i) rest += term(i);
  }
  return fold_lanes<W>(acc, kPlus) + rest;
}

// sum_lanes of terms that block(i) computes without side effects.
template <int W, class Block, class Term> inline float sum_lanes(int64_t n, Block block, Term term) {
  return sum_lanes<W>(
      n, block, [&](int64_t i, Lanes<W> weights) { return block(i) * weights; }, term);
}

// The largest of x[0, n) (-inf for none); the last W overlap, which a max
// does not mind.
template <int W> inline float max_lanes(const float* x, int64_t n) {
  Lanes<W> acc = Lanes<W>{} - INFINITY;
  const int64_t whole = n / W * W;
  for (int64_t i = 0; i < whole; i += W) acc = kLarger(acc, load_lanes<W>(x + i));
  float rest = -INFINITY;
  if (whole < n && n >= W) {
    acc = kLarger(acc, load_lanes<W>(x + n - W));
  } else {
    for (int64_t i = whole; i < n; ++i) rest = kLarger(rest, x[i]);
  }
  return kLarger(fold_lanes<W>(acc, kLarger), rest);
}

// y[i] = e^(x[i] - shift), stored as they are summed: a sum reading them
// back after a loop of their own waits for the stores (that loop's
// vectorizer aligns its blocks otherwise, and a load spanning two stores
// cannot take its data from them).
template <int W> inline float exp_sum_lanes(const float* x, float* y, int64_t n, float shift) {
  auto exps = [&](int64_t i) {
    Lanes<W> e;
    for (int j = 0; j < W; ++j) e[j] = fast_exp(x[i + j] - shift);
    return e;
  };
  auto block = [&](int64_t i) {
    const Lanes<W> e = exps(i);
    std::memcpy(y + i, &e, sizeof e);
    return e;
  };
  // y may be x: the lanes stored already hold exps now, not inputs, and
  // must neither be stored again nor counted.
  auto last = [&](int64_t i, Lanes<W> weights) {
    const Lanes<W> e = exps(i);
    for (int j = 0; j < W; ++j)
      if (weights[j] != 0.0f) y[i + j] = e[j];
    return e * weights;
  };
  return sum_lanes<W>(n, block, last, [&](int64_t i) { return y[i] = fast_exp(x[i] - shift); });
}

template <int W>
__attribute__((always_inline)) inline void layer_norm_lanes(const float* x, const float* add, const float* scale,
                                                            const float* bias, float* y, int64_t n, float epsilon) {
  auto value = [&](int64_t i) { return add != nullptr ? x[i] + add[i] : x[i]; };
  auto values = [&](int64_t i) {
    Lanes<W> v = load_lanes<W>(x + i);
    if (add != nullptr) v += load_lanes<W>(add + i);
    return v;
  };
  const float mean = sum_lanes<W>(n, values, value) / static_cast<float>(n);
  // The variance from the centred values: no cancellation for large means.
  auto square = [&](int64_t i) {
    const float d = value(i) - mean;
    return d * d;
  };
  auto squares = [&](int64_t i) {
    const Lanes<W> d = values(i) - mean;
    return d * d;
  };
  const float inv = 1.0f / std::sqrt(sum_lanes<W>(n, squares, square) / static_cast<float>(n) + epsilon);
  for (int64_t i = 0; i < n; ++i) {
    const float v = (value(i) - mean) * inv * scale[i];
    y[i] = bias != nullptr ? v + bias[i] : v;
  }
}

template <int W> __attribute__((always_inline)) inline void softmax_lanes(const float* x, float* y, int64_t n) {
  const float inv = 1.0f / exp_sum_lanes<W>(x, y, n, max_lanes<W>(x, n));
  for (int64_t i = 0; i < n; ++i) y[i] *= inv;
}

}  // namespace

ONNXKIT_AVX512_CLONES void layer_norm_floats(const float* x, const float* add, const float* scale, const float* bias, float* y,
                                             int64_t n, float epsilon) {
  if (wide_lanes()) return layer_norm_lanes<16>(x, add, scale, bias, y, n, epsilon);
  layer_norm_lanes<8>(x, add, scale, bias, y, n, epsilon);
}

ONNXKIT_AVX512_CLONES float max_floats(const float* x, int64_t n) {
  return wide_lanes() ? max_lanes<16>(x, n) : max_lanes<8>(x, n);
}

ONNXKIT_AVX512_CLONES float exp_sum_floats(const float* x, float* y, int64_t n, float shift) {
  return wide_lanes() ? exp_sum_lanes<16>(x, y, n, shift) : exp_sum_lanes<8>(x, y, n, shift);
}

// Max, exps and sum in one function, with 16-wide lanes and no horizontal
// sums through memory: [192, 49, 49] on Zen 4 took 0.51 ms, now 0.32 (ONNX
// Runtime 0.30).
ONNXKIT_AVX512_CLONES void softmax_floats(const float* x, float* y, int64_t n) {
  if (wide_lanes()) return softmax_lanes<16>(x, y, n);
  softmax_lanes<8>(x, y, n);
}

namespace {

// store(j, x . rows[j]) for j < n (rows `stride` apart, d long), each row
// in four interleaved sums: in one, the lane sums are a chain of dependent
// adds, which held a 1 x 2048 x 1000 classifier to 240 us (ONNX Runtime
// 107). Row by row, so that weights coming from memory stream in order
// (four rows at once ran MobileNetV3's classifier 1.3-1.7x slower).
template <int W, class Store>
inline void dot_rows_lanes(const float* x, const float* rows, int64_t stride, int64_t n, int64_t d, Store store) {
  const int64_t whole = d / (4 * W) * (4 * W), lanes = d / W * W;
  for (int64_t j = 0; j < n; ++j) {
    const float* r = rows + j * stride;
    Lanes<W> a0 = {}, a1 = {}, a2 = {}, a3 = {};
    int64_t p = 0;
    for (; p < whole; p += 4 * W) {
      a0 += load_lanes<W>(x + p) * load_lanes<W>(r + p);
      a1 += load_lanes<W>(x + p + W) * load_lanes<W>(r + p + W);
      a2 += load_lanes<W>(x + p + 2 * W) * load_lanes<W>(r + p + 2 * W);
      a3 += load_lanes<W>(x + p + 3 * W) * load_lanes<W>(r + p + 3 * W);
    }
    for (; p < lanes; p += W) a0 += load_lanes<W>(x + p) * load_lanes<W>(r + p);
    float sum = fold_lanes<W>((a0 + a1) + (a2 + a3), kPlus);
    for (; p < d; ++p) sum += x[p] * r[p];
    store(j, sum);
  }
}

}  // namespace

ONNXKIT_AVX512_CLONES void dot_rows_floats(const float* x, const float* rows, int64_t stride, int64_t n, int64_t d, float* y) {
  auto store = [y](int64_t j, float sum) { y[j] = sum; };
  if (wide_lanes()) return dot_rows_lanes<16>(x, rows, stride, n, d, store);
  dot_rows_lanes<8>(x, rows, stride, n, d, store);
}

ONNXKIT_AVX2_CLONES void add_weighted_rows_floats(const float* w, const float* rows, int64_t stride, int64_t n, int64_t d,
                                                  float* __restrict y) {
  for (int64_t j = 0; j < n; ++j) {
    if (w[j] == 0.0f) continue;  // a masked key
    const float* __restrict row = rows + j * stride;
    const float wj = w[j];
    for (int64_t i = 0; i < d; ++i) y[i] += wj * row[i];
  }
}

ONNXKIT_AVX512_CLONES void row_product_floats(bool trans_b, const float* x, const float* b, int64_t ldb, int64_t k, int64_t n,
                                              float alpha, float beta, float* __restrict y) {
  auto store = [&](int64_t j, float sum) { y[j] = alpha * sum + (beta == 0.0f ? 0.0f : beta * y[j]); };
  if (trans_b) {
    if (wide_lanes()) return dot_rows_lanes<16>(x, b, ldb, n, k, store);
    return dot_rows_lanes<8>(x, b, ldb, n, k, store);
  }
  constexpr int64_t kBlock = 1024;  // 4 KiB of sums
  float sums[kBlock];
  for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
    const int64_t width = std::min(kBlock, n - j0);
    for (int64_t i = 0; i < width; ++i) sums[i] = 0.0f;
    int64_t p = 0;
    for (; p + 4 <= k; p += 4) {
      const float x0 = x[p], x1 = x[p + 1], x2 = x[p + 2], x3 = x[p + 3];
      const float* __restrict b0 = b + p * ldb + j0;
      const float* __restrict b1 = b0 + ldb;
      const float* __restrict b2 = b1 + ldb;
      const float* __restrict b3 = b2 + ldb;
      for (int64_t i = 0; i < width; ++i) sums[i] += (x0 * b0[i] + x1 * b1[i]) + (x2 * b2[i] + x3 * b3[i]);
    }
    for (; p < k; ++p) {
      const float xp = x[p];
      const float* __restrict row = b + p * ldb + j0;
      for (int64_t i = 0; i < width; ++i) sums[i] += xp * row[i];
    }
    for (int64_t i = 0; i < width; ++i) store(j0 + i, sums[i]);
  }
}

}  // namespace onnxkit::runtime
