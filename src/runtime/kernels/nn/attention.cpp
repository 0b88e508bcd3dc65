// Attention (opset 23; 24 adds nonpad_kv_seqlen, 25 the sliding window):
// Y = softmax(softcap(Q K^T * scale) + bias) V, head by head, with grouped
// key/value heads (GQA, MQA) and a key/value cache.
//
// One fused pass over tiles of keys with the softmax kept online: each query
// row carries its running maximum and sum, and its partial output is rescaled
// whenever the maximum grows (flash attention), so a long sequence's score
// matrix is never held whole: a task holds one block of query rows against
// one tile of keys. Tasks are (batch, head, query block), shared out among
// the threads; the two products of a tile are single-threaded gemm calls
// inside them (runtime/parallel.h).
//
// The bias is the attention mask (boolean: false is -inf; float: added; a
// last dim shorter than the key count padded with -inf), the causal frontier
// (query i sees key j iff j <= i + offset, offset being the past length, or
// nonpad_kv_seqlen - q_len with an external cache), the padding that
// nonpad_kv_seqlen declares, and the sliding window. All but the mask make
// one range of keys per query row: keys outside it are never computed. A
// query row left with no key gives zeros, not NaN.

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <optional>
#include <tuple>

#include "runtime/broadcast.h"
#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/gemm.h"
#include "runtime/kernels/nn/nn.h"
#include "runtime/parallel.h"

