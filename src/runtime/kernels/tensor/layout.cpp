// Ops that move elements around: Transpose, Concat, Split, Slice, Expand,
// Tile, DepthToSpace, SpaceToDepth, Trilu. All copy through copy_strided,
// which works for every element type.

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "runtime/broadcast.h"
#include "runtime/kernels/tensor/tensor.h"

namespace onnxkit::runtime::tensor_ops {
namespace {

Status transpose(KernelContext& ctx, const std::vector<int64_t>& perm_attr) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  const size_t rank = x->rank();
  ONNXKIT_ASSIGN(std::vector<int64_t> perm, normalize_perm(perm_attr, rank));
  std::vector<int64_t> in_strides = contiguous_strides(x->shape());
  Shape out_shape(rank);
  std::vector<int64_t> strides(rank);
  int64_t last_moved = -1;  // the last input axis of more than one element met so far
  bool order_kept = true;
  for (size_t i = 0; i < rank; ++i) {
    out_shape[i] = x->dim(static_cast<size_t>(perm[i]));
    strides[i] = in_strides[static_cast<size_t>(perm[i])];
    if (out_shape[i] == 1) continue;
    order_kept = order_kept && perm[i] > last_moved;
    last_moved = perm[i];
  }
  // Moving only dims of size 1 leaves the elements in order: the same buffer
  // under the new shape.
  if (order_kept) {
    ctx.set_output(0, x->reshaped(out_shape));
    return {};
  }
  Tensor& y = ctx.output(0, x->dtype(), out_shape);
  copy_strided(*x, 0, strides, y);
  return {};
}

Status concat(KernelContext& ctx, int64_t axis_attr) {
  std::vector<const Tensor*> inputs;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    ONNXKIT_ASSIGN(const Tensor* t, ctx.tensor(i));
    inputs.push_back(t);
  }
  if (inputs.empty()) return make_error("needs at least one input");
  const Tensor& first = *inputs[0];
  ONNXKIT_ASSIGN(int64_t axis, normalize_axis(axis_attr, static_cast<int64_t>(first.rank())));
  Shape shape = first.shape();
  shape[static_cast<size_t>(axis)] = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = *inputs[i];
    if (t.dtype() != first.dtype())
      return make_error("input {} is {}, input 0 is {}", i, to_string(t.dtype()), to_string(first.dtype()));
    if (t.rank() != first.rank()) return make_error("input {} has rank {}, input 0 has rank {}", i, t.rank(), first.rank());
    for (size_t d = 0; d < t.rank(); ++d)
      if (static_cast<int64_t>(d) != axis && t.dim(d) != first.dim(d))
        return make_error("input {} has shape {}, incompatible with input 0's {} outside axis {}", i, shape_to_string(t.shape()),
                          shape_to_string(first.shape()), axis);
    shape[static_cast<size_t>(axis)] += t.dim(static_cast<size_t>(axis));
  }
  Tensor& y = ctx.output(0, first.dtype(), shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t out_row = shape[static_cast<size_t>(axis)] * inner;
  int64_t column = 0;
  for (const Tensor* t : inputs) {
    const int64_t row = t->dim(static_cast<size_t>(axis)) * inner;
    for (int64_t o = 0; o < outer; ++o) copy_elements(*t, o * row, y, o * out_row + column, row);
    column += row;
  }
  return {};
}

// Copies the block [start, start + length) along `axis` into a new tensor.
Tensor take_along(const Tensor& x, size_t axis, int64_t start, int64_t length) {
  Shape shape = x.shape();
  shape[axis] = length;
  Tensor y(x.dtype(), shape);
  std::vector<int64_t> strides = contiguous_strides(x.shape());
  copy_strided(x, start * strides[axis], strides, y);
  return y;
}

