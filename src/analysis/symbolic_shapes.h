#pragma once
// Symbolic shape inference: every dim an expression over the model's
// symbolic dims (dim_expr.h), and the contents of small integer tensors
// (the Shape -> Gather -> Mul -> Concat arithmetic exporters emit) tracked
// entry by entry the same way. ONNX's own inference gives up on a Reshape
// whose target is computed from a symbolic batch, a Pad whose amounts are
// arithmetic on constants, an Expand over Shape(x); these rules carry on.
//
// One implementation serves three users: apply_inferred_types alternates it
// with ONNX's inference (so `shapes`, `info` and `simplify` see the shapes),
// and simplify's resolve-shape-inputs pass asks it what a shape vector holds.

#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/dim_expr.h"
#include "ir/graph.h"

namespace onnxkit::analysis {

using SymbolicDims = std::vector<DimExpr>;

// The contents of a small int64/int32 tensor, row-major. Tensors of rank 2
// and more are tracked only with a static shape (shape() says it): the
// [n, 2] pads torch's F.pad export reverses with Reshape, Slice, Transpose.
struct SymbolicInts {
  SymbolicDims values;
  bool scalar = false;
};

class SymbolicShapes {
 public:
  // Evaluates every node of `graph` (not its sub-graphs) in order. Dims the
  // types leave unknown, and results no rule can tell, are fresh symbols
  // that equal only themselves; is_fresh says so of them and of the unk__N
  // names ONNX's inference makes up (which rules' expressions replace).
  SymbolicShapes(const ir::Graph& graph, int64_t opset);

  const SymbolicDims* shape(const ir::Value* value);
  const SymbolicInts* ints(const ir::Value* value);
  static bool is_fresh(const DimExpr& dim);

 private:
  void evaluate(const ir::Node& node);
  std::optional<SymbolicDims> shape_from_type(const ir::Value* value);
  std::optional<SymbolicInts> ints_from_constant(const ir::Value* value) const;
  DimExpr fresh();

  int64_t opset_;
  size_t fresh_count_ = 0;
  std::unordered_map<const ir::Value*, std::optional<SymbolicDims>> shapes_;
  std::unordered_map<const ir::Value*, std::optional<SymbolicInts>> ints_;

  friend struct Rules;
};

// Writes the shapes the rules find into values of `graph` whose type has no
// shape or unknown dims (graph inputs untouched; a graph output only when
// the model declares no shape for it), declaring them as value_info so that
// the next round of ONNX's inference carries them on. Returns how many
// values got a shape or a dim they lacked.
size_t infer_symbolic_shapes(ir::Graph& graph, int64_t opset);

}  // namespace onnxkit::analysis
