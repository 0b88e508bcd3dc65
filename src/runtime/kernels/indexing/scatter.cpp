// ScatterND, ScatterElements and Scatter: a copy of `data` whose elements or
// slices are replaced by (or reduced with) `updates` at positions read from
// an index tensor. Updates apply in index order on one thread, so repeated
// indices give the same result on every run.

#include <fmt/format.h>

#include <algorithm>
#include <type_traits>

#include "runtime/kernels/indexing/indexing.h"

namespace onnxkit::runtime::indexing {
namespace {

enum class Reduction { none, add, mul, max, min };

const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::none: return "none";
    case Reduction::add: return "add";
    case Reduction::mul: return "mul";
    case Reduction::max: return "max";
    case Reduction::min: return "min";
  }
  return "?";
}

// The reductions each opset allows: add and mul from 16, max and min from 18.
Result<Reduction> parse_reduction(const std::string& text, int64_t opset) {
  if (text == "none") return Reduction::none;
  if (opset >= 16 && text == "add") return Reduction::add;
  if (opset >= 16 && text == "mul") return Reduction::mul;
  if (opset >= 18 && text == "max") return Reduction::max;
  if (opset >= 18 && text == "min") return Reduction::min;
  const char* allowed = opset >= 18 ? "none, add, mul, max or min" : opset >= 16 ? "none, add or mul" : "none";
  return make_error("attribute 'reduction' is '{}'; at opset {} it must be {}", text, opset, allowed);
}

// Calls body(op) with op(dst, src) applying the reduction to one element,
// or returns an error when the reduction has no meaning for T.
template <class T, class Body> Status with_reducer(Reduction r, Body&& body) {
  if (r == Reduction::none) {
    body([](T& d, const T& s) { d = s; });
    return {};
  }
  if constexpr (std::is_same_v<T, std::string>) {
    return make_error("reduction '{}' does not apply to strings", reduction_name(r));
  } else if constexpr (std::is_same_v<T, bool>) {
    // bool as 0/1 saturated: add and max are "or", mul and min are "and".
    if (r == Reduction::add || r == Reduction::max) body([](bool& d, const bool& s) { d = d || s; });
    else body([](bool& d, const bool& s) { d = d && s; });
    return {};
  } else {
    using C = compute_t<T>;
    // Integers wrap on overflow: the arithmetic runs unsigned, at least 32
    // bits wide so that nothing promotes back to (overflowing) int.
    using Wide =
        std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<std::conditional_t<std::is_integral_v<T>, T, int>>>;
    using A = std::conditional_t<std::is_integral_v<T>, Wide, C>;
    switch (r) {
      case Reduction::add:
        body([](T& d, const T& s) { d = static_cast<T>(static_cast<A>(static_cast<A>(d) + static_cast<A>(s))); });
        return {};
      case Reduction::mul:
        body([](T& d, const T& s) { d = static_cast<T>(static_cast<A>(static_cast<A>(d) * static_cast<A>(s))); });
        return {};
      default: break;
    }
    if constexpr (is_complex_v<T>) {
      return make_error("reduction '{}' does not apply to complex numbers", reduction_name(r));
    } else {
      if (r == Reduction::max)
        body([](T& d, const T& s) {
          if (static_cast<C>(d) < static_cast<C>(s)) d = s;
        });
      else
        body([](T& d, const T& s) {
          if (static_cast<C>(s) < static_cast<C>(d)) d = s;
        });
      return {};
    }
  }
}

// Reads data, indices and updates, checks that data and updates share a type,
// and starts the output as a copy of data.
struct ScatterInputs {
  const Tensor* data;
  const Tensor* indices;
  const Tensor* updates;
};

Result<ScatterInputs> scatter_inputs(KernelContext& ctx) {
  ScatterInputs in{};
  ONNXKIT_ASSIGN(in.data, ctx.tensor(0));
  ONNXKIT_ASSIGN(in.indices, ctx.tensor(1));
  ONNXKIT_ASSIGN(in.updates, ctx.tensor(2));
  if (in.updates->dtype() != in.data->dtype())
    return make_error("updates is {} but data is {}; they must have one type", to_string(in.updates->dtype()),
                      to_string(in.data->dtype()));
  if (in.data->rank() == 0) return make_error("data must have rank >= 1, got a scalar");
  return in;
}

// Y is a copy of data into which `place(op, out, u)` combines the updates
// u, calling op(out[offset], u[k]) with the reduction's op for each one.
template <class Place>
Status scatter_into_copy(KernelContext& ctx, const Tensor& data, const Tensor& updates, Reduction reduction, Place&& place) {
  Tensor& y = ctx.output(0, data.dtype(), data.shape());
  copy_elements(data, 0, y, 0, data.numel());
  return dispatch_all(data.dtype(), [&]<class T>() -> Status {
    T* out = y.mutable_data<T>();
    const T* u = updates.data<T>();
    return with_reducer<T>(reduction, [&](auto op) { place(op, out, u); });
  });
}

