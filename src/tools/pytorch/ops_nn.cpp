// Layers: convolutions, pooling, normalizations, Gemm/MatMul as nn.Linear,
// softmax. Weighted layers with constant weights become modules named after
// their node; the rest are torch.nn.functional calls.
//
// Padding: PyTorch pads symmetrically only, so an ONNX node's pads split into
// the symmetric part (the layer's own `padding`) and the rest, an explicit
// F.pad before it (with -inf for MaxPool, so padding never wins a max).
// SAME_UPPER/SAME_LOWER pads depend on the input size: computed here when
// the spatial dims are static, at run time (_onnx_same_pads) otherwise.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tools/pytorch/emitter.h"
#include "tools/pytorch/writer.h"

namespace onnxkit::tools::pytorch {

namespace {

// "3" when every entry is the same, "(3, 5)" otherwise.
std::string int_or_tuple(const std::vector<int64_t>& v) {
  if (!v.empty() && std::all_of(v.begin(), v.end(), [&](int64_t x) { return x == v[0]; })) return py_int(v[0]);
  return py_tuple(v);
}

std::vector<int64_t> attr_or(const Emit& e, std::string_view name, size_t n, int64_t fallback) {
  std::vector<int64_t> v = e.attr_ints(name);
  if (v.empty()) v.assign(n, fallback);
  return v;
}

// Where a window op's padding comes from.
struct Padding {
  std::vector<int64_t> begin, end;  // known pads per spatial dim
  bool same_at_run_time = false;    // SAME_* over spatial dims unknown here
  bool same_upper = true;
};

Result<Padding> window_padding(Emit& e, size_t spatial, const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                               const std::vector<int64_t>& dilations) {
  Padding p;
  std::string auto_pad = e.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    p.same_upper = auto_pad == "SAME_UPPER";
    auto dims = e.dims(0);
    bool known =
        dims && dims->size() == spatial + 2 && std::all_of(dims->begin() + 2, dims->end(), [](int64_t d) { return d >= 0; });
    if (!known) {
      p.same_at_run_time = true;
      p.begin.assign(spatial, 0);
      p.end.assign(spatial, 0);
      return p;
    }
    for (size_t i = 0; i < spatial; ++i) {
      int64_t in = (*dims)[i + 2];
      int64_t out = (in + strides[i] - 1) / strides[i];
      int64_t total = std::max<int64_t>((out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in, 0);
      int64_t small = total / 2;
      p.begin.push_back(p.same_upper ? small : total - small);
      p.end.push_back(p.same_upper ? total - small : small);
    }
    return p;
  }
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && !auto_pad.empty())
    return e.fail(fmt::format("unknown auto_pad '{}'", auto_pad));
  std::vector<int64_t> pads = e.attr_ints("pads");
  if (auto_pad == "VALID" || pads.empty()) pads.assign(2 * spatial, 0);
  if (pads.size() != 2 * spatial) return e.fail(fmt::format("pads has {} entries for {} spatial dims", pads.size(), spatial));
  p.begin.assign(pads.begin(), pads.begin() + static_cast<int64_t>(spatial));
  p.end.assign(pads.begin() + static_cast<int64_t>(spatial), pads.end());
  return p;
}

// Writes the explicit F.pad a window op needs before it (the asymmetric part
// of its pads, all of them when `all`, or SAME pads computed at run time);
// returns the padded input and leaves the symmetric rest in `symmetric`.
std::string pad_before(Emit& e, const std::string& x, const Padding& p, bool all, const std::string& value,
                       const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                       const std::vector<int64_t>& dilations, std::vector<int64_t>& symmetric) {
  const size_t n = p.begin.size();
  std::string value_arg = value.empty() ? "" : ", value=" + value;
  if (p.same_at_run_time) {
    symmetric.assign(n, 0);
    std::string padded = e.local(x + "_padded");
    e.line(fmt::format("{} = F.pad({}, {}({}, {}, {}, {}, {}){})  {}", padded, x, e.helper("onnx_same_pads"), x, py_list(kernel),
                       py_list(strides), py_list(dilations), py_bool(p.same_upper), value_arg, e.w.comment(e.node)));
    return padded;
  }
  std::vector<int64_t> extra_begin(n), extra_end(n);
  symmetric.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    symmetric[i] = all ? 0 : std::min(p.begin[i], p.end[i]);
    extra_begin[i] = p.begin[i] - symmetric[i];
    extra_end[i] = p.end[i] - symmetric[i];
  }
  std::vector<int64_t> order = torch_pad_order(extra_begin, extra_end);
  if (order.empty()) return x;
  std::string padded = e.local(x + "_padded");
  e.line(fmt::format("{} = F.pad({}, {}{})  {}", padded, x, py_list(order), value_arg, e.w.comment(e.node)));
  return padded;
}