Status split(KernelContext& ctx, int64_t axis_attr, std::vector<int64_t> sizes, int64_t num_outputs_attr) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  ONNXKIT_ASSIGN(int64_t axis, normalize_axis(axis_attr, static_cast<int64_t>(x->rank())));
  const int64_t length = x->dim(static_cast<size_t>(axis));
  const int64_t outputs = static_cast<int64_t>(ctx.num_outputs());
  if (sizes.empty()) {
    // Equal parts; with num_outputs (opset 18) the last part may be smaller.
    int64_t parts = num_outputs_attr > 0 ? num_outputs_attr : outputs;
    if (parts <= 0) return make_error("has no outputs");
    int64_t chunk = num_outputs_attr > 0 ? (length + parts - 1) / parts : length / parts;
    if (num_outputs_attr <= 0 && length % parts != 0)
      return make_error("cannot split a dim of {} into {} equal parts", length, parts);
    for (int64_t i = 0; i < parts; ++i) sizes.push_back(std::max<int64_t>(0, std::min(chunk, length - i * chunk)));
  }
  if (static_cast<int64_t>(sizes.size()) != outputs)
    return make_error("split has {} parts for {} outputs", sizes.size(), outputs);
  if (std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != length ||
      std::any_of(sizes.begin(), sizes.end(), [](int64_t s) { return s < 0; }))
    return make_error("split sizes [{}] do not add up to the dim's {}", fmt::join(sizes, ","), length);
  int64_t start = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (ctx.wants_output(i)) ctx.set_output(i, take_along(*x, static_cast<size_t>(axis), start, sizes[i]));
    start += sizes[i];
  }
  return {};
}

// Slice with starts/ends/axes/steps as the spec clamps them.
Status slice(KernelContext& ctx, std::vector<int64_t> starts, std::vector<int64_t> ends, std::vector<int64_t> axes,
             std::vector<int64_t> steps) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  const int64_t rank = static_cast<int64_t>(x->rank());
  if (starts.size() != ends.size()) return make_error("starts has {} entries, ends {}", starts.size(), ends.size());
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    return make_error("starts, ends, axes and steps must have the same length");
  Shape out_shape = x->shape();
  std::vector<int64_t> in_strides = contiguous_strides(x->shape());
  std::vector<int64_t> strides = in_strides;
  std::vector<bool> done(static_cast<size_t>(rank), false);
  int64_t offset = 0;
  for (size_t i = 0; i < starts.size(); ++i) {
    ONNXKIT_ASSIGN(int64_t axis, normalize_axis(axes[i], rank));
    if (done[static_cast<size_t>(axis)]) return make_error("axis {} is sliced twice", axes[i]);
    done[static_cast<size_t>(axis)] = true;
    const int64_t dim = x->dim(static_cast<size_t>(axis));
    const int64_t step = steps[i];
    if (step == 0) return make_error("step is 0 on axis {}", axes[i]);
    int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t end = ends[i] < 0 ? ends[i] + dim : ends[i];
    if (ends[i] == INT64_MAX) end = dim;
    if (ends[i] == INT64_MIN) end = -1;
    int64_t count;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      count = end > start ? (end - start + step - 1) / step : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      count = start > end ? (start - end - step - 1) / -step : 0;
    }
    out_shape[static_cast<size_t>(axis)] = count;
    strides[static_cast<size_t>(axis)] = in_strides[static_cast<size_t>(axis)] * step;
    if (count > 0) offset += start * in_strides[static_cast<size_t>(axis)];
  }
  Tensor& y = ctx.output(0, x->dtype(), out_shape);
  if (y.numel() > 0) copy_strided(*x, offset, strides, y);
  return {};
}

Result<std::vector<int64_t>> optional_int64s(KernelContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return std::vector<int64_t>();
  ONNXKIT_ASSIGN(const Tensor* t, ctx.tensor(i));
  return read_int64s(*t);
}

Status depth_to_space(KernelContext& ctx, int64_t block, bool crd) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  if (x->rank() != 4) return make_error("input must be 4-D, got {}", shape_to_string(x->shape()));
  const int64_t n = x->dim(0), c = x->dim(1), h = x->dim(2), w = x->dim(3);
  if (block <= 0 || c % (block * block) != 0)
    return make_error("channels {} are not divisible by blocksize^2 ({})", c, block * block);
  const int64_t oc = c / (block * block);
  // Output [N, C/b^2, H*b, W*b] read as [N, oc, H, b1, W, b2].
  Tensor& y = ctx.output(0, x->dtype(), {n, oc, h * block, w * block});
  const std::vector<int64_t> s = contiguous_strides(x->shape());
  // Input channel for (oc, b1, b2): DCR = (b1*b + b2)*oc + oc_i; CRD = oc_i*b*b + b1*b + b2.
  const int64_t c_b1 = crd ? block : block * oc, c_b2 = crd ? 1 : oc, c_oc = crd ? block * block : 1;
  Tensor view = y.reshaped({n, oc, h, block, w, block});
  copy_strided(*x, 0, {s[0], c_oc * s[1], s[2], c_b1 * s[1], s[3], c_b2 * s[1]}, view);
  return {};
}

