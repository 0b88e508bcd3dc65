// resolve-shape-inputs: shape arithmetic over symbolic dims, written down as
// constants where the result does not depend on the symbols.
//
// Exporters compute shapes at run time: x.view(x.size(0), -1) becomes
//   s = Shape(x); n = Gather(s, 0); u = Unsqueeze(n, 0); t = Concat(u, [-1]); Reshape(x, t)
// With a symbolic batch, constant folding cannot touch this chain. Here each
// int64 vector is tracked entry by entry as a known number, "dim k of tensor
// T" (with T's symbol for it, if any), or unknown. Then:
//   - a vector whose entries are all known becomes an initializer;
//   - Reshape's shape becomes a constant when every entry is known, is the
//     same dim of the data at the same position (written 0, "copy", unless
//     allowzero), or is the single entry left to infer (written -1, or as a
//     number when the data's other dims are static: [0, 4096]); a constant
//     shape's -1 becomes a number the same way;
//   - Resize's sizes become constant scales when each output dim is either
//     the input's own dim (scale 1) or a number over a static input dim;
//   - Expand's shape becomes a constant when each entry is known or is the
//     input's own dim at that position (written 1: broadcasting keeps it).
// The Shape chain then feeds nothing and cleanup removes it.

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "passes/pass.h"
#include "passes/resolve_shape_inputs.h"

namespace onnxkit::passes {

namespace {

struct SymbolicDim {
  enum class Kind { known, dim_of, unknown } kind = Kind::unknown;
  int64_t value = 0;                   // known
  const ir::Value* tensor = nullptr;   // dim_of: dim `axis` of `tensor`
  int64_t axis = 0;
  std::string symbol;                  // dim_of: the dim's dim_param, when it has one

  static SymbolicDim known(int64_t v) { return {Kind::known, v, nullptr, 0, {}}; }
  static SymbolicDim unknown() { return {}; }
};

struct SymbolicVector {
  std::vector<SymbolicDim> dims;
  bool scalar = false;
  bool all_known() const {
    for (const auto& d : dims)
      if (d.kind != SymbolicDim::Kind::known) return false;
    return true;
  }
};

// x op y as the runtime's kernels compute it (Div truncates toward zero),
// or nothing where they give no shape: a division by zero, which they
// refuse, and a result beyond int64, where they wrap (and x86 traps on
// INT64_MIN / -1).
std::optional<int64_t> int64_arithmetic(std::string_view op, int64_t x, int64_t y) {
  int64_t r = 0;
  if (op == "Add") return __builtin_add_overflow(x, y, &r) ? std::nullopt : std::optional(r);
  if (op == "Sub") return __builtin_sub_overflow(x, y, &r) ? std::nullopt : std::optional(r);
  if (op == "Mul") return __builtin_mul_overflow(x, y, &r) ? std::nullopt : std::optional(r);
  if (y == 0 || (x == std::numeric_limits<int64_t>::min() && y == -1)) return std::nullopt;
  return x / y;
}

// The dim_param of dim `axis` of `value` ("" when it has none or is static).
std::string dim_symbol(const ir::Value* value, int64_t axis) {
  if (!value->has_type() || !value->type().has_tensor_type() || !value->type().tensor_type().has_shape()) return "";
  const auto& shape = value->type().tensor_type().shape();
  if (axis < 0 || axis >= shape.dim_size()) return "";
  return shape.dim(static_cast<int>(axis)).dim_param();
}

// True when `d` is certainly dim `axis` of `tensor`.
bool is_dim_of(const SymbolicDim& d, const ir::Value* tensor, int64_t axis) {
  if (d.kind == SymbolicDim::Kind::known) {
    auto shape = tensor->static_shape();
    return shape && axis < static_cast<int64_t>(shape->size()) && (*shape)[axis] == d.value;
  }
  if (d.kind != SymbolicDim::Kind::dim_of) return false;
  if (d.tensor == tensor && d.axis == axis) return true;
  return !d.symbol.empty() && d.symbol == dim_symbol(tensor, axis);
}

class Evaluator {
 public:
  explicit Evaluator(PassContext& context) : context_(context) {}