// --- convolutions ---------------------------------------------------------------

Status emit_conv(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  auto wdims = e.dims(1);
  if (!wdims || wdims->size() < 3) return e.fail("the weight's rank must be known (3 to 5)");
  const size_t spatial = wdims->size() - 2;
  if (spatial > 3) return e.fail(fmt::format("PyTorch convolves over 1 to 3 dims, not {}", spatial));
  std::vector<int64_t> kernel(wdims->begin() + 2, wdims->end());
  if (std::any_of(kernel.begin(), kernel.end(), [](int64_t k) { return k < 0; })) return e.fail("the kernel's size is unknown");
  auto strides = attr_or(e, "strides", spatial, 1), dilations = attr_or(e, "dilations", spatial, 1);
  int64_t group = e.attr_int("group", 1);
  ONNXKIT_ASSIGN(Padding pads, window_padding(e, spatial, kernel, strides, dilations));
  std::vector<int64_t> symmetric;
  std::string input = pad_before(e, x, pads, false, "", kernel, strides, dilations, symmetric);

  std::string options;
  if (std::any_of(strides.begin(), strides.end(), [](int64_t s) { return s != 1; }))
    options += ", stride=" + int_or_tuple(strides);
  if (std::any_of(symmetric.begin(), symmetric.end(), [](int64_t s) { return s != 0; }))
    options += ", padding=" + int_or_tuple(symmetric);
  if (std::any_of(dilations.begin(), dilations.end(), [](int64_t s) { return s != 1; }))
    options += ", dilation=" + int_or_tuple(dilations);
  if (group != 1) options += fmt::format(", groups={}", group);

  const runtime::Tensor* weight = e.constant(1);
  const runtime::Tensor* bias = e.has(2) ? e.constant(2) : nullptr;
  if (weight != nullptr && is_float_type(static_cast<int32_t>(weight->dtype())) && (!e.has(2) || bias != nullptr)) {
    std::vector<ModuleWeight> weights = {{"weight", *weight}};
    if (bias != nullptr) weights.push_back({"bias", *bias});
    std::string m = e.module(fmt::format("nn.Conv{}d({}, {}, {}{}{})", spatial, weight->dim(1) * group, weight->dim(0),
                                         int_or_tuple(kernel), options, bias == nullptr ? ", bias=False" : ""),
                             std::move(weights));
    e.assign(0, fmt::format("{}({})", m, input));
    return {};
  }
  ONNXKIT_ASSIGN(std::string w, e.tensor(1));
  std::string b = "None";
  if (e.has(2)) {
    ONNXKIT_ASSIGN(b, e.tensor(2));
  }
  e.assign(0, fmt::format("F.conv{}d({}, {}, {}{})", spatial, input, w, b, options));
  return {};
}

