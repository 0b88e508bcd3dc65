// The rest: resizing, linear algebra, detection, quantization, signal.

#include <fmt/format.h>

#include <algorithm>

#include "io/tensor_proto.h"
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
  int roi = -1, scales = -1, sizes = -1;               // inputs
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
  if (s.mode == "cubic" && plain_cubic && (s.coord == "half_pixel" || s.coord == "pytorch_half_pixel" || align))
    torch_mode = "bicubic";
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
  e.assign(
      0, fmt::format("{}({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {})", e.helper("onnx_resize"), x, sizes_arg, scales_arg,
                     roi_arg, py_str(s.mode), py_str(s.coord), py_str(s.nearest), py_float(s.cubic_a), py_bool(s.exclude_outside),
                     py_float(s.extrapolation), py_bool(s.antialias), py_str(s.policy), s.axes ? py_list(*s.axes) : "None"));
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

// --- losses -----------------------------------------------------------------------

std::string loss_options(Emit& e, size_t weight_input, std::string& weight) {
  std::string options;
  if (e.has(weight_input)) options += ", weight=" + weight;
  if (e.has_attr("ignore_index")) options += fmt::format(", ignore_index={}", e.attr_int("ignore_index", -100));
  std::string reduction = e.attr_string("reduction", "mean");
  if (reduction != "mean") options += fmt::format(", reduction=\"{}\"", reduction);
  return options;
}

Status emit_nll_loss(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  ONNXKIT_ASSIGN(std::string target, e.tensor(1));
  std::string weight;
  if (e.has(2)) {
    ONNXKIT_ASSIGN(weight, e.tensor(2));
  }
  e.assign(0, fmt::format("F.nll_loss({}, {}.long(){})", x, target, loss_options(e, 2, weight)));
  return {};
}

Status emit_softmax_cross_entropy(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  ONNXKIT_ASSIGN(std::string target, e.tensor(1));
  std::string weight;
  if (e.has(2)) {
    ONNXKIT_ASSIGN(weight, e.tensor(2));
  }
  std::string log_prob = e.has_output(1) ? e.output_name(1) : e.local(e.node.output(0)->name() + "_log_prob");
  e.line(fmt::format("{} = F.log_softmax({}, dim=1)  {}", log_prob, x, e.w.comment(e.node)));
  e.assign(0, fmt::format("F.nll_loss({}, {}.long(){})", log_prob, target, loss_options(e, 2, weight)));
  return {};
}

// --- signal -----------------------------------------------------------------------

Status window(Emit& e, const char* function, const char* extra) {
  ONNXKIT_ASSIGN(std::string size, e.integer(0));
  std::string dtype = torch_dtype(static_cast<int32_t>(e.attr_int("output_datatype", onnx::TensorProto::FLOAT)));
  if (dtype.empty()) return e.fail("torch has no tensors of output_datatype");
  e.assign(0, fmt::format("torch.{}({}, periodic={}{}, dtype={})", function, size, py_bool(e.attr_int("periodic", 1) != 0), extra,
                          dtype));
  return {};
}

Status emit_hann_window(Emit& e) { return window(e, "hann_window", ""); }
// ONNX's Hamming coefficients are 25/46 and 21/46, not torch's 0.54 and 0.46.
Status emit_hamming_window(Emit& e) { return window(e, "hamming_window", ", alpha=25 / 46, beta=21 / 46"); }
Status emit_blackman_window(Emit& e) { return window(e, "blackman_window", ""); }

Status emit_dft(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  std::string length = "None";
  if (e.has(1)) {
    ONNXKIT_ASSIGN(length, e.integer(1));
  }
  std::string axis = py_int(e.attr_int("axis", 1));
  if (e.opset >= 20) {
    axis = "-2";
    if (e.has(2)) {
      ONNXKIT_ASSIGN(axis, e.integer(2));
    }
  }
  e.assign(0, fmt::format("{}({}, {}, {}, {}, {})", e.helper("onnx_dft"), x, length, axis, py_bool(e.attr_int("inverse", 0) != 0),
                          py_bool(e.attr_int("onesided", 0) != 0)));
  return {};
}