Status scatter_nd(KernelContext& ctx, Reduction reduction) {
  ONNXKIT_ASSIGN(ScatterInputs in, scatter_inputs(ctx));
  const Tensor& data = *in.data;
  const Tensor& indices_t = *in.indices;
  const Tensor& updates = *in.updates;
  const size_t r = data.rank(), q = indices_t.rank();
  if (q < 1) return make_error("indices must have rank >= 1, got a scalar");
  const int64_t k = indices_t.dim(q - 1);
  if (k > static_cast<int64_t>(r)) return make_error("indices' last dim is {}, more than data's rank {}", k, r);
  const size_t ks = static_cast<size_t>(k);
  // updates: indices.shape[:-1] ++ data.shape[k:]
  Shape expected(indices_t.shape().begin(), indices_t.shape().end() - 1);
  expected.insert(expected.end(), data.shape().begin() + k, data.shape().end());
  if (updates.shape() != expected)
    return make_error("updates has shape {}; with indices {} and data {} it must be {}", shape_to_string(updates.shape()),
                      shape_to_string(indices_t.shape()), shape_to_string(data.shape()), shape_to_string(expected));
  ONNXKIT_ASSIGN(std::vector<int64_t> indices, read_index_tensor(indices_t, "indices"));

  const std::vector<int64_t> strides = contiguous_strides(data.shape());
  int64_t tuples = 1, slice = 1;
  for (size_t i = 0; i + 1 < q; ++i) tuples *= indices_t.dim(i);
  for (size_t i = ks; i < r; ++i) slice *= data.dim(i);
  std::vector<int64_t> offsets(static_cast<size_t>(tuples), 0);
  for (size_t t = 0; t < offsets.size(); ++t)
    for (size_t j = 0; j < ks; ++j) {
      const size_t e = t * ks + j;
      const int64_t dim = data.dim(j);
      int64_t v = indices[e];
      if (v < -dim || v >= dim)
        return make_error("indices element {} is {}, out of range [{}, {}) for data axis {} of size {}", e, v, -dim, dim, j, dim);
      offsets[t] += (v < 0 ? v + dim : v) * strides[j];
    }

  return scatter_into_copy(ctx, data, updates, reduction, [&](auto op, auto* out, const auto* u) {
    for (size_t t = 0; t < offsets.size(); ++t)
      for (int64_t e = 0; e < slice; ++e) op(out[offsets[t] + e], u[static_cast<int64_t>(t) * slice + e]);
  });
}

Status scatter_elements(KernelContext& ctx, int64_t axis_attr, Reduction reduction) {
  ONNXKIT_ASSIGN(ScatterInputs in, scatter_inputs(ctx));
  const Tensor& data = *in.data;
  const Tensor& indices_t = *in.indices;
  const Tensor& updates = *in.updates;
  const int64_t rank = static_cast<int64_t>(data.rank());
  if (indices_t.rank() != data.rank())
    return make_error("indices has rank {} but data has rank {}; they must be equal", indices_t.rank(), rank);
  if (updates.shape() != indices_t.shape())
    return make_error("updates has shape {} but indices has shape {}; they must be equal", shape_to_string(updates.shape()),
                      shape_to_string(indices_t.shape()));
  ONNXKIT_ASSIGN(int64_t axis, normalize_axis(axis_attr, rank));
  const size_t a = static_cast<size_t>(axis);
  for (size_t d = 0; d < data.rank(); ++d)
    if (d != a && indices_t.dim(d) > data.dim(d))
      return make_error("indices has shape {}, larger than data's {} on axis {}", shape_to_string(indices_t.shape()),
                        shape_to_string(data.shape()), d);
  ONNXKIT_ASSIGN(WrappedIndices indices,
                 WrappedIndices::read(indices_t, data.dim(a), "indices", fmt::format("data axis {}", axis)));

  std::vector<int64_t> strides = contiguous_strides(data.shape());
  const int64_t axis_stride = strides[a];
  strides[a] = 0;  // the position along axis comes from the index
  return scatter_into_copy(ctx, data, updates, reduction, [&](auto op, auto* out, const auto* u) {
    OffsetWalker walk(indices_t.shape(), strides);
    for (int64_t p = 0; p < updates.numel(); ++p, walk.next()) op(out[walk.offset() + indices[p] * axis_stride], u[p]);
  });
}

KernelFactory scatter_nd_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    ONNXKIT_ASSIGN(Reduction reduction, parse_reduction(info.attr_string("reduction", "none"), info.opset()));
    return ComputeFn([reduction](KernelContext& ctx) { return scatter_nd(ctx, reduction); });
  });
}

