// Sequences of tensors and optionals: construction, access, splitting and
// concatenation, SequenceMap, and the Optional ops.

#include <fmt/format.h>

#include <numeric>

#include "runtime/executor.h"
#include "runtime/kernels/common.h"

namespace onnxkit::runtime {
namespace {

Result<const Sequence*> sequence_input(KernelContext& ctx, size_t i) {
  if (!ctx.has_input(i) || !ctx.input_value(i).is_sequence())
    return make_error("input {} must be a sequence, got {}", i, ctx.has_input(i) ? ctx.input_value(i).describe() : "nothing");
  return &ctx.input_value(i).sequence();
}

// A position in a sequence of `size` (negative counts from the end);
// `insert` allows one past the end.
Result<size_t> position(KernelContext& ctx, size_t i, size_t size, bool insert) {
  ONNXKIT_ASSIGN(const Tensor* t, ctx.tensor(i));
  ONNXKIT_ASSIGN(std::vector<int64_t> v, read_int64s(*t));
  if (v.size() != 1) return make_error("position must be a scalar");
  const int64_t n = static_cast<int64_t>(size);
  int64_t p = v[0] < 0 ? v[0] + n : v[0];
  if (p < 0 || p > n || (!insert && p == n)) return make_error("position {} is out of range for a sequence of {}", v[0], size);
  return static_cast<size_t>(p);
}

Status concat_from_sequence(KernelContext& ctx, int64_t axis_attr, bool new_axis) {
  ONNXKIT_ASSIGN(const Sequence* seq, sequence_input(ctx, 0));
  if (seq->items.empty()) return make_error("cannot concatenate an empty sequence");
  const Tensor& first = seq->items[0];
  const int64_t rank = static_cast<int64_t>(first.rank()) + (new_axis ? 1 : 0);
  ONNXKIT_ASSIGN(int64_t axis, normalize_axis(axis_attr, rank));
  Shape shape = first.shape();
  if (new_axis) shape.insert(shape.begin() + axis, 0);
  shape[static_cast<size_t>(axis)] = 0;
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[static_cast<size_t>(d)];
  for (const Tensor& t : seq->items) {
    Shape s = t.shape();
    if (new_axis) s.insert(s.begin() + axis, 1);
    if (s.size() != shape.size() || t.dtype() != first.dtype()) return make_error("sequence items differ in rank or type");
    for (size_t d = 0; d < s.size(); ++d)
      if (static_cast<int64_t>(d) != axis && s[d] != shape[d]) return make_error("sequence items differ outside the axis");
    shape[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
  }
  Tensor& y = ctx.output(0, first.dtype(), shape);
  const int64_t out_row = shape[static_cast<size_t>(axis)] * inner;
  int64_t column = 0;
  for (const Tensor& t : seq->items) {
    const int64_t row = t.numel() / std::max<int64_t>(outer, 1);
    for (int64_t o = 0; o < outer; ++o) copy_elements(t, o * row, y, o * out_row + column, row);
    column += row;
  }
  return {};
}

Status split_to_sequence(KernelContext& ctx, int64_t axis_attr, bool keepdims) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  ONNXKIT_ASSIGN(int64_t axis, normalize_axis(axis_attr, static_cast<int64_t>(x->rank())));
  const int64_t length = x->dim(static_cast<size_t>(axis));
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (!ctx.has_input(1)) {
    sizes.assign(static_cast<size_t>(length), 1);
    squeeze = !keepdims;
  } else {
    ONNXKIT_ASSIGN(const Tensor* split, ctx.tensor(1));
    ONNXKIT_ASSIGN(std::vector<int64_t> v, read_int64s(*split));
    if (split->rank() == 0) {
      if (v[0] <= 0) return make_error("split must be positive");
      for (int64_t s = 0; s < length; s += v[0]) sizes.push_back(std::min(v[0], length - s));
    } else {
      sizes = v;
      if (std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != length)
        return make_error("split sizes do not add up to the dim's {}", length);
    }
  }
  Sequence seq;
  seq.elem_type = x->dtype();
  std::vector<int64_t> strides = contiguous_strides(x->shape());
  int64_t start = 0;
  for (int64_t size : sizes) {
    Shape shape = x->shape();
    shape[static_cast<size_t>(axis)] = size;
    Tensor part(x->dtype(), shape);
    copy_strided(*x, start * strides[static_cast<size_t>(axis)], strides, part);
    if (squeeze) shape.erase(shape.begin() + axis);
    seq.items.push_back(squeeze ? part.reshaped(shape) : part);
    start += size;
  }
  ctx.set_output(0, std::move(seq));
  return {};
}

Optional optional_of(const onnx::TypeProto& type) {
  Optional o;
  const onnx::TypeProto& inner = type.has_optional_type() ? type.optional_type().elem_type() : type;
  o.is_sequence = inner.has_sequence_type();
  const onnx::TypeProto& elem = o.is_sequence ? inner.sequence_type().elem_type() : inner;
  o.elem_type = static_cast<DataType>(elem.tensor_type().elem_type());
  return o;
}

Result<ComputeFn> sequence_empty(const KernelInfo& info) {
  auto type = static_cast<DataType>(info.attr_int("dtype", static_cast<int64_t>(DataType::float32)));
  return ComputeFn([type](KernelContext& ctx) -> Status {
    ctx.set_output(0, Sequence{type, {}});
    return {};
  });
}

Status sequence_construct(KernelContext& ctx) {
  Sequence seq;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    ONNXKIT_ASSIGN(const Tensor* t, ctx.tensor(i));
    if (i > 0 && t->dtype() != seq.elem_type) return make_error("inputs have different element types");
    seq.elem_type = t->dtype();
    seq.items.push_back(*t);
  }
  ctx.set_output(0, std::move(seq));
  return {};
}

Status sequence_insert(KernelContext& ctx) {
  ONNXKIT_ASSIGN(const Sequence* in, sequence_input(ctx, 0));
  ONNXKIT_ASSIGN(const Tensor* t, ctx.tensor(1));
  if (!in->items.empty() && t->dtype() != in->elem_type) return make_error("tensor type differs from the sequence's");
  Sequence seq = *in;
  seq.elem_type = t->dtype();
  size_t at = seq.items.size();
  if (ctx.has_input(2)) {
    ONNXKIT_ASSIGN(at, position(ctx, 2, seq.items.size(), true));
  }
  seq.items.insert(seq.items.begin() + static_cast<std::ptrdiff_t>(at), *t);
  ctx.set_output(0, std::move(seq));
  return {};
}

Status sequence_erase(KernelContext& ctx) {
  ONNXKIT_ASSIGN(const Sequence* in, sequence_input(ctx, 0));
  if (in->items.empty()) return make_error("cannot erase from an empty sequence");
  size_t at = in->items.size() - 1;
  if (ctx.has_input(1)) {
    ONNXKIT_ASSIGN(at, position(ctx, 1, in->items.size(), false));
  }
  Sequence seq = *in;
  seq.items.erase(seq.items.begin() + static_cast<std::ptrdiff_t>(at));
  ctx.set_output(0, std::move(seq));
  return {};
}

Status sequence_at(KernelContext& ctx) {
  ONNXKIT_ASSIGN(const Sequence* in, sequence_input(ctx, 0));
  ONNXKIT_ASSIGN(size_t at, position(ctx, 1, in->items.size(), false));
  ctx.set_output(0, in->items[at]);
  return {};
}

Status sequence_length(KernelContext& ctx) {
  ONNXKIT_ASSIGN(const Sequence* in, sequence_input(ctx, 0));
  ctx.set_output(0, Tensor::from<int64_t>({}, {static_cast<int64_t>(in->items.size())}));
  return {};
}

Result<ComputeFn> concat_from_sequence_kernel(const KernelInfo& info) {
  if (!info.has_attr("axis")) return make_error("attribute 'axis' is required");
  int64_t axis = info.attr_int("axis", 0);
  bool new_axis = info.attr_int("new_axis", 0) != 0;
  return ComputeFn([=](KernelContext& ctx) { return concat_from_sequence(ctx, axis, new_axis); });
}

Result<ComputeFn> split_to_sequence_kernel(const KernelInfo& info) {
  int64_t axis = info.attr_int("axis", 0);
  bool keepdims = info.attr_int("keepdims", 1) != 0;
  return ComputeFn([=](KernelContext& ctx) { return split_to_sequence(ctx, axis, keepdims); });
}

// The body runs once per item; sequence inputs are walked in step, tensor
// inputs are passed whole every time.
Result<ComputeFn> sequence_map(const KernelInfo& info) {
  ONNXKIT_ASSIGN(auto body, info.subgraph("body"));
  const size_t outputs = info.num_outputs();
  return ComputeFn([body, outputs](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Sequence* first, sequence_input(ctx, 0));
    const size_t n = first->items.size();
    std::vector<Sequence> results(outputs);
    for (size_t k = 0; k < outputs; ++k) {
      int32_t t = body->graph->outputs()[k]->elem_type();
      results[k].elem_type = t ? static_cast<DataType>(t) : DataType::float32;
    }
    for (size_t i = 0; i < n; ++i) {
      std::vector<Datum> inputs;
      for (size_t j = 0; j < ctx.num_inputs(); ++j) {
        const Datum& v = ctx.input_value(j);
        if (v.is_sequence()) {
          if (v.sequence().items.size() != n) return make_error("input sequences differ in length");
          inputs.emplace_back(v.sequence().items[i]);
        } else {
          inputs.push_back(v);
        }
      }
      ONNXKIT_ASSIGN(std::vector<Datum> out, ctx.run_subgraph(*body, std::move(inputs)));
      for (size_t k = 0; k < outputs; ++k) {
        if (!out[k].is_tensor()) return make_error("body output {} is not a tensor", k);
        results[k].elem_type = out[k].tensor().dtype();
        results[k].items.push_back(out[k].tensor());
      }
    }
    for (size_t k = 0; k < outputs; ++k) ctx.set_output(k, std::move(results[k]));
    return {};
  });
}

