// RotaryEmbedding (opset 23): rotary positional embeddings (RoPE). Within
// each head, the first rotary_embedding_dim values (all of them by default)
// are taken as rotary_embedding_dim/2 pairs, and each pair (x1, x2) is turned
// by the angle of its token's position:
//   x1' = cos * x1 - sin * x2,   x2' = sin * x1 + cos * x2.
// A pair is (v[i], v[i + half]) by default and (v[2i], v[2i+1]) when
// interleaved; the values past the rotary dims are copied.
//
// The cos and sin rows of a token come from the caches: row position_ids[b, s]
// of a [max_position, half] cache, or, without position_ids, entry [b, s] of
// a [batch, sequence, half] cache (a [sequence, half] cache serves every
// batch entry).

#include "runtime/kernels/nn/nn.h"

namespace onnxkit::runtime::nn {
namespace {

struct RotaryLayout {
  int64_t batch = 0, heads = 0, sequence = 0, head_size = 0;
  bool heads_first = true;  // [B, H, S, D]; else [B, S, H * D]
  int64_t offset(int64_t b, int64_t h, int64_t s) const {
    return heads_first ? ((b * heads + h) * sequence + s) * head_size : ((b * sequence + s) * heads + h) * head_size;
  }
};

Result<RotaryLayout> rotary_layout(const Shape& x, int64_t num_heads) {
  RotaryLayout l;
  if (x.size() == 4) {
    l.batch = x[0], l.heads = x[1], l.sequence = x[2], l.head_size = x[3];
    return l;
  }
  if (x.size() != 3)
    return make_error("X must be [batch, heads, sequence, head_size] or [batch, sequence, hidden], got {}", shape_to_string(x));
  if (num_heads <= 0 || x[2] % num_heads != 0)
    return make_error("a 3-D X ({}) needs attribute num_heads dividing its hidden size, got num_heads {}", shape_to_string(x),
                      num_heads);
  l.batch = x[0], l.sequence = x[1], l.heads = num_heads, l.head_size = x[2] / num_heads;
  l.heads_first = false;
  return l;
}

// For every (b, s), the row of the caches its token reads.
Result<std::vector<int64_t>> cache_rows(KernelContext& ctx, const RotaryLayout& l, const Shape& cache, int64_t half) {
  const int64_t tokens = l.batch * l.sequence;
  std::vector<int64_t> rows(static_cast<size_t>(tokens));
  if (ctx.has_input(3)) {
    ONNXKIT_ASSIGN(const Tensor* ids_t, ctx.tensor(3));
    if (ids_t->shape() != Shape{l.batch, l.sequence})
      return make_error("position_ids has shape {}, expected [batch, sequence] = [{}, {}]", shape_to_string(ids_t->shape()),
                        l.batch, l.sequence);
    if (cache.size() != 2 || cache[1] != half)
      return make_error("with position_ids the caches must be [max_position, {}], got {}", half, shape_to_string(cache));
    ONNXKIT_ASSIGN(rows, read_int64s(*ids_t));
    for (size_t i = 0; i < rows.size(); ++i)
      if (rows[i] < 0 || rows[i] >= cache[0])
        return make_error("position_ids element {} is {}, outside the caches' {} positions", i, rows[i], cache[0]);
    return rows;
  }
  const bool per_batch = cache.size() == 3 && cache[0] == l.batch && cache[1] == l.sequence && cache[2] == half;
  const bool shared = cache.size() == 2 && cache[0] == l.sequence && cache[1] == half;
  if (!per_batch && !shared)
    return make_error("without position_ids the caches must be [batch, sequence, {}] = [{}, {}, {}], got {}", half, l.batch,
                      l.sequence, half, shape_to_string(cache));
  for (int64_t b = 0; b < l.batch; ++b)
    for (int64_t s = 0; s < l.sequence; ++s) rows[static_cast<size_t>(b * l.sequence + s)] = per_batch ? b * l.sequence + s : s;
  return rows;
}

KernelFactory rotary_embedding_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    const bool interleaved = info.attr_int("interleaved", 0) != 0;
    const int64_t rotary_dim_attr = info.attr_int("rotary_embedding_dim", 0);
    const int64_t num_heads = info.attr_int("num_heads", 0);
    return ComputeFn([=](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
      ONNXKIT_ASSIGN(const Tensor* cos_t, ctx.tensor(1));
      ONNXKIT_ASSIGN(const Tensor* sin_t, ctx.tensor(2));
      ONNXKIT_ASSIGN(const RotaryLayout l, rotary_layout(x->shape(), num_heads));
      const int64_t rotary_dim = rotary_dim_attr > 0 ? rotary_dim_attr : l.head_size;
      if (rotary_dim % 2 != 0 || rotary_dim > l.head_size)
        return make_error("the rotary dims ({}) must be even and at most the head size ({})", rotary_dim, l.head_size);
      if (cos_t->dtype() != x->dtype() || sin_t->dtype() != x->dtype() || cos_t->shape() != sin_t->shape())
        return make_error("cos_cache ({} {}) and sin_cache ({} {}) must have X's element type ({}) and one shape",
                          to_string(cos_t->dtype()), shape_to_string(cos_t->shape()), to_string(sin_t->dtype()),
                          shape_to_string(sin_t->shape()), to_string(x->dtype()));
      const int64_t half = rotary_dim / 2;
      ONNXKIT_ASSIGN(const std::vector<int64_t> rows, cache_rows(ctx, l, cos_t->shape(), half));
      Tensor& y = ctx.output(0, x->dtype(), x->shape());
      return dispatch_float(x->dtype(), [&]<class T>() -> Status {
        using C = compute_t<T>;
        const T* xp = x->data<T>();
        const T* cp = cos_t->data<T>();
        const T* sp = sin_t->data<T>();
        T* yp = y.mutable_data<T>();
        // The first and second element of pair i within a head.
        const int64_t first_step = interleaved ? 2 : 1, second = interleaved ? 1 : half;
#pragma omp parallel for collapse(2) if (x->numel() >= kParallelWork) schedule(static)
        for (int64_t b = 0; b < l.batch; ++b) {
          for (int64_t s = 0; s < l.sequence; ++s) {
            const int64_t row = rows[static_cast<size_t>(b * l.sequence + s)] * half;
            for (int64_t h = 0; h < l.heads; ++h) {
              const int64_t at = l.offset(b, h, s);
              for (int64_t i = 0; i < half; ++i) {
                const C c = static_cast<C>(cp[row + i]), sn = static_cast<C>(sp[row + i]);
                const int64_t i1 = at + i * first_step, i2 = i1 + second;
                const C x1 = static_cast<C>(xp[i1]), x2 = static_cast<C>(xp[i2]);
                yp[i1] = static_cast<T>(c * x1 - sn * x2);
                yp[i2] = static_cast<T>(sn * x1 + c * x2);
              }
              for (int64_t d = rotary_dim; d < l.head_size; ++d) yp[at + d] = xp[at + d];
            }
          }
        }
        return {};
      });
    });
  });
}

}  // namespace

void register_rotary_embedding(KernelRegistry& r) { r.add("", "RotaryEmbedding", 23, kLatestOpset, rotary_embedding_kernel()); }

}  // namespace onnxkit::runtime::nn
