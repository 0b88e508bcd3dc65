// Pad (constant, reflect, edge and, from opset 19, wrap) and CenterCropPad.
// Negative pads crop. Both ops map every output position to an input
// position per axis (or to the constant), then copy row by row.

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "runtime/kernels/indexing/indexing.h"
#include "runtime/parallel.h"

namespace onnxkit::runtime::indexing {
namespace {

enum class PadMode { constant, reflect, edge, wrap };

Result<PadMode> parse_pad_mode(const std::string& text, int64_t opset) {
  if (text == "constant") return PadMode::constant;
  if (text == "reflect") return PadMode::reflect;
  if (text == "edge") return PadMode::edge;
  if (text == "wrap" && opset >= 19) return PadMode::wrap;
  return make_error("attribute 'mode' is '{}'; at opset {} it must be constant, reflect, edge{}", text, opset,
                    opset >= 19 ? " or wrap" : "");
}

// The input position that output coordinate x (in input coordinates: the
// output position minus the begin pad) reads along an axis of size n, or -1
// for the constant. Reflect and wrap repeat as far as the pads reach.
int64_t source_position(int64_t x, int64_t n, PadMode mode) {
  if (x >= 0 && x < n) return x;
  switch (mode) {
    case PadMode::constant: return -1;
    case PadMode::edge: return x < 0 ? 0 : n - 1;
    case PadMode::wrap: return ((x % n) + n) % n;
    case PadMode::reflect: {
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);
      const int64_t m = ((x % period) + period) % period;
      return m < n ? m : period - m;
    }
  }
  return -1;
}

// y = x padded by pads ([begin per axis..., end per axis...]); `fill` is a
// one-element tensor of x's type used in constant mode.
Status pad_into(const Tensor& x, const std::vector<int64_t>& pads, PadMode mode, const Tensor& fill, KernelContext& ctx) {
  const size_t rank = x.rank();
  Shape out_shape(rank);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t begin = pads[d], end = pads[d + rank], n = x.dim(d);
    constexpr int64_t kLimit = int64_t{1} << 48;  // keeps the sum below from overflowing
    if (begin < -kLimit || begin > kLimit || end < -kLimit || end > kLimit)
      return make_error("pads {} and {} on axis {} are out of range", begin, end, d);
    out_shape[d] = n + begin + end;
    if (out_shape[d] < 0) return make_error("pads {} and {} on axis {} remove more than its {} elements", begin, end, d, n);
    if (mode != PadMode::constant && n == 0 && out_shape[d] > 0)
      return make_error("axis {} is empty: there is nothing to pad it with in mode {}", d,
                        mode == PadMode::reflect ? "reflect"
                        : mode == PadMode::edge  ? "edge"
                                                 : "wrap");
  }
  ONNXKIT_TRY(checked_size(out_shape, "the padded output"));
  Tensor& y = ctx.output(0, x.dtype(), out_shape);
  if (y.numel() == 0) return {};
  if (rank == 0) {
    copy_elements(x, 0, y, 0, 1);
    return {};
  }

  // Along the last axis, [middle_begin, middle_end) reads a contiguous run.
  const size_t last = rank - 1;
  const int64_t width = out_shape[last];
  const int64_t middle_begin = std::clamp<int64_t>(pads[last], 0, width);
  const int64_t middle_end = std::clamp<int64_t>(pads[last] + x.dim(last), middle_begin, width);
  // Per axis, the input position each output position reads (-1: constant);
  // along the last axis only outside the middle (an STFT's reflect pad of
  // 16,000 samples reads 256 positions elsewhere).
  std::vector<std::vector<int64_t>> source(rank);
  for (size_t d = 0; d < rank; ++d) {
    source[d].resize(static_cast<size_t>(out_shape[d]));
    for (int64_t j = 0; j < out_shape[d]; ++j) {
      if (d == last && j == middle_begin) j = middle_end;
      if (j < out_shape[d]) source[d][static_cast<size_t>(j)] = source_position(j - pads[d], x.dim(d), mode);
    }
  }
  const std::vector<int64_t> in_strides = contiguous_strides(x.shape());
  const int64_t rows = y.numel() / width;