Status emit_conv_transpose(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  auto wdims = e.dims(1);
  if (!wdims || wdims->size() < 3 || wdims->size() > 5) return e.fail("the weight's rank must be known (3 to 5)");
  const size_t spatial = wdims->size() - 2;
  std::vector<int64_t> kernel(wdims->begin() + 2, wdims->end());
  if (std::any_of(kernel.begin(), kernel.end(), [](int64_t k) { return k < 0; })) return e.fail("the kernel's size is unknown");
  if (e.has_attr("kernel_shape")) kernel = e.attr_ints("kernel_shape");
  auto strides = attr_or(e, "strides", spatial, 1), dilations = attr_or(e, "dilations", spatial, 1);
  auto output_padding = attr_or(e, "output_padding", spatial, 0);
  int64_t group = e.attr_int("group", 1);
  std::vector<int64_t> begin(spatial, 0), end(spatial, 0);
  std::string auto_pad = e.attr_string("auto_pad", "NOTSET");
  std::vector<int64_t> output_shape = e.attr_ints("output_shape");
  if (!output_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    auto dims = e.dims(0);
    if (!dims || dims->size() != spatial + 2 || std::any_of(dims->begin() + 2, dims->end(), [](int64_t d) { return d < 0; }))
      return e.fail("output_shape and SAME padding need the input's spatial dims, which are not static");
    if (output_shape.size() > spatial)
      output_shape.erase(output_shape.begin(), output_shape.end() - static_cast<int64_t>(spatial));
    for (size_t i = 0; i < spatial; ++i) {
      int64_t in = (*dims)[i + 2];
      int64_t target = output_shape.empty() ? in * strides[i] : output_shape[i];
      int64_t total = strides[i] * (in - 1) + output_padding[i] + (kernel[i] - 1) * dilations[i] + 1 - target;
      if (total < 0) {  // the output grows past the natural size: more output padding
        output_padding[i] -= total;
        total = 0;
      }
      bool upper = auto_pad != "SAME_LOWER";
      begin[i] = upper ? total / 2 : total - total / 2;
      end[i] = total - begin[i];
    }
  } else {
    std::vector<int64_t> pads = e.attr_ints("pads");
    if (!pads.empty()) {
      if (pads.size() != 2 * spatial) return e.fail("pads does not match the kernel's rank");
      begin.assign(pads.begin(), pads.begin() + static_cast<int64_t>(spatial));
      end.assign(pads.begin() + static_cast<int64_t>(spatial), pads.end());
    }
  }
  // torch pads (crops) both sides by `padding`; the rest is cropped after.
  std::vector<int64_t> padding(spatial), crop_begin(spatial), crop_end(spatial);
  for (size_t i = 0; i < spatial; ++i) {
    padding[i] = std::min(begin[i], end[i]);
    crop_begin[i] = begin[i] - padding[i];
    crop_end[i] = end[i] - padding[i];
    if (output_padding[i] >= std::max(strides[i], dilations[i])) {
      // torch refuses such output padding: add it as zeros-free growth instead.
      return e.fail("output_padding must be smaller than the stride or the dilation in PyTorch");
    }
  }
  std::string options;
  if (std::any_of(strides.begin(), strides.end(), [](int64_t s) { return s != 1; }))
    options += ", stride=" + int_or_tuple(strides);
  if (std::any_of(padding.begin(), padding.end(), [](int64_t s) { return s != 0; }))
    options += ", padding=" + int_or_tuple(padding);
  if (std::any_of(output_padding.begin(), output_padding.end(), [](int64_t s) { return s != 0; }))
    options += ", output_padding=" + int_or_tuple(output_padding);
  if (group != 1) options += fmt::format(", groups={}", group);
  if (std::any_of(dilations.begin(), dilations.end(), [](int64_t s) { return s != 1; }))
    options += ", dilation=" + int_or_tuple(dilations);

  const runtime::Tensor* weight = e.constant(1);
  const runtime::Tensor* bias = e.has(2) ? e.constant(2) : nullptr;
  std::string call;
  if (weight != nullptr && is_float_type(static_cast<int32_t>(weight->dtype())) && (!e.has(2) || bias != nullptr)) {
    std::vector<ModuleWeight> weights = {{"weight", *weight}};
    if (bias != nullptr) weights.push_back({"bias", *bias});
    std::string m = e.module(fmt::format("nn.ConvTranspose{}d({}, {}, {}{}{})", spatial, weight->dim(0), weight->dim(1) * group,
                                         int_or_tuple(kernel), options, bias == nullptr ? ", bias=False" : ""),
                             std::move(weights));
    call = fmt::format("{}({})", m, x);
  } else {
    // F.conv_transpose's positional order is (stride, padding, output_padding, groups, dilation): keywords here.
    ONNXKIT_ASSIGN(std::string w, e.tensor(1));
    std::string b = "None";
    if (e.has(2)) {
      ONNXKIT_ASSIGN(b, e.tensor(2));
    }
    call = fmt::format("F.conv_transpose{}d({}, {}, {}{})", spatial, x, w, b, options);
  }
  bool crop = std::any_of(crop_begin.begin(), crop_begin.end(), [](int64_t c) { return c != 0; }) ||
              std::any_of(crop_end.begin(), crop_end.end(), [](int64_t c) { return c != 0; });
  if (!crop) {
    e.assign(0, call);
    return {};
  }
  std::string full = e.local(e.node.output(0)->name() + "_full");
  e.line(fmt::format("{} = {}  {}", full, call, e.w.comment(e.node)));
  std::vector<std::string> index = {":", ":"};
  for (size_t i = 0; i < spatial; ++i)
    index.push_back(
        fmt::format("{}:{}", crop_begin[i] != 0 ? py_int(crop_begin[i]) : "", crop_end[i] != 0 ? py_int(-crop_end[i]) : ""));
  e.assign(0, fmt::format("{}[{}]", full, fmt::join(index, ", ")));
  return {};
}

// --- pooling ----------------------------------------------------------------------

struct Window {
  size_t spatial = 0;
  std::vector<int64_t> kernel, strides, dilations;
  Padding pads;
  bool ceil = false;
};

Result<Window> window_of(Emit& e) {
  Window w;
  w.kernel = e.attr_ints("kernel_shape");
  if (w.kernel.empty()) return e.fail("kernel_shape is required");
  w.spatial = w.kernel.size();
  if (w.spatial > 3) return e.fail(fmt::format("PyTorch pools over 1 to 3 dims, not {}", w.spatial));
  w.strides = attr_or(e, "strides", w.spatial, 1);
  w.dilations = attr_or(e, "dilations", w.spatial, 1);
  w.ceil = e.attr_int("ceil_mode", 0) != 0;
  ONNXKIT_ASSIGN(w.pads, window_padding(e, w.spatial, w.kernel, w.strides, w.dilations));
  return w;
}