Result<ComputeFn> optional_kernel(const KernelInfo& info) {
  Optional empty;
  if (const ir::Attribute* a = info.node().attribute("type"); a != nullptr && a->proto.has_tp())
    empty = optional_of(a->proto.tp());
  return ComputeFn([empty](KernelContext& ctx) -> Status {
    if (!ctx.has_input(0)) {
      ctx.set_output(0, empty);
      return {};
    }
    const Datum& v = ctx.input_value(0);
    Optional o;
    o.is_sequence = v.is_sequence();
    o.elem_type = v.is_tensor() ? v.tensor().dtype() : v.is_sequence() ? v.sequence().elem_type : DataType::undefined;
    o.value = std::make_shared<Datum>(v);
    ctx.set_output(0, std::move(o));
    return {};
  });
}

Status optional_has_element(KernelContext& ctx) {
  bool has = false;
  if (ctx.has_input(0)) {
    const Datum& v = ctx.input_value(0);
    has = v.is_optional() ? v.optional().value != nullptr : true;  // opset 18 also takes plain values
  }
  ctx.set_output(0, Tensor::from<bool>({}, {has}));
  return {};
}

Status optional_get_element(KernelContext& ctx) {
  if (!ctx.has_input(0)) return make_error("input is missing");
  const Datum& v = ctx.input_value(0);
  if (!v.is_optional()) {  // opset 18: a plain tensor or sequence passes through
    ctx.set_output(0, v);
    return {};
  }
  if (!v.optional().value) return make_error("the optional is empty");
  ctx.set_output(0, *v.optional().value);
  return {};
}

}  // namespace