namespace onnxkit::runtime::nn {
namespace {

enum InputIndex : size_t { kQ, kK, kV, kMask, kPastKey, kPastValue, kNonpad };
enum OutputIndex : size_t { kY, kPresentKey, kPresentValue, kQk };

// Query rows per task and keys per tile: a tile's scores (64 x 256 floats)
// and its rows of K and V stay in the core's cache.
constexpr int64_t kQueryBlock = 64;
constexpr int64_t kKeyTile = 256;

// qk_matmul_output_mode: the stage of the scores the fourth output holds.
enum class QkStage : int64_t { product = 0, softcapped = 1, biased = 2, softmax = 3 };

struct Attributes {
  bool causal = false;
  int64_t q_heads = 0, kv_heads = 0;  // 0 when not given
  std::optional<double> scale;        // 1 / sqrt(head_size) when not given
  double softcap = 0;                 // none unless > 0
  QkStage qk_stage = QkStage::product;
  int64_t left_window = -1, right_window = -1;  // -1: unbounded
};

struct Geometry {
  bool three_d = false;  // (batch, seq, heads * size) rather than (batch, heads, seq, size)
  int64_t batch = 0, q_heads = 0, kv_heads = 0;
  int64_t q_len = 0, kv_len = 0, past_len = 0, total = 0;  // total = past_len + kv_len
  int64_t head_size = 0, v_head_size = 0;
};

// Where row s of head h of batch b starts in a tensor of either form.
struct HeadView {
  int64_t batch_stride = 0, head_stride = 0, row_stride = 0;
  static HeadView of(bool three_d, int64_t heads, int64_t seq, int64_t size) {
    if (three_d) return {seq * heads * size, size, heads * size};
    return {heads * seq * size, seq * size, size};
  }
  int64_t at(int64_t b, int64_t h, int64_t s) const { return b * batch_stride + h * head_stride + s * row_stride; }
};

// The key (or value) rows of one head: the past rows, then the new ones,
// each part with its own stride.
template <class C> struct HeadRows {
  const C* past = nullptr;
  int64_t past_stride = 0, past_len = 0;
  const C* now = nullptr;
  int64_t now_stride = 0;
  const C* row(int64_t j) const { return j < past_len ? past + j * past_stride : now + (j - past_len) * now_stride; }
  int64_t stride(int64_t j) const { return j < past_len ? past_stride : now_stride; }
  // The end of the part holding row j: a tile never straddles the two.
  int64_t part_end(int64_t j, int64_t total) const { return j < past_len ? past_len : total; }
};

// The computation's inputs and outputs, in the compute type C.
template <class C> struct Problem {
  Geometry g;
  Attributes attrs;
  const C* q = nullptr;
  const C* k = nullptr;
  const C* v = nullptr;
  const C* past_key = nullptr;  // null without a cache
  const C* past_value = nullptr;
  // The mask as an additive bias, its last dim padded to `total`, read with
  // broadcast strides over (batch, head, query); null without a mask.
  const C* bias = nullptr;
  int64_t bias_strides[3] = {0, 0, 0};
  std::vector<int64_t> valid_keys;  // per batch: keys from nonpad_kv_seqlen, else total
  std::vector<int64_t> offsets;     // per batch: the causal offset
  C* y = nullptr;
  C* present_key = nullptr;  // null when not wanted
  C* present_value = nullptr;
  C* qk = nullptr;  // null when not wanted
};

// The problem over `q`, `k` and `v`, already of the compute type C; the
// caller sets the cache, mask, per-batch lengths and outputs.
template <class C>
Problem<C> make_problem(const Geometry& g, const Attributes& attrs, const Tensor& q, const Tensor& k, const Tensor& v) {
  Problem<C> p;
  p.g = g;
  p.attrs = attrs;
  p.q = q.data<C>();
  p.k = k.data<C>();
  p.v = v.data<C>();
  return p;
}

// --- validation -------------------------------------------------------------------

Result<Attributes> read_attributes(const KernelInfo& info) {
  Attributes a;
  a.causal = info.attr_int("is_causal", 0) != 0;
  a.q_heads = info.attr_int("q_num_heads", 0);
  a.kv_heads = info.attr_int("kv_num_heads", 0);
  if (info.has_attr("scale")) a.scale = info.attr_float("scale", 1.0f);
  a.softcap = info.attr_float("softcap", 0.0f);
  const int64_t mode = info.attr_int("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) return make_error("attribute qk_matmul_output_mode must be 0, 1, 2 or 3, got {}", mode);
  a.qk_stage = static_cast<QkStage>(mode);
  if (info.opset() >= 25) {
    a.left_window = info.attr_int("left_window_size", -1);
    a.right_window = info.attr_int("right_window_size", -1);
    if (a.left_window < -1 || a.right_window < -1)
      return make_error("attributes left_window_size and right_window_size must be -1 or non-negative, got {} and {}",
                        a.left_window, a.right_window);
  }
  if (a.q_heads < 0 || a.kv_heads < 0 || a.q_heads > kMaxAttributeValue || a.kv_heads > kMaxAttributeValue)
    return make_error("attributes q_num_heads ({}) and kv_num_heads ({}) must be positive", a.q_heads, a.kv_heads);
  return a;
}

Result<Geometry> read_geometry(const Attributes& a, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* past_key,
                               const Tensor* past_value) {
  Geometry g;
  if (q.rank() != k.rank() || q.rank() != v.rank() || (q.rank() != 3 && q.rank() != 4))
    return make_error("Q, K and V must all be 3-D or all 4-D, got shapes {}, {} and {}", shape_to_string(q.shape()),
                      shape_to_string(k.shape()), shape_to_string(v.shape()));
  g.three_d = q.rank() == 3;
  g.batch = q.dim(0);
  if (k.dim(0) != g.batch || v.dim(0) != g.batch)
    return make_error("Q, K and V must have the same batch size, got shapes {}, {} and {}", shape_to_string(q.shape()),
                      shape_to_string(k.shape()), shape_to_string(v.shape()));
  if (g.three_d) {
    if (a.q_heads == 0 || a.kv_heads == 0) return make_error("3-D inputs need the attributes q_num_heads and kv_num_heads");
    g.q_heads = a.q_heads;
    g.kv_heads = a.kv_heads;
    if (q.dim(2) % g.q_heads != 0 || k.dim(2) % g.kv_heads != 0 || v.dim(2) % g.kv_heads != 0)
      return make_error(
          "the hidden sizes of Q ({}), K ({}) and V ({}) must be multiples of q_num_heads ({}), "
          "kv_num_heads ({}) and kv_num_heads",
          q.dim(2), k.dim(2), v.dim(2), g.q_heads, g.kv_heads);
    g.q_len = q.dim(1);
    g.kv_len = k.dim(1);
    g.head_size = q.dim(2) / g.q_heads;
    if (k.dim(2) / g.kv_heads != g.head_size)
      return make_error("Q and K must have the same head size, got {} and {}", g.head_size, k.dim(2) / g.kv_heads);
    if (v.dim(1) != g.kv_len) return make_error("K and V must have the same sequence length, got {} and {}", g.kv_len, v.dim(1));
    g.v_head_size = v.dim(2) / g.kv_heads;
  } else {
    g.q_heads = q.dim(1);
    g.kv_heads = k.dim(1);
    if ((a.q_heads != 0 && a.q_heads != g.q_heads) || (a.kv_heads != 0 && a.kv_heads != g.kv_heads))
      return make_error("attributes q_num_heads ({}) and kv_num_heads ({}) disagree with the 4-D inputs' heads ({}, {})",
                        a.q_heads, a.kv_heads, g.q_heads, g.kv_heads);
    g.q_len = q.dim(2);
    g.kv_len = k.dim(2);
    g.head_size = q.dim(3);
    if (k.dim(3) != g.head_size)
      return make_error("Q and K must have the same head size, got shapes {} and {}", shape_to_string(q.shape()),
                        shape_to_string(k.shape()));
    if (v.dim(1) != g.kv_heads || v.dim(2) != g.kv_len)
      return make_error("K and V must have the same heads and sequence length, got shapes {} and {}", shape_to_string(k.shape()),
                        shape_to_string(v.shape()));
    g.v_head_size = v.dim(3);
  }
  if (g.kv_heads == 0 || g.q_heads % g.kv_heads != 0)
    return make_error("the query heads ({}) must be a multiple of the key/value heads ({})", g.q_heads, g.kv_heads);
  if ((past_key == nullptr) != (past_value == nullptr)) return make_error("past_key and past_value must be given together");
  if (past_key != nullptr) {
    const Shape want_k = {g.batch, g.kv_heads, past_key->rank() == 4 ? past_key->dim(2) : -1, g.head_size};
    if (past_key->shape() != want_k)
      return make_error("past_key must have shape (batch {}, kv heads {}, past length, head size {}), got {}", g.batch,
                        g.kv_heads, g.head_size, shape_to_string(past_key->shape()));
    g.past_len = past_key->dim(2);
    const Shape want_v = {g.batch, g.kv_heads, g.past_len, g.v_head_size};
    if (past_value->shape() != want_v)
      return make_error("past_value must have shape {}, got {}", shape_to_string(want_v), shape_to_string(past_value->shape()));
  }
  g.total = g.past_len + g.kv_len;
  return g;
}

// The mask as an additive bias of the compute type: false and the padding
// of a short last dim are -inf. Its strides read it over (batch, q heads,
// q_len, total).
template <class C> Status read_mask(const Tensor& mask, const Geometry& g, Tensor& bias, int64_t strides[3]) {
  const Shape& s = mask.shape();
  if (s.empty() || s.size() > 4) return make_error("attn_mask must have rank 1 to 4, got shape {}", shape_to_string(s));
  const int64_t width = s.back();
  if (width > g.total) return make_error("attn_mask's last dim ({}) is longer than the keys (past + new: {})", width, g.total);
  Shape padded = s;
  padded.back() = g.total;
  const Shape full = {g.batch, g.q_heads, g.q_len, g.total};
  for (size_t i = 1; i < padded.size(); ++i) {
    const int64_t d = padded[padded.size() - 1 - i], want = full[full.size() - 1 - i];
    if (d != 1 && d != want)
      return make_error("attn_mask of shape {} does not broadcast to (batch, q heads, q length, keys) = {}", shape_to_string(s),
                        shape_to_string(full));
  }
  bias = Tensor(data_type_of<C>(), padded);
  C* out = bias.mutable_data<C>();
  const int64_t rows = dims_product(s, 0, s.size() - 1);
  constexpr C kNegInf = -std::numeric_limits<C>::infinity();
  ONNXKIT_TRY(dispatch_all(mask.dtype(), [&]<class M>() -> Status {
    if constexpr (std::is_same_v<M, bool> || std::is_floating_point_v<M> || is_half_v<M>) {
      const M* in = mask.data<M>();
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < width; ++j) {
          const M m = in[r * width + j];
          if constexpr (std::is_same_v<M, bool>) out[r * g.total + j] = m ? C(0) : kNegInf;
          else out[r * g.total + j] = static_cast<C>(static_cast<compute_t<M>>(m));
        }
        std::fill(out + r * g.total + width, out + (r + 1) * g.total, kNegInf);
      }
      return {};
    } else {
      return make_error("attn_mask must be boolean or floating point, got {}", to_string(mask.dtype()));
    }
  }));
  const std::vector<int64_t> st = broadcast_strides(padded, full);
  for (int i = 0; i < 3; ++i) strides[i] = st[static_cast<size_t>(i)];
  return {};
}

// --- the computation --------------------------------------------------------------

// The keys query row i of batch b may see at all: [first, last).
template <class C> std::pair<int64_t, int64_t> key_range(const Problem<C>& p, int64_t b, int64_t i) {
  int64_t first = 0, last = p.valid_keys[static_cast<size_t>(b)];
  const int64_t at = i + p.offsets[static_cast<size_t>(b)];
  if (p.attrs.causal) last = std::min(last, at + 1);
  if (p.attrs.right_window >= 0) last = std::min(last, at + p.attrs.right_window + 1);
  if (p.attrs.left_window >= 0) first = std::max(first, at - p.attrs.left_window);
  return {first, std::max(first, last)};
}

inline float row_max(const float* x, int64_t n) { return max_floats(x, n); }
inline double row_max(const double* x, int64_t n) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) m = std::max(m, x[i]);
  return m;
}
// y = exp(x - shift); returns the sum of y.
inline float exp_shifted(const float* x, float* y, int64_t n, float shift) { return exp_sum_floats(x, y, n, shift); }
inline double exp_shifted(const double* x, double* y, int64_t n, double shift) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += y[i] = std::exp(x[i] - shift);
  return sum;
}