// torch's pools take padding up to half the kernel, on both sides alike.
bool torch_can_pad(const Window& w) {
  if (w.pads.same_at_run_time) return false;
  for (size_t i = 0; i < w.spatial; ++i)
    if (w.pads.begin[i] != w.pads.end[i] || w.pads.begin[i] * 2 > w.kernel[i]) return false;
  return true;
}

std::string window_options(const Window& w, const std::vector<int64_t>& padding) {
  std::string options = ", " + int_or_tuple(w.kernel);
  if (w.strides != w.kernel) options += ", stride=" + int_or_tuple(w.strides);
  if (std::any_of(padding.begin(), padding.end(), [](int64_t p) { return p != 0; }))
    options += ", padding=" + int_or_tuple(padding);
  if (std::any_of(w.dilations.begin(), w.dilations.end(), [](int64_t d) { return d != 1; }))
    options += ", dilation=" + int_or_tuple(w.dilations);
  if (w.ceil) options += ", ceil_mode=True";
  return options;
}

Status emit_max_pool(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  ONNXKIT_ASSIGN(Window w, window_of(e));
  std::vector<int64_t> padding;
  std::string input = x;
  if (torch_can_pad(w)) {
    padding = w.pads.begin;
  } else {
    int32_t type = e.dtype(0);
    std::string lowest = is_float_type(type) || type == 0 ? "-math.inf" : fmt::format("torch.iinfo({}).min", torch_dtype(type));
    input = pad_before(e, x, w.pads, true, lowest, w.kernel, w.strides, w.dilations, padding);
  }
  int32_t type = e.dtype(0);
  bool integer = type != 0 && !is_float_type(type);
  // torch max-pools floats only; int8 and uint8 are exact in float32.
  std::string call = fmt::format("F.max_pool{}d({}{}{}", w.spatial, input, integer ? ".float()" : "", window_options(w, padding));
  if (!e.has_output(1)) {
    e.assign(0, call + ")" + (integer ? fmt::format(".to({})", torch_dtype(type)) : ""));
    return {};
  }
  if (input != x) return e.fail("the Indices output with padding PyTorch cannot apply itself");
  // torch's indices count within each (n, c) plane; ONNX's over the whole tensor.
  std::string plane = e.local(e.node.output(1)->name() + "_in_plane");
  e.line(fmt::format("{}, {} = {}, return_indices=True)  {}", e.output_name(0), plane, call, e.w.comment(e.node)));
  e.w.bind(e.node.output(0), {Kind::tensor, e.output_name(0), e.out_dtype(0)});
  e.assign(1, fmt::format("{}({}, {}, {})", e.helper("onnx_pool_indices"), plane, x, e.attr_int("storage_order", 0)));
  return {};
}

Status emit_average_pool(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  ONNXKIT_ASSIGN(Window w, window_of(e));
  if (std::any_of(w.dilations.begin(), w.dilations.end(), [](int64_t d) { return d != 1; }))
    return e.fail("PyTorch's average pooling has no dilation");
  bool include = e.attr_int("count_include_pad", 0) != 0;
  if (torch_can_pad(w)) {
    std::string call = fmt::format("F.avg_pool{}d({}{}", w.spatial, x, window_options(w, w.pads.begin));
    bool padded = std::any_of(w.pads.begin.begin(), w.pads.begin.end(), [](int64_t p) { return p != 0; });
    if (padded && !include) call += ", count_include_pad=False";
    e.assign(0, call + ")");
    return {};
  }
  std::vector<int64_t> none;
  std::string padded = pad_before(e, x, w.pads, true, "", w.kernel, w.strides, w.dilations, none);
  std::string pool = fmt::format("F.avg_pool{}d({{}}{})", w.spatial, window_options(w, none));
  if (include) {
    e.assign(0, fmt::format(fmt::runtime(pool), padded));
    return {};
  }
  // Padding explicit, the divisor must still count only the input's cells:
  // the same average of ones tells how many each window holds.
  std::string ones = e.local(x + "_ones");
  e.line(fmt::format("{} = torch.ones_like({})  {}", ones, x, e.w.comment(e.node)));
  std::string ones_padded = pad_before(e, ones, w.pads, true, "", w.kernel, w.strides, w.dilations, none);
  e.assign(0, fmt::format("{} / {}", fmt::format(fmt::runtime(pool), padded), fmt::format(fmt::runtime(pool), ones_padded)));
  return {};
}

