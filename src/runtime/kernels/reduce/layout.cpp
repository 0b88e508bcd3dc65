// Axes of Reduce nodes, and the merged layout the engine in reduce.h walks.

#include <fmt/format.h>

#include "runtime/kernels/reduce/reduce.h"

namespace onnxkit::runtime::reduce {

Result<std::vector<bool>> reduced_axes(const KernelContext& ctx, const AxesSpec& spec, int64_t rank) {
  std::vector<int64_t> axes;
  if (spec.from_input) {
    if (ctx.has_input(1)) {
      ONNXKIT_ASSIGN(const Tensor* t, ctx.tensor(1));
      if (t->dtype() != DataType::int64) return make_error("input axes must be int64, got {}", to_string(t->dtype()));
      if (t->rank() > 1) return make_error("input axes must be 1-D, got shape {}", shape_to_string(t->shape()));
      axes.assign(t->data<int64_t>(), t->data<int64_t>() + t->numel());
    }
  } else {
    axes = spec.attribute;
  }
  if (axes.empty()) return std::vector<bool>(static_cast<size_t>(rank), !(spec.from_input && spec.noop_with_empty_axes));
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    ONNXKIT_ASSIGN(const int64_t n, normalize_axis(a, rank, "axis", "input data"));
    if (mask[n]) return make_error("axis {} is given twice (axes {})", n, fmt::join(axes, ","));
    mask[n] = true;
  }
  return mask;
}

Layout make_layout(const Shape& in, const std::vector<bool>& reduced, bool keepdims) {
  Layout L;
  for (size_t d = 0; d < in.size(); ++d) {
    if (reduced[d]) {
      L.count *= in[d];
      if (keepdims) L.out_shape.push_back(1);
    } else {
      L.outputs *= in[d];
      L.out_shape.push_back(in[d]);
    }
  }
  if (L.outputs == 0 || L.count == 0) return L;

  // Adjacent dims of the same kind merge (the input is contiguous); size-1
  // dims change no offset and go.
  std::vector<int64_t> dims;
  std::vector<bool> kinds;
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 1) continue;
    if (!dims.empty() && kinds.back() == reduced[d]) {
      dims.back() *= in[d];
    } else {
      dims.push_back(in[d]);
      kinds.push_back(reduced[d]);
    }
  }
  if (dims.empty()) {
    L.reduced_offsets = {0};
    return L;
  }
  const std::vector<int64_t> strides = contiguous_strides(dims);
  L.inner = dims.back();
  L.inner_reduced = kinds.back();
  for (size_t i = 0; i + 1 < dims.size(); ++i) {
    (kinds[i] ? L.reduced_dims : L.kept_dims).push_back(dims[i]);
    (kinds[i] ? L.reduced_strides : L.kept_strides).push_back(strides[i]);
  }
  const int64_t combos = shape_size(L.reduced_dims);
  L.reduced_offsets.reserve(static_cast<size_t>(combos));
  Odometer walk(L.reduced_dims, L.reduced_strides, 0);
  for (int64_t c = 0; c < combos; ++c, walk.next()) L.reduced_offsets.push_back(walk.offset);
  return L;
}

}  // namespace onnxkit::runtime::reduce