// s = q k^T for `rows` query rows against n key rows, and acc += p v: gemm,
// but for one row of floats (a decoding step) a plain loop, cheaper than
// setting a gemm up for a vector.
template <class C> void product_scores(int64_t rows, int64_t n, int64_t d, const C* q, const C* k, int64_t k_stride, C* s) {
  if constexpr (std::is_same_v<C, float>)
    if (rows == 1) return dot_rows_floats(q, k, k_stride, n, d, s);
  gemm(false, true, rows, n, d, C(1), q, d, k, k_stride, C(0), s, n);
}
template <class C> void add_values(int64_t rows, int64_t n, int64_t dv, const C* p, const C* v, int64_t v_stride, C* acc) {
  if constexpr (std::is_same_v<C, float>)
    if (rows == 1) return add_weighted_rows_floats(p, v, v_stride, n, dv, acc);
  gemm(false, false, rows, dv, n, C(1), p, n, v, v_stride, C(1), acc, dv);
}

// Writes head t = b * kv_heads + h of the present key (or value) cache,
// (batch, kv heads, total, size): the past rows, then the new ones.
template <class C> void write_present_head(const Geometry& g, const C* past, const C* now, int64_t size, C* present, int64_t t) {
  const HeadView view = HeadView::of(g.three_d, g.kv_heads, g.kv_len, size);
  const int64_t b = t / g.kv_heads, h = t % g.kv_heads;
  C* out = present + t * g.total * size;
  if (past != nullptr) std::copy_n(past + t * g.past_len * size, g.past_len * size, out);
  out += g.past_len * size;
  for (int64_t s = 0; s < g.kv_len; ++s) std::copy_n(now + view.at(b, h, s), size, out + s * size);
}