  // The vector `value` holds, entry by entry; null when it is not a shape-like
  // int64 vector (or scalar) this evaluator understands.
  const SymbolicVector* eval(const ir::Value* value) {
    if (value == nullptr) return nullptr;
    auto found = memo_.find(value);
    if (found != memo_.end()) return found->second ? &*found->second : nullptr;
    memo_[value] = std::nullopt;  // a cycle (impossible in a valid graph) ends here
    std::optional<SymbolicVector> result = compute(value);
    memo_[value] = std::move(result);
    return memo_[value] ? &*memo_[value] : nullptr;
  }

 private:
  std::optional<SymbolicVector> compute(const ir::Value* value) {
    if (auto ints = context_.constant_ints(value)) {
      SymbolicVector v;
      v.scalar = context_.constant(value)->rank() == 0;
      for (int64_t x : *ints) v.dims.push_back(SymbolicDim::known(x));
      return v;
    }
    const ir::Node* node = value->producer();
    if (node == nullptr || value != node->output(0) || !node->in_onnx_domain()) return std::nullopt;
    // What each op makes of its inputs' vectors.
    using Rule = std::optional<SymbolicVector> (Evaluator::*)(const ir::Node&);
    static const std::unordered_map<std::string_view, Rule> rules = {
        {"Shape", &Evaluator::dims_of},       {"Identity", &Evaluator::same},       {"Cast", &Evaluator::cast},
        {"Gather", &Evaluator::gather},       {"Unsqueeze", &Evaluator::squeeze},   {"Squeeze", &Evaluator::squeeze},
        {"Concat", &Evaluator::concat},       {"Slice", &Evaluator::slice},         {"Add", &Evaluator::arithmetic},
        {"Sub", &Evaluator::arithmetic},      {"Mul", &Evaluator::arithmetic},      {"Div", &Evaluator::arithmetic},
    };
    auto rule = rules.find(node->op_type());
    return rule != rules.end() ? (this->*rule->second)(*node) : std::nullopt;
  }

  std::optional<SymbolicVector> dims_of(const ir::Node& node) {
    const ir::Value* x = node.input(0);
    auto shape = x ? x->static_shape() : std::nullopt;
    if (!shape) return std::nullopt;
    const int64_t rank = static_cast<int64_t>(shape->size());
    auto clamp_axis = [rank](int64_t a) { return std::clamp(a < 0 ? a + rank : a, int64_t{0}, rank); };
    int64_t start = clamp_axis(node.attr_int("start", 0)), end = clamp_axis(node.attr_int("end", rank));
    SymbolicVector v;
    for (int64_t i = start; i < end; ++i) {
      if ((*shape)[i] >= 0) v.dims.push_back(SymbolicDim::known((*shape)[i]));
      else v.dims.push_back({SymbolicDim::Kind::dim_of, 0, x, i, dim_symbol(x, i)});
    }
    return v;
  }

  std::optional<SymbolicVector> same(const ir::Node& node) {
    const SymbolicVector* in = eval(node.input(0));
    return in ? std::optional<SymbolicVector>(*in) : std::nullopt;
  }

  // To int64 only: the vector as it is.
  std::optional<SymbolicVector> cast(const ir::Node& node) {
    return node.attr_int("to", 0) == 7 ? same(node) : std::nullopt;
  }

  std::optional<SymbolicVector> gather(const ir::Node& node) {
    const SymbolicVector* data = eval(node.input(0));
    auto indices = context_.constant_ints(node.input(1));
    if (!data || data->scalar || !indices || node.attr_int("axis", 0) != 0) return std::nullopt;
    SymbolicVector v;
    v.scalar = context_.constant(node.input(1))->rank() == 0;
    const int64_t n = static_cast<int64_t>(data->dims.size());
    for (int64_t i : *indices) {
      if (i < 0) i += n;
      if (i < 0 || i >= n) return std::nullopt;
      v.dims.push_back(data->dims[i]);
    }
    return v;
  }

