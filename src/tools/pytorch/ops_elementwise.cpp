// Element-wise ops: unary functions, activations, arithmetic and comparisons,
// casts. Arithmetic on shapes (Python ints and lists) stays Python.

#include <fmt/format.h>

#include <cmath>

#include "tools/pytorch/emitter.h"
#include "tools/pytorch/writer.h"

namespace onnxkit::tools::pytorch {

namespace {

// `f(x)` for a one-input op.
template <const char* Format> Status unary(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  e.assign(0, fmt::format(fmt::runtime(Format), x));
  return {};
}

#define UNARY(name, format)                \
  constexpr char name##_format[] = format; \
  constexpr EmitFn name = unary<name##_format>;

UNARY(emit_abs, "torch.abs({})")
UNARY(emit_neg, "torch.neg({})")
UNARY(emit_exp, "torch.exp({})")
UNARY(emit_log, "torch.log({})")
UNARY(emit_sqrt, "torch.sqrt({})")
UNARY(emit_reciprocal, "torch.reciprocal({})")
UNARY(emit_floor, "torch.floor({})")
UNARY(emit_ceil, "torch.ceil({})")
UNARY(emit_round, "torch.round({})")  // half to even, as ONNX
UNARY(emit_sign, "torch.sign({})")
UNARY(emit_sin, "torch.sin({})")
UNARY(emit_cos, "torch.cos({})")
UNARY(emit_tan, "torch.tan({})")
UNARY(emit_asin, "torch.asin({})")
UNARY(emit_acos, "torch.acos({})")
UNARY(emit_atan, "torch.atan({})")
UNARY(emit_sinh, "torch.sinh({})")
UNARY(emit_cosh, "torch.cosh({})")
UNARY(emit_asinh, "torch.asinh({})")
UNARY(emit_acosh, "torch.acosh({})")
UNARY(emit_atanh, "torch.atanh({})")
UNARY(emit_erf, "torch.erf({})")
UNARY(emit_sigmoid, "torch.sigmoid({})")
UNARY(emit_tanh, "torch.tanh({})")
UNARY(emit_relu, "F.relu({})")
UNARY(emit_not, "torch.logical_not({})")
UNARY(emit_isnan, "torch.isnan({})")
UNARY(emit_softplus, "F.softplus({})")
UNARY(emit_softsign, "F.softsign({})")
UNARY(emit_hardswish, "F.hardswish({})")
UNARY(emit_mish, "F.mish({})")
UNARY(emit_bitwise_not, "torch.bitwise_not({})")

Status emit_isinf(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  bool pos = e.attr_int("detect_positive", 1) != 0, neg = e.attr_int("detect_negative", 1) != 0;
  if (pos && neg) e.assign(0, fmt::format("torch.isinf({})", x));
  else if (pos) e.assign(0, fmt::format("torch.isposinf({})", x));
  else if (neg) e.assign(0, fmt::format("torch.isneginf({})", x));
  else e.assign(0, fmt::format("torch.zeros_like({}, dtype=torch.bool)", x));
  return {};
}

Status emit_identity(Emit& e) {
  if (e.kind(0) != Kind::tensor) {  // a shape stays a shape
    PyValue py = *e.value(0);
    std::string name = e.output_name(0);
    e.line(fmt::format("{} = {}  {}", name, py.expr, e.w.comment(e.node)));
    py.expr = name;
    e.alias(e.node.output(0), py);
    return {};
  }
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  e.assign(0, x);
  return {};
}

Status emit_leaky_relu(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  e.assign(0, fmt::format("F.leaky_relu({}, {})", x, py_float(e.attr_float("alpha", 0.01f))));
  return {};
}

Status emit_elu(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  e.assign(0, fmt::format("F.elu({}, {})", x, py_float(e.attr_float("alpha", 1.0f))));
  return {};
}

Status emit_celu(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  e.assign(0, fmt::format("F.celu({}, {})", x, py_float(e.attr_float("alpha", 1.0f))));
  return {};
}

Status emit_selu(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  // ONNX's defaults are torch's constants, as float32.
  float alpha = e.attr_float("alpha", 1.67326319217681884765625f), gamma = e.attr_float("gamma", 1.05070102214813232421875f);
  if (alpha == 1.67326319217681884765625f && gamma == 1.05070102214813232421875f) e.assign(0, fmt::format("F.selu({})", x));
  else e.assign(0, fmt::format("{} * torch.where({} > 0, {}, {} * torch.expm1({}))", py_float(gamma), x, x, py_float(alpha), x));
  return {};
}

Status emit_thresholded_relu(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  e.assign(0, fmt::format("torch.where({} > {}, {}, torch.zeros_like({}))", x, py_float(e.attr_float("alpha", 1.0f)), x, x));
  return {};
}

Status emit_hard_sigmoid(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  float alpha = e.attr_float("alpha", 0.2f), beta = e.attr_float("beta", 0.5f);
  e.assign(0, fmt::format("torch.clamp({} * {} + {}, 0, 1)", x, py_float(alpha), py_float(beta)));
  return {};
}

Status emit_gelu(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  std::string approximate = e.attr_string("approximate", "none");
  if (approximate == "tanh") e.assign(0, fmt::format("F.gelu({}, approximate=\"tanh\")", x));
  else e.assign(0, fmt::format("F.gelu({})", x));
  return {};
}

Status emit_shrink(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  std::string bias = py_float(e.attr_float("bias", 0.0f)), lambd = py_float(e.attr_float("lambd", 0.5f));
  e.assign(0, fmt::format("torch.where({x} < -{l}, {x} + {b}, torch.where({x} > {l}, {x} - {b}, torch.zeros_like({x})))",
                          fmt::arg("x", x), fmt::arg("l", lambd), fmt::arg("b", bias)));
  return {};
}

Status emit_clip(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  std::string lo = "None", hi = "None";
  if (e.opset < 11) {
    if (e.has_attr("min")) lo = py_float(e.attr_float("min", 0));
    if (e.has_attr("max")) hi = py_float(e.attr_float("max", 0));
  } else {
    if (e.has(1)) {
      ONNXKIT_ASSIGN(lo, e.constant(1) ? e.number(1) : e.tensor(1));
    }
    if (e.has(2)) {
      ONNXKIT_ASSIGN(hi, e.constant(2) ? e.number(2) : e.tensor(2));
    }
  }
  if (lo == "None" && hi == "None") e.assign(0, x);
  else if (lo == "0.0" && hi == "6.0" && is_float_type(e.dtype(0))) e.assign(0, fmt::format("F.relu6({})", x));
  else e.assign(0, fmt::format("torch.clamp({}, {}, {})", x, lo, hi));
  return {};
}

Status emit_prelu(Emit& e) {
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  const runtime::Tensor* slope = e.constant(1);
  auto rank = e.rank(0);
  if (slope != nullptr && is_float_type(e.dtype(0)) && rank) {
    // nn.PReLU holds one slope, or one per channel (dim 1): slopes shaped
    // [C], [C, 1, 1]... over a channel dim of C.
    bool one = slope->numel() == 1;
    bool per_channel =
        *rank >= 2 && slope->rank() >= 1 && static_cast<int64_t>(slope->rank()) == *rank - 1 && slope->dim(0) == slope->numel();
    if (*rank == 2 && slope->rank() == 1) per_channel = true;
    if (one || per_channel) {
      runtime::Tensor weight = slope->reshaped({slope->numel()});
      std::string m = e.module(fmt::format("nn.PReLU({})", slope->numel()), {{"weight", weight}});
      e.assign(0, fmt::format("{}({})", m, x));
      return {};
    }
  }
  ONNXKIT_ASSIGN(std::string s, e.tensor(1));
  e.assign(0, fmt::format("torch.where({} < 0, {} * {}, {})", x, x, s, x));
  return {};
}

// --- arithmetic ----------------------------------------------------------------

bool is_int_like(Emit& e, size_t i) {
  Kind k = e.kind(i);
  if (k == Kind::ints || k == Kind::integer) return true;
  if (const runtime::Tensor* t = e.constant(i)) return runtime::is_integer(t->dtype()) && t->rank() <= 1 && t->numel() <= 16;
  return false;
}

// The elements of an int-like input, when known one by one.
std::optional<std::vector<std::string>> int_elements(Emit& e, size_t i, bool& scalar, bool& sizes) {
  sizes = false;
  if (auto c = e.constant_ints(i)) {
    scalar = e.constant(i)->rank() == 0;
    std::vector<std::string> items;
    for (int64_t v : *c) items.push_back(py_int(v));
    sizes = std::all_of(c->begin(), c->end(), [](int64_t v) { return v >= 0; });
    return items;
  }
  const PyValue* py = e.value(i);
  scalar = py->kind == Kind::integer;
  sizes = py->sizes;
  if (scalar) return std::vector<std::string>{py->expr};
  return py->elements;
}

// Add/Sub/Mul/Div on ints and lists of known length, as Python; false when
// the operands are not such.
Result<bool> emit_int_arithmetic(Emit& e, std::string_view op) {
  if (!is_int_like(e, 0) || !is_int_like(e, 1)) return false;
  bool scalar_a = false, scalar_b = false, sizes_a = false, sizes_b = false;
  auto a = int_elements(e, 0, scalar_a, sizes_a);
  auto b = int_elements(e, 1, scalar_b, sizes_b);
  if (!a || !b) return false;
  if (a->size() != b->size() && a->size() != 1 && b->size() != 1) return false;
  size_t n = std::max(a->size(), b->size());
  std::vector<std::string> out;
  for (size_t k = 0; k < n; ++k) {
    const std::string& x = (*a)[a->size() == 1 ? 0 : k];
    const std::string& y = (*b)[b->size() == 1 ? 0 : k];
    // ONNX integer division truncates; on sizes over a positive number
    // Python's // is the same.
    if (op == "/") {
      bool positive_divisor = !y.empty() && std::all_of(y.begin(), y.end(), ::isdigit) && y != "0";
      if (!(sizes_a && positive_divisor)) return false;
      out.push_back(fmt::format("{} // {}", parenthesized(x), parenthesized(y)));
    } else {
      out.push_back(fmt::format("{} {} {}", parenthesized(x), op, parenthesized(y)));
    }
  }
  bool sizes = sizes_a && sizes_b && op != "-";
  if (scalar_a && scalar_b) {
    e.assign(0, out[0], Kind::integer);
    PyValue py = *e.w.find(e.node.output(0));
    py.sizes = sizes;
    e.alias(e.node.output(0), py);
  } else {
    e.assign_ints(0, out, sizes);
  }
  return true;
}

template <const char* Op> Status binary_operator(Emit& e) {
  ONNXKIT_ASSIGN(bool done, emit_int_arithmetic(e, Op));
  if (done) return {};
  if (e.has_attr("broadcast") && e.attr_int("broadcast", 0) != 0 && e.has_attr("axis"))
    return e.fail("the legacy broadcast with an axis (opset < 7) has no PyTorch form");
  ONNXKIT_ASSIGN(std::string a, e.operand(0, 1));
  ONNXKIT_ASSIGN(std::string b, e.operand(1, 0));
  e.assign(0, fmt::format("{} {} {}", a, Op, b));
  return {};
}

constexpr char kAdd[] = "+";
constexpr char kSub[] = "-";
constexpr char kMul[] = "*";

Status emit_div(Emit& e) {
  ONNXKIT_ASSIGN(bool done, emit_int_arithmetic(e, "/"));
  if (done) return {};
  ONNXKIT_ASSIGN(std::string a, e.operand(0, 1));
  ONNXKIT_ASSIGN(std::string b, e.operand(1, 0));
  int32_t type = e.dtype(0) != 0 ? e.dtype(0) : e.dtype(1);
  if (is_float_type(type)) e.assign(0, fmt::format("{} / {}", a, b));
  else if (type != 0) e.assign(0, fmt::format("torch.div({}, {}, rounding_mode=\"trunc\")", a, b));  // C's integer division
  else e.assign(0, fmt::format("{}({}, {})", e.helper("onnx_div"), a, b));
  return {};
}

Status emit_mod(Emit& e) {
  ONNXKIT_ASSIGN(std::string a, e.operand(0, 1));
  ONNXKIT_ASSIGN(std::string b, e.operand(1, 0));
  // fmod=1: the sign of the dividend (C's fmod); 0: of the divisor (Python's %).
  const char* f = e.attr_int("fmod", 0) != 0 ? "torch.fmod" : "torch.remainder";
  e.assign(0, fmt::format("{}({}, {})", f, a, b));
  return {};
}

Status emit_pow(Emit& e) {
  ONNXKIT_ASSIGN(std::string a, e.tensor(0));
  ONNXKIT_ASSIGN(std::string b, e.operand(1, 0));
  std::string expr = fmt::format("torch.pow({}, {})", a, b);
  // ONNX keeps the base's type; torch promotes an integer base to the exponent's float.
  if (e.dtype(0) != 0 && e.dtype(1) != 0 && e.dtype(0) != e.dtype(1)) expr += fmt::format(".to({})", torch_dtype(e.dtype(0)));
  e.assign(0, expr);
  return {};
}

template <const char* Function> Status binary_function(Emit& e) {
  ONNXKIT_ASSIGN(std::string a, e.tensor(0));
  ONNXKIT_ASSIGN(std::string b, e.operand(1, 0));
  e.assign(0, fmt::format("{}({}, {})", Function, a, b));
  return {};
}

constexpr char kEq[] = "torch.eq";
constexpr char kGt[] = "torch.gt";
constexpr char kLt[] = "torch.lt";
constexpr char kGe[] = "torch.ge";
constexpr char kLe[] = "torch.le";
constexpr char kAnd[] = "torch.logical_and";
constexpr char kOr[] = "torch.logical_or";
constexpr char kXor[] = "torch.logical_xor";
constexpr char kBitAnd[] = "torch.bitwise_and";
constexpr char kBitOr[] = "torch.bitwise_or";
constexpr char kBitXor[] = "torch.bitwise_xor";

Status emit_bit_shift(Emit& e) {
  ONNXKIT_ASSIGN(std::string a, e.tensor(0));
  ONNXKIT_ASSIGN(std::string b, e.tensor(1));
  bool left = e.attr_string("direction", "") == "LEFT";
  e.assign(0, fmt::format("{}({}, {})", left ? "torch.bitwise_left_shift" : "torch.bitwise_right_shift", a, b));
  return {};
}

// Sum, Mean, Max, Min over any number of inputs.
Status emit_variadic(Emit& e, const char* combine, bool mean) {
  std::vector<std::string> xs;
  for (size_t i = 0; i < e.num_inputs(); ++i) {
    ONNXKIT_ASSIGN(std::string x, e.tensor(i));
    xs.push_back(x);
  }
  if (xs.empty()) return e.fail("no inputs");
  std::string expr = xs[0];
  for (size_t i = 1; i < xs.size(); ++i)
    expr = combine[0] == '+' ? fmt::format("{} + {}", expr, xs[i]) : fmt::format("{}({}, {})", combine, expr, xs[i]);
  if (mean && xs.size() > 1) expr = fmt::format("({}) / {}", expr, xs.size());
  e.assign(0, expr);
  return {};
}

Status emit_sum(Emit& e) { return emit_variadic(e, "+", false); }
Status emit_mean(Emit& e) { return emit_variadic(e, "+", true); }
Status emit_max(Emit& e) { return emit_variadic(e, "torch.maximum", false); }
Status emit_min(Emit& e) { return emit_variadic(e, "torch.minimum", false); }

Status emit_where(Emit& e) {
  ONNXKIT_ASSIGN(std::string c, e.tensor(0));
  ONNXKIT_ASSIGN(std::string a, e.tensor(1));
  ONNXKIT_ASSIGN(std::string b, e.tensor(2));
  e.assign(0, fmt::format("torch.where({}, {}, {})", c, a, b));
  return {};
}

// --- casts ----------------------------------------------------------------------

Status cast_to(Emit& e, int32_t to) {
  std::string dtype = torch_dtype(to);
  if (dtype.empty())
    return e.fail(fmt::format("torch has no {} tensors", runtime::to_string(static_cast<runtime::DataType>(to))));
  Kind k = e.kind(0);
  bool integer_target = to == onnx::TensorProto::INT64 || to == onnx::TensorProto::INT32;
  if ((k == Kind::ints || k == Kind::integer) && integer_target) {  // a shape stays a shape
    PyValue py = *e.value(0);
    std::string name = e.output_name(0);
    e.line(fmt::format("{} = {}  {}", name, py.expr, e.w.comment(e.node)));
    py.expr = name;
    py.dtype = to;
    e.alias(e.node.output(0), py);
    return {};
  }
  ONNXKIT_ASSIGN(std::string x, e.tensor(0));
  int32_t from = e.dtype(0);
  if (from == to) e.assign(0, x);
  else e.assign(0, fmt::format("{}.to({})", x, dtype));
  return {};
}

Status emit_cast(Emit& e) {
  if (e.attr_int("saturate", 1) == 0 && e.opset >= 19)
    return e.fail("saturate=0 applies to float8 types, which torch lacks here");
  return cast_to(e, static_cast<int32_t>(e.attr_int("to", 0)));
}

Status emit_cast_like(Emit& e) {
  int32_t to = e.dtype(1);
  if (to == 0) {
    ONNXKIT_ASSIGN(std::string x, e.tensor(0));
    ONNXKIT_ASSIGN(std::string like, e.tensor(1));
    e.assign(0, fmt::format("{}.to({}.dtype)", x, like));
    return {};
  }
  return cast_to(e, to);
}

}  // namespace

void add_elementwise_emitters(EmitterTable& t) {
  t.insert({
      {"Abs", emit_abs},
      {"Neg", emit_neg},
      {"Exp", emit_exp},
      {"Log", emit_log},
      {"Sqrt", emit_sqrt},
      {"Reciprocal", emit_reciprocal},
      {"Floor", emit_floor},
      {"Ceil", emit_ceil},
      {"Round", emit_round},
      {"Sign", emit_sign},
      {"Sin", emit_sin},
      {"Cos", emit_cos},
      {"Tan", emit_tan},
      {"Asin", emit_asin},
      {"Acos", emit_acos},
      {"Atan", emit_atan},
      {"Sinh", emit_sinh},
      {"Cosh", emit_cosh},
      {"Asinh", emit_asinh},
      {"Acosh", emit_acosh},
      {"Atanh", emit_atanh},
      {"Erf", emit_erf},
      {"Sigmoid", emit_sigmoid},
      {"Tanh", emit_tanh},
      {"Relu", emit_relu},
      {"Not", emit_not},
      {"IsNaN", emit_isnan},
      {"IsInf", emit_isinf},
      {"Softplus", emit_softplus},
      {"Softsign", emit_softsign},
      {"HardSwish", emit_hardswish},
      {"Mish", emit_mish},
      {"BitwiseNot", emit_bitwise_not},
      {"Identity", emit_identity},
      {"LeakyRelu", emit_leaky_relu},
      {"Elu", emit_elu},
      {"Celu", emit_celu},
      {"Selu", emit_selu},
      {"ThresholdedRelu", emit_thresholded_relu},
      {"HardSigmoid", emit_hard_sigmoid},
      {"Gelu", emit_gelu},
      {"Shrink", emit_shrink},
      {"Clip", emit_clip},
      {"PRelu", emit_prelu},
      {"Add", binary_operator<kAdd>},
      {"Sub", binary_operator<kSub>},
      {"Mul", binary_operator<kMul>},
      {"Div", emit_div},
      {"Mod", emit_mod},
      {"Pow", emit_pow},
      {"Equal", binary_function<kEq>},
      {"Greater", binary_function<kGt>},
      {"Less", binary_function<kLt>},
      {"GreaterOrEqual", binary_function<kGe>},
      {"LessOrEqual", binary_function<kLe>},
      {"And", binary_function<kAnd>},
      {"Or", binary_function<kOr>},
      {"Xor", binary_function<kXor>},
      {"BitwiseAnd", binary_function<kBitAnd>},
      {"BitwiseOr", binary_function<kBitOr>},
      {"BitwiseXor", binary_function<kBitXor>},
      {"BitShift", emit_bit_shift},
      {"Sum", emit_sum},
      {"Mean", emit_mean},
      {"Max", emit_max},
      {"Min", emit_min},
      {"Where", emit_where},
      {"Cast", emit_cast},
      {"CastLike", emit_cast_like},
  });
}

}  // namespace onnxkit::tools::pytorch
