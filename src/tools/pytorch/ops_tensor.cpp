// Shapes and data movement: Shape and its arithmetic (kept as Python ints and
// lists), Reshape, Transpose, Slice, Gather, Concat, Split, Pad, Expand...

#include <fmt/format.h>

#include <algorithm>
#include <climits>

#include "tools/pytorch/emitter.h"
#include "tools/pytorch/writer.h"

namespace onnxkit::tools::pytorch {

namespace {

std::string join_items(const std::vector<std::string>& items) { return fmt::format("{}", fmt::join(items, ", ")); }

// `x[:, :, <index>]`: an index expression at `axis`.
std::string index_at(const std::string& x, int64_t axis, const std::string& index) {
  std::vector<std::string> parts(static_cast<size_t>(axis), ":");
  parts.push_back(index);
  return fmt::format("{}[{}]", x, join_items(parts));
}

// The elements of input i when known one by one (constants, shape lists).
std::optional<std::vector<std::string>> known_elements(Emit& e, size_t i) {
  if (auto c = e.constant_ints(i)) {
    std::vector<std::string> items;
    for (int64_t v : *c) items.push_back(py_int(v));
    return items;
  }
  const PyValue* py = e.value(i);
  if (py == nullptr) return std::nullopt;
  if (py->kind == Kind::integer) return std::vector<std::string>{py->expr};
  if (py->kind == Kind::ints) return py->elements;
  return std::nullopt;
}

bool is_shape_value(Emit& e, size_t i) {
  Kind k = e.kind(i);
  return k == Kind::ints || k == Kind::integer;
}

// Binds output 0 as a list of ints or an int computed by `statement`.
void assign_shape(Emit& e, const std::string& expr, Kind kind, std::optional<std::vector<std::string>> elements, bool sizes) {
  e.assign(0, expr, kind);
  PyValue py = *e.w.find(e.node.output(0));
  py.elements = std::move(elements);
  py.sizes = sizes;
  if (py.dtype == 0) py.dtype = onnx::TensorProto::INT64;
  e.alias(e.node.output(0), py);
}

std::optional<int64_t> parse_int(const std::string& text) {
  if (text.empty()) return std::nullopt;
  size_t pos = 0;
  try {
    int64_t v = std::stoll(text, &pos);
    if (pos == text.size()) return v;
  } catch (...) {}
  return std::nullopt;
}

// --- shapes -----------------------------------------------------------------------

Status emit_shape(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  auto rank = e.rank(0);
  int64_t start = e.attr_int("start", 0);
  bool has_end = e.has_attr("end");
  int64_t end = e.attr_int("end", 0);
  if (!rank) {
    std::string range = start == 0 && !has_end ? "" : fmt::format("[{}:{}]", start, has_end ? py_int(end) : "");
    assign_shape(e, fmt::format("list({}.shape{})", x, range), Kind::ints, std::nullopt, true);
    return {};
  }
  auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + *rank : v, 0, *rank); };
  int64_t s = clamp(start), t = has_end ? clamp(end) : *rank;
  std::vector<std::string> elements;
  for (int64_t d = s; d < t; ++d) elements.push_back(fmt::format("{}.shape[{}]", x, d));
  std::string range = s == 0 && t == *rank ? "" : fmt::format("[{}:{}]", s, t);
  assign_shape(e, fmt::format("list({}.shape{})", x, range), Kind::ints, elements, true);
  return {};
}

Status emit_size(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  assign_shape(e, x + ".numel()", Kind::integer, std::nullopt, true);
  return {};
}

Status emit_constant(Emit& e) {
  if (e.w.constant(e.node.output(0)) != nullptr) return {};  // read where it is used
  auto make = [&]<class T>(runtime::Shape shape, const std::vector<T>& values) {
    e.w.set_constant(e.node.output(0), runtime::Tensor::from(std::move(shape), values));
  };
  if (const ir::Attribute* a = e.node.attribute("value_float")) make(runtime::Shape{}, std::vector<float>{a->proto.f()});
  else if (const ir::Attribute* a = e.node.attribute("value_int")) make(runtime::Shape{}, std::vector<int64_t>{a->proto.i()});
  else if (const ir::Attribute* a = e.node.attribute("value_floats"))
    make(runtime::Shape{a->proto.floats_size()}, std::vector<float>(a->proto.floats().begin(), a->proto.floats().end()));
  else if (const ir::Attribute* a = e.node.attribute("value_ints"))
    make(runtime::Shape{a->proto.ints_size()}, std::vector<int64_t>(a->proto.ints().begin(), a->proto.ints().end()));
  else return e.fail("only numeric constants convert (torch has no strings; sparse values are not read)");
  return {};
}