Status emit_lp_pool(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  ONNXKIT_ASSIGN(Window w, window_of(e));
  if (std::any_of(w.dilations.begin(), w.dilations.end(), [](int64_t d) { return d != 1; }))
    return e.fail("PyTorch's average pooling, which this uses, has no dilation");
  std::vector<int64_t> none;
  std::string p = py_float(static_cast<double>(e.attr_int("p", 2)));
  std::string padded = pad_before(e, x, w.pads, true, "", w.kernel, w.strides, w.dilations, none);
  int64_t cells = 1;
  for (int64_t k : w.kernel) cells *= k;
  // sum |x|^p over each window, as an average times the window's size.
  e.assign(0, fmt::format("(F.avg_pool{}d({}.abs().pow({}){}) * {}).pow(1 / {})", w.spatial, padded, p, window_options(w, none),
                          cells, p));
  return {};
}

// Over every dim from 2: GlobalAveragePool, GlobalMaxPool, GlobalLpPool.
Result<std::string> spatial_dims(Emit& e) {
  auto rank = e.rank(0);
  if (!rank) {
    ONNXKIT_ASSIGN(std::string x, e.tensor(0));
    return fmt::format("tuple(range(2, {}.dim()))", x);
  }
  std::vector<int64_t> dims;
  for (int64_t d = 2; d < *rank; ++d) dims.push_back(d);
  return py_tuple(dims);
}

Status emit_global_average_pool(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  ONNXKIT_ASSIGN(std::string dims, spatial_dims(e));
  e.assign(0, fmt::format("{}.mean(dim={}, keepdim=True)", x, dims));
  return {};
}

Status emit_global_max_pool(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  ONNXKIT_ASSIGN(std::string dims, spatial_dims(e));
  e.assign(0, fmt::format("{}.amax(dim={}, keepdim=True)", x, dims));
  return {};
}

Status emit_global_lp_pool(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  ONNXKIT_ASSIGN(std::string dims, spatial_dims(e));
  std::string p = py_float(static_cast<double>(e.attr_int("p", 2)));
  e.assign(0, fmt::format("{}.abs().pow({}).sum(dim={}, keepdim=True).pow(1 / {})", x, p, dims, p));
  return {};
}

// --- normalization ----------------------------------------------------------------

std::string eps_option(float eps, float fallback) { return eps == fallback ? "" : ", eps=" + py_float(eps); }

bool all_constant(Emit& e, std::initializer_list<size_t> inputs) {
  for (size_t i : inputs)
    if (e.constant(i) == nullptr || !is_float_type(static_cast<int32_t>(e.constant(i)->dtype()))) return false;
  return true;
}

Status emit_batch_norm(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  if (e.attr_int("training_mode", 0) != 0 || e.has_output(1) || e.has_output(2))
    return e.fail("training-mode BatchNormalization (batch statistics as outputs) is not converted");
  if (e.opset < 9 && e.attr_int("spatial", 1) == 0) return e.fail("spatial=0 (opset < 9) has no PyTorch form");
  float eps = e.attr_float("epsilon", 1e-5f);
  auto rank = e.rank(0);
  if (rank && *rank >= 2 && *rank <= 5 && all_constant(e, {1, 2, 3, 4})) {
    int d = *rank <= 3 ? 1 : static_cast<int>(*rank) - 2;
    const runtime::Tensor& scale = *e.constant(1);
    // ONNX's momentum weighs the running statistics, torch's the new batch.
    double momentum = 1.0 - e.attr_float("momentum", 0.9f);
    std::string options = eps_option(eps, 1e-5f);
    if (std::fabs(momentum - 0.1) > 1e-6) options += fmt::format(", momentum={:.6g}", momentum);
    runtime::Tensor batches(runtime::DataType::int64, {});
    batches.mutable_data<int64_t>()[0] = 0;
    std::string m =
        e.module(fmt::format("nn.BatchNorm{}d({}{})", d, scale.numel(), options), {{"weight", scale},
                                                                                   {"bias", *e.constant(2)},
                                                                                   {"running_mean", *e.constant(3), false},
                                                                                   {"running_var", *e.constant(4), false},
                                                                                   {"num_batches_tracked", batches, false}});
    e.assign(0, fmt::format("{}({})", m, x));
    return {};
  }
  std::vector<std::string> args;
  for (size_t i : {3, 4, 1, 2}) {
    ONNXKIT_ASSIGN(std::string a, e.tensor(i));
    args.push_back(a);
  }
  e.assign(0, fmt::format("F.batch_norm({}, {}, {}, weight={}, bias={}, training=False{})", x, args[0], args[1], args[2], args[3],
                          eps_option(eps, 1e-5f)));
  return {};
}

Status emit_instance_norm(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  float eps = e.attr_float("epsilon", 1e-5f);
  auto rank = e.rank(0);
  if (rank && *rank >= 3 && *rank <= 5 && all_constant(e, {1, 2})) {
    const runtime::Tensor& scale = *e.constant(1);
    std::string m =
        e.module(fmt::format("nn.InstanceNorm{}d({}{}, affine=True)", *rank - 2, scale.numel(), eps_option(eps, 1e-5f)),
                 {{"weight", scale}, {"bias", *e.constant(2)}});
    e.assign(0, fmt::format("{}({})", m, x));
    return {};
  }
  ONNXKIT_ASSIGN(std::string scale, e.tensor(1));
  ONNXKIT_ASSIGN(std::string bias, e.tensor(2));
  e.assign(0, fmt::format("F.instance_norm({}, weight={}, bias={}{})", x, scale, bias, eps_option(eps, 1e-5f)));
  return {};
}

