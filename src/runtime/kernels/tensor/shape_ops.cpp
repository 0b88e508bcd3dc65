// Ops that change only how elements are shaped (views, no copies), and the
// ops that report shapes.

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "runtime/kernels/tensor/tensor.h"
#include "runtime/tensor_proto.h"

namespace onnxkit::runtime::tensor_ops {

Result<Shape> reshape_target(const Shape& in, const std::vector<int64_t>& target, bool allowzero) {
  Shape out(target.begin(), target.end());
  Shape known_dims;  // all but the -1
  int inferred = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 0 && !allowzero) {
      if (i >= in.size()) return make_error("shape {} copies dim {} of an input of rank {}", shape_to_string(out), i, in.size());
      out[i] = in[i];
    }
    if (out[i] == -1) {
      if (inferred >= 0) return make_error("shape {} has more than one -1", shape_to_string(Shape(target.begin(), target.end())));
      inferred = static_cast<int>(i);
    } else if (out[i] < 0) {
      return make_error("shape {} has a negative dim", shape_to_string(Shape(target.begin(), target.end())));
    } else {
      known_dims.push_back(out[i]);
    }
  }
  auto counted = checked_shape_size(known_dims);  // a product that wraps could match the input's count
  if (!counted.ok())
    return make_error("cannot reshape {} to {}: {}", shape_to_string(in), shape_to_string(Shape(target.begin(), target.end())),
                      counted.error().message());
  const int64_t known = *counted;
  int64_t total = shape_size(in);
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      return make_error("cannot reshape {} ({} elements) to {}", shape_to_string(in), total,
                        shape_to_string(Shape(target.begin(), target.end())));
    out[static_cast<size_t>(inferred)] = total / known;
  }
  if (shape_size(out) != total)
    return make_error("cannot reshape {} ({} elements) to {} ({} elements)", shape_to_string(in), total, shape_to_string(out),
                      shape_size(out));
  return out;
}

namespace {

Tensor scalar_int64(int64_t v) { return Tensor::from<int64_t>({}, {v}); }

// Squeeze: drop the listed axes (all size-1 dims when none are listed).
Result<Shape> squeezed(const Shape& in, const std::vector<int64_t>& axes) {
  std::set<int64_t> drop;
  for (int64_t a : axes) {
    ONNXKIT_ASSIGN(int64_t axis, normalize_axis(a, static_cast<int64_t>(in.size())));
    if (in[static_cast<size_t>(axis)] != 1)
      return make_error("cannot squeeze axis {} of size {}", a, in[static_cast<size_t>(axis)]);
    drop.insert(axis);
  }
  Shape out;
  for (size_t i = 0; i < in.size(); ++i)
    if (axes.empty() ? in[i] != 1 : !drop.count(static_cast<int64_t>(i))) out.push_back(in[i]);
  return out;
}

Result<Shape> unsqueezed(const Shape& in, const std::vector<int64_t>& axes) {
  const int64_t rank = static_cast<int64_t>(in.size() + axes.size());
  std::set<int64_t> insert;
  for (int64_t a : axes) {
    ONNXKIT_ASSIGN(int64_t axis, normalize_axis(a, rank));
    if (!insert.insert(axis).second) return make_error("axis {} is repeated", a);
  }
  Shape out;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i) out.push_back(insert.count(i) ? 1 : in[next++]);
  return out;
}

// The axes of Squeeze/Unsqueeze: an attribute before opset 13, an input after.
Result<std::vector<int64_t>> axes_of(KernelContext& ctx, const std::vector<int64_t>& attribute, bool from_input) {
  if (!from_input) return attribute;
  if (!ctx.has_input(1)) return std::vector<int64_t>();
  ONNXKIT_ASSIGN(const Tensor* t, ctx.tensor(1));
  return read_int64s(*t);
}

void add_squeeze(KernelRegistry& r, const char* op, int64_t since, int64_t until, bool from_input, bool squeeze) {
  r.add("", op, since, until, make_kernel([=](const KernelInfo& info) -> Result<ComputeFn> {
          std::vector<int64_t> attribute = info.attr_ints("axes");
          return ComputeFn([=](KernelContext& ctx) -> Status {
            ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
            ONNXKIT_ASSIGN(std::vector<int64_t> axes, axes_of(ctx, attribute, from_input));
            auto shape = squeeze ? squeezed(x->shape(), axes) : unsqueezed(x->shape(), axes);
            if (!shape.ok()) return shape.error();
            ctx.set_output(0, x->reshaped(std::move(shape).value()));
            return {};
          });
        }));
}

}  // namespace