  // Unsqueeze of a scalar to one entry, Squeeze of one entry to a scalar.
  std::optional<SymbolicVector> squeeze(const ir::Node& node) {
    const std::string& op = node.op_type();
    const int64_t opset = context_.opset();
    const SymbolicVector* in = eval(node.input(0));
    if (!in) return std::nullopt;
    std::vector<int64_t> axes = node.attr_ints("axes");
    if (opset >= 13) {
      auto given = node.input(1) ? context_.constant_ints(node.input(1)) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
      if (!given) return std::nullopt;
      axes = *given;
    }
    SymbolicVector v = *in;
    if (op == "Unsqueeze" && in->scalar && axes.size() == 1 && (axes[0] == 0 || axes[0] == -1)) {
      v.scalar = false;
      return v;
    }
    if (op == "Squeeze" && !in->scalar && in->dims.size() == 1 && (axes.empty() || (axes.size() == 1 && (axes[0] == 0 || axes[0] == -1)))) {
      v.scalar = true;
      return v;
    }
    return std::nullopt;
  }

  std::optional<SymbolicVector> concat(const ir::Node& node) {
    if (node.attr_int("axis", 0) != 0 && node.attr_int("axis", 0) != -1) return std::nullopt;
    SymbolicVector v;
    for (const ir::Value* in : node.inputs()) {
      const SymbolicVector* part = eval(in);
      if (!part || part->scalar) return std::nullopt;
      v.dims.insert(v.dims.end(), part->dims.begin(), part->dims.end());
    }
    return v;
  }

  std::optional<SymbolicVector> slice(const ir::Node& node) {
    const int64_t opset = context_.opset();
    const SymbolicVector* data = eval(node.input(0));
    if (!data || data->scalar) return std::nullopt;
    std::vector<int64_t> starts, ends, axes{0}, steps{1};
    if (opset < 10) {
      starts = node.attr_ints("starts");
      ends = node.attr_ints("ends");
      if (node.attribute("axes")) axes = node.attr_ints("axes");
    } else {
      auto s = context_.constant_ints(node.input(1));
      auto e = context_.constant_ints(node.input(2));
      if (!s || !e) return std::nullopt;
      starts = *s;
      ends = *e;
      if (node.input(3)) {
        auto a = context_.constant_ints(node.input(3));
        if (!a) return std::nullopt;
        axes = *a;
      }
      if (node.input(4)) {
        auto st = context_.constant_ints(node.input(4));
        if (!st) return std::nullopt;
        steps = *st;
      }
    }
    if (starts.size() != 1 || ends.size() != 1 || axes.size() != 1 || (axes[0] != 0 && axes[0] != -1) ||
        steps.size() != 1 || steps[0] != 1)
      return std::nullopt;
    const int64_t n = static_cast<int64_t>(data->dims.size());
    auto clamp = [n](int64_t i) { return std::clamp(i < 0 ? i + n : i, int64_t{0}, n); };
    SymbolicVector v;
    for (int64_t i = clamp(starts[0]); i < clamp(ends[0]); ++i) v.dims.push_back(data->dims[i]);
    return v;
  }

  // Add, Sub, Mul, Div entry by entry, as int64_arithmetic.
  std::optional<SymbolicVector> arithmetic(const ir::Node& node) {
    const std::string& op = node.op_type();
    const SymbolicVector* a = eval(node.input(0));
    const SymbolicVector* b = eval(node.input(1));
    if (!a || !b) return std::nullopt;
    const size_t n = std::max(a->dims.size(), b->dims.size());
    if ((a->dims.size() != n && a->dims.size() != 1) || (b->dims.size() != n && b->dims.size() != 1)) return std::nullopt;
    SymbolicVector v;
    v.scalar = a->scalar && b->scalar;
    for (size_t i = 0; i < n; ++i) {
      const SymbolicDim& x = a->dims[a->dims.size() == 1 ? 0 : i];
      const SymbolicDim& y = b->dims[b->dims.size() == 1 ? 0 : i];
      if (x.kind == SymbolicDim::Kind::known && y.kind == SymbolicDim::Kind::known) {
        std::optional<int64_t> r = int64_arithmetic(op, x.value, y.value);
        if (!r) return std::nullopt;
        v.dims.push_back(SymbolicDim::known(*r));
      } else if ((op == "Mul" || op == "Div") && y.kind == SymbolicDim::Kind::known && y.value == 1) {
        v.dims.push_back(x);
      } else if (op == "Mul" && x.kind == SymbolicDim::Kind::known && x.value == 1) {
        v.dims.push_back(y);
      } else if ((op == "Add" || op == "Sub") && y.kind == SymbolicDim::Kind::known && y.value == 0) {
        v.dims.push_back(x);
      } else {
        v.dims.push_back(SymbolicDim::unknown());
      }
    }
    return v;
  }