Status emit_layer_norm(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  float eps = e.attr_float("epsilon", 1e-5f);
  if (e.has_output(1) || e.has_output(2)) {  // the statistics too
    ONNXKIT_ASSIGN(std::string scale, e.tensor(1));
    std::string bias = "None";
    if (e.has(2)) {
      ONNXKIT_ASSIGN(bias, e.tensor(2));
    }
    e.assign_many({0, 1, 2}, fmt::format("{}({}, {}, {}, {}, {})", e.helper("onnx_layer_norm"), x, scale, bias,
                                         e.attr_int("axis", -1), py_float(eps)));
    for (size_t k = 0; k < 3; ++k)
      if (e.has_output(k)) e.w.bind(e.node.output(k), {Kind::tensor, e.output_name(k), e.out_dtype(k)});
    return {};
  }
  auto rank = e.rank(0);
  auto axis = non_negative_axis(e.attr_int("axis", -1), rank);
  const runtime::Tensor* scale = e.constant(1);
  const runtime::Tensor* bias = e.has(2) ? e.constant(2) : nullptr;
  if (axis && rank && scale != nullptr && is_float_type(static_cast<int32_t>(scale->dtype())) &&
      static_cast<int64_t>(scale->rank()) == *rank - *axis &&
      (!e.has(2) || (bias != nullptr && bias->shape() == scale->shape()))) {
    runtime::Tensor b = bias != nullptr ? *bias : runtime::Tensor(scale->dtype(), scale->shape());
    if (bias == nullptr) std::memset(b.mutable_raw(), 0, b.nbytes());
    std::string shape = scale->rank() == 1 ? py_int(scale->dim(0)) : py_tuple(scale->shape());
    std::string m = e.module(fmt::format("nn.LayerNorm({}{})", shape, eps_option(eps, 1e-5f)), {{"weight", *scale}, {"bias", b}});
    e.assign(0, fmt::format("{}({})", m, x));
    return {};
  }
  ONNXKIT_ASSIGN(std::string s, e.tensor(1));
  std::string shape = axis ? fmt::format("{}.shape[{}:]", x, *axis) : fmt::format("{}.shape[{}:]", x, e.attr_int("axis", -1));
  std::string expr = fmt::format("F.layer_norm({}, {}{}) * {}", x, shape, eps_option(eps, 1e-5f), s);
  if (e.has(2)) {
    ONNXKIT_ASSIGN(std::string b, e.tensor(2));
    expr += " + " + b;
  }
  e.assign(0, expr);
  return {};
}

Status emit_group_norm(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  int64_t groups = e.attr_int("num_groups", 0);
  float eps = e.attr_float("epsilon", 1e-5f);
  const runtime::Tensor* scale = e.constant(1);
  const runtime::Tensor* bias = e.constant(2);
  auto dims = e.dims(0);
  int64_t channels = dims && dims->size() >= 2 ? (*dims)[1] : -1;
  if (scale != nullptr && bias != nullptr && channels > 0 && groups > 0 && channels % groups == 0) {
    runtime::Tensor w = *scale, b = *bias;
    if (scale->numel() == groups && channels != groups) {
      // Opset 18 scales each group; nn.GroupNorm each channel: repeat.
      int64_t per = channels / groups;
      auto widen = [&](const runtime::Tensor& t) {
        runtime::Tensor out(t.dtype(), {channels});
        size_t size = runtime::element_size(t.dtype());
        for (int64_t c = 0; c < channels; ++c)
          std::memcpy(static_cast<char*>(out.mutable_raw()) + c * size, static_cast<const char*>(t.raw()) + (c / per) * size,
                      size);
        return out;
      };
      w = widen(*scale);
      b = widen(*bias);
    }
    if (w.numel() == channels) {
      std::string m =
          e.module(fmt::format("nn.GroupNorm({}, {}{})", groups, channels, eps_option(eps, 1e-5f)), {{"weight", w}, {"bias", b}});
      e.assign(0, fmt::format("{}({})", m, x));
      return {};
    }
  }
  return e.fail("needs constant scale and bias and a static channel count");
}