Status space_to_depth(KernelContext& ctx, int64_t block, bool crd) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  if (x->rank() != 4) return make_error("input must be 4-D, got {}", shape_to_string(x->shape()));
  const int64_t n = x->dim(0), c = x->dim(1), h = x->dim(2), w = x->dim(3);
  if (block <= 0 || h % block != 0 || w % block != 0)
    return make_error("height {} and width {} must be divisible by blocksize {}", h, w, block);
  Tensor& y = ctx.output(0, x->dtype(), {n, c * block * block, h / block, w / block});
  const std::vector<int64_t> s = contiguous_strides(x->shape());
  // Output channel (b1*b + b2)*C + c (DCR), or c*b*b + b1*b + b2 (CRD),
  // reads x[n, c, oh*b + b1, ow*b + b2].
  if (crd) {
    Tensor view = y.reshaped({n, c, block, block, h / block, w / block});
    copy_strided(*x, 0, {s[0], s[1], s[2], s[3], block * s[2], block * s[3]}, view);
  } else {
    Tensor view = y.reshaped({n, block, block, c, h / block, w / block});
    copy_strided(*x, 0, {s[0], s[2], s[3], s[1], block * s[2], block * s[3]}, view);
  }
  return {};
}

Result<ComputeFn> build_transpose(const KernelInfo& info) {
  std::vector<int64_t> perm = info.attr_ints("perm");
  return ComputeFn([perm](KernelContext& ctx) { return transpose(ctx, perm); });
}

Result<ComputeFn> build_concat(const KernelInfo& info) {
  if (!info.has_attr("axis")) return make_error("attribute 'axis' is required");
  int64_t axis = info.attr_int("axis", 0);
  return ComputeFn([axis](KernelContext& ctx) { return concat(ctx, axis); });
}

Result<ComputeFn> build_split_v2(const KernelInfo& info) {
  int64_t axis = info.attr_int("axis", 0);
  std::vector<int64_t> sizes = info.attr_ints("split");
  return ComputeFn([=](KernelContext& ctx) { return split(ctx, axis, sizes, 0); });
}

Result<ComputeFn> build_split_v13(const KernelInfo& info) {
  int64_t axis = info.attr_int("axis", 0);
  int64_t num_outputs = info.attr_int("num_outputs", 0);
  if (info.opset() >= 18 && num_outputs > 0 && info.has_input(1))
    return make_error("takes either a split input or num_outputs, not both");
  return ComputeFn([=](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(std::vector<int64_t> sizes, optional_int64s(ctx, 1));
    return split(ctx, axis, sizes, num_outputs);
  });
}

Result<ComputeFn> build_slice_v1(const KernelInfo& info) {
  auto starts = info.attr_ints("starts"), ends = info.attr_ints("ends"), axes = info.attr_ints("axes");
  return ComputeFn([=](KernelContext& ctx) { return slice(ctx, starts, ends, axes, {}); });
}

Status compute_slice_v10(KernelContext& ctx) {
  ONNXKIT_ASSIGN(std::vector<int64_t> starts, optional_int64s(ctx, 1));
  ONNXKIT_ASSIGN(std::vector<int64_t> ends, optional_int64s(ctx, 2));
  ONNXKIT_ASSIGN(std::vector<int64_t> axes, optional_int64s(ctx, 3));
  ONNXKIT_ASSIGN(std::vector<int64_t> steps, optional_int64s(ctx, 4));
  return slice(ctx, std::move(starts), std::move(ends), std::move(axes), std::move(steps));
}

Status compute_expand(KernelContext& ctx) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  ONNXKIT_ASSIGN(const Tensor* shape_t, ctx.tensor(1));
  ONNXKIT_ASSIGN(std::vector<int64_t> dims, read_int64s(*shape_t));
  Shape target(dims.begin(), dims.end());
  ONNXKIT_ASSIGN(Shape shape, broadcast_shapes({&x->shape(), &target}));
  Tensor& y = ctx.output(0, x->dtype(), shape);
  copy_strided(*x, 0, broadcast_strides(x->shape(), shape), y);
  return {};
}