Tensor shape_output(const Shape& dims, int64_t start, std::optional<int64_t> end) {
  const auto rank = static_cast<int64_t>(dims.size());
  auto clamp = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  const int64_t first = clamp(start), last = std::max(first, clamp(end.value_or(rank)));
  const std::vector<int64_t> kept(dims.begin() + first, dims.begin() + last);
  return Tensor::from<int64_t>({static_cast<int64_t>(kept.size())}, kept);
}

void register_shape_ops(KernelRegistry& r) {
  const OpTraits blocked{.blocked = OpTraits::Blocked::own_kernel};
  r.add("", "Identity", 1, kLatestOpset, make_kernel([](KernelContext& ctx) -> Status {
          ctx.set_output(0, ctx.input_value(0));  // tensors, sequences and optionals alike
          return {};
        }));

  r.add("", "Shape", 1, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          int64_t start = info.attr_int("start", 0);
          std::optional<int64_t> end;
          if (info.has_attr("end")) end = info.attr_int("end", 0);
          return ComputeFn([=](KernelContext& ctx) -> Status {
            ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
            ctx.set_output(0, shape_output(x->shape(), start, end));
            return {};
          });
        }),
        blocked);  // of a blocked activation: its logical shape (nn/blocked.h)

  r.add("", "Size", 1, kLatestOpset, make_kernel([](KernelContext& ctx) -> Status {
          ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
          ctx.set_output(0, scalar_int64(x->numel()));
          return {};
        }));

  r.add("", "Reshape", 5, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          bool allowzero = info.attr_int("allowzero", 0) != 0;
          return ComputeFn([allowzero](KernelContext& ctx) -> Status {
            ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
            ONNXKIT_ASSIGN(const Tensor* target, ctx.tensor(1));
            ONNXKIT_ASSIGN(std::vector<int64_t> dims, read_int64s(*target));
            ONNXKIT_ASSIGN(Shape shape, reshape_target(x->shape(), dims, allowzero));
            ctx.set_output(0, x->reshaped(std::move(shape)));
            return {};
          });
        }),
        blocked);  // inside a channel shuffle of a blocked activation (nn/blocked.h)

  r.add("", "Flatten", 1, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          int64_t axis_attr = info.attr_int("axis", 1);
          return ComputeFn([axis_attr](KernelContext& ctx) -> Status {
            ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
            const int64_t rank = static_cast<int64_t>(x->rank());
            if (axis_attr < -rank || axis_attr > rank) return make_error("axis {} is out of range for rank {}", axis_attr, rank);
            int64_t axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
            int64_t outer = 1;
            for (int64_t i = 0; i < axis; ++i) outer *= x->dim(static_cast<size_t>(i));
            ctx.set_output(0, x->reshaped({outer, outer == 0 ? 0 : x->numel() / std::max<int64_t>(outer, 1)}));
            return {};
          });
        }));

  add_squeeze(r, "Squeeze", 1, 12, false, true);
  add_squeeze(r, "Squeeze", 13, kLatestOpset, true, true);
  add_squeeze(r, "Unsqueeze", 1, 12, false, false);
  add_squeeze(r, "Unsqueeze", 13, kLatestOpset, true, false);

  r.add("", "Constant", 1, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          Tensor value;
          if (info.has_attr("value")) {
            Result<std::optional<Tensor>> t = info.attr_tensor("value");
            if (!t.ok()) return t.error();
            if (!t->has_value()) return make_error("attribute 'value' is not a tensor");
            value = std::move(**t);
          } else if (info.has_attr("value_float")) {
            value = Tensor::from<float>({}, {info.attr_float("value_float", 0)});
          } else if (info.has_attr("value_floats")) {
            auto v = info.attr_floats("value_floats");
            value = Tensor::from<float>({static_cast<int64_t>(v.size())}, v);
          } else if (info.has_attr("value_int")) {
            value = Tensor::from<int64_t>({}, {info.attr_int("value_int", 0)});
          } else if (info.has_attr("value_ints")) {
            auto v = info.attr_ints("value_ints");
            value = Tensor::from<int64_t>({static_cast<int64_t>(v.size())}, v);
          } else if (info.has_attr("value_string")) {
            value = Tensor::from<std::string>({}, {info.attr_string("value_string", "")});
          } else if (info.has_attr("value_strings")) {
            auto v = info.attr_strings("value_strings");
            value = Tensor::from<std::string>({static_cast<int64_t>(v.size())}, v);
          } else if (info.has_attr("sparse_value")) {
            return make_error("sparse_value is not supported");
          } else {
            return make_error("has no value attribute");
          }
          return ComputeFn([value](KernelContext& ctx) -> Status {
            ctx.set_output(0, value);
            return {};
          });
        }));
}

}  // namespace onnxkit::runtime::tensor_ops
