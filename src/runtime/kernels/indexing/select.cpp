// Ops that select or lay out elements by a condition or a count: NonZero,
// OneHot, Compress, ReverseSequence and Unique.

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <optional>

#include "runtime/kernels/indexing/indexing.h"

namespace onnxkit::runtime::indexing {
namespace {

template <class T> bool is_non_zero(const T& v) {
  if constexpr (std::is_same_v<T, std::string>) {
    return !v.empty();
  } else if constexpr (std::is_same_v<T, bool>) {
    return v;
  } else if constexpr (is_half_v<T>) {
    return static_cast<float>(v) != 0.0f;
  } else {
    return v != T(0);
  }
}

Status non_zero(KernelContext& ctx) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  std::vector<int64_t> hits;
  ONNXKIT_TRY(dispatch_all(x->dtype(), [&]<class T>() -> Status {
    const T* p = x->data<T>();
    for (int64_t i = 0; i < x->numel(); ++i)
      if (is_non_zero(p[i])) hits.push_back(i);
    return {};
  }));
  // One row per input dim holding the coordinates of each hit (a scalar
  // input has no dims, so its output has no rows).
  const int64_t rank = static_cast<int64_t>(x->rank()), n = static_cast<int64_t>(hits.size());
  Tensor& y = ctx.output(0, DataType::int64, {rank, n});
  int64_t* out = y.mutable_data<int64_t>();
  for (int64_t k = 0; k < n; ++k) {
    int64_t rest = hits[static_cast<size_t>(k)];
    for (int64_t d = rank; d-- > 0;) {
      const int64_t dim = x->dim(static_cast<size_t>(d));
      out[d * n + k] = rest % dim;
      rest /= dim;
    }
  }
  return {};
}

// OneHot reads indices and depth of any numeric type and casts them to
// integers; values that are not finite integers in range select nothing.
Result<std::vector<std::optional<int64_t>>> one_hot_indices(const Tensor& t) {
  std::vector<std::optional<int64_t>> out(static_cast<size_t>(t.numel()));
  Status s = dispatch_numeric(t.dtype(), [&]<class T>() -> Status {
    const T* p = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) {
      const double v = static_cast<double>(p[i]);
      if (std::isfinite(v) && std::abs(v) < 9.0e18) out[i] = static_cast<int64_t>(v);
    }
    return {};
  });
  if (!s.ok()) return s.error().in("indices");
  return out;
}

Status one_hot(KernelContext& ctx, int64_t axis_attr, bool negative_indices) {
  ONNXKIT_ASSIGN(const Tensor* indices_t, ctx.tensor(0));
  ONNXKIT_ASSIGN(const Tensor* depth_t, ctx.tensor(1));
  ONNXKIT_ASSIGN(const Tensor* values, ctx.tensor(2));
  if (depth_t->numel() != 1) return make_error("depth must hold one value, got shape {}", shape_to_string(depth_t->shape()));
  ONNXKIT_ASSIGN(double depth_value, numeric_at(*depth_t, 0, "depth"));
  if (!std::isfinite(depth_value) || depth_value < 1 || depth_value > 9.0e18)
    return make_error("depth must be a positive number, got {}", depth_value);
  const int64_t depth = static_cast<int64_t>(depth_value);
  if (values->numel() != 2)
    return make_error("values must hold two elements [off_value, on_value], got shape {}", shape_to_string(values->shape()));
  const int64_t rank = static_cast<int64_t>(indices_t->rank());
  ONNXKIT_ASSIGN(int64_t axis, normalize_axis(axis_attr, rank + 1));
  ONNXKIT_ASSIGN(std::vector<std::optional<int64_t>> indices, one_hot_indices(*indices_t));

  Shape out_shape = indices_t->shape();
  out_shape.insert(out_shape.begin() + axis, depth);
  ONNXKIT_TRY(checked_size(out_shape, "the one-hot output"));
  const int64_t outer = dims_product(indices_t->shape(), 0, static_cast<size_t>(axis));
  const int64_t inner = dims_product(indices_t->shape(), static_cast<size_t>(axis), indices_t->rank());
  Tensor& y = ctx.output(0, values->dtype(), std::move(out_shape));
  return dispatch_all(values->dtype(), [&]<class T>() -> Status {
    const T off = values->data<T>()[0], on = values->data<T>()[1];
    T* out = y.mutable_data<T>();
    std::fill_n(out, y.numel(), off);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        std::optional<int64_t> k = indices[static_cast<size_t>(o * inner + i)];
        if (!k) continue;
        int64_t v = *k;
        if (v < 0 && negative_indices) v += depth;
        if (v >= 0 && v < depth) out[(o * depth + v) * inner + i] = on;
      }
    return {};
  });
}