Status emit_lrn(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  int64_t size = e.attr_int("size", 0);
  std::string alpha = py_float(e.attr_float("alpha", 1e-4f)), beta = py_float(e.attr_float("beta", 0.75f));
  std::string bias = py_float(e.attr_float("bias", 1.0f));  // torch calls it k
  if (size % 2 == 1) {
    e.assign(0, fmt::format("F.local_response_norm({}, {}, alpha={}, beta={}, k={})", x, size, alpha, beta, bias));
    return {};
  }
  // An even window: torch centres it one channel later than ONNX.
  e.assign(0, fmt::format("{}({}, {}, {}, {}, {})", e.helper("onnx_lrn"), x, size, alpha, beta, bias));
  return {};
}

Status emit_lp_normalization(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  int64_t axis = e.attr_int("axis", -1), p = e.attr_int("p", 2);
  if (p == 1) e.assign(0, fmt::format("{} / {}.abs().sum(dim={}, keepdim=True)", x, x, axis));
  else if (p == 2) e.assign(0, fmt::format("{} / {}.square().sum(dim={}, keepdim=True).sqrt()", x, x, axis));
  else return e.fail(fmt::format("p={} (ONNX allows 1 and 2)", p));
  return {};
}

Status emit_mvn(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  std::vector<int64_t> axes = e.attr_ints("axes");
  if (axes.empty()) axes = {0, 2, 3};
  std::string dims = py_tuple(axes);
  std::string mean = e.local(x + "_mean");
  e.line(fmt::format("{} = {}.mean(dim={}, keepdim=True)  {}", mean, x, dims, e.w.comment(e.node)));
  // ONNX's definition: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9)
  e.assign(0, fmt::format("({} - {}) / (({}.square().mean(dim={}, keepdim=True) - {}.square()).sqrt() + 1e-9)", x, mean, x, dims,
                          mean));
  return {};
}

// --- softmax ----------------------------------------------------------------------

Status softmax_like(Emit& e, const char* function) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  int64_t axis = e.attr_int("axis", e.opset >= 13 ? -1 : 1);
  std::string name = function;
  if (e.opset >= 13) {
    if (name == "hardmax") {
      e.assign(0, fmt::format("F.one_hot({x}.argmax(dim={a}), {x}.shape[{a}]).movedim(-1, {a}).to({x}.dtype)", fmt::arg("x", x),
                              fmt::arg("a", axis)));
    } else {
      e.assign(0, fmt::format("F.{}({}, dim={})", function, x, axis));
    }
    return {};
  }
  // Before opset 13 the input is seen as 2-D: [dims before axis, dims from axis].
  auto ax = non_negative_axis(axis, e.rank(0));
  if (!ax) return e.fail("a negative axis over an input of unknown rank");
  std::string flat = e.local(x + "_2d");
  e.line(fmt::format("{} = {}.flatten({})  {}", flat, x, *ax, e.w.comment(e.node)));
  if (name == "hardmax")
    e.assign(0, fmt::format("F.one_hot({f}.argmax(dim=-1), {f}.shape[-1]).to({x}.dtype).reshape({x}.shape)", fmt::arg("f", flat),
                            fmt::arg("x", x)));
  else e.assign(0, fmt::format("F.{}({}, dim=-1).reshape({}.shape)", function, flat, x));
  return {};
}

Status emit_softmax(Emit& e) { return softmax_like(e, "softmax"); }
Status emit_log_softmax(Emit& e) { return softmax_like(e, "log_softmax"); }
Status emit_hardmax(Emit& e) { return softmax_like(e, "hardmax"); }

Status emit_dropout(Emit& e) {
  if (e.has(2)) {
    auto training = e.constant_number(2);
    // Training mode with a ratio of 0 (torchvision's attention dropout) keeps everything too.
    auto ratio = e.has(1) ? e.constant_number(1) : std::optional<double>(0.5);
    if ((!training || *training != 0) && !(ratio && *ratio == 0))
      return e.fail("training-mode Dropout is random; only inference Dropout converts");
  }
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  e.assign(0, x);
  if (e.has_output(1)) e.assign(1, fmt::format("torch.ones_like({}, dtype=torch.bool)", x));
  return {};
}

// --- Gemm, MatMul -----------------------------------------------------------------

