// The rest: resizing, linear algebra, detection, quantization, signal.

#include <fmt/format.h>

#include <algorithm>

#include "tools/pytorch/emitter.h"
#include "tools/pytorch/writer.h"

namespace onnxkit::tools::pytorch {

namespace {

// --- Resize, Upsample ---------------------------------------------------------------
//
// F.interpolate where its rules are ONNX's (only the spatial dims resized):
//   nearest, asymmetric, floor             -> "nearest"
//   nearest, half_pixel, round_prefer_ceil -> "nearest-exact"
//   linear, half_pixel or pytorch_half_pixel, output dims > 1 -> "bilinear"... (align_corners=False)
//   linear or cubic (a = -0.75, no exclude_outside), align_corners -> align_corners=True
//   cubic, half_pixel or pytorch_half_pixel -> "bicubic"
// and _onnx_resize, ONNX's definition axis by axis, for everything else.

struct ResizeSpec {
  std::string mode = "nearest", coord = "half_pixel", nearest = "round_prefer_floor";
  float cubic_a = -0.75f;
  bool exclude_outside = false, antialias = false;
  float extrapolation = 0;
  std::string policy = "stretch";
  std::optional<std::vector<int64_t>> axes;
  int roi = -1, scales = -1, sizes = -1;            // inputs
  std::optional<std::vector<float>> scales_attribute;  // Upsample-7
};

// The elements of a float constant.
std::optional<std::vector<double>> constant_floats(Emit& e, size_t i) {
  const runtime::Tensor* t = e.constant(i);
  if (t == nullptr || !is_float_type(static_cast<int32_t>(t->dtype()))) return std::nullopt;
  std::vector<double> v;
  Status st = runtime::dispatch_float(t->dtype(), [&]<class T>() -> Status {
    for (const T& x : t->values<T>()) v.push_back(static_cast<double>(x));
    return {};
  });
  if (!st.ok()) return std::nullopt;
  return v;
}

// An optional Resize input that is given and not an empty constant.
bool present(Emit& e, int i) {
  if (i < 0 || !e.has(static_cast<size_t>(i))) return false;
  const runtime::Tensor* t = e.constant(static_cast<size_t>(i));
  return t == nullptr || t->numel() > 0;
}

Status emit_resize_with(Emit& e, const ResizeSpec& s) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  auto rank = e.rank(0);
  bool has_sizes = present(e, s.sizes), has_scales = s.scales_attribute || present(e, s.scales);
  if (!has_sizes && !has_scales) return e.fail("neither scales nor sizes is given");
  std::optional<std::vector<double>> scales;
  if (s.scales_attribute) scales = std::vector<double>(s.scales_attribute->begin(), s.scales_attribute->end());
  else if (has_scales) scales = constant_floats(e, static_cast<size_t>(s.scales));
  std::optional<std::vector<std::string>> size_items;
  if (has_sizes) {
    if (auto c = e.constant_ints(static_cast<size_t>(s.sizes))) {
      size_items = std::vector<std::string>();
      for (int64_t v : *c) size_items->push_back(py_int(v));
    } else if (const PyValue* py = e.value(static_cast<size_t>(s.sizes)); py && py->kind == Kind::ints) {
      size_items = py->elements;
    }
  }

  // --- F.interpolate, where it computes what ONNX does
  std::string torch_mode;
  bool align = false;
  if (s.mode == "nearest" && s.coord == "asymmetric" && s.nearest == "floor") torch_mode = "nearest";
  if (s.mode == "nearest" && s.coord == "asymmetric" && s.nearest == "simple" && scales &&
      std::all_of(scales->begin(), scales->end(), [](double v) { return v >= 1; }))
    torch_mode = "nearest";  // Upsample rounds down when upsampling
  if (s.mode == "nearest" && s.coord == "half_pixel" && s.nearest == "round_prefer_ceil") torch_mode = "nearest-exact";
  bool plain_cubic = s.cubic_a == -0.75f && !s.exclude_outside;
  if ((s.mode == "linear" || (s.mode == "cubic" && plain_cubic)) && s.coord == "align_corners") align = true;
  if (s.mode == "linear" && (s.coord == "half_pixel" || s.coord == "pytorch_half_pixel" || align)) torch_mode = "linear";
  if (s.mode == "cubic" && plain_cubic && (s.coord == "half_pixel" || s.coord == "pytorch_half_pixel" || align)) torch_mode = "bicubic";
  if (torch_mode == "linear" && rank) torch_mode = *rank == 3 ? "linear" : *rank == 4 ? "bilinear" : "trilinear";
  if (torch_mode == "bicubic" && (!rank || *rank != 4)) torch_mode.clear();
  bool usable = !torch_mode.empty() && rank && *rank >= 3 && *rank <= 5 && !s.axes && s.policy == "stretch" && !s.antialias;
  if (usable && (torch_mode == "linear" || torch_mode == "bilinear" || torch_mode == "trilinear") && s.coord == "half_pixel") {
    // half_pixel and torch differ for an output dim of 1.
    auto out = e.out_dims(0);
    usable = out && std::all_of(out->begin() + 2, out->end(), [](int64_t d) { return d > 1; });
  }
  std::string size_arg;
  if (usable && size_items && size_items->size() == static_cast<size_t>(*rank)) {
    auto dims = e.dims(0);
    for (size_t d = 0; d < 2; ++d) {
      bool same = (*size_items)[d] == fmt::format("{}.shape[{}]", x, d) ||
                  (dims && (*dims)[d] >= 0 && (*size_items)[d] == py_int((*dims)[d]));
      usable = usable && same;
    }
    std::vector<std::string> spatial(size_items->begin() + 2, size_items->end());
    size_arg = "size=" + py_tuple(spatial);
  } else if (usable && scales && !has_sizes && scales->size() == static_cast<size_t>(*rank)) {
    usable = (*scales)[0] == 1 && (*scales)[1] == 1;
    std::vector<std::string> spatial;
    for (size_t d = 2; d < scales->size(); ++d) spatial.push_back(py_float((*scales)[d]));
    size_arg = "scale_factor=" + py_tuple(spatial);
  } else {
    usable = false;
  }
  if (usable) {
    std::string options = fmt::format(", mode=\"{}\"", torch_mode);
    if (torch_mode != "nearest" && torch_mode != "nearest-exact") options += fmt::format(", align_corners={}", py_bool(align));
    e.assign(0, fmt::format("F.interpolate({}, {}{})", x, size_arg, options));
    return {};
  }