Status emit_constant_of_shape(Emit& e) {
  ONNXKIT_ASSIGN(std::string shape, e.ints(0));
  int32_t type = onnx::TensorProto::FLOAT;
  std::string value = "0.0";
  if (const ir::Attribute* a = e.node.attribute("value"); a != nullptr && a->proto.has_t()) {
    const runtime::Tensor* t = e.w.constant_of_attribute(a->proto.t());
    if (t == nullptr || t->numel() != 1) return e.fail("value must hold one number");
    type = static_cast<int32_t>(t->dtype());
    value = py_elements(*t).at(0);
  }
  std::string dtype = torch_dtype(type);
  if (dtype.empty()) return e.fail("torch has no tensors of the value's type");
  if (value == "0.0" || value == "0" || value == "False") e.assign(0, fmt::format("torch.zeros({}, dtype={})", shape, dtype));
  else e.assign(0, fmt::format("torch.full({}, {}, dtype={})", shape, value, dtype));
  return {};
}

// --- reshaping --------------------------------------------------------------------

Status emit_reshape(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  bool allow_zero = e.attr_int("allowzero", 0) != 0;
  std::optional<std::vector<std::string>> elements = known_elements(e, 1);
  if (e.opset < 5) {
    std::vector<int64_t> shape = e.attr_ints("shape");
    elements = std::vector<std::string>();
    for (int64_t d : shape) elements->push_back(py_int(d));
  }
  if (!elements) {
    ONNXKIT_ASSIGN(std::string shape, e.ints(1));
    e.assign(0, fmt::format("{}({}, {}, {})", e.helper("onnx_reshape"), x, shape, py_bool(allow_zero)));
    return {};
  }
  std::vector<std::string> dims;
  for (size_t i = 0; i < elements->size(); ++i) {
    // Without allowzero a 0 copies the input's dim.
    if ((*elements)[i] == "0" && !allow_zero) dims.push_back(fmt::format("{}.shape[{}]", x, i));
    else dims.push_back((*elements)[i]);
  }
  e.assign(0, dims.empty() ? fmt::format("{}.reshape(())", x) : fmt::format("{}.reshape({})", x, join_items(dims)));
  return {};
}

Status emit_flatten(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  auto rank = e.rank(0);
  auto axis = non_negative_axis(e.attr_int("axis", 1), rank);
  if (axis && *axis == 0) e.assign(0, fmt::format("{}.reshape(1, -1)", x));
  else if (axis && rank && *axis == 1 && *rank >= 2) e.assign(0, fmt::format("{}.flatten(1)", x));
  else if (axis && rank && *axis < *rank) e.assign(0, fmt::format("{}.flatten({}).flatten(0, {})", x, *axis, *axis - 1));
  else {
    std::string a = axis ? py_int(*axis) : fmt::format("{} % {}.dim()", e.attr_int("axis", 1), x);
    e.assign(0, fmt::format("{x}.reshape(math.prod({x}.shape[:{a}]), math.prod({x}.shape[{a}:]))", fmt::arg("x", x),
                            fmt::arg("a", a)));
  }
  return {};
}

Status emit_transpose(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  std::vector<int64_t> perm = e.attr_ints("perm");
  if (perm.empty()) {
    auto rank = e.rank(0);
    if (!rank) {
      e.assign(0, fmt::format("{}.permute(*reversed(range({}.dim())))", x, x));
      return {};
    }
    for (int64_t d = *rank - 1; d >= 0; --d) perm.push_back(d);
  }
  bool identity = true;
  std::vector<std::string> items;
  for (size_t i = 0; i < perm.size(); ++i) {
    identity = identity && perm[i] == static_cast<int64_t>(i);
    items.push_back(py_int(perm[i]));
  }
  e.assign(0, identity ? x : fmt::format("{}.permute({})", x, join_items(items)));
  return {};
}

Result<std::optional<std::vector<int64_t>>> axes_of(Emit& e, size_t input, int64_t attr_until) {
  if (e.opset < attr_until) {
    if (!e.has_attr("axes")) return std::optional<std::vector<int64_t>>();
    return std::optional<std::vector<int64_t>>(e.attr_ints("axes"));
  }
  if (!e.has(input)) return std::optional<std::vector<int64_t>>();
  auto axes = e.constant_ints(input);
  if (!axes) return e.fail("axes must be a constant");
  return std::optional<std::vector<int64_t>>(*axes);
}

// Squeeze and Unsqueeze with axes known only at run time.
Result<bool> emit_with_runtime_axes(Emit& e, const char* helper) {
  if (e.opset < 13 || !e.has(1) || e.constant_ints(1)) return false;
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  ONNXKIT_ASSIGN(std::string axes, e.ints(1));
  e.assign(0, fmt::format("{}({}, {})", e.helper(helper), x, axes));
  return true;
}