KernelFactory scatter_elements_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    int64_t axis = info.attr_int("axis", 0);
    ONNXKIT_ASSIGN(Reduction reduction, parse_reduction(info.attr_string("reduction", "none"), info.opset()));
    return ComputeFn([axis, reduction](KernelContext& ctx) { return scatter_elements(ctx, axis, reduction); });
  });
}

// TensorScatter (opset 24): a KV cache update. `update` is written into a
// copy of `past_cache` along `axis`, from each batch entry's write index on
// (0 without write_indices); in "circular" mode positions wrap around the
// cache's length, in "linear" mode they must fit.
KernelFactory tensor_scatter_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    const int64_t axis_attr = info.attr_int("axis", -2);
    const std::string mode = info.attr_string("mode", "linear");
    if (mode != "linear" && mode != "circular")
      return make_error("attribute 'mode' is '{}'; it must be linear or circular", mode);
    const bool circular = mode == "circular";
    return ComputeFn([axis_attr, circular](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* past, ctx.tensor(0));
      ONNXKIT_ASSIGN(const Tensor* update, ctx.tensor(1));
      const int64_t rank = static_cast<int64_t>(past->rank());
      if (rank < 2) return make_error("past_cache must have rank >= 2, got shape {}", shape_to_string(past->shape()));
      ONNXKIT_ASSIGN(const int64_t axis, normalize_axis(axis_attr, rank));
      if (axis == 0) return make_error("axis {} is the batch dimension; it must not be", axis_attr);
      bool fits = update->dtype() == past->dtype() && update->rank() == past->rank();
      for (int64_t d = 0; fits && d < rank; ++d)
        fits = d == axis ? update->dim(d) <= past->dim(d) : update->dim(d) == past->dim(d);
      if (!fits)
        return make_error("update ({} {}) must have past_cache's type and shape ({} {}), but at most as long on axis {}",
                          to_string(update->dtype()), shape_to_string(update->shape()), to_string(past->dtype()),
                          shape_to_string(past->shape()), axis);
      const int64_t batch = past->dim(0), max_length = past->dim(static_cast<size_t>(axis));
      const int64_t length = update->dim(static_cast<size_t>(axis));
      std::vector<int64_t> starts(static_cast<size_t>(batch), 0);
      if (ctx.has_input(2)) {
        ONNXKIT_ASSIGN(const Tensor* w, ctx.tensor(2));
        if (w->numel() != batch)
          return make_error("write_indices has shape {}, expected one index per batch entry ({})", shape_to_string(w->shape()),
                            batch);
        ONNXKIT_ASSIGN(starts, read_index_tensor(*w, "write_indices"));
      }
      for (size_t b = 0; b < starts.size(); ++b) {
        if (starts[b] < 0 || (!circular && starts[b] > max_length - length))
          return make_error("write_indices[{}] is {}: with {} updates it must lie in [0, {}] (mode linear)", b, starts[b], length,
                            max_length - length);
      }
      const int64_t prefix = dims_product(past->shape(), 0, static_cast<size_t>(axis));
      const int64_t per_batch = prefix / std::max<int64_t>(batch, 1);
      const int64_t inner = dims_product(past->shape(), static_cast<size_t>(axis) + 1, past->rank());
      Tensor& y = ctx.output(0, past->dtype(), past->shape());
      copy_elements(*past, 0, y, 0, past->numel());
      for (int64_t p = 0; p < prefix; ++p) {
        const int64_t start = starts[static_cast<size_t>(p / per_batch)];
        for (int64_t j = 0; j < length; ++j) {
          const int64_t at = circular ? (start % max_length + j) % max_length : start + j;
          copy_elements(*update, (p * length + j) * inner, y, (p * max_length + at) * inner, inner);
        }
      }
      return {};
    });
  });
}

}  // namespace

void register_scatter(KernelRegistry& r) {
  r.add("", "TensorScatter", 24, kLatestOpset, tensor_scatter_kernel());
  // One range per set of allowed reductions (none; +add/mul at 16; +max/min at 18).
  r.add("", "ScatterND", 11, 15, scatter_nd_kernel());
  r.add("", "ScatterND", 16, 17, scatter_nd_kernel());
  r.add("", "ScatterND", 18, kLatestOpset, scatter_nd_kernel());
  r.add("", "ScatterElements", 11, 15, scatter_elements_kernel());
  r.add("", "ScatterElements", 16, 17, scatter_elements_kernel());
  r.add("", "ScatterElements", 18, kLatestOpset, scatter_elements_kernel());
  // Scatter-9 is ScatterElements without reductions; opset 11 deprecated it.
  r.add("", "Scatter", 9, 10, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          int64_t axis = info.attr_int("axis", 0);
          return ComputeFn([axis](KernelContext& ctx) { return scatter_elements(ctx, axis, Reduction::none); });
        }));
}

}  // namespace onnxkit::runtime::indexing