// One task: query rows [i0, i0 + rows) of head h of batch b.
template <class C>
void attend_block(const Problem<C>& p, const HeadRows<C>& keys, const HeadRows<C>& values, int64_t b, int64_t h, int64_t i0,
                  int64_t rows) {
  const Geometry& g = p.g;
  const Attributes& a = p.attrs;
  const int64_t d = g.head_size, dv = g.v_head_size;
  constexpr C kNegInf = -std::numeric_limits<C>::infinity();
  const C scale = static_cast<C>(a.scale ? *a.scale : 1.0 / std::sqrt(static_cast<double>(d)));

  // Every key is computed when the scores are an output; else only those in
  // some row's range.
  std::vector<int64_t> first(static_cast<size_t>(rows)), last(static_cast<size_t>(rows));
  int64_t begin = g.total, end = 0;
  for (int64_t r = 0; r < rows; ++r) {
    std::tie(first[r], last[r]) = key_range(p, b, i0 + r);
    if (first[r] < last[r]) begin = std::min(begin, first[r]), end = std::max(end, last[r]);
  }
  if (p.qk != nullptr) begin = 0, end = g.total;

  const HeadView qv = HeadView::of(g.three_d, g.q_heads, g.q_len, d);
  std::vector<C> q(static_cast<size_t>(rows * d));
  for (int64_t r = 0; r < rows; ++r) {
    const C* src = p.q + qv.at(b, h, i0 + r);
    for (int64_t c = 0; c < d; ++c) q[r * d + c] = src[c] * scale;
  }
  std::vector<C> scores(static_cast<size_t>(rows * kKeyTile));
  std::vector<C> acc(static_cast<size_t>(rows * dv), C(0));
  std::vector<C> max(static_cast<size_t>(rows), kNegInf), sum(static_cast<size_t>(rows), C(0));
  C* qk_rows = p.qk != nullptr ? p.qk + ((b * g.q_heads + h) * g.q_len + i0) * g.total : nullptr;
  const C* bias_rows = p.bias != nullptr ? p.bias + b * p.bias_strides[0] + h * p.bias_strides[1] : nullptr;

  for (int64_t j0 = begin; j0 < end;) {
    const int64_t n = std::min({kKeyTile, end - j0, keys.part_end(j0, g.total) - j0});
    C* s = scores.data();
    product_scores(rows, n, d, q.data(), keys.row(j0), keys.stride(j0), s);
    auto stage = [&](QkStage at) {
      if (qk_rows == nullptr || a.qk_stage != at) return;
      for (int64_t r = 0; r < rows; ++r) std::copy_n(s + r * n, n, qk_rows + r * g.total + j0);
    };
    stage(QkStage::product);
    if (a.softcap > 0) {
      const C cap = static_cast<C>(a.softcap);
      for (int64_t e = 0; e < rows * n; ++e) s[e] = cap * std::tanh(s[e] / cap);
    }
    stage(QkStage::softcapped);
    for (int64_t r = 0; r < rows; ++r) {
      C* row = s + r * n;
      if (bias_rows != nullptr) {
        const C* add = bias_rows + (i0 + r) * p.bias_strides[2] + j0;
        for (int64_t j = 0; j < n; ++j) row[j] += add[j];
      }
      for (int64_t j = 0; j < std::min(n, first[r] - j0); ++j) row[j] = kNegInf;
      for (int64_t j = std::max<int64_t>(0, last[r] - j0); j < n; ++j) row[j] = kNegInf;
    }
    stage(QkStage::biased);
    stage(QkStage::softmax);  // made probabilities once the row's maximum and sum are known
    // The online softmax: scores become exp(s - max), and what the rows had
    // gathered under an older, smaller maximum is scaled down to the new one.
    for (int64_t r = 0; r < rows; ++r) {
      C* row = s + r * n;
      const C top = std::max(max[r], row_max(row, n));
      if (top == kNegInf) {
        std::fill_n(row, n, C(0));
        continue;
      }
      const C shrink = max[r] == kNegInf ? C(0) : std::exp(max[r] - top);
      sum[r] = sum[r] * shrink + exp_shifted(row, row, n, top);
      max[r] = top;
      if (shrink != C(1))
        for (int64_t c = 0; c < dv; ++c) acc[r * dv + c] *= shrink;
    }
    add_values(rows, n, dv, s, values.row(j0), values.stride(j0), acc.data());
    j0 += n;
  }

  const HeadView yv = HeadView::of(g.three_d, g.q_heads, g.q_len, dv);
  for (int64_t r = 0; r < rows; ++r) {
    C* out = p.y + yv.at(b, h, i0 + r);
    const C inv = sum[r] > C(0) ? C(1) / sum[r] : C(0);
    for (int64_t c = 0; c < dv; ++c) out[c] = acc[r * dv + c] * inv;
    if (qk_rows != nullptr && a.qk_stage == QkStage::softmax) {
      C* row = qk_rows + r * g.total;
      if (sum[r] > C(0)) {
        exp_shifted(row, row, g.total, max[r]);
        for (int64_t j = 0; j < g.total; ++j) row[j] *= inv;
      } else {
        std::fill_n(row, g.total, C(0));
      }
    }
  }
}