Status emit_squeeze(Emit& e) {
  ONNXKIT_ASSIGN(bool done, emit_with_runtime_axes(e, "onnx_squeeze"));
  if (done) return {};
  ONNXKIT_ASSIGN(auto axes, axes_of(e, 1, 13));
  if (is_shape_value(e, 0)) {  // [n] -> n
    auto items = known_elements(e, 0);
    const PyValue* py = e.value(0);
    std::string expr = py->kind == Kind::integer ? py->expr : py->expr + "[0]";
    assign_shape(e, expr, Kind::integer, std::nullopt, py->sizes);
    return {};
  }
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  if (!axes) {
    e.assign(0, x + ".squeeze()");
    return {};
  }
  auto rank = e.rank(0);
  std::vector<int64_t> dims;
  for (int64_t a : *axes) {
    auto d = non_negative_axis(a, rank);
    if (!d) {
      e.assign(0, fmt::format("{}({}, {})", e.helper("onnx_squeeze"), x, py_list(*axes)));
      return {};
    }
    dims.push_back(*d);
  }
  std::sort(dims.rbegin(), dims.rend());
  std::string expr = x;
  for (int64_t d : dims) expr += fmt::format(".squeeze({})", d);
  e.assign(0, expr);
  return {};
}

Status emit_unsqueeze(Emit& e) {
  ONNXKIT_ASSIGN(bool done, emit_with_runtime_axes(e, "onnx_unsqueeze"));
  if (done) return {};
  ONNXKIT_ASSIGN(auto axes, axes_of(e, 1, 13));
  if (!axes) return e.fail("axes are required");
  if (e.kind(0) == Kind::integer && axes->size() == 1 && ((*axes)[0] == 0 || (*axes)[0] == -1)) {  // n -> [n]
    const PyValue* py = e.value(0);
    assign_shape(e, "[" + py->expr + "]", Kind::ints, std::vector<std::string>{py->expr}, py->sizes);
    return {};
  }
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  auto rank = e.rank(0);
  std::optional<int64_t> out_rank = rank ? std::optional<int64_t>(*rank + static_cast<int64_t>(axes->size())) : std::nullopt;
  std::vector<int64_t> dims;
  for (int64_t a : *axes) {
    auto d = non_negative_axis(a, out_rank);
    if (!d) {
      e.assign(0, fmt::format("{}({}, {})", e.helper("onnx_unsqueeze"), x, py_list(*axes)));
      return {};
    }
    dims.push_back(*d);
  }
  std::sort(dims.begin(), dims.end());
  std::string expr = x;
  for (int64_t d : dims) expr += fmt::format(".unsqueeze({})", d);
  e.assign(0, expr);
  return {};
}

Status emit_concat(Emit& e) {
  int64_t axis = e.attr_int("axis", 0);
  bool all_shapes = e.num_inputs() > 0;
  for (size_t i = 0; i < e.num_inputs(); ++i) {
    bool small_const = e.constant_ints(i) && e.constant(i)->rank() == 1 && e.constant(i)->numel() <= 16;
    all_shapes = all_shapes && e.has(i) && (e.kind(i) == Kind::ints || small_const);
  }
  if (all_shapes && (axis == 0 || axis == -1)) {
    std::vector<std::string> elements, parts;
    bool known = true, sizes = true;
    for (size_t i = 0; i < e.num_inputs(); ++i) {
      auto items = known_elements(e, i);
      if (items) elements.insert(elements.end(), items->begin(), items->end());
      known = known && items.has_value();
      if (const PyValue* py = e.value(i)) sizes = sizes && py->sizes;
      ONNXKIT_ASSIGN(std::string list, e.ints(i));
      parts.push_back(list);
    }
    for (const std::string& s : elements)
      if (auto v = parse_int(s); v && *v < 0) sizes = false;
    if (known) e.assign_ints(0, elements, sizes);
    else assign_shape(e, fmt::format("{}", fmt::join(parts, " + ")), Kind::ints, std::nullopt, sizes);
    return {};
  }
  std::vector<std::string> xs;
  for (size_t i = 0; i < e.num_inputs(); ++i) {
    ONNXKIT_ASSIGN(std::string x, e.tensor(i));
    xs.push_back(x);
  }
  e.assign(0, fmt::format("torch.cat([{}], dim={})", join_items(xs), axis));
  return {};
}