  PassContext& context_;
  std::unordered_map<const ir::Value*, std::optional<SymbolicVector>> memo_;
};

runtime::Tensor int64_vector(const std::vector<int64_t>& values) {
  return runtime::Tensor::from<int64_t>({static_cast<int64_t>(values.size())}, values);
}

// Reshape's target with no reference to run-time shapes, or nullopt.
std::optional<std::vector<int64_t>> reshape_target(const SymbolicVector& shape, const ir::Value* data, bool allow_zero) {
  std::vector<int64_t> target;
  int infer = -1;
  for (size_t i = 0; i < shape.dims.size(); ++i) {
    const SymbolicDim& d = shape.dims[i];
    if (d.kind == SymbolicDim::Kind::known && d.value == -1) {
      if (infer >= 0) return std::nullopt;
      infer = static_cast<int>(i);
      target.push_back(-1);
    } else if (d.kind == SymbolicDim::Kind::known && (d.value > 0 || allow_zero)) {
      target.push_back(d.value);
    } else if (d.kind == SymbolicDim::Kind::known) {
      target.push_back(0);  // 0 without allowzero already means "copy"
    } else if (!allow_zero && is_dim_of(d, data, static_cast<int64_t>(i))) {
      target.push_back(0);
    } else {
      if (infer >= 0) return std::nullopt;
      infer = static_cast<int>(i);
      target.push_back(-1);
    }
  }
  // Engines prefer numbers to -1: when every dim of the data that is not
  // copied is static, the inferred entry is a number too.
  auto dims = data->static_shape();
  if (infer >= 0 && dims) {
    int64_t remaining = 1, known = 1;
    for (size_t i = 0; i < dims->size(); ++i) {
      bool copied = i < target.size() && target[i] == 0 && !allow_zero;
      if (copied) continue;
      if ((*dims)[i] < 0) return target;
      remaining *= (*dims)[i];
    }
    for (int64_t t : target)
      if (t > 0) known *= t;
    if (known > 0 && remaining % known == 0) target[infer] = remaining / known;
  }
  return target;
}

// Resize's scales for constant output sizes over the input's dims, or nullopt.
std::optional<std::vector<float>> resize_scales(const SymbolicVector& sizes, const ir::Value* x) {
  auto shape = x->static_shape();
  if (!shape || shape->size() != sizes.dims.size()) return std::nullopt;
  std::vector<float> scales;
  for (size_t i = 0; i < sizes.dims.size(); ++i) {
    const SymbolicDim& d = sizes.dims[i];
    const int64_t in = (*shape)[i];
    if (is_dim_of(d, x, static_cast<int64_t>(i))) {
      scales.push_back(1.0f);
    } else if (d.kind == SymbolicDim::Kind::known && in > 0) {
      // The output dim is floor(in * scale) in float arithmetic: nudge the
      // scale up until that gives back exactly the size asked for.
      float s = static_cast<float>(d.value) / static_cast<float>(in);
      for (int k = 0; k < 4 && static_cast<int64_t>(std::floor(static_cast<float>(in) * s)) < d.value; ++k)
        s = std::nextafter(s, 2 * s + 1);
      if (static_cast<int64_t>(std::floor(static_cast<float>(in) * s)) != d.value) return std::nullopt;
      scales.push_back(s);
    } else {
      return std::nullopt;
    }
  }
  return scales;
}

class ResolveShapeInputs final : public Pass {
 public:
  std::string_view name() const override { return "resolve-shape-inputs"; }
  std::string_view summary() const override {
    return "write shape arithmetic over symbolic dims as constants (Reshape [0,-1], Resize scales, Expand)";
  }