Status compute_tile(KernelContext& ctx) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  ONNXKIT_ASSIGN(const Tensor* repeats_t, ctx.tensor(1));
  ONNXKIT_ASSIGN(std::vector<int64_t> repeats, read_int64s(*repeats_t));
  if (repeats.size() != x->rank()) return make_error("repeats has {} entries for rank {}", repeats.size(), x->rank());
  // Output [r0, d0, r1, d1, ...] read with stride 0 along the repeats.
  Shape out_shape, view_shape;
  std::vector<int64_t> strides;
  std::vector<int64_t> s = contiguous_strides(x->shape());
  for (size_t i = 0; i < repeats.size(); ++i) {
    if (repeats[i] < 0) return make_error("repeats[{}] is negative ({})", i, repeats[i]);
    view_shape.insert(view_shape.end(), {repeats[i], x->dim(i)});
    strides.insert(strides.end(), {0, s[i]});
  }
  // The view's count is the output's: checked, the products below cannot overflow.
  ONNXKIT_TRY(checked_size(view_shape,
                           fmt::format("repeats {} of input shape {}", shape_to_string(repeats), shape_to_string(x->shape()))));
  for (size_t i = 0; i < repeats.size(); ++i) out_shape.push_back(repeats[i] * x->dim(i));
  Tensor& y = ctx.output(0, x->dtype(), out_shape);
  Tensor view = y.reshaped(view_shape);
  copy_strided(*x, 0, strides, view);
  return {};
}

Result<ComputeFn> build_depth_to_space(const KernelInfo& info) {
  int64_t block = info.attr_int("blocksize", 0);
  bool crd = info.attr_string("mode", "DCR") == "CRD";
  return ComputeFn([=](KernelContext& ctx) { return depth_to_space(ctx, block, crd); });
}

Result<ComputeFn> build_space_to_depth(const KernelInfo& info) {
  int64_t block = info.attr_int("blocksize", 0);
  // mode came with opset 28; DCR is the order of every version before.
  const std::string mode = info.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") return make_error("attribute 'mode' is '{}'; it must be DCR or CRD", mode);
  const bool crd = mode == "CRD";
  return ComputeFn([=](KernelContext& ctx) { return space_to_depth(ctx, block, crd); });
}

Result<ComputeFn> build_trilu(const KernelInfo& info) {
  bool upper = info.attr_int("upper", 1) != 0;
  return ComputeFn([upper](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    if (x->rank() < 2) return make_error("input must have rank >= 2, got {}", x->rank());
    int64_t k = 0;
    if (ctx.has_input(1)) {
      ONNXKIT_ASSIGN(const Tensor* kt, ctx.tensor(1));
      ONNXKIT_ASSIGN(std::vector<int64_t> kv, read_int64s(*kt));
      if (kv.size() != 1) return make_error("k must be a scalar");
      k = kv[0];
    }
    Tensor& y = ctx.output(0, x->dtype(), x->shape());
    copy_elements(*x, 0, y, 0, x->numel());
    const int64_t rows = x->dim(x->rank() - 2), cols = x->dim(x->rank() - 1);
    const int64_t matrices = rows * cols == 0 ? 0 : x->numel() / (rows * cols);
    return dispatch_all(x->dtype(), [&]<class T>() -> Status {
      T* p = y.mutable_data<T>();
      for (int64_t m = 0; m < matrices; ++m)
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < cols; ++j) {
            bool keep = upper ? j - i >= k : j - i <= k;
            if (!keep) p[(m * rows + i) * cols + j] = T();
          }
      return {};
    });
  });
}

}  // namespace

void register_layout_ops(KernelRegistry& r) {
  // Concat along channels, Slices of channels and the Transpose of a
  // channel shuffle have kernels of their own on blocked activations
  // (nn/blocked.h: ChannelMove).
  const OpTraits blocked{.blocked = OpTraits::Blocked::own_kernel};
  r.add("", "Transpose", 1, kLatestOpset, make_kernel(build_transpose), blocked);
  r.add("", "Concat", 4, kLatestOpset, make_kernel(build_concat), blocked);
  r.add("", "Split", 2, 12, make_kernel(build_split_v2));
  r.add("", "Split", 13, kLatestOpset, make_kernel(build_split_v13));
  r.add("", "Slice", 1, 9, make_kernel(build_slice_v1), blocked);
  r.add("", "Slice", 10, kLatestOpset, make_kernel(compute_slice_v10), blocked);
  r.add("", "Expand", 8, kLatestOpset, make_kernel(compute_expand));
  r.add("", "Tile", 6, kLatestOpset, make_kernel(compute_tile));
  r.add("", "DepthToSpace", 1, kLatestOpset, make_kernel(build_depth_to_space));
  r.add("", "SpaceToDepth", 1, kLatestOpset, make_kernel(build_space_to_depth));
  r.add("", "Trilu", 14, kLatestOpset, make_kernel(build_trilu));
}

}  // namespace onnxkit::runtime::tensor_ops