Status emit_split(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  int64_t axis = e.attr_int("axis", 0);
  size_t n = e.num_outputs();
  std::string sizes;
  if (e.opset < 13 && e.has_attr("split")) {
    sizes = py_list(e.attr_ints("split"));
  } else if (e.opset >= 13 && e.has(1)) {
    ONNXKIT_ASSIGN(sizes, e.ints(1));
  } else {
    int64_t parts = e.has_attr("num_outputs") ? e.attr_int("num_outputs", 1) : static_cast<int64_t>(n);
    auto dims = e.dims(0);
    auto a = non_negative_axis(axis, e.rank(0));
    if (dims && a && (*dims)[static_cast<size_t>(*a)] >= 0) {
      int64_t d = (*dims)[static_cast<size_t>(*a)];
      int64_t chunk = (d + parts - 1) / parts;
      std::vector<int64_t> v;
      for (int64_t left = d; left > 0; left -= chunk) v.push_back(std::min(chunk, left));
      while (static_cast<int64_t>(v.size()) < parts) v.push_back(0);
      sizes = py_list(v);
    } else {
      sizes = fmt::format("math.ceil({}.shape[{}] / {})", x, axis, parts);
    }
  }
  std::vector<size_t> outs;
  for (size_t k = 0; k < n; ++k) outs.push_back(k);
  e.assign_many(outs, fmt::format("torch.split({}, {}, dim={})", x, sizes, axis));
  for (size_t k = 0; k < n; ++k)
    if (e.has_output(k)) e.w.bind(e.node.output(k), {Kind::tensor, e.output_name(k), e.out_dtype(k)});
  return {};
}

// --- slicing --------------------------------------------------------------------

Result<std::optional<std::vector<std::string>>> slice_param(Emit& e, size_t input, std::string_view attr) {
  if (e.opset < 10) {
    if (!e.has_attr(attr)) return std::optional<std::vector<std::string>>();
    std::vector<std::string> items;
    for (int64_t v : e.attr_ints(attr)) items.push_back(py_int(v));
    return std::optional<std::vector<std::string>>(items);
  }
  if (!e.has(input)) return std::optional<std::vector<std::string>>();
  return known_elements(e, input);
}

Status emit_slice(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  ONNXKIT_ASSIGN(auto starts, slice_param(e, 1, "starts"));
  ONNXKIT_ASSIGN(auto ends, slice_param(e, 2, "ends"));
  ONNXKIT_ASSIGN(auto axes_text, slice_param(e, 3, "axes"));
  std::optional<std::vector<std::string>> steps_text;
  if (e.opset >= 10 && e.has(4)) steps_text = known_elements(e, 4);
  bool dynamic_params =
      !starts || !ends || (e.opset >= 10 && e.has(3) && !axes_text) || (e.opset >= 10 && e.has(4) && !steps_text);
  auto general = [&]() -> Status {
    std::vector<std::string> args;
    for (size_t i = 1; i <= 4; ++i) {
      if (e.opset < 10) break;
      if (!e.has(i)) {
        args.push_back("None");
        continue;
      }
      ONNXKIT_ASSIGN(std::string a, e.ints(i));
      args.push_back(a);
    }
    if (e.opset < 10)
      args = {py_list(e.attr_ints("starts")), py_list(e.attr_ints("ends")),
              e.has_attr("axes") ? py_list(e.attr_ints("axes")) : "None", "None"};
    while (args.size() < 4) args.push_back("None");
    e.assign(0, fmt::format("{}({}, {})", e.helper("onnx_slice"), x, join_items(args)));
    return {};
  };
  if (dynamic_params || starts->size() != ends->size()) return general();
  const size_t n = starts->size();
  std::vector<int64_t> axes, steps(n, 1);
  auto rank = e.rank(0);
  for (size_t k = 0; k < n; ++k) {
    int64_t a = static_cast<int64_t>(k);
    if (axes_text) {
      auto v = parse_int((*axes_text)[k]);
      if (!v) return general();
      a = *v;
    }
    auto norm = non_negative_axis(a, rank);
    if (!norm) return general();
    axes.push_back(*norm);
    if (steps_text) {
      auto v = parse_int((*steps_text)[k]);
      if (!v || *v == 0) return general();
      steps[k] = *v;
    }
  }
  if (std::any_of(steps.begin(), steps.end(), [](int64_t s) { return s < 0; })) {
    // Negative steps: flip the axis and step forwards (needs static dims to clamp as ONNX does).
    auto dims = e.dims(0);
    if (!dims) return general();
    for (size_t k = 0; k < n; ++k) {
      if (steps[k] > 0) continue;
      if ((*dims)[static_cast<size_t>(axes[k])] < 0 || !parse_int((*starts)[k]) || !parse_int((*ends)[k])) return general();
    }
  }
  if (is_shape_value(e, 0) && n == 1 && axes[0] == 0 && steps[0] > 0) {  // a piece of a shape list
    const PyValue* py = e.value(0);
    std::string range = fmt::format("{}:{}{}", (*starts)[0] == "0" ? "" : (*starts)[0],
                                    parse_int((*ends)[0]).value_or(0) >= INT32_MAX ? "" : (*ends)[0],
                                    steps[0] == 1 ? "" : ":" + py_int(steps[0]));
    std::optional<std::vector<std::string>> items;
    auto s = parse_int((*starts)[0]), t = parse_int((*ends)[0]);
    if (py->elements && s && t) {
      int64_t len = static_cast<int64_t>(py->elements->size());
      auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + len : v, 0, len); };
      items = std::vector<std::string>();
      for (int64_t i = clamp(*s); i < clamp(*t); i += steps[0]) items->push_back((*py->elements)[static_cast<size_t>(i)]);
    }
    assign_shape(e, fmt::format("{}[{}]", py->expr, range), Kind::ints, items, py->sizes);
    return {};
  }
  int64_t last = *std::max_element(axes.begin(), axes.end());
  std::vector<std::string> index(static_cast<size_t>(last + 1), ":");
  std::string source = x;
  auto dims = e.dims(0);
  for (size_t k = 0; k < n; ++k) {
    const std::string& s = (*starts)[k];
    const std::string& t = (*ends)[k];
    if (steps[k] > 0) {
      std::string start = s == "0" ? "" : s;
      auto tv = parse_int(t);
      std::string stop = tv && *tv >= INT32_MAX ? "" : t;
      index[static_cast<size_t>(axes[k])] = fmt::format("{}:{}{}", start, stop, steps[k] == 1 ? "" : ":" + py_int(steps[k]));
      continue;
    }
    int64_t dim = (*dims)[static_cast<size_t>(axes[k])];
    int64_t sv = *parse_int(s), tv = *parse_int(t);
    if (sv < 0) sv += dim;
    if (tv < 0) tv += dim;
    sv = std::clamp<int64_t>(sv, 0, dim - 1);
    tv = std::clamp<int64_t>(tv, -1, dim - 1);
    // Index i of the flipped axis is dim - 1 - i of the original.
    int64_t fs = dim - 1 - sv, ft = dim - 1 - tv;
    source = fmt::format("{}.flip({})", source, axes[k]);
    index[static_cast<size_t>(axes[k])] = fmt::format("{}:{}{}", fs == 0 ? "" : py_int(fs), py_int(std::max<int64_t>(ft, fs)),
                                                      steps[k] == -1 ? "" : ":" + py_int(-steps[k]));
  }
  e.assign(0, fmt::format("{}[{}]", source, join_items(index)));
  return {};
}

