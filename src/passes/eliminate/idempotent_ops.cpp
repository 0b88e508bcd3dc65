// eliminate-repeated-unary: an op applied to its own result, when that is
// the result again (idempotent) or the original (an involution).
//
// Before:  t = Relu(x)   y = Relu(t)         After:  readers of y read t
// Before:  t = Neg(x)    y = Neg(t)          After:  readers of y read x
//
// Idempotent, f(f(x)) = f(x) exactly for every element, NaN and infinities
// included: Relu, Abs, Ceil, Floor, Round, Sign. Involutions, g(g(x)) = x
// exactly: Neg (sign flips are exact; NaN stays NaN) and Not. Not
// Reciprocal: 1/(1/x) rounds. None of these ops has attributes, so two of a
// kind compute the same function. The first node goes when nothing else
// reads it.

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "passes/eliminate/eliminate_common.h"

namespace onnxkit::passes::eliminate {
namespace {

constexpr std::array<std::string_view, 6> kIdempotent = {"Relu", "Abs", "Ceil", "Floor", "Round", "Sign"};

size_t rewrite(ir::Node& second, PassContext& context) {
  ir::Value* middle = second.input(0);
  ir::Node* first = paired_producer(second, second.op_type(), context);
  if (first == nullptr) return 0;
  const bool idempotent = std::find(kIdempotent.begin(), kIdempotent.end(), second.op_type()) != kIdempotent.end();
  ir::Value* same = idempotent ? middle : first->input(0);
  ir::Graph& graph = *second.graph();
  const std::string what = fmt::format("{} after {}", second.describe(), first->describe());
  if (!replace_value(graph, second.output(0), same)) return 0;
  graph.remove_node(&second);
  context.note(fmt::format("removed {}: {}", what, idempotent ? "it repeats it" : "they cancel"));
  return 1;
}

}  // namespace

std::unique_ptr<Pass> make_eliminate_repeated_unary() {
  return make_node_pass("eliminate-repeated-unary",
                        "remove an idempotent op applied twice (Relu, Abs, Ceil, Floor, Round, Sign) and "
                        "an involution applied twice (Neg, Not)",
                        {"Relu", "Abs", "Ceil", "Floor", "Round", "Sign", "Neg", "Not"}, rewrite);
}

}  // namespace onnxkit::passes::eliminate