Status compress(KernelContext& ctx, std::optional<int64_t> axis_attr) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  ONNXKIT_ASSIGN(const Tensor* condition, ctx.tensor(1));
  if (condition->dtype() != DataType::boolean) return make_error("condition must be bool, got {}", to_string(condition->dtype()));
  if (condition->rank() != 1) return make_error("condition must be 1-D, got shape {}", shape_to_string(condition->shape()));
  std::optional<int64_t> axis;
  if (axis_attr) {
    if (x->rank() == 0) return make_error("input must have rank >= 1 to compress along an axis");
    ONNXKIT_ASSIGN(axis, normalize_axis(*axis_attr, static_cast<int64_t>(x->rank())));
  }
  const int64_t length = axis ? x->dim(static_cast<size_t>(*axis)) : x->numel();
  // Missing condition entries select nothing; extra ones may only be false.
  std::vector<int64_t> selected;
  const bool* c = condition->data<bool>();
  for (int64_t i = 0; i < condition->numel(); ++i) {
    if (!c[i]) continue;
    if (i >= length)
      return make_error("condition element {} is true, but the {} has only {} elements", i,
                        axis ? fmt::format("input's axis {}", *axis) : std::string("flattened input"), length);
    selected.push_back(i);
  }
  const int64_t count = static_cast<int64_t>(selected.size());
  if (!axis) {
    Tensor& y = ctx.output(0, x->dtype(), {count});
    for (int64_t k = 0; k < count; ++k) copy_elements(*x, selected[static_cast<size_t>(k)], y, k, 1);
    return {};
  }
  const size_t a = static_cast<size_t>(*axis);
  Shape out_shape = x->shape();
  out_shape[a] = count;
  const int64_t outer = dims_product(x->shape(), 0, a), inner = dims_product(x->shape(), a + 1, x->rank());
  Tensor& y = ctx.output(0, x->dtype(), std::move(out_shape));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < count; ++k)
      copy_elements(*x, (o * length + selected[static_cast<size_t>(k)]) * inner, y, (o * count + k) * inner, inner);
  return {};
}

Status reverse_sequence(KernelContext& ctx, int64_t batch_axis, int64_t time_axis) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  ONNXKIT_ASSIGN(const Tensor* lens_t, ctx.tensor(1));
  if (x->rank() < 2) return make_error("input must have rank >= 2, got shape {}", shape_to_string(x->shape()));
  const int64_t batch = x->dim(static_cast<size_t>(batch_axis)), time = x->dim(static_cast<size_t>(time_axis));
  if (lens_t->rank() != 1 || lens_t->dim(0) != batch)
    return make_error("sequence_lens has shape {}; it must be [{}], the size of the batch axis", shape_to_string(lens_t->shape()),
                      batch);
  ONNXKIT_ASSIGN(std::vector<int64_t> lens, read_index_tensor(*lens_t, "sequence_lens"));
  for (size_t b = 0; b < lens.size(); ++b)
    if (lens[b] < 0 || lens[b] > time)
      return make_error("sequence_lens element {} is {}, out of range [0, {}] for the time axis", b, lens[b], time);
  const int64_t inner = dims_product(x->shape(), 2, x->rank());
  Tensor& y = ctx.output(0, x->dtype(), x->shape());
  // Offset of the (batch b, time t) block of `inner` elements.
  auto block = [&](int64_t b, int64_t t) { return (batch_axis == 0 ? b * time + t : t * batch + b) * inner; };
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t len = lens[static_cast<size_t>(b)];
    for (int64_t t = 0; t < time; ++t) copy_elements(*x, block(b, t < len ? len - 1 - t : t), y, block(b, t), inner);
  }
  return {};
}