// --- gathering and scattering -----------------------------------------------------

Status emit_gather(Emit& e) {
  int64_t axis = e.attr_int("axis", 0);
  if (is_shape_value(e, 0) && (axis == 0 || axis == -1)) {
    const PyValue* py = e.value(0);
    if (auto idx = e.constant_ints(1)) {
      auto element = [&](int64_t i) {
        if (py->elements) {
          auto n = static_cast<int64_t>(py->elements->size());
          if (i < 0) i += n;
          if (i >= 0 && i < n) return (*py->elements)[static_cast<size_t>(i)];
        }
        return fmt::format("{}[{}]", py->expr, i);
      };
      if (e.constant(1)->rank() == 0) {
        assign_shape(e, element((*idx)[0]), Kind::integer, std::nullopt, py->sizes);
      } else {
        std::vector<std::string> items;
        for (int64_t i : *idx) items.push_back(element(i));
        e.assign_ints(0, items, py->sizes);
      }
      return {};
    }
    if (e.kind(1) == Kind::integer) {
      assign_shape(e, fmt::format("{}[{}]", py->expr, e.value(1)->expr), Kind::integer, std::nullopt, py->sizes);
      return {};
    }
  }
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  auto rank = e.rank(0);
  auto a = non_negative_axis(axis, rank);
  const runtime::Tensor* table = e.constant(0);
  int32_t index_type = e.dtype(1);
  bool integer_indices = index_type == onnx::TensorProto::INT64 || index_type == onnx::TensorProto::INT32;
  if (table != nullptr && table->rank() == 2 && a && *a == 0 && is_float_type(static_cast<int32_t>(table->dtype())) &&
      e.constant(1) == nullptr && integer_indices) {
    // A lookup in a constant table by ids: nn.Embedding (ids must be within [0, rows)).
    ONNXKIT_ASSIGN(std::string ids, e.tensor(1));
    std::string m = e.module(fmt::format("nn.Embedding({}, {})", table->dim(0), table->dim(1)), {{"weight", *table}});
    e.assign(0, fmt::format("{}({})", m, ids));
    return {};
  }
  if (!a) {
    ONNXKIT_ASSIGN(std::string idx, e.tensor(1));
    e.assign(0, fmt::format("{}({}, {}, {})", e.helper("onnx_gather"), x, idx, axis));
    return {};
  }
  if (auto idx = e.constant_ints(1); idx && idx->size() <= 16 && e.constant(1)->rank() <= 1) {
    std::string index = e.constant(1)->rank() == 0 ? py_int((*idx)[0]) : py_list(*idx);
    e.assign(0, index_at(x, *a, index));
    return {};
  }
  if (e.kind(1) == Kind::integer) {
    e.assign(0, index_at(x, *a, e.value(1)->expr));
    return {};
  }
  ONNXKIT_ASSIGN(std::string idx, e.tensor(1));
  // Tensors index as int64 (or bool) only.
  if (index_type != onnx::TensorProto::INT64) idx += ".long()";
  e.assign(0, index_at(x, *a, idx));
  return {};
}

