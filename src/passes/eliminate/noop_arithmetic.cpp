// eliminate-noop-arithmetic: adding 0, subtracting 0, multiplying or dividing
// by 1.
//
// Before:  y = Add(bias, x)   with bias a constant of zeros (Swin-T's Linear
//                             biases, zero from initialization)
// After:   readers of y read x
//
// Conditions: one operand a constant whose every element is the unit (0 for
// Add and Sub, 1 for Mul and Div), on either side of Add and Mul, on the
// right of Sub and Div (0 - x and 1 / x compute something); no longer than
// the other operand's rank, and each of its dims (aligned on the right) 1 or
// equal to that operand's known dim, so that broadcasting leaves the shape
// as it is (the element types agree: ONNX requires it). Exact, except that -0 + 0 is +0: the sign of a zero may change, as
// onnxoptimizer's eliminate_nop_with_unit accepts too.

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "passes/eliminate/eliminate_common.h"

namespace onnxkit::passes::eliminate {
namespace {

// True when `value` is a constant whose every element is `unit`, and
// broadcasting it against `x` leaves x's shape.
bool is_unit_for(const ir::Value* x, const ir::Value* value, double unit, const PassContext& context) {
  auto tensor = context.constant(value);
  auto dims = x->static_shape();
  if (!tensor || tensor->numel() == 0 || !dims || tensor->shape().size() > dims->size()) return false;
  const size_t offset = dims->size() - tensor->shape().size();
  for (size_t i = 0; i < tensor->shape().size(); ++i) {
    const int64_t want = tensor->shape()[i], have = (*dims)[offset + i];
    if (want != 1 && !(have >= 0 && want == have)) return false;
  }
  bool equal = false;
  Status read = runtime::dispatch_numeric(tensor->dtype(), [&]<class T>() -> Status {
    const T* data = tensor->data<T>();
    equal = std::all_of(data, data + tensor->numel(), [&](T v) { return static_cast<double>(v) == unit; });
    return {};
  });
  return read.ok() && equal;
}

// The operand `node` passes through unchanged, or null.
ir::Value* passed_through(const ir::Node& node, const PassContext& context) {
  if (node.inputs().size() != 2 || node.input(0) == nullptr || node.input(1) == nullptr) return nullptr;
  const bool additive = node.op_type() == "Add" || node.op_type() == "Sub";
  const bool commutes = node.op_type() == "Add" || node.op_type() == "Mul";
  const double unit = additive ? 0.0 : 1.0;
  for (size_t constant : {size_t{1}, size_t{0}}) {
    if (constant == 0 && !commutes) break;
    ir::Value* x = node.input(1 - constant);
    const ir::Value* c = node.input(constant);
    if (is_unit_for(x, c, unit, context)) return x;
  }
  return nullptr;
}

size_t remove_noop_arithmetic(ir::Node& node, PassContext& context) {
  ir::Graph& graph = *node.graph();
  ir::Value* x = passed_through(node, context);
  if (x == nullptr) return 0;
  std::string what = node.describe();
  if (!replace_value(graph, node.output(0), x)) return 0;
  graph.remove_node(&node);
  context.note(fmt::format("removed {}", what));
  return 1;
}

}  // namespace

std::unique_ptr<Pass> make_eliminate_noop_arithmetic() {
  return make_node_pass("eliminate-noop-arithmetic",
                        "remove Add/Sub of zeros and Mul/Div by ones that do not broadcast the other operand",
                        {"Add", "Sub", "Mul", "Div"}, remove_noop_arithmetic);
}

}  // namespace onnxkit::passes::eliminate