// Three-way comparison for Unique's order: numbers by value (NaN after
// everything and equal to itself), complex lexicographically by real then
// imaginary part, strings and bools as C++ orders them.
template <class T> int compare_values(const T& a, const T& b) {
  if constexpr (is_complex_v<T>) {
    if (a.real() != b.real()) return a.real() < b.real() ? -1 : 1;
    if (a.imag() != b.imag()) return a.imag() < b.imag() ? -1 : 1;
    return 0;
  } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, bool> || std::is_integral_v<T>) {
    return a < b ? -1 : b < a ? 1 : 0;
  } else {
    const double x = static_cast<double>(a), y = static_cast<double>(b);
    const bool xn = std::isnan(x), yn = std::isnan(y);
    if (xn || yn) return xn == yn ? 0 : xn ? 1 : -1;
    return x < y ? -1 : y < x ? 1 : 0;
  }
}

Status unique(KernelContext& ctx, std::optional<int64_t> axis_attr, bool sorted) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  // Slices along the axis are compared whole; without an axis every element
  // is a slice of one.
  int64_t count = x->numel(), outer = 1, inner = 1;
  std::optional<int64_t> axis;
  if (axis_attr) {
    if (x->rank() == 0) return make_error("input must have rank >= 1 to find unique slices along an axis");
    ONNXKIT_ASSIGN(axis, normalize_axis(*axis_attr, static_cast<int64_t>(x->rank())));
    const size_t a = static_cast<size_t>(*axis);
    count = x->dim(a);
    outer = dims_product(x->shape(), 0, a);
    inner = dims_product(x->shape(), a + 1, x->rank());
  }
  std::vector<int64_t> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), 0);
  std::vector<int64_t> group_start;  // where each run of equal slices begins in `order`
  ONNXKIT_TRY(dispatch_all(x->dtype(), [&]<class T>() -> Status {
    const T* p = x->data<T>();
    auto compare = [&](int64_t s, int64_t t) {
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          int c = compare_values(p[(o * count + s) * inner + i], p[(o * count + t) * inner + i]);
          if (c != 0) return c;
        }
      return 0;
    };
    // Stable, so each run of equal slices starts with its first occurrence.
    std::stable_sort(order.begin(), order.end(), [&](int64_t s, int64_t t) { return compare(s, t) < 0; });
    for (size_t k = 0; k < order.size(); ++k)
      if (k == 0 || compare(order[k - 1], order[k]) != 0) group_start.push_back(static_cast<int64_t>(k));
    return {};
  }));
  const int64_t groups = static_cast<int64_t>(group_start.size());

  // Per unique slice: first occurrence and count; per input slice: its group.
  std::vector<int64_t> first(static_cast<size_t>(groups)), counts(static_cast<size_t>(groups));
  std::vector<int64_t> group_of(static_cast<size_t>(count));
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t begin = group_start[static_cast<size_t>(g)];
    const int64_t end = g + 1 < groups ? group_start[static_cast<size_t>(g + 1)] : count;
    first[static_cast<size_t>(g)] = order[static_cast<size_t>(begin)];
    counts[static_cast<size_t>(g)] = end - begin;
    for (int64_t k = begin; k < end; ++k) group_of[static_cast<size_t>(order[static_cast<size_t>(k)])] = g;
  }
  // Output position of each group: sorted order, or order of first occurrence.
  std::vector<int64_t> position(static_cast<size_t>(groups));
  std::iota(position.begin(), position.end(), 0);
  if (!sorted) {
    std::vector<int64_t> by_first(static_cast<size_t>(groups));
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(),
              [&](int64_t g, int64_t h) { return first[static_cast<size_t>(g)] < first[static_cast<size_t>(h)]; });
    for (int64_t k = 0; k < groups; ++k) position[static_cast<size_t>(by_first[static_cast<size_t>(k)])] = k;
  }

  Shape y_shape = axis ? x->shape() : Shape{groups};
  if (axis) y_shape[static_cast<size_t>(*axis)] = groups;
  Tensor& y = ctx.output(0, x->dtype(), std::move(y_shape));
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t at = position[static_cast<size_t>(g)], src = first[static_cast<size_t>(g)];
    for (int64_t o = 0; o < outer; ++o) copy_elements(*x, (o * count + src) * inner, y, (o * groups + at) * inner, inner);
  }
  auto int64_output = [&](size_t i, int64_t n) -> int64_t* {
    if (i >= ctx.num_outputs()) return nullptr;
    return ctx.output(i, DataType::int64, {n}).mutable_data<int64_t>();
  };
  if (int64_t* indices = int64_output(1, groups))
    for (int64_t g = 0; g < groups; ++g) indices[position[static_cast<size_t>(g)]] = first[static_cast<size_t>(g)];
  if (int64_t* inverse = int64_output(2, count))
    for (int64_t s = 0; s < count; ++s) inverse[s] = position[static_cast<size_t>(group_of[static_cast<size_t>(s)])];
  if (int64_t* counts_out = int64_output(3, groups))
    for (int64_t g = 0; g < groups; ++g) counts_out[position[static_cast<size_t>(g)]] = counts[static_cast<size_t>(g)];
  return {};
}