// Indices as torch.gather and scatter take them: int64, never negative.
Result<std::string> element_indices(Emit& e, size_t i, const std::string& x, int64_t axis) {
  ONNXKIT_ASSIGN(std::string idx, e.tensor(i));
  if (auto c = e.constant_ints(i);
      c && std::all_of(c->begin(), c->end(), [](int64_t v) { return v >= 0; }) && e.dtype(i) == onnx::TensorProto::INT64)
    return idx;
  return fmt::format("{} % {}.shape[{}]", idx + (e.dtype(i) == onnx::TensorProto::INT64 ? "" : ".long()"), x, axis);
}

Status emit_gather_elements(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  int64_t axis = e.attr_int("axis", 0);
  ONNXKIT_ASSIGN(std::string idx, element_indices(e, 1, x, axis));
  e.assign(0, fmt::format("torch.gather({}, {}, {})", x, axis, idx));
  return {};
}

Status emit_scatter_elements(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  int64_t axis = e.attr_int("axis", 0);
  ONNXKIT_ASSIGN(std::string idx, element_indices(e, 1, x, axis));
  ONNXKIT_ASSIGN(std::string updates, e.tensor(2));
  std::string reduction = e.attr_string("reduction", "none");
  if (reduction == "none") {
    e.assign(0, fmt::format("{}.scatter({}, {}, {})", x, axis, idx, updates));
    return {};
  }
  const char* reduce = reduction == "add"   ? "sum"
                       : reduction == "mul" ? "prod"
                       : reduction == "max" ? "amax"
                       : reduction == "min" ? "amin"
                                            : nullptr;
  if (reduce == nullptr) return e.fail(fmt::format("unknown reduction '{}'", reduction));
  e.assign(0, fmt::format("{}.scatter_reduce({}, {}, {}, \"{}\")", x, axis, idx, updates, reduce));
  return {};
}

Status emit_gather_nd(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  ONNXKIT_ASSIGN(std::string idx, e.tensor(1));
  e.assign(0, fmt::format("{}({}, {}, {})", e.helper("onnx_gather_nd"), x, idx, e.attr_int("batch_dims", 0)));
  return {};
}

Status emit_scatter_nd(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  ONNXKIT_ASSIGN(std::string idx, e.tensor(1));
  ONNXKIT_ASSIGN(std::string updates, e.tensor(2));
  e.assign(0, fmt::format("{}({}, {}, {}, {})", e.helper("onnx_scatter_nd"), x, idx, updates,
                          py_str(e.attr_string("reduction", "none"))));
  return {};
}

// --- growing and padding ----------------------------------------------------------

Status emit_expand(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  auto shape = known_elements(e, 1);
  auto dims = e.dims(0);
  if (shape && dims && std::all_of(dims->begin(), dims->end(), [](int64_t d) { return d >= 0; })) {
    // The broadcast shape worked out here: ONNX broadcasts both ways (a 1 in
    // the shape keeps the input's dim), torch's expand one way.
    size_t n = std::max(shape->size(), dims->size());
    std::vector<std::string> target(n);
    for (size_t k = 0; k < n; ++k) {
      int64_t own = k < n - dims->size() ? 1 : (*dims)[k - (n - dims->size())];
      std::string asked = k < n - shape->size() ? "1" : (*shape)[k - (n - shape->size())];
      target[k] = own != 1 && (asked == "1" || parse_int(asked)) ? py_int(own) : asked;
    }
    e.assign(0, fmt::format("{}.expand({})", x, join_items(target)));
    return {};
  }
  ONNXKIT_ASSIGN(std::string s, e.ints(1));
  e.assign(0, fmt::format("{}.expand(torch.broadcast_shapes({}.shape, {}))", x, x, s));
  return {};
}

Status emit_tile(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  ONNXKIT_ASSIGN(std::string repeats, e.ints(1));
  e.assign(0, fmt::format("{}.repeat({})", x, repeats));
  return {};
}