// --- quantization -------------------------------------------------------------------

Status emit_quantize_linear(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  ONNXKIT_ASSIGN(std::string scale, e.tensor(1));
  std::string zero = "None";
  if (e.has(2)) {
    ONNXKIT_ASSIGN(zero, e.tensor(2));
  }
  int32_t type = e.out_dtype(0) != 0 ? e.out_dtype(0) : (e.has(2) ? e.dtype(2) : onnx::TensorProto::UINT8);
  std::string dtype = torch_dtype(type);
  if (dtype.empty()) return e.fail(fmt::format("torch has no {} tensors", io::data_type_name(type)));
  e.assign(0, fmt::format("{}({}, {}, {}, {}, {})", e.helper("onnx_quantize"), x, scale, zero, e.attr_int("axis", 1), dtype));
  return {};
}

Status emit_dequantize_linear(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  ONNXKIT_ASSIGN(std::string scale, e.tensor(1));
  std::string zero = "None";
  if (e.has(2)) {
    ONNXKIT_ASSIGN(zero, e.tensor(2));
  }
  e.assign(0, fmt::format("{}({}, {}, {}, {})", e.helper("onnx_dequantize"), x, scale, zero, e.attr_int("axis", 1)));
  return {};
}

Status emit_dynamic_quantize_linear(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  e.assign_many({0, 1, 2}, fmt::format("{}({})", e.helper("onnx_dynamic_quantize"), x));
  for (size_t k = 0; k < 3; ++k)
    if (e.has_output(k)) e.w.bind(e.node.output(k), {Kind::tensor, e.output_name(k), e.out_dtype(k)});
  return {};
}

Result<std::string> zero_point_or(Emit& e, size_t i) {
  if (!e.has(i)) return std::string("0");
  return e.tensor(i);
}

Status emit_matmul_integer(Emit& e) {
  ONNXKIT_ASSIGN(std::string a, e.tensor(0));
  ONNXKIT_ASSIGN(std::string b, e.tensor(1));
  ONNXKIT_ASSIGN(std::string az, zero_point_or(e, 2));
  ONNXKIT_ASSIGN(std::string bz, zero_point_or(e, 3));
  // A per-row zero point of A ([M]) pairs with A's rows.
  if (e.has(2) && e.rank(2) && *e.rank(2) == 1) az = fmt::format("{}.reshape(-1, 1)", az);
  e.assign(0, fmt::format("((({}.long() - {}) @ ({}.long() - {})).to(torch.int32))", a, az == "0" ? "0" : az + ".long()", b,
                          bz == "0" ? "0" : bz + ".long()"));
  return {};
}

Status emit_conv_integer(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  ONNXKIT_ASSIGN(std::string w, e.tensor(1));
  ONNXKIT_ASSIGN(std::string xz, zero_point_or(e, 2));
  ONNXKIT_ASSIGN(std::string wz, zero_point_or(e, 3));
  e.assign(0, fmt::format("{}({}, {}, {}, {}, {}, {}, {}, {}, {})", e.helper("onnx_conv_integer"), x, w, xz, wz,
                          py_list(e.attr_ints("strides")), py_list(e.attr_ints("pads")), py_list(e.attr_ints("dilations")),
                          e.attr_int("group", 1), py_str(e.attr_string("auto_pad", "NOTSET"))));
  return {};
}

Status emit_qlinear_matmul(Emit& e) {
  std::vector<std::string> args;
  for (size_t i = 0; i < 8; ++i) {
    ONNXKIT_ASSIGN(std::string a, e.tensor(i));
    args.push_back(a);
  }
  e.assign(0, fmt::format("{}({})", e.helper("onnx_qlinear_matmul"), fmt::join(args, ", ")));
  return {};
}