void register_sequence_kernels(KernelRegistry& r) {
  r.add("", "SequenceEmpty", 11, kLatestOpset, make_kernel(sequence_empty));
  r.add("", "SequenceConstruct", 11, kLatestOpset, make_kernel(sequence_construct));
  r.add("", "SequenceInsert", 11, kLatestOpset, make_kernel(sequence_insert));
  r.add("", "SequenceErase", 11, kLatestOpset, make_kernel(sequence_erase));
  r.add("", "SequenceAt", 11, kLatestOpset, make_kernel(sequence_at));
  r.add("", "SequenceLength", 11, kLatestOpset, make_kernel(sequence_length));
  r.add("", "ConcatFromSequence", 11, kLatestOpset, make_kernel(concat_from_sequence_kernel));
  r.add("", "SplitToSequence", 11, kLatestOpset, make_kernel(split_to_sequence_kernel));
  r.add("", "SequenceMap", 17, kLatestOpset, make_kernel(sequence_map));
  r.add("", "Optional", 15, kLatestOpset, make_kernel(optional_kernel));
  r.add("", "OptionalHasElement", 15, kLatestOpset, make_kernel(optional_has_element));
  r.add("", "OptionalGetElement", 15, kLatestOpset, make_kernel(optional_get_element));
}

}  // namespace onnxkit::runtime