Status emit_pad(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  std::string mode = e.attr_string("mode", "constant");
  const char* torch_mode = mode == "constant"  ? "constant"
                           : mode == "reflect" ? "reflect"
                           : mode == "edge"    ? "replicate"
                           : mode == "wrap"    ? "circular"
                                               : nullptr;
  if (torch_mode == nullptr) return e.fail(fmt::format("unknown mode '{}'", mode));
  std::optional<std::vector<int64_t>> pads;
  std::string value = "0";
  if (e.opset < 11) {
    pads = e.attr_ints(e.opset < 2 ? "paddings" : "pads");
    value = py_float(e.attr_float("value", 0.0f));
  } else {
    pads = e.constant_ints(1);
    if (e.has(2)) {
      ONNXKIT_ASSIGN(value, e.number(2));
    }
  }
  std::optional<std::vector<int64_t>> axes;
  if (e.opset >= 18 && e.has(3)) {
    axes = e.constant_ints(3);
    if (!axes) return e.fail("axes must be a constant");
  }
  auto rank = e.rank(0);
  std::string value_arg = std::string(torch_mode) == "constant" && value != "0" && value != "0.0" ? ", value=" + value : "";
  if (pads && rank) {
    size_t r = static_cast<size_t>(*rank);
    std::vector<int64_t> begins(r, 0), ends(r, 0);
    std::vector<int64_t> which;
    if (axes) {
      for (int64_t a : *axes) which.push_back(a < 0 ? a + *rank : a);
    } else {
      for (size_t d = 0; d < r; ++d) which.push_back(static_cast<int64_t>(d));
    }
    if (pads->size() != 2 * which.size()) return e.fail("pads does not match the input's rank");
    for (size_t k = 0; k < which.size(); ++k) {
      begins[static_cast<size_t>(which[k])] = (*pads)[k];
      ends[static_cast<size_t>(which[k])] = (*pads)[k + which.size()];
    }
    std::vector<int64_t> order = torch_pad_order(begins, ends);
    if (order.empty()) {
      e.assign(0, x);
      return {};
    }
    if (std::string(torch_mode) != "constant" && order.size() > 6)
      return e.fail(fmt::format("PyTorch pads the last 3 dims at most in {} mode", mode));
    std::string mode_arg = std::string(torch_mode) == "constant" ? "" : fmt::format(", mode=\"{}\"", torch_mode);
    int32_t type = e.dtype(0);
    if (std::string(torch_mode) != "constant" && type != 0 && !is_float_type(type)) {
      // torch reflects and replicates floats only; doubles hold these integers exactly.
      e.assign(0, fmt::format("F.pad({}.double(), {}{}).to({})", x, py_list(order), mode_arg, torch_dtype(type)));
      return {};
    }
    e.assign(0, fmt::format("F.pad({}, {}{}{})", x, py_list(order), mode_arg, value_arg));
    return {};
  }
  std::string pad_list;
  if (e.opset < 11) pad_list = py_list(*pads);
  else {
    ONNXKIT_ASSIGN(pad_list, e.ints(1));
  }
  std::string axes_arg = axes ? py_list(*axes) : "None";
  e.assign(0, fmt::format("{}({}, {}, \"{}\", {}, {})", e.helper("onnx_pad"), x, pad_list, torch_mode, value, axes_arg));
  return {};
}

// --- generators and selections ------------------------------------------------------

Status emit_range(Emit& e) {
  ONNXKIT_ASSIGN(std::string start, e.number(0));
  ONNXKIT_ASSIGN(std::string limit, e.number(1));
  ONNXKIT_ASSIGN(std::string delta, e.number(2));
  int32_t type = e.dtype(0);
  std::string dtype = torch_dtype(type != 0 ? type : onnx::TensorProto::INT64);
  if (start == "0" && delta == "1") e.assign(0, fmt::format("torch.arange({}, dtype={})", limit, dtype));
  else e.assign(0, fmt::format("torch.arange({}, {}, {}, dtype={})", start, limit, delta, dtype));
  return {};
}

Status emit_nonzero(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  e.assign(0, fmt::format("torch.nonzero({}).t()", x));
  return {};
}

Status emit_trilu(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  std::string k = "0";
  if (e.has(1)) {
    ONNXKIT_ASSIGN(k, e.integer(1));
  }
  e.assign(0, fmt::format("torch.{}({}, {})", e.attr_int("upper", 1) != 0 ? "triu" : "tril", x, k));
  return {};
}