template <class C> void attend(const Problem<C>& p) {
  const Geometry& g = p.g;
  const int64_t group = g.q_heads / g.kv_heads;
  const HeadView kview = HeadView::of(g.three_d, g.kv_heads, g.kv_len, g.head_size);
  const HeadView vview = HeadView::of(g.three_d, g.kv_heads, g.kv_len, g.v_head_size);
  const int64_t blocks = (g.q_len + kQueryBlock - 1) / kQueryBlock;
  // When one task alone reads a key/value head (no sharing query heads, one
  // block of queries: decoding), it reads the past cache and copies it to
  // the present one after, while it is still in the core's cache; else the
  // copy comes first, and the tasks read the present cache.
  const bool copy_after = group == 1 && blocks == 1;
  const bool wants_present = p.present_key != nullptr;
  auto write_present = [&](int64_t t) {
    write_present_head(g, p.past_key, p.k, g.head_size, p.present_key, t);
    write_present_head(g, p.past_value, p.v, g.v_head_size, p.present_value, t);
  };
  if (wants_present && !copy_after)
    parallel_for(g.batch * g.kv_heads, g.batch * g.kv_heads * g.total * g.head_size >= kParallelWork, write_present);
  // The keys of a head, from the present cache when it is already written
  // (one contiguous part), else from the past cache and the new rows.
  auto rows_of = [&](int64_t b, int64_t kvh, const C* present, const C* past, const C* now, const HeadView& view, int64_t size) {
    HeadRows<C> r;
    const int64_t head = b * g.kv_heads + kvh;
    if (present != nullptr && !copy_after) {
      r.past = present + head * g.total * size;
      r.past_stride = size;
      r.past_len = g.total;
      return r;
    }
    if (past != nullptr) r.past = past + head * g.past_len * size;
    r.past_stride = size;
    r.past_len = g.past_len;
    r.now = now + view.at(b, kvh, 0);
    r.now_stride = view.row_stride;
    return r;
  };
  const double macs = static_cast<double>(g.batch * g.q_heads) * static_cast<double>(g.q_len) * static_cast<double>(g.total) *
                      static_cast<double>(g.head_size + g.v_head_size);
  parallel_for(g.batch * g.q_heads * blocks, macs >= kParallelMacs, [&](int64_t t) {
    const int64_t b = t / (g.q_heads * blocks), h = t / blocks % g.q_heads, block = t % blocks;
    const int64_t kvh = h / group;
    const HeadRows<C> keys = rows_of(b, kvh, p.present_key, p.past_key, p.k, kview, g.head_size);
    const HeadRows<C> values = rows_of(b, kvh, p.present_value, p.past_value, p.v, vview, g.v_head_size);
    const int64_t i0 = block * kQueryBlock;
    attend_block(p, keys, values, b, h, i0, std::min(kQueryBlock, g.q_len - i0));
    if (wants_present && copy_after) write_present(b * g.kv_heads + kvh);
  });
}