  return dispatch_movable(x.dtype(), [&]<class T>() -> Status {
    const T* in = x.data<T>();
    T* out = y.mutable_data<T>();
    const T value = fill.data<T>()[0];
    const std::vector<int64_t>& last_source = source[last];
    // Copying strings allocates, and nothing may throw inside a parallel region.
    const bool parallel = rows > 1 && y.numel() >= kParallelWork && !std::is_same_v<T, std::string>;
    parallel_ranges(rows, parallel, [&](int64_t first, int64_t end) {
      for (int64_t row = first; row < end; ++row) {
        T* dst = out + row * width;
        int64_t base = 0;
        bool constant_row = false;
        int64_t rest = row;
        for (size_t d = last; d-- > 0;) {
          const int64_t j = rest % out_shape[d];
          rest /= out_shape[d];
          const int64_t s = source[d][static_cast<size_t>(j)];
          if (s < 0) constant_row = true;
          base += s * in_strides[d];
        }
        if (constant_row) {
          std::fill_n(dst, width, value);
          continue;
        }
        const T* src = in + base;
        for (int64_t j = 0; j < middle_begin; ++j) {
          const int64_t s = last_source[static_cast<size_t>(j)];
          dst[j] = s < 0 ? value : src[s];
        }
        std::copy_n(src + (middle_begin - pads[last]), middle_end - middle_begin, dst + middle_begin);
        for (int64_t j = middle_end; j < width; ++j) {
          const int64_t s = last_source[static_cast<size_t>(j)];
          dst[j] = s < 0 ? value : src[s];
        }
      }
    });
    return {};
  });
}

// A one-element tensor of `type` holding `value` (0, "" or false by default;
// code 0 for the low-precision types, which only opset 21's Pad takes, with
// no value attribute).
Result<Tensor> fill_tensor(DataType type, double value) {
  Tensor t(type, {});
  ONNXKIT_TRY(dispatch_movable(type, [&]<class T>() -> Status {
    t.mutable_data<T>()[0] = from_double<T>(value);
    return {};
  }));
  return t;
}

// Axes as listed (normalized, each once), or every axis when none are given.
Result<std::vector<int64_t>> pad_axes(const std::vector<int64_t>& listed, bool given, size_t rank) {
  if (!given) {
    std::vector<int64_t> all(rank);
    for (size_t d = 0; d < rank; ++d) all[d] = static_cast<int64_t>(d);
    return all;
  }
  std::vector<int64_t> axes;
  std::set<int64_t> seen;
  for (int64_t a : listed) {
    ONNXKIT_ASSIGN(int64_t axis, existing_axis(a, rank));
    if (!seen.insert(axis).second) return make_error("axes lists axis {} twice", a);
    axes.push_back(axis);
  }
  return axes;
}

// Pad-2 to Pad-10: pads, mode and value are attributes.
Status pad_from_attributes(KernelContext& ctx, const std::vector<int64_t>& pads, PadMode mode, float value) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  if (pads.size() != 2 * x->rank())
    return make_error("attribute 'pads' has {} values for an input of rank {}; it needs {}", pads.size(), x->rank(),
                      2 * x->rank());
  ONNXKIT_ASSIGN(Tensor fill, fill_tensor(x->dtype(), value));
  return pad_into(*x, pads, mode, fill, ctx);
}

// Pad-11 and later: pads, constant_value and (from 18) axes are inputs.
Status pad_from_inputs(KernelContext& ctx, PadMode mode, bool takes_axes) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  ONNXKIT_ASSIGN(const Tensor* pads_t, ctx.tensor(1));
  ONNXKIT_ASSIGN(std::vector<int64_t> listed_pads, read_index_tensor(*pads_t, "pads"));
  const size_t rank = x->rank();

  std::vector<int64_t> listed_axes;
  const bool has_axes = takes_axes && ctx.has_input(3);
  if (has_axes) {
    ONNXKIT_ASSIGN(const Tensor* axes_t, ctx.tensor(3));
    ONNXKIT_ASSIGN(listed_axes, read_index_tensor(*axes_t, "axes"));
  }
  ONNXKIT_ASSIGN(std::vector<int64_t> axes, pad_axes(listed_axes, has_axes, rank));
  if (listed_pads.size() != 2 * axes.size())
    return make_error("pads has {} values for {} axes; it needs {}", listed_pads.size(), axes.size(), 2 * axes.size());
  std::vector<int64_t> pads(2 * rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    pads[static_cast<size_t>(axes[i])] = listed_pads[i];
    pads[static_cast<size_t>(axes[i]) + rank] = listed_pads[i + axes.size()];
  }

  const Tensor* value = nullptr;
  if (ctx.has_input(2)) {
    ONNXKIT_ASSIGN(value, ctx.tensor(2));
  }
  Tensor fill;
  if (value != nullptr && value->numel() > 0) {  // an empty tensor stands for "not given"
    if (value->dtype() != x->dtype())
      return make_error("constant_value is {} but data is {}; they must have one type", to_string(value->dtype()),
                        to_string(x->dtype()));
    if (value->numel() != 1)
      return make_error("constant_value must hold one value, got shape {}", shape_to_string(value->shape()));
    fill = *value;
  } else {
    ONNXKIT_ASSIGN(fill, fill_tensor(x->dtype(), 0));
  }
  return pad_into(*x, pads, mode, fill, ctx);
}