Status emit_eye_like(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  int32_t type = e.has_attr("dtype") ? static_cast<int32_t>(e.attr_int("dtype", 1)) : e.dtype(0);
  std::string dtype = torch_dtype(type != 0 ? type : onnx::TensorProto::FLOAT);
  int64_t k = e.attr_int("k", 0);
  if (k == 0)
    e.assign(0, fmt::format("torch.eye({x}.shape[0], {x}.shape[1], dtype={d})", fmt::arg("x", x), fmt::arg("d", dtype)));
  else
    e.assign(0, fmt::format("torch.ones({x}.shape[0], {x}.shape[1], dtype={d}).triu({k}).tril({k})", fmt::arg("x", x),
                            fmt::arg("d", dtype), fmt::arg("k", k)));
  return {};
}

Status emit_one_hot(Emit& e) {
  ONNXKIT_ASSIGN(std::string idx, e.tensor(0));
  ONNXKIT_ASSIGN(std::string depth, e.number(1));
  ONNXKIT_ASSIGN(std::string values, e.tensor(2));
  e.assign(0, fmt::format("{}({}, int({}), {}, {})", e.helper("onnx_one_hot"), idx, depth, values, e.attr_int("axis", -1)));
  return {};
}

Status emit_depth_to_space(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  int64_t b = e.attr_int("blocksize", 1);
  if (e.attr_string("mode", "DCR") == "CRD") e.assign(0, fmt::format("F.pixel_shuffle({}, {})", x, b));
  else e.assign(0, fmt::format("{}({}, {})", e.helper("onnx_depth_to_space"), x, b));
  return {};
}

Status emit_space_to_depth(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  e.assign(0, fmt::format("{}({}, {})", e.helper("onnx_space_to_depth"), x, e.attr_int("blocksize", 1)));
  return {};
}

Status emit_compress(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  ONNXKIT_ASSIGN(std::string condition, e.tensor(1));
  std::string axis = e.has_attr("axis") ? py_int(e.attr_int("axis", 0)) : "None";
  e.assign(0, fmt::format("{}({}, {}, {})", e.helper("onnx_compress"), x, condition, axis));
  return {};
}

Status emit_top_k(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  std::string k;
  if (e.opset < 10) k = py_int(e.attr_int("k", 1));
  else {
    ONNXKIT_ASSIGN(k, e.integer(1));
  }
  int64_t axis = e.attr_int("axis", -1);
  std::string options;
  if (e.attr_int("largest", 1) == 0) options += ", largest=False";
  if (e.attr_int("sorted", 1) == 0) options += ", sorted=False";
  e.assign_many({0, 1}, fmt::format("torch.topk({}, {}, dim={}{})", x, k, axis, options));
  return {};
}

Status emit_reverse_sequence(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  ONNXKIT_ASSIGN(std::string lens, e.tensor(1));
  e.assign(0, fmt::format("{}({}, {}, {}, {})", e.helper("onnx_reverse_sequence"), x, lens, e.attr_int("batch_axis", 1),
                          e.attr_int("time_axis", 0)));
  return {};
}

Status emit_unique(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  std::string axis = e.has_attr("axis") ? py_int(e.attr_int("axis", 0)) : "None";
  std::vector<size_t> outs;
  for (size_t k = 0; k < e.num_outputs(); ++k) outs.push_back(k);
  std::string call = fmt::format("{}({}, {}, {})", e.helper("onnx_unique"), x, py_bool(e.attr_int("sorted", 1) != 0), axis);
  if (outs.size() < 4) call += fmt::format("[:{}]", outs.size());
  e.assign_many(outs, call);
  return {};
}

}  // namespace

void add_tensor_emitters(EmitterTable& t) {
  t.insert({
      {"Shape", emit_shape},
      {"Size", emit_size},
      {"Constant", emit_constant},
      {"ConstantOfShape", emit_constant_of_shape},
      {"Reshape", emit_reshape},
      {"Flatten", emit_flatten},
      {"Transpose", emit_transpose},
      {"Squeeze", emit_squeeze},
      {"Unsqueeze", emit_unsqueeze},
      {"Concat", emit_concat},
      {"Split", emit_split},
      {"Slice", emit_slice},
      {"Gather", emit_gather},
      {"GatherElements", emit_gather_elements},
      {"GatherND", emit_gather_nd},
      {"ScatterElements", emit_scatter_elements},
      {"Scatter", emit_scatter_elements},
      {"ScatterND", emit_scatter_nd},
      {"Expand", emit_expand},
      {"Tile", emit_tile},
      {"Pad", emit_pad},
      {"Range", emit_range},
      {"NonZero", emit_nonzero},
      {"Trilu", emit_trilu},
      {"EyeLike", emit_eye_like},
      {"OneHot", emit_one_hot},
      {"DepthToSpace", emit_depth_to_space},
      {"SpaceToDepth", emit_space_to_depth},
      {"Compress", emit_compress},
      {"TopK", emit_top_k},
      {"ReverseSequence", emit_reverse_sequence},
      {"Unique", emit_unique},
  });
}

}  // namespace onnxkit::tools::pytorch