// --- the kernel -------------------------------------------------------------------

// The input as the compute type: itself, or a float32 copy of a 16-bit one.
const Tensor* widened(const Tensor* t, DataType compute, std::deque<Tensor>& keep) {
  if (t == nullptr || t->dtype() == compute) return t;
  keep.push_back(to_float32(*t));
  return &keep.back();
}

Status compute_attention(const Attributes& attrs, KernelContext& ctx) {
  ONNXKIT_ASSIGN(const Tensor* q, ctx.tensor(kQ));
  ONNXKIT_ASSIGN(const Tensor* k, ctx.tensor(kK));
  ONNXKIT_ASSIGN(const Tensor* v, ctx.tensor(kV));
  const Tensor* mask = ctx.has_input(kMask) ? &ctx.input(kMask) : nullptr;
  const Tensor* past_key = ctx.has_input(kPastKey) ? &ctx.input(kPastKey) : nullptr;
  const Tensor* past_value = ctx.has_input(kPastValue) ? &ctx.input(kPastValue) : nullptr;
  const Tensor* nonpad = ctx.has_input(kNonpad) ? &ctx.input(kNonpad) : nullptr;
  const DataType type = q->dtype();
  if (type != DataType::float32 && type != DataType::float64 && type != DataType::float16 && type != DataType::bfloat16)
    return make_error("Q must be floating point, got {}", to_string(type));
  for (const Tensor* t : {k, v, past_key, past_value})
    if (t != nullptr && t->dtype() != type)
      return make_error("Q, K, V and the past caches must have one element type, got {} and {}", to_string(type),
                        to_string(t->dtype()));
  ONNXKIT_ASSIGN(const Geometry g, read_geometry(attrs, *q, *k, *v, past_key, past_value));
  if (nonpad != nullptr && past_key != nullptr)
    return make_error("nonpad_kv_seqlen cannot be used with past_key and past_value (an external cache)");
  if (ctx.wants_output(kPresentKey) != ctx.wants_output(kPresentValue))
    return make_error("present_key and present_value must be asked for together");

  const Shape y_shape =
      g.three_d ? Shape{g.batch, g.q_len, g.q_heads * g.v_head_size} : Shape{g.batch, g.q_heads, g.q_len, g.v_head_size};
  const Shape present_k = {g.batch, g.kv_heads, g.total, g.head_size};
  const Shape present_v = {g.batch, g.kv_heads, g.total, g.v_head_size};
  const Shape qk_shape = {g.batch, g.q_heads, g.q_len, g.total};
  ONNXKIT_TRY(checked_size(y_shape, "Y"));
  ONNXKIT_TRY(checked_size(present_k, "present_key"));
  ONNXKIT_TRY(checked_size(present_v, "present_value"));
  ONNXKIT_TRY(checked_size(qk_shape, "qk_matmul_output"));

  std::vector<int64_t> valid(static_cast<size_t>(g.batch), g.total), offsets(static_cast<size_t>(g.batch), g.past_len);
  if (nonpad != nullptr) {
    ONNXKIT_ASSIGN(const std::vector<int64_t> lengths, read_int64s(*nonpad));
    if (static_cast<int64_t>(lengths.size()) != g.batch)
      return make_error("nonpad_kv_seqlen must hold one length per batch ({}), got shape {}", g.batch,
                        shape_to_string(nonpad->shape()));
    for (size_t b = 0; b < lengths.size(); ++b) {
      if (lengths[b] < 0 || lengths[b] > g.total)
        return make_error("nonpad_kv_seqlen[{}] = {} is outside [0, {}] (the keys)", b, lengths[b], g.total);
      valid[b] = lengths[b];
      offsets[b] = lengths[b] - g.q_len;
    }
  }

  const bool wide = type == DataType::float64;
  const DataType compute = wide ? DataType::float64 : DataType::float32;
  std::deque<Tensor> keep;  // the copies; a deque, so that pointers to them stay valid
  const Tensor* cq = widened(q, compute, keep);
  const Tensor* ck = widened(k, compute, keep);
  const Tensor* cv = widened(v, compute, keep);
  const Tensor* cpk = widened(past_key, compute, keep);
  const Tensor* cpv = widened(past_value, compute, keep);

  Tensor& y = ctx.output(kY, type, y_shape);
  Tensor* present_key = ctx.wants_output(kPresentKey) ? &ctx.output(kPresentKey, type, present_k) : nullptr;
  Tensor* present_value = ctx.wants_output(kPresentValue) ? &ctx.output(kPresentValue, type, present_v) : nullptr;
  Tensor* qk = ctx.wants_output(kQk) ? &ctx.output(kQk, type, qk_shape) : nullptr;
  // 16-bit outputs are computed in float32 buffers and narrowed after.
  auto buffer = [&](Tensor* out) -> Tensor* {
    if (out == nullptr || out->dtype() == compute) return out;
    keep.emplace_back(compute, out->shape());
    return &keep.back();
  };
  Tensor* cy = buffer(&y);
  Tensor* cpresent_k = buffer(present_key);
  Tensor* cpresent_v = buffer(present_value);
  Tensor* cqk = buffer(qk);

  auto run = [&]<class C>() -> Status {
    Problem<C> p = make_problem<C>(g, attrs, *cq, *ck, *cv);
    p.past_key = cpk != nullptr ? cpk->data<C>() : nullptr;
    p.past_value = cpv != nullptr ? cpv->data<C>() : nullptr;
    Tensor bias;
    if (mask != nullptr) {
      ONNXKIT_TRY(read_mask<C>(*mask, g, bias, p.bias_strides));
      p.bias = bias.data<C>();
    }
    p.valid_keys = valid;
    p.offsets = offsets;
    p.y = cy->mutable_data<C>();
    p.present_key = cpresent_k != nullptr ? cpresent_k->mutable_data<C>() : nullptr;
    p.present_value = cpresent_v != nullptr ? cpresent_v->mutable_data<C>() : nullptr;
    p.qk = cqk != nullptr ? cqk->mutable_data<C>() : nullptr;
    attend(p);
    return {};
  };
  ONNXKIT_TRY(wide ? run.template operator()<double>() : run.template operator()<float>());
  for (auto [narrow, computed] : {std::pair{&y, cy}, {present_key, cpresent_k}, {present_value, cpresent_v}, {qk, cqk}})
    if (narrow != nullptr && narrow != computed) from_float32(*computed, *narrow);
  return {};
}