Status center_crop_pad(KernelContext& ctx, const std::vector<int64_t>& axes_attr, bool has_axes) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  ONNXKIT_ASSIGN(const Tensor* shape_t, ctx.tensor(1));
  ONNXKIT_ASSIGN(std::vector<int64_t> target, read_index_tensor(*shape_t, "shape"));
  const size_t rank = x->rank();
  ONNXKIT_ASSIGN(std::vector<int64_t> axes, pad_axes(axes_attr, has_axes, rank));
  if (target.size() != axes.size())
    return make_error("shape has {} values for {} axes; they must match", target.size(), axes.size());
  // A crop is a negative pad; the odd element goes to the end either way.
  std::vector<int64_t> pads(2 * rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    const size_t d = static_cast<size_t>(axes[i]);
    if (target[i] < 0) return make_error("shape value {} for axis {} is negative", target[i], axes[i]);
    const int64_t diff = target[i] - x->dim(d);
    const int64_t magnitude = diff < 0 ? -diff : diff;
    const int64_t begin = magnitude / 2, end = magnitude - magnitude / 2;
    pads[d] = diff < 0 ? -begin : begin;
    pads[d + rank] = diff < 0 ? -end : end;
  }
  ONNXKIT_ASSIGN(Tensor fill, fill_tensor(x->dtype(), 0));
  return pad_into(*x, pads, PadMode::constant, fill, ctx);
}

}  // namespace

void register_pad(KernelRegistry& r) {
  // Zero padding of H and W runs on blocked activations too (kernels/nn/blocked.h).
  const OpTraits kBlockedPad{.blocked = OpTraits::Blocked::own_kernel};
  r.add("", "Pad", 2, 10, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          if (!info.has_attr("pads")) return make_error("attribute 'pads' is required");
          std::vector<int64_t> pads = info.attr_ints("pads");
          ONNXKIT_ASSIGN(PadMode mode, parse_pad_mode(info.attr_string("mode", "constant"), info.opset()));
          float value = info.attr_float("value", 0.0f);
          return ComputeFn([=](KernelContext& ctx) { return pad_from_attributes(ctx, pads, mode, value); });
        }),
        kBlockedPad);
  // 11: pads and constant_value become inputs; 18: axes input; 19: wrap mode.
  auto from_inputs = [](bool takes_axes) {
    return make_kernel([takes_axes](const KernelInfo& info) -> Result<ComputeFn> {
      ONNXKIT_ASSIGN(PadMode mode, parse_pad_mode(info.attr_string("mode", "constant"), info.opset()));
      return ComputeFn([=](KernelContext& ctx) { return pad_from_inputs(ctx, mode, takes_axes); });
    });
  };
  r.add("", "Pad", 11, 17, from_inputs(false), kBlockedPad);
  r.add("", "Pad", 18, 18, from_inputs(true), kBlockedPad);
  r.add("", "Pad", 19, kLatestOpset, from_inputs(true), kBlockedPad);

  r.add("", "CenterCropPad", 18, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          bool has_axes = info.has_attr("axes");
          std::vector<int64_t> axes = info.attr_ints("axes");
          return ComputeFn([=](KernelContext& ctx) { return center_crop_pad(ctx, axes, has_axes); });
        }));
}

}  // namespace onnxkit::runtime::indexing
