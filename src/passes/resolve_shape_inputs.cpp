// resolve-shape-inputs: shape arithmetic over symbolic dims, written down as
// constants where the result does not depend on the symbols.
//
// Exporters compute shapes at run time: x.view(x.size(0), -1) becomes
//   s = Shape(x); n = Gather(s, 0); u = Unsqueeze(n, 0); t = Concat(u, [-1]); Reshape(x, t)
// With a symbolic batch, constant folding cannot touch this chain. Here each
// int64 vector is tracked entry by entry as an expression over the symbolic
// dims (analysis/symbolic_shapes.h: batch, 2*batch, batch*58*28*28 / 116...),
// and equal expressions are the same dim. Then:
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

#include "analysis/symbolic_shapes.h"
#include "passes/pass.h"
#include "passes/resolve_shape_inputs.h"

namespace onnxkit::passes {

namespace {

using analysis::DimExpr;
using analysis::SymbolicInts;
using analysis::SymbolicShapes;

// True when `d` is certainly dim `axis` of `tensor`.
bool is_dim_of(SymbolicShapes& shapes, const DimExpr& d, const ir::Value* tensor, int64_t axis) {
  const analysis::SymbolicDims* dims = shapes.shape(tensor);
  return dims != nullptr && axis >= 0 && axis < static_cast<int64_t>(dims->size()) && (*dims)[static_cast<size_t>(axis)] == d;
}

runtime::Tensor int64_vector(const std::vector<int64_t>& values) {
  return runtime::Tensor::from<int64_t>({static_cast<int64_t>(values.size())}, values);
}

// Reshape's target with no reference to run-time shapes, or nullopt.
std::optional<std::vector<int64_t>> reshape_target(SymbolicShapes& shapes, const SymbolicInts& shape, const ir::Value* data,
                                                   bool allow_zero) {
  std::vector<int64_t> target;
  int infer = -1;
  for (size_t i = 0; i < shape.values.size(); ++i) {
    const DimExpr& d = shape.values[i];
    const std::optional<int64_t> value = d.constant_value();
    if (value == -1) {
      if (infer >= 0) return std::nullopt;
      infer = static_cast<int>(i);
      target.push_back(-1);
    } else if (value && (*value > 0 || allow_zero)) {
      target.push_back(*value);
    } else if (value) {
      target.push_back(0);  // 0 without allowzero already means "copy"
    } else if (!allow_zero && is_dim_of(shapes, d, data, static_cast<int64_t>(i))) {
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
std::optional<std::vector<float>> resize_scales(SymbolicShapes& shapes, const SymbolicInts& sizes, const ir::Value* x) {
  auto shape = x->static_shape();
  if (!shape || shape->size() != sizes.values.size()) return std::nullopt;
  std::vector<float> scales;
  for (size_t i = 0; i < sizes.values.size(); ++i) {
    const DimExpr& e = sizes.values[i];
    const int64_t in = (*shape)[i];
    if (is_dim_of(shapes, e, x, static_cast<int64_t>(i))) {
      scales.push_back(1.0f);
    } else if (auto size = e.constant_value(); size && in > 0) {
      const int64_t wanted = *size;
      // The output dim is floor(in * scale) in float arithmetic: nudge the
      // scale up until that gives back exactly the size asked for.
      float s = static_cast<float>(wanted) / static_cast<float>(in);
      for (int k = 0; k < 4 && static_cast<int64_t>(std::floor(static_cast<float>(in) * s)) < wanted; ++k)
        s = std::nextafter(s, 2 * s + 1);
      if (static_cast<int64_t>(std::floor(static_cast<float>(in) * s)) != wanted) return std::nullopt;
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
    SymbolicShapes eval(graph, context.opset());
    size_t changes = 0;
    std::vector<ir::Node*> nodes;
    for (ir::Node& n : graph.nodes()) nodes.push_back(&n);
    for (ir::Node* node : nodes) {
      if (context.excluded(*node) || !node->in_onnx_domain()) continue;
      const std::string& op = node->op_type();
      if (op == "Reshape" && node->input(1) && node->input(0)) {
        const SymbolicInts* shape = eval.ints(node->input(1));
        if (!shape || shape->scalar) continue;
        auto target = reshape_target(eval, *shape, node->input(0), node->attr_int("allowzero", 0) != 0);
        if (!target) continue;
        // A constant shape is rewritten only to turn its -1 into a number.
        if (node->input(1)->is_constant() && context.constant_ints(node->input(1)) == target) continue;
        node->set_input(1, context.add_constant(graph, node->input(1)->name() + "_resolved", int64_vector(*target)));
        context.note(fmt::format("{}: shape written as constant {}", node->describe(), runtime::shape_to_string(*target)));
        ++changes;
      } else if (op == "Resize" && context.opset() >= 11 && node->input(3) && !node->input(3)->is_constant() && node->input(0)) {
        const SymbolicInts* sizes = eval.ints(node->input(3));
        if (!sizes || sizes->scalar) continue;
        auto scales = resize_scales(eval, *sizes, node->input(0));
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
        const SymbolicInts* shape = eval.ints(node->input(1));
        const analysis::SymbolicDims* in_shape = eval.shape(node->input(0));
        if (!shape || shape->scalar || !in_shape) continue;
        const int64_t offset = static_cast<int64_t>(shape->values.size()) - static_cast<int64_t>(in_shape->size());
        std::vector<int64_t> target;
        for (size_t i = 0; i < shape->values.size(); ++i) {
          const DimExpr& d = shape->values[i];
          const int64_t axis = static_cast<int64_t>(i) - offset;
          if (auto v = d.constant_value()) target.push_back(*v);
          else if (axis >= 0 && is_dim_of(eval, d, node->input(0), axis)) target.push_back(1);
          else break;
        }
        if (target.size() != shape->values.size()) continue;
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
      const SymbolicInts* v = eval.ints(out);
      if (!v || (v->scalar && v->values.size() != 1)) continue;
      std::vector<int64_t> values;
      for (const DimExpr& d : v->values)
        if (auto n = d.constant_value()) values.push_back(*n);
      if (values.size() != v->values.size()) continue;
      // Tracked contents of rank 2 and more come with a static shape.
      std::vector<int64_t> dims;
      const analysis::SymbolicDims* shape = eval.shape(out);
      if (!v->scalar && (shape == nullptr || shape->size() == 1)) dims = {static_cast<int64_t>(values.size())};
      else if (!v->scalar)
        for (const DimExpr& d : *shape) dims.push_back(*d.constant_value());
      runtime::Tensor data = runtime::Tensor::from<int64_t>(dims, values);
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