KernelFactory attention_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    ONNXKIT_ASSIGN(const Attributes attrs, read_attributes(info));
    const size_t max_inputs = info.opset() >= 24 ? 7 : 6;
    if (info.num_inputs() < 3 || info.num_inputs() > max_inputs)
      return make_error("Attention-{} takes 3 to {} inputs, got {}", info.opset(), max_inputs, info.num_inputs());
    if (info.num_outputs() < 1 || info.num_outputs() > 4)
      return make_error("Attention takes 1 to 4 outputs, got {}", info.num_outputs());
    return ComputeFn([attrs](KernelContext& ctx) { return compute_attention(attrs, ctx); });
  });
}

}  // namespace

Status fused_attention_4d(const Tensor& q, const Tensor& k, const Tensor& v, double scale, Tensor& y) {
  Attributes attrs;
  attrs.scale = scale;
  ONNXKIT_ASSIGN(const Geometry g, read_geometry(attrs, q, k, v, nullptr, nullptr));
  const bool wide = q.dtype() == DataType::float64;
  const DataType compute = wide ? DataType::float64 : DataType::float32;
  std::deque<Tensor> keep;
  const Tensor* cq = widened(&q, compute, keep);
  const Tensor* ck = widened(&k, compute, keep);
  const Tensor* cv = widened(&v, compute, keep);
  if (y.dtype() != q.dtype() || y.shape() != Shape{g.batch, g.q_heads, g.q_len, g.v_head_size})
    return make_error("internal: the output of fused attention has the wrong type or shape");
  Tensor* cy = &y;
  if (y.dtype() != compute) cy = &keep.emplace_back(compute, y.shape());
  auto run = [&]<class C>() {
    Problem<C> p = make_problem<C>(g, attrs, *cq, *ck, *cv);
    p.valid_keys.assign(static_cast<size_t>(g.batch), g.total);
    p.offsets.assign(static_cast<size_t>(g.batch), 0);
    p.y = cy->mutable_data<C>();
    attend(p);
  };
  wide ? run.template operator()<double>() : run.template operator()<float>();
  if (cy != &y) from_float32(*cy, y);
  return {};
}

void register_attention(KernelRegistry& r) { r.add("", "Attention", 23, kLatestOpset, attention_kernel()); }

}  // namespace onnxkit::runtime::nn