  size_t run(ir::Graph& graph, PassContext& context) const override {
    Evaluator eval(context);
    size_t changes = 0;
    std::vector<ir::Node*> nodes;
    for (ir::Node& n : graph.nodes()) nodes.push_back(&n);
    for (ir::Node* node : nodes) {
      if (context.excluded(*node) || !node->in_onnx_domain()) continue;
      const std::string& op = node->op_type();
      if (op == "Reshape" && node->input(1) && node->input(0)) {
        const SymbolicVector* shape = eval.eval(node->input(1));
        if (!shape || shape->scalar) continue;
        auto target = reshape_target(*shape, node->input(0), node->attr_int("allowzero", 0) != 0);
        if (!target) continue;
        // A constant shape is rewritten only to turn its -1 into a number.
        if (node->input(1)->is_constant() && context.constant_ints(node->input(1)) == target) continue;
        node->set_input(1, context.add_constant(graph, node->input(1)->name() + "_resolved", int64_vector(*target)));
        context.note(fmt::format("{}: shape written as constant {}", node->describe(), runtime::shape_to_string(*target)));
        ++changes;
      } else if (op == "Resize" && context.opset() >= 11 && node->input(3) && !node->input(3)->is_constant() &&
                 node->input(0)) {
        const SymbolicVector* sizes = eval.eval(node->input(3));
        if (!sizes || sizes->scalar) continue;
        auto scales = resize_scales(*sizes, node->input(0));
        if (!scales) continue;
        runtime::Tensor data = runtime::Tensor::from<float>({static_cast<int64_t>(scales->size())}, *scales);
        // Before opset 13 roi and scales are required inputs (an empty roi is allowed).
        if (context.opset() < 13 && node->input(1) == nullptr)
          node->set_input(1, context.add_constant(graph, "roi", runtime::Tensor::from<float>({0}, {})));
        node->set_input(2, context.add_constant(graph, node->name().empty() ? "scales" : node->name() + "_scales", data));
        node->remove_input(3);
        context.note(fmt::format("{}: sizes written as constant scales", node->describe()));
        ++changes;
      } else if (op == "Expand" && node->input(1) && !node->input(1)->is_constant() && node->input(0)) {
        const SymbolicVector* shape = eval.eval(node->input(1));
        auto in_shape = node->input(0)->static_shape();
        if (!shape || shape->scalar || !in_shape) continue;
        const int64_t offset = static_cast<int64_t>(shape->dims.size()) - static_cast<int64_t>(in_shape->size());
        std::vector<int64_t> target;
        for (size_t i = 0; i < shape->dims.size(); ++i) {
          const SymbolicDim& d = shape->dims[i];
          const int64_t axis = static_cast<int64_t>(i) - offset;
          if (d.kind == SymbolicDim::Kind::known) target.push_back(d.value);
          else if (axis >= 0 && is_dim_of(d, node->input(0), axis)) target.push_back(1);
          else break;
        }
        if (target.size() != shape->dims.size()) continue;
        node->set_input(1, context.add_constant(graph, node->input(1)->name() + "_resolved", int64_vector(target)));
        context.note(fmt::format("{}: shape written as constant {}", node->describe(), runtime::shape_to_string(target)));
        ++changes;
      }
    }
    // Vectors whose every entry is known are constants, whatever computed them.
    for (ir::Node* node : nodes) {
      ir::Value* out = node->outputs().empty() ? nullptr : node->output(0);
      if (out == nullptr || out->elem_type() != onnx::TensorProto::INT64 || (out->uses().empty() && !out->is_graph_output()) ||
          context.excluded(*node) || node->op_type() == "Constant")
        continue;
      const SymbolicVector* v = eval.eval(out);
      if (!v || !v->all_known() || (v->scalar && v->dims.size() != 1)) continue;
      std::vector<int64_t> values;
      for (const auto& d : v->dims) values.push_back(d.value);
      runtime::Tensor data = v->scalar ? runtime::Tensor::from<int64_t>({}, values) : int64_vector(values);
      ir::Value* constant = context.add_constant(graph, out->name() + "_resolved", data);
      if (!replace_value(graph, out, constant)) continue;
      context.note(fmt::format("{}: output written as constant {}", node->describe(), runtime::shape_to_string(values)));
      ++changes;
    }
    return changes;
  }
};

}  // namespace

std::unique_ptr<Pass> make_resolve_shape_inputs() { return std::make_unique<ResolveShapeInputs>(); }

}  // namespace onnxkit::passes