Status emit_gemm(Emit& e) {
  ONNXKIT_ASSIGN(std::string a, e.tensor(0));
  float alpha = e.attr_float("alpha", 1.0f), beta = e.attr_float("beta", 1.0f);
  bool trans_a = e.attr_int("transA", 0) != 0, trans_b = e.attr_int("transB", 0) != 0;
  const runtime::Tensor* b = e.constant(1);
  const runtime::Tensor* c = e.has(2) ? e.constant(2) : nullptr;
  if (b != nullptr && b->rank() == 2 && is_float_type(static_cast<int32_t>(b->dtype())) && !trans_a && alpha == 1.0f) {
    int64_t n = trans_b ? b->dim(0) : b->dim(1), k = trans_b ? b->dim(1) : b->dim(0);
    bool bias_fits = !e.has(2) || (c != nullptr && beta == 1.0f && c->numel() == n && c->rank() >= 1 && c->shape().back() == n);
    if (bias_fits) {
      std::vector<ModuleWeight> weights = {{"weight", trans_b ? *b : transpose_2d(*b)}};
      if (c != nullptr) weights.push_back({"bias", c->reshaped({n})});
      std::string m = e.module(fmt::format("nn.Linear({}, {}{})", k, n, c == nullptr ? ", bias=False" : ""), std::move(weights));
      e.assign(0, fmt::format("{}({})", m, a));
      return {};
    }
  }
  ONNXKIT_ASSIGN(std::string bt, e.tensor(1));
  std::string expr = fmt::format("{} @ {}", trans_a ? a + ".t()" : a, trans_b ? bt + ".t()" : bt);
  if (alpha != 1.0f) expr = fmt::format("{} * ({})", py_float(alpha), expr);
  if (e.has(2) && beta != 0.0f) {
    ONNXKIT_ASSIGN(std::string ct, e.operand(2, std::nullopt));
    expr += beta == 1.0f ? fmt::format(" + {}", ct) : fmt::format(" + {} * {}", py_float(beta), ct);
  }
  e.assign(0, expr);
  return {};
}

// The Add after a MatMul that makes it nn.Linear with a bias: its other
// operand a constant [N], nothing else reading the product.
const ir::Node* bias_add(Emit& e, int64_t n, size_t& bias_input) {
  const ir::Value* product = e.node.output(0);
  if (product->is_any_graph_output()) return nullptr;
  auto users = e.consumers(0);
  if (users.size() != 1 || !users[0]->is_onnx_op("Add")) return nullptr;
  const ir::Node* add = users[0];
  bias_input = add->input(0) == product ? 1 : 0;
  if (add->input(1 - bias_input) != product || add->input(bias_input) == product) return nullptr;
  const runtime::Tensor* bias = e.w.constant(add->input(bias_input));
  if (bias == nullptr || bias->rank() != 1 || bias->dim(0) != n || bias->dtype() != e.constant(1)->dtype()) return nullptr;
  return add;
}

Status emit_matmul(Emit& e) {
  ONNXKIT_ASSIGN(std::string a, e.tensor(0));
  const runtime::Tensor* b = e.constant(1);
  auto a_rank = e.rank(0);
  if (b != nullptr && b->rank() == 2 && is_float_type(static_cast<int32_t>(b->dtype())) && (!a_rank || *a_rank >= 1)) {
    int64_t k = b->dim(0), n = b->dim(1);
    size_t bias_input = 0;
    const ir::Node* add = bias_add(e, n, bias_input);
    std::vector<ModuleWeight> weights = {{"weight", transpose_2d(*b)}};
    if (add != nullptr) weights.push_back({"bias", *e.w.constant(add->input(bias_input))});
    std::string m = e.module(fmt::format("nn.Linear({}, {}{})", k, n, add == nullptr ? ", bias=False" : ""), std::move(weights));
    if (add == nullptr) {
      e.assign(0, fmt::format("{}({})", m, a));
      return {};
    }
    // One statement for both nodes, named after the sum.
    std::string name = e.local(add->output(0)->name());
    e.line(fmt::format("{} = {}({})  {} + {}", name, m, a, e.w.comment(e.node), add->name().empty() ? "Add" : add->name()));
    PyValue py{Kind::tensor, name, e.out_dtype(0)};
    e.alias(e.node.output(0), py);
    e.alias(add->output(0), py);
    e.absorb(*add);
    return {};
  }
  ONNXKIT_ASSIGN(std::string bt, e.tensor(1));
  e.assign(0, fmt::format("{} @ {}", a, bt));
  return {};
}

}  // namespace

void add_nn_emitters(EmitterTable& t) {
  t.insert({
      {"Conv", emit_conv},
      {"ConvTranspose", emit_conv_transpose},
      {"MaxPool", emit_max_pool},
      {"AveragePool", emit_average_pool},
      {"LpPool", emit_lp_pool},
      {"GlobalAveragePool", emit_global_average_pool},
      {"GlobalMaxPool", emit_global_max_pool},
      {"GlobalLpPool", emit_global_lp_pool},
      {"BatchNormalization", emit_batch_norm},
      {"InstanceNormalization", emit_instance_norm},
      {"LayerNormalization", emit_layer_norm},
      {"GroupNormalization", emit_group_norm},
      {"LRN", emit_lrn},
      {"LpNormalization", emit_lp_normalization},
      {"MeanVarianceNormalization", emit_mvn},
      {"Softmax", emit_softmax},
      {"LogSoftmax", emit_log_softmax},
      {"Hardmax", emit_hardmax},
      {"Dropout", emit_dropout},
      {"Gemm", emit_gemm},
      {"MatMul", emit_matmul},
  });
}

}  // namespace onnxkit::tools::pytorch
