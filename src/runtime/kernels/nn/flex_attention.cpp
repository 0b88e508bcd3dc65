// FlexAttention (ai.onnx.preview, opset 1): attention over 4-D Q, K, V with
// user sub-graphs at two stages,
//   scores = Q K^T * scale;  scores = score_mod(scores);
//   probs = softmax(scores); probs = prob_mod(probs);  Y = probs V,
// and grouped key/value heads (query head h reads kv head h / group).
//
// Without a modifier it is Attention without mask or cache, and runs on that
// op's fused kernel (attention.cpp), which never holds the whole score
// matrix. A modifier sees the whole (batch, q heads, q length, kv length)
// tensor at once, so with one the scores are materialised: products per
// head, the sub-graph run once in the node's scope (as If/Loop bodies are),
// the softmax, the other sub-graph, and the products with V.
//
// The modifiers' tensors are of softmax_precision: float (1) by default,
// double (11) by default for double inputs; float16 and bfloat16 precision
// are refused. A query row whose scores are all -inf gives zeros, as
// Attention's does, rather than NaN.

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>

#include "runtime/executor.h"
#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/gemm.h"
#include "runtime/kernels/nn/nn.h"
#include "runtime/parallel.h"

namespace onnxkit::runtime::nn {
namespace {

struct Modifiers {
  std::shared_ptr<const GraphPlan> score_mod, prob_mod;  // null when not given
  std::optional<double> scale;                           // 1 / sqrt(head size) when not given
  std::optional<DataType> precision;                     // of softmax_precision, when given
};

struct Geometry {
  int64_t batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, head_size = 0, v_head_size = 0;
};

Result<Geometry> read_geometry(const Tensor& q, const Tensor& k, const Tensor& v) {
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4)
    return make_error("Q, K and V must be 4-D (batch, heads, sequence, head size), got shapes {}, {} and {}",
                      shape_to_string(q.shape()), shape_to_string(k.shape()), shape_to_string(v.shape()));
  const Geometry g{q.dim(0), q.dim(1), k.dim(1), q.dim(2), k.dim(2), q.dim(3), v.dim(3)};
  if (k.dim(0) != g.batch || v.dim(0) != g.batch || v.dim(1) != g.kv_heads || v.dim(2) != g.kv_len || k.dim(3) != g.head_size)
    return make_error(
        "Q {}, K {} and V {} disagree: they share the batch, K and V the heads and sequence, "
        "Q and K the head size",
        shape_to_string(q.shape()), shape_to_string(k.shape()), shape_to_string(v.shape()));
  if (g.kv_heads == 0 || g.q_heads % g.kv_heads != 0)
    return make_error("the query heads ({}) must be a multiple of the key/value heads ({})", g.q_heads, g.kv_heads);
  return g;
}

Result<std::shared_ptr<const GraphPlan>> read_modifier(const KernelInfo& info, const char* name) {
  if (!info.has_attr(name)) return std::shared_ptr<const GraphPlan>();
  ONNXKIT_ASSIGN(auto plan, info.subgraph(name));
  if (plan->inputs.size() != 1 || plan->outputs.size() != 1)
    return make_error("attribute {} must be a graph of one input and one output, got {} and {}", name, plan->inputs.size(),
                      plan->outputs.size());
  return plan;
}

Result<Modifiers> read_modifiers(const KernelInfo& info) {
  Modifiers m;
  ONNXKIT_ASSIGN(m.score_mod, read_modifier(info, "score_mod"));
  ONNXKIT_ASSIGN(m.prob_mod, read_modifier(info, "prob_mod"));
  if (info.has_attr("scale")) m.scale = info.attr_float("scale", 1.0f);
  if (info.has_attr("softmax_precision")) {
    const int64_t p = info.attr_int("softmax_precision", 0);
    if (p != static_cast<int64_t>(DataType::float32) && p != static_cast<int64_t>(DataType::float64))
      return make_error("attribute softmax_precision must be 1 (float) or 11 (double), got {}", p);
    m.precision = static_cast<DataType>(p);
  }
  return m;
}

// The elements of a float tensor as C.
template <class C> std::vector<C> elements_as(const Tensor& t) {
  std::vector<C> out(static_cast<size_t>(t.numel()));
  Status s = dispatch_float(t.dtype(), [&]<class T>() -> Status {
    const T* in = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<C>(static_cast<compute_t<T>>(in[i]));
    return {};
  });
  (void)s;  // the caller has checked that t is floating point
  return out;
}

// One modifier run on `x`: its result, which must keep x's shape and type.
Result<Tensor> apply(KernelContext& ctx, const GraphPlan& plan, Tensor x, const char* name) {
  const Shape shape = x.shape();
  const DataType type = x.dtype();
  std::vector<Datum> in;
  in.emplace_back(std::move(x));
  ONNXKIT_ASSIGN(std::vector<Datum> out, ctx.run_subgraph(plan, std::move(in)));
  if (out.size() != 1 || !out[0].is_tensor() || out[0].tensor().shape() != shape || out[0].tensor().dtype() != type)
    return make_error("{} must return one {} tensor of its input's shape {}, got {}", name, to_string(type),
                      shape_to_string(shape), out.empty() ? std::string("nothing") : out[0].describe());
  return std::move(out[0].tensor());
}

// Softmax of each row of n, in place; a row of -inf becomes zeros.
template <class C> void softmax_rows(C* x, int64_t rows, int64_t n) {
  parallel_for(rows, rows * n >= (int64_t{1} << 16), [&](int64_t r) {
    C* row = x + r * n;
    C top = -std::numeric_limits<C>::infinity();
    for (int64_t j = 0; j < n; ++j) top = std::max(top, row[j]);
    if (top == -std::numeric_limits<C>::infinity()) {
      std::fill_n(row, n, C(0));
      return;
    }
    C sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += row[j] = std::exp(row[j] - top);
    for (int64_t j = 0; j < n; ++j) row[j] /= sum;
  });
}

// The materialised computation, in C, for modifiers.
template <class C>
Status attend_with_modifiers(const Modifiers& m, const Geometry& g, double scale, const Tensor& q, const Tensor& k,
                             const Tensor& v, KernelContext& ctx, Tensor& y) {
  const std::vector<C> cq = elements_as<C>(q), ck = elements_as<C>(k), cv = elements_as<C>(v);
  const int64_t heads = g.batch * g.q_heads, group = g.q_heads / g.kv_heads;
  const int64_t l = g.q_len, s = g.kv_len, d = g.head_size, dv = g.v_head_size;
  auto kv_head = [&](int64_t t) { return t / g.q_heads * g.kv_heads + t % g.q_heads / group; };
  const bool threads = static_cast<double>(heads * l * s) * static_cast<double>(d + dv) >= kParallelMacs;

  Tensor scores(data_type_of<C>(), {g.batch, g.q_heads, l, s});
  C* ps = scores.mutable_data<C>();
  parallel_for(heads, threads, [&](int64_t t) {
    gemm(false, true, l, s, d, static_cast<C>(scale), cq.data() + t * l * d, d, ck.data() + kv_head(t) * s * d, d, C(0),
         ps + t * l * s, s);
  });
  if (m.score_mod) {
    ONNXKIT_ASSIGN(scores, apply(ctx, *m.score_mod, std::move(scores), "score_mod"));
  }
  softmax_rows(scores.mutable_data<C>(), heads * l, s);
  if (m.prob_mod) {
    ONNXKIT_ASSIGN(scores, apply(ctx, *m.prob_mod, std::move(scores), "prob_mod"));
  }

  std::vector<C> out(static_cast<size_t>(heads * l * dv));
  const C* pp = scores.data<C>();
  parallel_for(heads, threads, [&](int64_t t) {
    gemm(false, false, l, dv, s, C(1), pp + t * l * s, s, cv.data() + kv_head(t) * s * dv, dv, C(0), out.data() + t * l * dv, dv);
  });
  return dispatch_float(y.dtype(), [&]<class T>() -> Status {
    T* py = y.mutable_data<T>();
    for (size_t i = 0; i < out.size(); ++i) py[i] = static_cast<T>(static_cast<compute_t<T>>(out[i]));
    return {};
  });
}

Status compute_flex_attention(const Modifiers& m, KernelContext& ctx) {
  ONNXKIT_ASSIGN(const Tensor* q, ctx.tensor(0));
  ONNXKIT_ASSIGN(const Tensor* k, ctx.tensor(1));
  ONNXKIT_ASSIGN(const Tensor* v, ctx.tensor(2));
  const DataType type = q->dtype();
  if (type != DataType::float32 && type != DataType::float64 && type != DataType::float16 && type != DataType::bfloat16)
    return make_error("Q must be floating point, got {}", to_string(type));
  if (k->dtype() != type || v->dtype() != type)
    return make_error("Q, K and V must have one element type, got {}, {} and {}", to_string(type), to_string(k->dtype()),
                      to_string(v->dtype()));
  ONNXKIT_ASSIGN(const Geometry g, read_geometry(*q, *k, *v));
  const Shape y_shape = {g.batch, g.q_heads, g.q_len, g.v_head_size};
  ONNXKIT_TRY(checked_size(y_shape, "Y"));
  ONNXKIT_TRY(checked_size({g.batch, g.q_heads, g.q_len, g.kv_len}, "the scores"));
  const double scale = m.scale ? *m.scale : 1.0 / std::sqrt(static_cast<double>(g.head_size));
  Tensor& y = ctx.output(0, type, y_shape);
  if (!m.score_mod && !m.prob_mod) return fused_attention_4d(*q, *k, *v, scale, y);
  const DataType precision = m.precision.value_or(type == DataType::float64 ? DataType::float64 : DataType::float32);
  if (precision == DataType::float64) return attend_with_modifiers<double>(m, g, scale, *q, *k, *v, ctx, y);
  return attend_with_modifiers<float>(m, g, scale, *q, *k, *v, ctx, y);
}

KernelFactory flex_attention_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    ONNXKIT_ASSIGN(const Modifiers m, read_modifiers(info));
    return ComputeFn([m](KernelContext& ctx) { return compute_flex_attention(m, ctx); });
  });
}

}  // namespace

void register_flex_attention(KernelRegistry& r) {
  r.add("ai.onnx.preview", "FlexAttention", 1, kLatestOpset, flex_attention_kernel());
}

}  // namespace onnxkit::runtime::nn