std::optional<int64_t> optional_axis(const KernelInfo& info) {
  if (!info.has_attr("axis")) return std::nullopt;
  return info.attr_int("axis", 0);
}

}  // namespace

void register_select(KernelRegistry& r) {
  r.add("", "NonZero", 9, kLatestOpset, make_kernel(ComputeFn(non_zero)));
  // OneHot-9 leaves negative indices "off"; from 11 they count from the end.
  auto one_hot_kernel = [](bool negative_indices) {
    return make_kernel([negative_indices](const KernelInfo& info) -> Result<ComputeFn> {
      int64_t axis = info.attr_int("axis", -1);
      return ComputeFn([=](KernelContext& ctx) { return one_hot(ctx, axis, negative_indices); });
    });
  };
  r.add("", "OneHot", 9, 10, one_hot_kernel(false));
  r.add("", "OneHot", 11, kLatestOpset, one_hot_kernel(true));
  r.add("", "Compress", 9, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          std::optional<int64_t> axis = optional_axis(info);
          return ComputeFn([axis](KernelContext& ctx) { return compress(ctx, axis); });
        }));
  r.add("", "ReverseSequence", 10, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          int64_t batch_axis = info.attr_int("batch_axis", 1), time_axis = info.attr_int("time_axis", 0);
          if ((batch_axis != 0 && batch_axis != 1) || (time_axis != 0 && time_axis != 1) || batch_axis == time_axis)
            return make_error("batch_axis ({}) and time_axis ({}) must be 0 and 1, one each", batch_axis, time_axis);
          return ComputeFn([=](KernelContext& ctx) { return reverse_sequence(ctx, batch_axis, time_axis); });
        }));
  r.add("", "Unique", 11, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          std::optional<int64_t> axis = optional_axis(info);
          int64_t sorted = info.attr_int("sorted", 1);
          if (sorted != 0 && sorted != 1) return make_error("attribute 'sorted' must be 0 or 1, got {}", sorted);
          return ComputeFn([=](KernelContext& ctx) { return unique(ctx, axis, sorted == 1); });
        }));
}

}  // namespace onnxkit::runtime::indexing