Status emit_qlinear_conv(Emit& e) {
  std::vector<std::string> args;
  for (size_t i = 0; i < 9; ++i) {
    if (i == 8 && !e.has(8)) {
      args.push_back("None");
      continue;
    }
    ONNXKIT_ASSIGN(std::string a, e.tensor(i));
    args.push_back(a);
  }
  e.assign(0, fmt::format("{}({}, {}, {}, {}, {}, {})", e.helper("onnx_qlinear_conv"), fmt::join(args, ", "),
                          py_list(e.attr_ints("strides")), py_list(e.attr_ints("pads")), py_list(e.attr_ints("dilations")),
                          e.attr_int("group", 1), py_str(e.attr_string("auto_pad", "NOTSET"))));
  return {};
}

// --- detection and sampling ------------------------------------------------------------

Status emit_non_max_suppression(Emit& e) {
  std::vector<std::string> args;
  ONNXKIT_ASSIGN(std::string boxes, e.tensor(0));
  ONNXKIT_ASSIGN(std::string scores, e.tensor(1));
  std::string max_boxes = "0", iou = "0.0", score = "None";
  if (e.has(2)) {
    ONNXKIT_ASSIGN(max_boxes, e.integer(2));
  }
  if (e.has(3)) {
    ONNXKIT_ASSIGN(iou, e.number(3));
  }
  if (e.has(4)) {
    ONNXKIT_ASSIGN(score, e.number(4));
  }
  e.assign(0, fmt::format("{}({}, {}, {}, {}, {}, {})", e.helper("onnx_nms"), boxes, scores, max_boxes, iou, score,
                          e.attr_int("center_point_box", 0)));
  return {};
}

Status emit_grid_sample(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  ONNXKIT_ASSIGN(std::string grid, e.tensor(1));
  std::string mode = e.attr_string("mode", e.opset >= 20 ? "linear" : "bilinear");
  if (mode == "linear") mode = "bilinear";
  if (mode == "cubic") mode = "bicubic";
  e.assign(0, fmt::format("F.grid_sample({}, {}, mode={}, padding_mode={}, align_corners={})", x, grid, py_str(mode),
                          py_str(e.attr_string("padding_mode", "zeros")), py_bool(e.attr_int("align_corners", 0) != 0)));
  return {};
}

Status emit_affine_grid(Emit& e) {
  ONNXKIT_ASSIGN(std::string theta, e.tensor(0));
  ONNXKIT_ASSIGN(std::string size, e.ints(1));
  e.assign(0, fmt::format("F.affine_grid({}, {}, align_corners={})", theta, size, py_bool(e.attr_int("align_corners", 0) != 0)));
  return {};
}

Status emit_roi_align(Emit& e) {
  if (e.attr_string("mode", "avg") != "avg")
    return e.fail("max mode (ONNX's own, a max of weighted samples) has no PyTorch form");
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  ONNXKIT_ASSIGN(std::string rois, e.tensor(1));
  ONNXKIT_ASSIGN(std::string batch, e.tensor(2));
  bool aligned = e.opset >= 16 && e.attr_string("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  e.assign(0, fmt::format("{}({}, {}, {}, ({}, {}), {}, {}, {})", e.helper("onnx_roi_align"), x, rois, batch,
                          e.attr_int("output_height", 1), e.attr_int("output_width", 1),
                          py_float(e.attr_float("spatial_scale", 1.0f)), e.attr_int("sampling_ratio", 0), py_bool(aligned)));
  return {};
}

Status emit_max_unpool(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  ONNXKIT_ASSIGN(std::string idx, e.tensor(1));
  std::string out = "None";
  if (e.has(2)) {
    ONNXKIT_ASSIGN(out, e.ints(2));
  }
  auto kernel = e.attr_ints("kernel_shape");
  auto strides = e.attr_ints("strides");
  if (strides.empty()) strides.assign(kernel.size(), 1);
  auto pads = e.attr_ints("pads");
  if (pads.empty()) pads.assign(2 * kernel.size(), 0);
  e.assign(0, fmt::format("{}({}, {}, {}, {}, {}, {})", e.helper("onnx_max_unpool"), x, idx, py_list(kernel), py_list(strides),
                          py_list(pads), out));
  return {};
}

// --- random numbers: the same distributions; the numbers differ from any other run --------

