// Gather, GatherElements and GatherND: outputs made of elements or slices of
// `data` at positions read from an index tensor. Indices are read and checked
// in full before the first element moves.

#include <fmt/format.h>

#include <algorithm>

#include "runtime/kernels/indexing/indexing.h"
#include "runtime/parallel.h"

namespace onnxkit::runtime::indexing {
namespace {

// Output block k (of `block` elements) is the block of `src` starting at
// src_offsets[k]. Blocks are independent, so large copies split across threads.
Status copy_blocks(const Tensor& src, const std::vector<int64_t>& src_offsets, int64_t block, Tensor& dst) {
  return dispatch_movable(src.dtype(), [&]<class T>() -> Status {
    const T* s = src.data<T>();
    T* d = dst.mutable_data<T>();
    const int64_t n = static_cast<int64_t>(src_offsets.size());
    // Copying strings allocates, and nothing may throw inside a parallel region.
    const bool parallel = n > 1 && n * block >= kParallelWork && !std::is_same_v<T, std::string>;
    parallel_ranges(n, parallel, [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k) std::copy_n(s + src_offsets[static_cast<size_t>(k)], block, d + k * block);
    });
    return {};
  });
}

Status gather(KernelContext& ctx, int64_t axis_attr) {
  ONNXKIT_ASSIGN(const Tensor* data, ctx.tensor(0));
  ONNXKIT_ASSIGN(const Tensor* indices_t, ctx.tensor(1));
  const int64_t rank = static_cast<int64_t>(data->rank());
  if (rank == 0) return make_error("data must have rank >= 1, got a scalar");
  ONNXKIT_ASSIGN(int64_t axis, normalize_axis(axis_attr, rank));
  const size_t a = static_cast<size_t>(axis);
  ONNXKIT_ASSIGN(std::vector<int64_t> indices, read_index_tensor(*indices_t, "indices"));
  const int64_t dim = data->dim(a);
  ONNXKIT_TRY(wrap_indices(indices, dim, "indices", fmt::format("data axis {}", axis)));

  // [data dims before axis] + [indices dims] + [data dims after axis]
  const Shape& ds = data->shape();
  Shape out_shape(ds.begin(), ds.begin() + axis);
  out_shape.insert(out_shape.end(), indices_t->shape().begin(), indices_t->shape().end());
  out_shape.insert(out_shape.end(), ds.begin() + axis + 1, ds.end());
  ONNXKIT_TRY(checked_size(out_shape, "the output"));

  const int64_t outer = dims_product(ds, 0, a), inner = dims_product(ds, a + 1, ds.size());
  std::vector<int64_t> offsets;
  offsets.reserve(static_cast<size_t>(outer) * indices.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k : indices) offsets.push_back((o * dim + k) * inner);
  Tensor& y = ctx.output(0, data->dtype(), std::move(out_shape));
  return copy_blocks(*data, offsets, inner, y);
}

Status gather_elements(KernelContext& ctx, int64_t axis_attr) {
  ONNXKIT_ASSIGN(const Tensor* data, ctx.tensor(0));
  ONNXKIT_ASSIGN(const Tensor* indices_t, ctx.tensor(1));
  const int64_t rank = static_cast<int64_t>(data->rank());
  if (rank == 0) return make_error("data must have rank >= 1, got a scalar");
  if (indices_t->rank() != data->rank())
    return make_error("indices has rank {} but data has rank {}; they must be equal", indices_t->rank(), rank);
  ONNXKIT_ASSIGN(int64_t axis, normalize_axis(axis_attr, rank));
  const size_t a = static_cast<size_t>(axis);
  for (size_t d = 0; d < data->rank(); ++d)
    if (d != a && indices_t->dim(d) > data->dim(d))
      return make_error("indices has shape {}, larger than data's {} on axis {}", shape_to_string(indices_t->shape()),
                        shape_to_string(data->shape()), d);
  ONNXKIT_ASSIGN(WrappedIndices indices,
                 WrappedIndices::read(*indices_t, data->dim(a), "indices", fmt::format("data axis {}", axis)));

  std::vector<int64_t> strides = contiguous_strides(data->shape());
  const int64_t axis_stride = strides[a];
  strides[a] = 0;  // the position along axis comes from the index
  Tensor& y = ctx.output(0, data->dtype(), indices_t->shape());
  return dispatch_movable(data->dtype(), [&]<class T>() -> Status {
    const T* s = data->data<T>();
    T* d = y.mutable_data<T>();
    OffsetWalker walk(indices_t->shape(), strides);
    for (int64_t p = 0; p < y.numel(); ++p, walk.next()) d[p] = s[walk.offset() + indices[p] * axis_stride];
    return {};
  });
}

Status gather_nd(KernelContext& ctx, int64_t batch_dims) {
  ONNXKIT_ASSIGN(const Tensor* data, ctx.tensor(0));
  ONNXKIT_ASSIGN(const Tensor* indices_t, ctx.tensor(1));
  const int64_t r = static_cast<int64_t>(data->rank()), q = static_cast<int64_t>(indices_t->rank());
  if (r < 1) return make_error("data must have rank >= 1, got a scalar");
  if (q < 1) return make_error("indices must have rank >= 1, got a scalar");
  const int64_t b = batch_dims;
  if (b < 0 || b >= std::min(q, r))
    return make_error("batch_dims {} must be in [0, {}) for data of rank {} and indices of rank {}", b, std::min(q, r), r, q);
  for (int64_t i = 0; i < b; ++i)
    if (data->dim(static_cast<size_t>(i)) != indices_t->dim(static_cast<size_t>(i)))
      return make_error("batch dim {} differs: data has shape {}, indices {}", i, shape_to_string(data->shape()),
                        shape_to_string(indices_t->shape()));
  const int64_t k = indices_t->dim(static_cast<size_t>(q - 1));
  if (k > r - b) return make_error("indices' last dim is {}, more than the {} dims of data after the {} batch dims", k, r - b, b);
  ONNXKIT_ASSIGN(std::vector<int64_t> indices, read_index_tensor(*indices_t, "indices"));

  const Shape& ds = data->shape();
  const size_t bs = static_cast<size_t>(b), ks = static_cast<size_t>(k);
  Shape out_shape(indices_t->shape().begin(), indices_t->shape().end() - 1);
  out_shape.insert(out_shape.end(), ds.begin() + b + k, ds.end());
  ONNXKIT_TRY(checked_size(out_shape, "the output"));

  const std::vector<int64_t> strides = contiguous_strides(ds);
  const int64_t batches = dims_product(ds, 0, bs);
  const int64_t batch_stride = dims_product(ds, bs, ds.size());
  const int64_t slice = dims_product(ds, bs + ks, ds.size());
  const int64_t tuples = dims_product(indices_t->shape(), bs, static_cast<size_t>(q - 1));
  std::vector<int64_t> offsets(static_cast<size_t>(batches * tuples));
  for (int64_t n = 0; n < batches; ++n)
    for (int64_t t = 0; t < tuples; ++t) {
      const size_t tuple = static_cast<size_t>(n * tuples + t);
      int64_t offset = n * batch_stride;
      for (size_t j = 0; j < ks; ++j) {
        const size_t e = tuple * ks + j;
        const int64_t dim = ds[bs + j];
        int64_t v = indices[e];
        if (v < -dim || v >= dim)
          return make_error("indices element {} is {}, out of range [{}, {}) for data axis {} of size {}", e, v, -dim, dim,
                            bs + j, dim);
        if (v < 0) v += dim;
        offset += v * strides[bs + j];
      }
      offsets[tuple] = offset;
    }
  Tensor& y = ctx.output(0, data->dtype(), std::move(out_shape));
  return copy_blocks(*data, offsets, slice, y);
}

}  // namespace

void register_gather(KernelRegistry& r) {
  // Gather-1 did not allow negative indices; wrapping them there too is
  // harmless, so one kernel serves every version.
  r.add("", "Gather", 1, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          int64_t axis = info.attr_int("axis", 0);
          return ComputeFn([axis](KernelContext& ctx) { return gather(ctx, axis); });
        }));
  r.add("", "GatherElements", 11, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          int64_t axis = info.attr_int("axis", 0);
          return ComputeFn([axis](KernelContext& ctx) { return gather_elements(ctx, axis); });
        }));
  r.add("", "GatherND", 11, 11, make_kernel(ComputeFn([](KernelContext& ctx) { return gather_nd(ctx, 0); })));
  r.add("", "GatherND", 12, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          int64_t batch_dims = info.attr_int("batch_dims", 0);
          return ComputeFn([batch_dims](KernelContext& ctx) { return gather_nd(ctx, batch_dims); });
        }));
}

}  // namespace onnxkit::runtime::indexing