  // --- ONNX's definition
  std::string sizes_arg = "None", scales_arg = "None", roi_arg = "None";
  if (has_sizes) {
    ONNXKIT_ASSIGN(sizes_arg, e.ints(static_cast<size_t>(s.sizes)));
  } else if (scales) {
    std::vector<std::string> items;
    for (double v : *scales) items.push_back(py_float(v));
    scales_arg = py_list(items);
  } else {
    ONNXKIT_ASSIGN(std::string t, e.tensor(static_cast<size_t>(s.scales)));
    scales_arg = t + ".tolist()";
  }
  if (s.coord == "tf_crop_and_resize" && present(e, s.roi)) {
    ONNXKIT_ASSIGN(std::string t, e.tensor(static_cast<size_t>(s.roi)));
    roi_arg = t + ".tolist()";
  }
  e.assign(0, fmt::format("{}({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {})", e.helper("onnx_resize"), x, sizes_arg, scales_arg,
                          roi_arg, py_str(s.mode), py_str(s.coord), py_str(s.nearest), py_float(s.cubic_a),
                          py_bool(s.exclude_outside), py_float(s.extrapolation), py_bool(s.antialias), py_str(s.policy),
                          s.axes ? py_list(*s.axes) : "None"));
  return {};
}

Status emit_resize(Emit& e) {
  ResizeSpec s;
  s.mode = e.attr_string("mode", "nearest");
  if (e.opset < 11) {
    s.coord = "asymmetric";
    s.nearest = "simple";
    s.scales = 1;
  } else {
    s.coord = e.attr_string("coordinate_transformation_mode", "half_pixel");
    s.nearest = e.attr_string("nearest_mode", "round_prefer_floor");
    s.cubic_a = e.attr_float("cubic_coeff_a", -0.75f);
    s.exclude_outside = e.attr_int("exclude_outside", 0) != 0;
    s.extrapolation = e.attr_float("extrapolation_value", 0.0f);
    s.roi = 1;
    s.scales = 2;
    s.sizes = 3;
    if (e.opset >= 18) {
      s.antialias = e.attr_int("antialias", 0) != 0;
      s.policy = e.attr_string("keep_aspect_ratio_policy", "stretch");
      if (e.has_attr("axes")) s.axes = e.attr_ints("axes");
    }
  }
  return emit_resize_with(e, s);
}

Status emit_upsample(Emit& e) {
  ResizeSpec s;
  s.mode = e.attr_string("mode", "nearest");
  if (s.mode == "bilinear") s.mode = "linear";
  s.coord = "asymmetric";
  s.nearest = "simple";
  if (e.opset < 9) {
    std::vector<float> scales = e.attr_floats("scales");
    s.scales_attribute = scales;
  } else {
    s.scales = 1;
  }
  return emit_resize_with(e, s);
}

// --- linear algebra -----------------------------------------------------------------

Status emit_einsum(Emit& e) {
  std::vector<std::string> xs;
  for (size_t i = 0; i < e.num_inputs(); ++i) {
    ONNXKIT_ASSIGN(std::string x, e.tensor(i));
    xs.push_back(x);
  }
  e.assign(0, fmt::format("torch.einsum({}, {})", py_str(e.attr_string("equation", "")), fmt::join(xs, ", ")));
  return {};
}

Status emit_det(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  e.assign(0, fmt::format("torch.linalg.det({})", x));
  return {};
}

}  // namespace

void add_misc_emitters(EmitterTable& t) {
  t.insert({
      {"Resize", emit_resize},
      {"Upsample", emit_upsample},
      {"Einsum", emit_einsum},
      {"Det", emit_det},
  });
}

}  // namespace onnxkit::tools::pytorch