Status random(Emit& e, const char* draw, bool like) {
  std::string shape;
  int32_t type = static_cast<int32_t>(e.attr_int("dtype", 0));
  if (like) {
    ONNXKIT_ASSIGN(std::string x, e.tensor(0));
    shape = x + ".shape";
    if (type == 0) type = e.dtype(0);
  } else {
    shape = py_tuple(e.attr_ints("shape"));
  }
  if (type == 0) type = onnx::TensorProto::FLOAT;
  std::string dtype = torch_dtype(type);
  e.w.mark_random();
  if (std::string(draw) == "uniform") {
    float low = e.attr_float("low", 0.0f), high = e.attr_float("high", 1.0f);
    e.assign(0, fmt::format("torch.rand({}, dtype={}) * {} + {}", shape, dtype, py_float(high - low), py_float(low)));
  } else {
    e.assign(0, fmt::format("torch.randn({}, dtype={}) * {} + {}", shape, dtype, py_float(e.attr_float("scale", 1.0f)),
                            py_float(e.attr_float("mean", 0.0f))));
  }
  return {};
}

Status emit_random_uniform(Emit& e) { return random(e, "uniform", false); }
Status emit_random_normal(Emit& e) { return random(e, "normal", false); }
Status emit_random_uniform_like(Emit& e) { return random(e, "uniform", true); }
Status emit_random_normal_like(Emit& e) { return random(e, "normal", true); }

Status emit_bernoulli(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  e.w.mark_random();
  int32_t type = static_cast<int32_t>(e.attr_int("dtype", e.dtype(0)));
  e.assign(0, fmt::format("torch.bernoulli({}).to({})", x, torch_dtype(type != 0 ? type : e.dtype(0))));
  return {};
}

Status emit_multinomial(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  e.w.mark_random();
  int32_t type = static_cast<int32_t>(e.attr_int("dtype", onnx::TensorProto::INT32));
  // ONNX's input is unnormalized log-probabilities.
  e.assign(0, fmt::format("torch.multinomial(torch.softmax({}, dim=-1), {}, replacement=True).to({})", x,
                          e.attr_int("sample_size", 1), torch_dtype(type)));
  return {};
}

Status emit_col2im(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  ONNXKIT_ASSIGN(std::string image, e.ints(1));
  ONNXKIT_ASSIGN(std::string block, e.ints(2));
  auto pads = e.attr_ints("pads");
  size_t n = pads.size() / 2;
  for (size_t i = 0; i < n; ++i)
    if (pads[i] != pads[i + n]) return e.fail("F.fold pads both sides alike; these pads differ");
  std::vector<int64_t> padding(pads.begin(), pads.begin() + static_cast<int64_t>(n));
  std::string options;
  if (e.has_attr("dilations")) options += ", dilation=" + py_tuple(e.attr_ints("dilations"));
  if (!padding.empty()) options += ", padding=" + py_tuple(padding);
  if (e.has_attr("strides")) options += ", stride=" + py_tuple(e.attr_ints("strides"));
  e.assign(0, fmt::format("F.fold({}, {}, {}{})", x, image, block, options));
  return {};
}

Status emit_deform_conv(Emit& e) {
  std::vector<std::string> args;
  for (size_t i = 0; i < 5; ++i) {
    if (!e.has(i)) {
      args.push_back("None");
      continue;
    }
    ONNXKIT_ASSIGN(std::string a, e.tensor(i));
    args.push_back(a);
  }
  auto pads = e.attr_ints("pads");
  size_t n = pads.size() / 2;
  for (size_t i = 0; i < n; ++i)
    if (pads[i] != pads[i + n]) return e.fail("torchvision's deform_conv2d pads both sides alike; these pads differ");
  std::vector<int64_t> padding(pads.begin(), pads.begin() + static_cast<int64_t>(n));
  if (padding.empty()) padding = {0, 0};
  auto strides = e.attr_ints("strides"), dilations = e.attr_ints("dilations");
  if (strides.empty()) strides = {1, 1};
  if (dilations.empty()) dilations = {1, 1};
  e.assign(0, fmt::format("{}({}, {}, {}, {}, {})", e.helper("onnx_deform_conv"), fmt::join(args, ", "), py_tuple(strides),
                          py_tuple(padding), py_tuple(dilations), "None"));
  return {};
}

