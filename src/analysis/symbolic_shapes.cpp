#include "analysis/symbolic_shapes.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <string_view>

#include "io/tensor_proto.h"

namespace onnxkit::analysis {

namespace {

constexpr size_t kMaxTrackedInts = 64;  // shape vectors, not data
constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();

using Outputs = std::vector<std::optional<SymbolicDims>>;

DimExpr num(int64_t v) { return DimExpr::constant(v); }

std::optional<int64_t> normalize_axis(int64_t axis, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return std::nullopt;
  return axis < 0 ? axis + r : axis;
}

std::optional<SymbolicDims> broadcast(const std::vector<const SymbolicDims*>& shapes, SymbolicShapes& self,
                                      DimExpr (*fresh)(SymbolicShapes&)) {
  size_t rank = 0;
  for (const SymbolicDims* s : shapes) {
    if (s == nullptr) return std::nullopt;
    rank = std::max(rank, s->size());
  }
  SymbolicDims out(rank, num(1));
  for (size_t i = 0; i < rank; ++i) {
    std::optional<DimExpr> dim;
    bool ambiguous = false;
    for (const SymbolicDims* s : shapes) {
      if (i + s->size() < rank) continue;
      const DimExpr& d = (*s)[i + s->size() - rank];
      if (d == num(1)) continue;
      if (!dim || *dim == d) {
        dim = d;
      } else if (d.is_constant() && !dim->is_constant()) {
        dim = d;  // a symbol broadcast against a number must be 1 or that number
      } else if (!(dim->is_constant() && !d.is_constant())) {
        ambiguous = true;
      }
    }
    out[i] = ambiguous ? fresh(self) : dim.value_or(num(1));
  }
  return out;
}

std::optional<DimExpr> product(const SymbolicDims& dims, size_t begin, size_t end) {
  std::optional<DimExpr> p = num(1);
  for (size_t i = begin; i < end && p; ++i) p = DimExpr::mul(*p, dims[i]);
  return p;
}

// The numbers of a shape whose every dim is one.
std::optional<std::vector<int64_t>> static_dims(const SymbolicDims* dims) {
  if (dims == nullptr) return std::nullopt;
  std::vector<int64_t> out;
  for (const DimExpr& d : *dims) {
    auto v = d.constant_value();
    if (!v || *v < 0) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

// Constants of an int vector, when every entry is one.
std::optional<std::vector<int64_t>> numbers(const SymbolicInts* ints) {
  if (ints == nullptr) return std::nullopt;
  std::vector<int64_t> out;
  for (const DimExpr& e : ints->values) {
    auto v = e.constant_value();
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

const std::set<std::string_view>& same_shape_ops() {
  static const std::set<std::string_view> ops = {"Abs",
                                                 "Acos",
                                                 "Acosh",
                                                 "Asin",
                                                 "Asinh",
                                                 "Atan",
                                                 "Atanh",
                                                 "BatchNormalization",
                                                 "Cast",
                                                 "CastLike",
                                                 "Ceil",
                                                 "Celu",
                                                 "Clip",
                                                 "Cos",
                                                 "Cosh",
                                                 "CumSum",
                                                 "Dropout",
                                                 "Elu",
                                                 "Erf",
                                                 "Exp",
                                                 "Floor",
                                                 "Gelu",
                                                 "HardSigmoid",
                                                 "HardSwish",
                                                 "Hardmax",
                                                 "Identity",
                                                 "InstanceNormalization",
                                                 "IsInf",
                                                 "IsNaN",
                                                 "LRN",
                                                 "LayerNormalization",
                                                 "LeakyRelu",
                                                 "Log",
                                                 "LogSoftmax",
                                                 "LpNormalization",
                                                 "MeanVarianceNormalization",
                                                 "Mish",
                                                 "Neg",
                                                 "Not",
                                                 "QuantizeLinear",
                                                 "DequantizeLinear",
                                                 "Reciprocal",
                                                 "Relu",
                                                 "Round",
                                                 "Selu",
                                                 "Shrink",
                                                 "Sigmoid",
                                                 "Sign",
                                                 "Sin",
                                                 "Sinh",
                                                 "Softmax",
                                                 "Softplus",
                                                 "Softsign",
                                                 "Sqrt",
                                                 "Tan",
                                                 "Tanh",
                                                 "ThresholdedRelu",
                                                 "Trilu",
                                                 "GroupNormalization",
                                                 "BitwiseNot"};
  return ops;
}

const std::set<std::string_view>& broadcast_ops() {
  static const std::set<std::string_view> ops = {
      "Add", "Sub", "Mul", "Div", "Pow", "Mod",  "Equal",    "Less",  "Greater", "LessOrEqual", "GreaterOrEqual", "And",
      "Or",  "Xor", "Max", "Min", "Sum", "Mean", "BitShift", "PRelu", "Where",   "BitwiseAnd",  "BitwiseOr",      "BitwiseXor"};
  return ops;
}

const std::set<std::string_view>& reduce_ops() {
  static const std::set<std::string_view> ops = {"ReduceMean", "ReduceSum", "ReduceMax",    "ReduceMin",       "ReduceProd",
                                                 "ReduceL1",   "ReduceL2",  "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
  return ops;
}

bool is_int_type(int32_t t) { return t == onnx::TensorProto::INT64 || t == onnx::TensorProto::INT32; }

// The numbers of a small int64/int32 tensor.
std::optional<std::vector<int64_t>> ints_of(const onnx::TensorProto& t) {
  if (!is_int_type(t.data_type())) return std::nullopt;
  auto bytes = io::inline_bytes(t);
  if (!bytes.ok()) return std::nullopt;
  const size_t width = t.data_type() == onnx::TensorProto::INT64 ? 8 : 4;
  const size_t n = bytes->size() / width;
  if (n > kMaxTrackedInts) return std::nullopt;
  std::vector<int64_t> out;
  for (size_t i = 0; i < n; ++i) {
    int64_t v = 0;
    if (width == 8) {
      std::memcpy(&v, bytes->data() + 8 * i, 8);
    } else {
      int32_t w = 0;
      std::memcpy(&w, bytes->data() + 4 * i, 4);
      v = w;
    }
    out.push_back(v);
  }
  return out;
}

}  // namespace

// The rules, one per op family; each reads the inputs' shapes and ints
// from `s` and returns the outputs' shapes (and output 0's ints).
struct Rules {
  SymbolicShapes& s;
  const ir::Node& node;
  std::optional<SymbolicInts> ints;  // output 0's contents, when known

  static DimExpr fresh(SymbolicShapes& self) { return self.fresh(); }
  const SymbolicDims* in_shape(size_t i) { return s.shape(node.input(i)); }
  const SymbolicInts* in_ints(size_t i) { return node.input(i) ? s.ints(node.input(i)) : nullptr; }
  std::optional<std::vector<int64_t>> in_numbers(size_t i) { return numbers(in_ints(i)); }

  // Axes from the attribute before `opset_moved`, from input `index` since.
  std::optional<std::vector<int64_t>> axes(int64_t opset_moved, size_t index) {
    if (s.opset_ < opset_moved) return node.attr_ints("axes");
    if (node.input(index) == nullptr) return std::vector<int64_t>{};
    return in_numbers(index);
  }

  std::optional<Outputs> run() {
    const std::string& op = node.op_type();
    if (same_shape_ops().count(op)) return same();
    if (broadcast_ops().count(op)) return elementwise();
    if (reduce_ops().count(op)) return reduce();
    if (op == "Shape") return shape();
    if (op == "Size") return size();
    if (op == "Gather") return gather();
    if (op == "Unsqueeze" || op == "Squeeze") return squeeze();
    if (op == "Concat") return concat();
    if (op == "Slice") return slice();
    if (op == "Reshape") return reshape();
    if (op == "Transpose") return transpose();
    if (op == "Flatten") return flatten();
    if (op == "Expand") return expand();
    if (op == "ConstantOfShape") return constant_of_shape();
    if (op == "Range") return range();
    if (op == "Tile") return tile();
    if (op == "Pad") return pad();
    if (op == "MatMul") return matmul();
    if (op == "Split") return split();
    if (op == "ArgMax" || op == "ArgMin") return arg_reduce();
    if (op == "Resize" || op == "Upsample") return resize();
    if (op == "TopK") return topk();
    if (op == "NonZero") return non_zero();
    if (op == "Conv" || op == "MaxPool" || op == "AveragePool" || op == "LpPool") return window();
    if (op == "GlobalAveragePool" || op == "GlobalMaxPool" || op == "GlobalLpPool") return global_pool();
    if (op == "Gemm") return gemm();
    return std::nullopt;
  }

  std::optional<Outputs> same() {
    const SymbolicDims* x = in_shape(0);
    if (!x) return std::nullopt;
    const SymbolicInts* v = in_ints(0);
    const std::string& op = node.op_type();
    if (v && (op == "Identity" || (op == "Cast" && is_int_type(static_cast<int32_t>(node.attr_int("to", 0)))))) ints = *v;
    if (v && op == "Not") {
      ints = SymbolicInts{{}, v->scalar};
      for (const DimExpr& e : v->values) {
        auto b = e.constant_value();
        ints->values.push_back(b ? num(*b == 0 ? 1 : 0) : fresh(s));
      }
    }
    if (v && op == "Neg") {
      ints = SymbolicInts{{}, v->scalar};
      for (const DimExpr& e : v->values) {
        auto n = DimExpr::mul(e, num(-1));
        ints->values.push_back(n ? *n : fresh(s));
      }
    }
    return Outputs(node.outputs().size() > 1 && op == "Dropout" ? 2 : 1, *x);
  }

  std::optional<Outputs> elementwise() {
    std::vector<const SymbolicDims*> shapes;
    for (size_t i = 0; i < node.inputs().size(); ++i) shapes.push_back(in_shape(i));
    auto out = broadcast(shapes, s, &Rules::fresh);
    if (out) int_arithmetic();  // evaluate drops a result whose count is not the output's
    if (!out) return std::nullopt;
    return Outputs{*out};
  }

  // The same ops on tracked vectors, entry by entry.
  void int_arithmetic() {
    const std::string& op = node.op_type();
    std::vector<const SymbolicInts*> args;
    size_t n = 1;
    bool scalar = true;
    for (size_t i = 0; i < node.inputs().size(); ++i) {
      const SymbolicInts* a = in_ints(i);
      if (!a || a->values.empty()) return;
      if (a->values.size() != 1 && n != 1 && a->values.size() != n) return;
      n = std::max(n, a->values.size());
      scalar = scalar && a->scalar;
      args.push_back(a);
    }
    if (args.empty()) return;
    auto at = [&](size_t arg, size_t i) -> const DimExpr& { return args[arg]->values[args[arg]->values.size() == 1 ? 0 : i]; };
    SymbolicInts out{{}, scalar};
    for (size_t i = 0; i < n; ++i) {
      std::optional<DimExpr> r;
      if (op == "Where" && args.size() == 3) {
        auto c = at(0, i).constant_value();
        if (c) r = *c ? at(1, i) : at(2, i);
      } else if (args.size() == 2) {
        const DimExpr &a = at(0, i), &b = at(1, i);
        auto x = a.constant_value(), y = b.constant_value();
        // Comparisons by the sign of a - b, which symbols (dims, >= 0)
        // often fix: batch == -1 is false, max(batch + 1, 1) is batch + 1.
        auto d = DimExpr::sub(a, b);
        const bool ge = d && d->at_least(0), gt = d && d->at_least(1), le = d && d->at_most(0), lt = d && d->at_most(-1);
        auto truth = [](bool yes, bool no) -> std::optional<DimExpr> {
          if (yes || no) return num(yes ? 1 : 0);
          return std::nullopt;
        };
        if (op == "Add") r = DimExpr::add(a, b);
        else if (op == "Sub") r = d;
        else if (op == "Mul") r = DimExpr::mul(a, b);
        else if (op == "Div") r = DimExpr::div_trunc(a, b);
        else if (op == "Mod") r = modulo(a, b);
        else if (op == "Equal") r = truth(ge && le, gt || lt);
        else if (op == "Less") r = truth(lt, ge);
        else if (op == "LessOrEqual") r = truth(le, gt);
        else if (op == "Greater") r = truth(gt, le);
        else if (op == "GreaterOrEqual") r = truth(ge, lt);
        else if (op == "Max") r = ge ? std::optional(a) : le ? std::optional(b) : std::nullopt;
        else if (op == "Min") r = le ? std::optional(a) : ge ? std::optional(b) : std::nullopt;
        else if ((op == "And" || op == "Or") && x && y) r = num(op == "And" ? (*x && *y) : (*x || *y));
      }
      out.values.push_back(r ? *r : fresh(s));
    }
    ints = std::move(out);
  }

  // Mod as ONNX defines it on integers: the sign of the divisor (Python's
  // %) unless fmod = 1 (C's). Zero where b divides a as polynomials.
  std::optional<DimExpr> modulo(const DimExpr& a, const DimExpr& b) {
    auto x = a.constant_value(), y = b.constant_value();
    if (y && *y == 0) return std::nullopt;
    if (x && y) {
      if (*x == INT64_MIN && *y == -1) return num(0);
      int64_t r = *x % *y;
      if (node.attr_int("fmod", 0) == 0 && r != 0 && (r < 0) != (*y < 0)) r += *y;
      return num(r);
    }
    if (DimExpr::div_exact(a, b)) return num(0);
    return std::nullopt;
  }

  std::optional<Outputs> shape() {
    const SymbolicDims* x = in_shape(0);
    if (!x) return std::nullopt;
    const int64_t rank = static_cast<int64_t>(x->size());
    auto clamp = [rank](int64_t a) { return std::clamp(a < 0 ? a + rank : a, int64_t{0}, rank); };
    const int64_t start = clamp(node.attr_int("start", 0)), end = clamp(node.attr_int("end", rank));
    ints = SymbolicInts{};
    for (int64_t i = start; i < end; ++i) ints->values.push_back((*x)[static_cast<size_t>(i)]);
    return Outputs{SymbolicDims{num(static_cast<int64_t>(ints->values.size()))}};
  }

  std::optional<Outputs> size() {
    const SymbolicDims* x = in_shape(0);
    if (!x) return std::nullopt;
    auto p = product(*x, 0, x->size());
    ints = SymbolicInts{{p ? *p : fresh(s)}, true};
    return Outputs{SymbolicDims{}};
  }

  std::optional<Outputs> gather() {
    const SymbolicDims* data = in_shape(0);
    const SymbolicDims* indices = in_shape(1);
    if (!data || !indices) return std::nullopt;
    auto axis = normalize_axis(node.attr_int("axis", 0), data->size());
    if (!axis) return std::nullopt;
    SymbolicDims out(data->begin(), data->begin() + *axis);
    out.insert(out.end(), indices->begin(), indices->end());
    out.insert(out.end(), data->begin() + *axis + 1, data->end());
    const SymbolicInts* v = in_ints(0);
    auto idx = in_numbers(1);
    if (v && data->size() == 1 && idx && *axis == 0) {
      SymbolicInts picked{{}, indices->empty()};
      const int64_t n = static_cast<int64_t>(v->values.size());
      for (int64_t i : *idx) {
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Outputs{out};
        picked.values.push_back(v->values[static_cast<size_t>(i)]);
      }
      ints = std::move(picked);
    }
    return Outputs{out};
  }

  std::optional<Outputs> squeeze() {
    const SymbolicDims* x = in_shape(0);
    auto given = axes(13, 1);
    if (!x || !given) return std::nullopt;
    SymbolicDims out;
    if (node.op_type() == "Unsqueeze") {
      const size_t rank = x->size() + given->size();
      std::vector<bool> inserted(rank, false);
      for (int64_t a : *given) {
        auto n = normalize_axis(a, rank);
        if (!n) return std::nullopt;
        inserted[static_cast<size_t>(*n)] = true;
      }
      size_t j = 0;
      for (size_t i = 0; i < rank; ++i) out.push_back(inserted[i] ? num(1) : (*x)[j++]);
    } else {
      std::vector<bool> removed(x->size(), false);
      if (given->empty()) {
        for (size_t i = 0; i < x->size(); ++i) {
          if (!(*x)[i].is_constant()) return std::nullopt;  // a symbol might be 1
          removed[i] = (*x)[i] == num(1);
        }
      }
      for (int64_t a : *given) {
        auto n = normalize_axis(a, x->size());
        if (!n) return std::nullopt;
        removed[static_cast<size_t>(*n)] = true;
      }
      for (size_t i = 0; i < x->size(); ++i)
        if (!removed[i]) out.push_back((*x)[i]);
    }
    if (const SymbolicInts* v = in_ints(0)) ints = SymbolicInts{v->values, out.empty()};
    return Outputs{out};
  }

  std::optional<Outputs> concat() {
    std::vector<const SymbolicDims*> parts;
    for (size_t i = 0; i < node.inputs().size(); ++i) {
      parts.push_back(in_shape(i));
      if (!parts.back()) return std::nullopt;
    }
    if (parts.empty() || parts[0]->empty()) return std::nullopt;
    auto axis = normalize_axis(node.attr_int("axis", 0), parts[0]->size());
    if (!axis) return std::nullopt;
    SymbolicDims out = *parts[0];
    for (size_t i = 1; i < parts.size(); ++i) {
      if (parts[i]->size() != out.size()) return std::nullopt;
      auto sum = DimExpr::add(out[*axis], (*parts[i])[*axis]);
      out[*axis] = sum ? *sum : fresh(s);
    }
    if (out.size() == 1) {
      SymbolicInts joined;
      for (size_t i = 0; i < parts.size(); ++i) {
        const SymbolicInts* v = in_ints(i);
        if (!v) return Outputs{out};
        joined.values.insert(joined.values.end(), v->values.begin(), v->values.end());
      }
      ints = std::move(joined);
    }
    return Outputs{out};
  }

  std::optional<Outputs> slice() {
    const SymbolicDims* x = in_shape(0);
    if (!x) return std::nullopt;
    std::vector<int64_t> starts, ends, axes, steps;
    if (s.opset_ < 10) {
      starts = node.attr_ints("starts");
      ends = node.attr_ints("ends");
      axes = node.attr_ints("axes");
    } else {
      auto st = in_numbers(1), en = in_numbers(2);
      if (!st || !en) return std::nullopt;
      starts = *st;
      ends = *en;
      if (node.input(3)) {
        auto a = in_numbers(3);
        if (!a) return std::nullopt;
        axes = *a;
      }
      if (node.input(4)) {
        auto p = in_numbers(4);
        if (!p) return std::nullopt;
        steps = *p;
      }
    }
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) return std::nullopt;
    SymbolicDims out = *x;
    std::vector<std::optional<std::pair<int64_t, int64_t>>> numeric(x->size());  // [start, end) per axis, step
    std::vector<int64_t> step_of(x->size(), 1);
    for (size_t k = 0; k < axes.size(); ++k) {
      auto a = normalize_axis(axes[k], x->size());
      if (!a || steps[k] == 0) return std::nullopt;
      const size_t ax = static_cast<size_t>(*a);
      const int64_t st = starts[k], en = ends[k], step = steps[k];
      step_of[ax] = step;
      if (auto d = (*x)[ax].constant_value()) {
        // The ONNX clamping rules on a known dim.
        auto clamp = [&](int64_t i, bool end) {
          if (i < 0) i += *d;
          if (step > 0) return std::clamp(i, int64_t{0}, *d);
          return std::clamp(i, end ? int64_t{-1} : int64_t{0}, *d - 1);
        };
        int64_t b = clamp(st, false), e = clamp(en, true);
        int64_t len = step > 0 ? (e > b ? (e - b + step - 1) / step : 0) : (b > e ? (b - e + (-step) - 1) / (-step) : 0);
        out[ax] = num(len);
        numeric[ax] = std::pair(b, e);
      } else if (step == 1 && st >= 0 && en >= kMaxInt / 2) {
        auto len = DimExpr::sub((*x)[ax], num(st));
        out[ax] = len ? *len : fresh(s);  // the dim is at least `st` in any model that runs
      } else if (step == 1 && st < 0 && en >= kMaxInt / 2) {
        out[ax] = num(-st);
      } else if (step == 1 && st >= 0 && en < 0) {
        auto len = DimExpr::sub((*x)[ax], num(st - en));
        out[ax] = len ? *len : fresh(s);
      } else {
        out[ax] = fresh(s);
      }
    }
    const SymbolicInts* v = in_ints(0);
    auto dims = static_dims(x);
    if (v && !v->scalar && dims && product(*x, 0, x->size()) == num(static_cast<int64_t>(v->values.size()))) {
      // The kept indices per axis, then every combination of them, row-major.
      std::vector<std::vector<size_t>> kept(dims->size());
      for (size_t ax = 0; ax < dims->size(); ++ax) {
        const auto [b, e] = numeric[ax].value_or(std::pair<int64_t, int64_t>(0, (*dims)[ax]));
        const int64_t step = numeric[ax] ? step_of[ax] : 1;
        for (int64_t i = b; step > 0 ? i < e : i > e; i += step) kept[ax].push_back(static_cast<size_t>(i));
      }
      SymbolicInts picked;
      std::vector<size_t> index(dims->size(), 0);
      bool empty = false;
      for (const auto& k : kept) empty = empty || k.empty();
      while (!empty) {
        size_t at = 0;
        for (size_t ax = 0; ax < dims->size(); ++ax) at = at * static_cast<size_t>((*dims)[ax]) + kept[ax][index[ax]];
        picked.values.push_back(v->values[at]);
        size_t ax = dims->size();
        while (ax-- > 0 && ++index[ax] == kept[ax].size()) index[ax] = 0;
        if (ax == static_cast<size_t>(-1)) break;
      }
      ints = std::move(picked);
    }
    return Outputs{out};
  }

  std::optional<Outputs> reshape() {
    const SymbolicDims* x = in_shape(0);
    const SymbolicInts* target = in_ints(1);
    if (!target || target->scalar) return std::nullopt;
    const bool allow_zero = node.attr_int("allowzero", 0) != 0;
    SymbolicDims out;
    std::optional<size_t> infer;
    for (size_t i = 0; i < target->values.size(); ++i) {
      const DimExpr& d = target->values[i];
      if (d == num(-1)) {
        if (infer) return std::nullopt;
        infer = i;
        out.push_back(num(1));
      } else if (d == num(0) && !allow_zero) {
        if (!x || i >= x->size()) return std::nullopt;
        out.push_back((*x)[i]);
      } else {
        out.push_back(d);
      }
    }
    if (infer) {
      std::optional<DimExpr> total = x ? product(*x, 0, x->size()) : std::nullopt;
      std::optional<DimExpr> rest = product(out, 0, out.size());
      std::optional<DimExpr> q = total && rest ? DimExpr::div_exact(*total, *rest) : std::nullopt;
      out[*infer] = q ? *q : fresh(s);
    }
    if (const SymbolicInts* v = in_ints(0)) ints = SymbolicInts{v->values, out.empty()};
    return Outputs{out};
  }

  std::optional<Outputs> transpose() {
    const SymbolicDims* x = in_shape(0);
    if (!x) return std::nullopt;
    std::vector<int64_t> perm = node.attr_ints("perm");
    if (perm.empty())
      for (size_t i = x->size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
    if (perm.size() != x->size()) return std::nullopt;
    SymbolicDims out;
    std::vector<size_t> axes;
    for (int64_t p : perm) {
      auto a = normalize_axis(p, x->size());
      if (!a) return std::nullopt;
      axes.push_back(static_cast<size_t>(*a));
      out.push_back((*x)[axes.back()]);
    }
    const SymbolicInts* v = in_ints(0);
    auto dims = static_dims(x);
    if (v && dims) {
      // Output entry i reads the input at the permuted multi-index.
      std::vector<size_t> stride(dims->size(), 1);
      for (size_t k = dims->size(); k-- > 1;) stride[k - 1] = stride[k] * static_cast<size_t>((*dims)[k]);
      std::vector<size_t> index(axes.size(), 0);
      SymbolicInts moved{{}, v->scalar};
      for (size_t i = 0; i < v->values.size(); ++i) {
        size_t at = 0;
        for (size_t k = 0; k < axes.size(); ++k) at += index[k] * stride[axes[k]];
        if (at >= v->values.size()) return Outputs{out};
        moved.values.push_back(v->values[at]);
        for (size_t k = axes.size(); k-- > 0;) {  // the next output index, row-major
          if (++index[k] < static_cast<size_t>((*dims)[axes[k]])) break;
          index[k] = 0;
        }
      }
      ints = std::move(moved);
    }
    return Outputs{out};
  }

  std::optional<Outputs> flatten() {
    const SymbolicDims* x = in_shape(0);
    if (!x) return std::nullopt;
    int64_t axis = node.attr_int("axis", 1);
    if (axis < 0) axis += static_cast<int64_t>(x->size());
    if (axis < 0 || axis > static_cast<int64_t>(x->size())) return std::nullopt;
    auto a = product(*x, 0, static_cast<size_t>(axis)), b = product(*x, static_cast<size_t>(axis), x->size());
    return Outputs{SymbolicDims{a ? *a : fresh(s), b ? *b : fresh(s)}};
  }

  std::optional<Outputs> expand() {
    const SymbolicDims* x = in_shape(0);
    const SymbolicInts* target = in_ints(1);
    if (!x || !target || target->scalar) return std::nullopt;
    auto out = broadcast({x, &target->values}, s, &Rules::fresh);
    if (!out) return std::nullopt;
    return Outputs{*out};
  }

  std::optional<Outputs> constant_of_shape() {
    const SymbolicInts* target = in_ints(0);
    if (!target) return std::nullopt;
    const ir::Attribute* value = node.attribute("value");
    auto count = product(target->values, 0, target->values.size());
    auto n = count ? count->constant_value() : std::nullopt;
    if (n && *n >= 0 && static_cast<size_t>(*n) <= kMaxTrackedInts) {
      if (value == nullptr) {
        // value defaults to a float 0: not an int tensor
      } else if (auto fill = ints_of(value->proto.t()); fill && fill->size() == 1) {
        ints = SymbolicInts{SymbolicDims(static_cast<size_t>(*n), num(fill->front())), target->values.empty()};
      }
    }
    return Outputs{target->values};
  }

  std::optional<Outputs> range() {
    auto start = in_ints(0), limit = in_ints(1), delta = in_ints(2);
    if (!start || !limit || !delta || start->values.size() != 1 || limit->values.size() != 1 || delta->values.size() != 1)
      return std::nullopt;
    auto d = delta->values[0].constant_value();
    auto span = DimExpr::sub(limit->values[0], start->values[0]);
    if (!d || *d == 0 || !span) return Outputs{SymbolicDims{fresh(s)}};
    if (auto n = span->constant_value()) {
      const int64_t len = std::max<int64_t>(0, (*n + *d + (*d > 0 ? -1 : 1)) / *d);
      if (static_cast<size_t>(len) <= kMaxTrackedInts && start->values[0].is_constant()) {
        ints = SymbolicInts{};
        for (int64_t i = 0; i < len; ++i) ints->values.push_back(num(*start->values[0].constant_value() + i * *d));
      }
      return Outputs{SymbolicDims{num(len)}};
    }
    auto q = DimExpr::div_exact(*span, num(*d));
    return Outputs{SymbolicDims{q ? *q : fresh(s)}};
  }

  std::optional<Outputs> tile() {
    const SymbolicDims* x = in_shape(0);
    const SymbolicInts* repeats = in_ints(1);
    if (!x || !repeats || repeats->values.size() != x->size()) return std::nullopt;
    SymbolicDims out;
    for (size_t i = 0; i < x->size(); ++i) {
      auto p = DimExpr::mul((*x)[i], repeats->values[i]);
      out.push_back(p ? *p : fresh(s));
    }
    return Outputs{out};
  }

  std::optional<Outputs> pad() {
    const SymbolicDims* x = in_shape(0);
    if (!x) return std::nullopt;
    SymbolicDims pads;
    if (s.opset_ < 11) {
      for (int64_t p : node.attr_ints("pads")) pads.push_back(num(p));
    } else {
      const SymbolicInts* given = in_ints(1);
      if (!given) return std::nullopt;
      pads = given->values;
    }
    std::vector<int64_t> axes;
    if (node.input(3) != nullptr) {
      auto given = in_numbers(3);
      if (!given) return std::nullopt;
      axes = *given;
    } else {
      for (size_t i = 0; i < x->size(); ++i) axes.push_back(static_cast<int64_t>(i));
    }
    if (pads.size() != 2 * axes.size()) return std::nullopt;
    SymbolicDims out = *x;
    for (size_t i = 0; i < axes.size(); ++i) {
      auto a = normalize_axis(axes[i], x->size());
      if (!a) return std::nullopt;
      auto b = DimExpr::add(out[*a], pads[i]);
      auto e = b ? DimExpr::add(*b, pads[i + axes.size()]) : std::nullopt;
      out[*a] = e ? *e : fresh(s);
    }
    return Outputs{out};
  }

  std::optional<Outputs> matmul() {
    const SymbolicDims* a = in_shape(0);
    const SymbolicDims* b = in_shape(1);
    if (!a || !b || a->empty() || b->empty()) return std::nullopt;
    SymbolicDims x = *a, y = *b;
    const bool vec_a = x.size() == 1, vec_b = y.size() == 1;
    if (vec_a) x.insert(x.begin(), num(1));
    if (vec_b) y.push_back(num(1));
    SymbolicDims bx(x.begin(), x.end() - 2), by(y.begin(), y.end() - 2);
    auto batch = broadcast({&bx, &by}, s, &Rules::fresh);
    if (!batch) return std::nullopt;
    SymbolicDims out = *batch;
    if (!vec_a) out.push_back(x[x.size() - 2]);
    if (!vec_b) out.push_back(y.back());
    return Outputs{out};
  }

  std::optional<Outputs> split() {
    const SymbolicDims* x = in_shape(0);
    if (!x) return std::nullopt;
    auto axis = normalize_axis(node.attr_int("axis", 0), x->size());
    if (!axis) return std::nullopt;
    const size_t n = node.outputs().size();
    SymbolicDims sizes;
    if (s.opset_ >= 13 && node.input(1) != nullptr) {
      const SymbolicInts* given = in_ints(1);
      if (!given) return std::nullopt;
      sizes = given->values;
    } else if (s.opset_ < 13 && node.attribute("split")) {
      for (int64_t v : node.attr_ints("split")) sizes.push_back(num(v));
    } else {
      auto part = DimExpr::div_exact((*x)[*axis], num(static_cast<int64_t>(n)));
      if (!part) return std::nullopt;  // uneven chunks: ONNX's own rules know them for numbers
      sizes.assign(n, *part);
    }
    if (sizes.size() != n) return std::nullopt;
    Outputs outs;
    for (const DimExpr& size : sizes) {
      SymbolicDims d = *x;
      d[*axis] = size;
      outs.push_back(d);
    }
    return outs;
  }

  std::optional<Outputs> reduce_over(std::vector<int64_t> axes, bool keep, bool noop_when_empty) {
    const SymbolicDims* x = in_shape(0);
    if (!x) return std::nullopt;
    if (axes.empty()) {
      if (noop_when_empty) return Outputs{*x};
      for (size_t i = 0; i < x->size(); ++i) axes.push_back(static_cast<int64_t>(i));
    }
    std::vector<bool> reduced(x->size(), false);
    for (int64_t a : axes) {
      auto n = normalize_axis(a, x->size());
      if (!n) return std::nullopt;
      reduced[static_cast<size_t>(*n)] = true;
    }
    SymbolicDims out;
    for (size_t i = 0; i < x->size(); ++i) {
      if (!reduced[i]) out.push_back((*x)[i]);
      else if (keep) out.push_back(num(1));
    }
    const SymbolicInts* v = in_ints(0);
    const std::string& op = node.op_type();
    if (v && x->size() <= 1 && out.size() <= 1 && (op == "ReduceProd" || op == "ReduceSum")) {
      std::optional<DimExpr> acc = num(op == "ReduceProd" ? 1 : 0);
      for (const DimExpr& e : v->values)
        if (acc) acc = op == "ReduceProd" ? DimExpr::mul(*acc, e) : DimExpr::add(*acc, e);
      ints = SymbolicInts{{acc ? *acc : fresh(s)}, out.empty()};
    }
    return Outputs{out};
  }

  std::optional<Outputs> reduce() {
    const int64_t moved = node.op_type() == "ReduceSum" ? 13 : 18;
    auto given = axes(moved, 1);
    if (!given) return std::nullopt;
    return reduce_over(*given, node.attr_int("keepdims", 1) != 0, node.attr_int("noop_with_empty_axes", 0) != 0);
  }

  std::optional<Outputs> arg_reduce() {
    return reduce_over({node.attr_int("axis", 0)}, node.attr_int("keepdims", 1) != 0, false);
  }

  std::optional<Outputs> resize() {
    const SymbolicDims* x = in_shape(0);
    if (!x) return std::nullopt;
    if (node.attr_string("keep_aspect_ratio_policy", "stretch") != "stretch") return std::nullopt;
    std::vector<int64_t> axes = node.attr_ints("axes");
    if (axes.empty())
      for (size_t i = 0; i < x->size(); ++i) axes.push_back(static_cast<int64_t>(i));
    SymbolicDims out = *x;
    const bool upsample = node.op_type() == "Upsample";
    const size_t scales_at = upsample ? 1 : (s.opset_ < 11 ? 1 : 2);
    const SymbolicInts* sizes = !upsample && s.opset_ >= 11 ? in_ints(3) : nullptr;
    if (sizes && sizes->values.size() == axes.size()) {
      for (size_t i = 0; i < axes.size(); ++i) {
        auto a = normalize_axis(axes[i], x->size());
        if (!a) return std::nullopt;
        out[*a] = sizes->values[i];
      }
      return Outputs{out};
    }
    const onnx::TensorProto* t = node.input(scales_at) ? node.input(scales_at)->constant_tensor() : nullptr;
    if (t == nullptr || t->data_type() != onnx::TensorProto::FLOAT) return std::nullopt;
    auto bytes = io::inline_bytes(*t);
    if (!bytes.ok() || bytes->size() != 4 * axes.size()) return std::nullopt;
    std::vector<float> scales(axes.size());
    std::memcpy(scales.data(), bytes->data(), bytes->size());
    for (size_t i = 0; i < axes.size(); ++i) {
      auto a = normalize_axis(axes[i], x->size());
      if (!a) return std::nullopt;
      DimExpr& d = out[*a];
      if (scales[i] == 1.0f) continue;
      if (auto v = d.constant_value()) {
        d = num(static_cast<int64_t>(std::floor(static_cast<float>(*v) * scales[i])));
      } else if (scales[i] == std::floor(scales[i]) && scales[i] > 0) {
        auto p = DimExpr::mul(d, num(static_cast<int64_t>(scales[i])));
        d = p ? *p : fresh(s);
      } else {
        d = fresh(s);
      }
    }
    return Outputs{out};
  }

  std::optional<Outputs> topk() {
    const SymbolicDims* x = in_shape(0);
    if (!x) return std::nullopt;
    auto axis = normalize_axis(node.attr_int("axis", -1), x->size());
    if (!axis) return std::nullopt;
    SymbolicDims out = *x;
    if (s.opset_ < 10) {
      out[*axis] = num(node.attr_int("k", 0));
    } else {
      const SymbolicInts* k = in_ints(1);
      out[*axis] = k && k->values.size() == 1 ? k->values[0] : fresh(s);
    }
    return Outputs{out, out};
  }

  // Conv and pooling: out = floor((in + pads - dilation*(k-1) - 1) / stride) + 1
  // (ceil with ceil_mode), or ceil(in / stride) with SAME padding. On a
  // symbolic spatial dim only stride 1 gives an expression.
  std::optional<Outputs> window() {
    const SymbolicDims* x = in_shape(0);
    const bool conv = node.op_type() == "Conv";
    const SymbolicDims* w = conv ? in_shape(1) : nullptr;
    if (!x || x->size() < 3 || (conv && (!w || w->size() != x->size()))) return std::nullopt;
    const size_t spatial = x->size() - 2;
    std::vector<int64_t> kernel = node.attr_ints("kernel_shape");
    if (kernel.empty() && conv) {
      for (size_t i = 0; i < spatial; ++i) {
        auto k = (*w)[i + 2].constant_value();
        if (!k) return std::nullopt;
        kernel.push_back(*k);
      }
    }
    if (kernel.size() != spatial) return std::nullopt;
    std::vector<int64_t> strides = node.attr_ints("strides"), dilations = node.attr_ints("dilations"),
                         pads = node.attr_ints("pads");
    if (strides.empty()) strides.assign(spatial, 1);
    if (dilations.empty()) dilations.assign(spatial, 1);
    if (pads.empty()) pads.assign(2 * spatial, 0);
    if (strides.size() != spatial || dilations.size() != spatial || pads.size() != 2 * spatial) return std::nullopt;
    const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
    const bool ceil_mode = node.attr_int("ceil_mode", 0) != 0;
    SymbolicDims out{(*x)[0], conv ? (*w)[0] : (*x)[1]};
    for (size_t i = 0; i < spatial; ++i) {
      const DimExpr& in = (*x)[i + 2];
      const int64_t stride = strides[i], reach = dilations[i] * (kernel[i] - 1) + 1;
      if (stride <= 0) return std::nullopt;
      if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        auto v = in.constant_value();
        out.push_back(stride == 1 ? in : v ? num((*v + stride - 1) / stride) : fresh(s));
        continue;
      }
      const int64_t pad = auto_pad == "VALID" ? 0 : pads[i] + pads[i + spatial];
      if (auto v = in.constant_value()) {
        const int64_t span = *v + pad - reach;
        if (span < 0) return std::nullopt;
        out.push_back(num((ceil_mode ? (span + stride - 1) / stride : span / stride) + 1));
      } else if (stride == 1) {
        auto d = DimExpr::add(in, num(pad - reach + 1));
        out.push_back(d ? *d : fresh(s));
      } else {
        out.push_back(fresh(s));
      }
    }
    const size_t n = node.op_type() == "MaxPool" && node.outputs().size() > 1 ? 2 : 1;
    return Outputs(n, out);
  }

  std::optional<Outputs> global_pool() {
    const SymbolicDims* x = in_shape(0);
    if (!x || x->size() < 2) return std::nullopt;
    SymbolicDims out{(*x)[0], (*x)[1]};
    out.resize(x->size(), num(1));
    return Outputs{out};
  }

  std::optional<Outputs> gemm() {
    const SymbolicDims* a = in_shape(0);
    const SymbolicDims* b = in_shape(1);
    if (!a || !b || a->size() != 2 || b->size() != 2) return std::nullopt;
    const bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
    return Outputs{SymbolicDims{(*a)[ta ? 1 : 0], (*b)[tb ? 0 : 1]}};
  }

  std::optional<Outputs> non_zero() {
    const SymbolicDims* x = in_shape(0);
    if (!x) return std::nullopt;
    return Outputs{SymbolicDims{num(static_cast<int64_t>(x->size())), fresh(s)}};
  }
};

SymbolicShapes::SymbolicShapes(const ir::Graph& graph, int64_t opset) : opset_(opset) {
  for (const ir::Node& node : graph.nodes()) evaluate(node);
}

bool SymbolicShapes::is_fresh(const DimExpr& dim) {
  const std::string text = dim.to_string();
  return text.find('?') != std::string::npos || text.find("unk__") != std::string::npos;
}

DimExpr SymbolicShapes::fresh() { return DimExpr::symbol("?" + std::to_string(fresh_count_++)); }

std::optional<SymbolicDims> SymbolicShapes::shape_from_type(const ir::Value* value) {
  if (value->constant_tensor() != nullptr) {
    SymbolicDims dims;
    for (int64_t d : value->constant_tensor()->dims()) dims.push_back(num(d));
    return dims;
  }
  if (!value->has_type() || !value->type().has_tensor_type() || !value->type().tensor_type().has_shape()) return std::nullopt;
  SymbolicDims dims;
  for (const auto& d : value->type().tensor_type().shape().dim()) {
    if (d.has_dim_value()) dims.push_back(num(d.dim_value()));
    else if (d.has_dim_param() && !d.dim_param().empty()) dims.push_back(DimExpr::parse(d.dim_param()));
    else dims.push_back(fresh());
  }
  return dims;
}

std::optional<SymbolicInts> SymbolicShapes::ints_from_constant(const ir::Value* value) const {
  const onnx::TensorProto* t = value->constant_tensor();
  if (t == nullptr) return std::nullopt;
  auto numbers = ints_of(*t);
  if (!numbers) return std::nullopt;
  SymbolicInts out{{}, t->dims_size() == 0};
  for (int64_t v : *numbers) out.values.push_back(num(v));
  return out;
}

const SymbolicDims* SymbolicShapes::shape(const ir::Value* value) {
  if (value == nullptr) return nullptr;
  auto found = shapes_.find(value);
  if (found == shapes_.end()) found = shapes_.emplace(value, shape_from_type(value)).first;
  return found->second ? &*found->second : nullptr;
}

const SymbolicInts* SymbolicShapes::ints(const ir::Value* value) {
  if (value == nullptr) return nullptr;
  auto found = ints_.find(value);
  if (found == ints_.end()) found = ints_.emplace(value, ints_from_constant(value)).first;
  return found->second ? &*found->second : nullptr;
}

void SymbolicShapes::evaluate(const ir::Node& node) {
  std::optional<Outputs> outs;
  std::optional<SymbolicInts> out_ints;
  if (node.in_onnx_domain()) {
    Rules rules{*this, node, std::nullopt};
    outs = rules.run();
    out_ints = std::move(rules.ints);
  }
  for (size_t i = 0; i < node.outputs().size(); ++i) {
    const ir::Value* out = node.output(i);
    if (out == nullptr) continue;
    if (out->constant_tensor() != nullptr) continue;  // a Constant node: read lazily
    std::optional<SymbolicDims> typed = shape_from_type(out);
    std::optional<SymbolicDims> ruled = outs && i < outs->size() ? (*outs)[i] : std::nullopt;
    std::optional<SymbolicDims> merged = typed ? typed : ruled;
    if (typed && ruled && typed->size() == ruled->size()) {
      // A number from either side wins, then an expression over the model's
      // symbols, then whatever is left.
      for (size_t d = 0; d < typed->size(); ++d) {
        const DimExpr &t = (*typed)[d], &r = (*ruled)[d];
        if (t.is_constant()) continue;
        if (r.is_constant() || (is_fresh(t) && !is_fresh(r))) (*merged)[d] = r;
      }
    }
    shapes_[out] = merged;
    if (i == 0 && out_ints && merged) {
      // Kept only when the count agrees with the shape (rank 2 and more
      // must be static); otherwise the rule and the type disagree.
      const auto n = static_cast<int64_t>(out_ints->values.size());
      std::optional<int64_t> count;
      if (merged->size() == 1 && !(*merged)[0].is_constant()) count = n;
      else if (auto p = product(*merged, 0, merged->size())) count = p->constant_value();
      if (count != n) continue;
      out_ints->scalar = merged->empty();
      ints_[out] = out_ints;
    }
  }
}

namespace {

int32_t output_elem_type(const ir::Node& node, size_t index) {
  const std::string& op = node.op_type();
  if (op == "Shape" || op == "Size" || op == "NonZero" || op == "ArgMax" || op == "ArgMin" ||
      ((op == "TopK" || op == "MaxPool") && index == 1))
    return onnx::TensorProto::INT64;
  if (op == "Dropout" && index == 1) return onnx::TensorProto::BOOL;  // the mask
  if (op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual" || op == "And" ||
      op == "Or" || op == "Xor" || op == "Not" || op == "IsNaN" || op == "IsInf")
    return onnx::TensorProto::BOOL;
  if (op == "Cast") return static_cast<int32_t>(node.attr_int("to", 0));
  if (op == "ConstantOfShape") {
    const ir::Attribute* value = node.attribute("value");
    return value ? value->proto.t().data_type() : onnx::TensorProto::FLOAT;
  }
  const ir::Value* from = node.input(op == "Where" ? 1 : 0);
  return from ? from->elem_type() : 0;
}

// The names ONNX's inference gives dims it cannot tell.
bool made_up(const std::string& param) { return param.empty() || param.rfind("unk__", 0) == 0; }

void write_dim(onnx::TensorShapeProto_Dimension& slot, const DimExpr& dim) {
  if (auto v = dim.constant_value()) slot.set_dim_value(*v);
  else slot.set_dim_param(dim.to_string());
}

size_t infer_in_graph(ir::Graph& graph, int64_t opset) {
  SymbolicShapes shapes(graph, opset);
  size_t changed = 0;
  for (ir::Node& node : graph.nodes()) {
    for (size_t i = 0; i < node.outputs().size(); ++i) {
      ir::Value* v = node.output(i);
      if (v == nullptr || v->is_graph_input() || v->is_constant()) continue;
      if (v->has_type() && !v->type().has_tensor_type()) continue;  // a sequence or map
      // A graph output keeps the shape the model declares for it.
      if (v->is_graph_output() && v->has_type() && v->type().tensor_type().has_shape()) continue;
      const SymbolicDims* dims = shapes.shape(v);
      if (dims == nullptr) continue;
      auto* tensor = v->mutable_info().mutable_type()->mutable_tensor_type();
      bool improved = false;
      if (!tensor->has_shape()) {
        if (tensor->elem_type() == 0) tensor->set_elem_type(output_elem_type(node, i));
        if (tensor->elem_type() == 0) {
          v->mutable_info().clear_type();
          continue;
        }
        auto* shape = tensor->mutable_shape();
        for (const DimExpr& d : *dims) {
          auto* slot = shape->add_dim();
          if (!SymbolicShapes::is_fresh(d)) write_dim(*slot, d);
        }
        improved = true;
      } else if (tensor->shape().dim_size() == static_cast<int>(dims->size())) {
        for (int d = 0; d < tensor->shape().dim_size(); ++d) {
          auto* slot = tensor->mutable_shape()->mutable_dim(d);
          const DimExpr& e = (*dims)[static_cast<size_t>(d)];
          if (slot->has_dim_value() || (slot->has_dim_param() && !made_up(slot->dim_param()))) continue;
          if (SymbolicShapes::is_fresh(e)) continue;
          write_dim(*slot, e);
          improved = true;
        }
      }
      if (!improved) continue;
      ++changed;
      if (!v->is_graph_output()) graph.add_value_info(v);
    }
    for (ir::Graph* sub : node.subgraphs()) changed += infer_in_graph(*sub, opset);
  }
  return changed;
}

}  // namespace

size_t infer_symbolic_shapes(ir::Graph& graph, int64_t opset) { return infer_in_graph(graph, opset); }

}  // namespace onnxkit::analysis