Status emit_center_crop_pad(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  ONNXKIT_ASSIGN(std::string shape, e.ints(1));
  std::string axes = e.has_attr("axes") ? py_list(e.attr_ints("axes")) : "None";
  e.assign(0, fmt::format("{}({}, {}, {})", e.helper("onnx_center_crop_pad"), x, shape, axes));
  return {};
}

Status emit_max_roi_pool(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  ONNXKIT_ASSIGN(std::string rois, e.tensor(1));
  e.assign(0, fmt::format("{}({}, {}, {}, {})", e.helper("onnx_max_roi_pool"), x, rois, py_tuple(e.attr_ints("pooled_shape")),
                          py_float(e.attr_float("spatial_scale", 1.0f))));
  return {};
}

Status emit_stft(Emit& e) {
  ONNXKIT_ASSIGN(std::string signal, e.tensor(0));
  ONNXKIT_ASSIGN(std::string step, e.integer(1));
  std::string window = "None", length = "None";
  if (e.has(2)) {
    ONNXKIT_ASSIGN(window, e.tensor(2));
  }
  if (e.has(3)) {
    ONNXKIT_ASSIGN(length, e.integer(3));
  }
  e.assign(0, fmt::format("{}({}, {}, {}, {}, {})", e.helper("onnx_stft"), signal, step, window, length,
                          py_bool(e.attr_int("onesided", 1) != 0)));
  return {};
}

Status emit_mel_weight_matrix(Emit& e) {
  std::vector<std::string> args;
  for (size_t i = 0; i < 5; ++i) {
    ONNXKIT_ASSIGN(std::string a, e.number(i));
    args.push_back(a);
  }
  std::string dtype = torch_dtype(static_cast<int32_t>(e.attr_int("output_datatype", onnx::TensorProto::FLOAT)));
  if (dtype.empty()) return e.fail("torch has no tensors of output_datatype");
  e.assign(0, fmt::format("{}({}, dtype={})", e.helper("onnx_mel_weight_matrix"), fmt::join(args, ", "), dtype));
  return {};
}

}  // namespace

void add_misc_emitters(EmitterTable& t) {
  t.insert({
      {"Resize", emit_resize},
      {"Upsample", emit_upsample},
      {"Einsum", emit_einsum},
      {"Det", emit_det},
      {"NegativeLogLikelihoodLoss", emit_nll_loss},
      {"SoftmaxCrossEntropyLoss", emit_softmax_cross_entropy},
      {"HannWindow", emit_hann_window},
      {"HammingWindow", emit_hamming_window},
      {"BlackmanWindow", emit_blackman_window},
      {"DFT", emit_dft},
      {"QuantizeLinear", emit_quantize_linear},
      {"DequantizeLinear", emit_dequantize_linear},
      {"DynamicQuantizeLinear", emit_dynamic_quantize_linear},
      {"MatMulInteger", emit_matmul_integer},
      {"ConvInteger", emit_conv_integer},
      {"QLinearMatMul", emit_qlinear_matmul},
      {"QLinearConv", emit_qlinear_conv},
      {"NonMaxSuppression", emit_non_max_suppression},
      {"GridSample", emit_grid_sample},
      {"AffineGrid", emit_affine_grid},
      {"RoiAlign", emit_roi_align},
      {"MaxUnpool", emit_max_unpool},
      {"RandomUniform", emit_random_uniform},
      {"RandomNormal", emit_random_normal},
      {"RandomUniformLike", emit_random_uniform_like},
      {"RandomNormalLike", emit_random_normal_like},
      {"Bernoulli", emit_bernoulli},
      {"Multinomial", emit_multinomial},
      {"Col2Im", emit_col2im},
      {"DeformConv", emit_deform_conv},
      {"CenterCropPad", emit_center_crop_pad},
      {"MaxRoiPool", emit_max_roi_pool},
      {"STFT", emit_stft},
      {"MelWeightMatrix", emit_mel_weight_matrix},
  });
}

}  // namespace onnxkit::tools::pytorch
