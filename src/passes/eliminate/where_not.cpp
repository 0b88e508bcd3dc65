// eliminate-where-not: a Where on a negated condition swaps its branches.
//
// Before:  n = Not(c)   y = Where(n, a, b)
// After:   y = Where(c, b, a)       (the Not goes when nothing else reads it)
//
// Where(not c, a, b) takes a where c is false and b where it is true, which
// is Where(c, b, a) element by element; broadcasting is over the same three
// shapes (Not keeps c's). Opset 9 or later (Where's first version).

#include <fmt/format.h>

#include "passes/eliminate/eliminate_common.h"

namespace onnxkit::passes::eliminate {
namespace {

size_t rewrite(ir::Node& where, PassContext& context) {
  ir::Node* negation = paired_producer(where, "Not", context);
  if (negation == nullptr || where.input(1) == nullptr || where.input(2) == nullptr) return 0;
  ir::Value* a = where.input(1);
  ir::Value* b = where.input(2);
  where.set_input(0, negation->input(0));
  where.set_input(1, b);
  where.set_input(2, a);
  context.note(fmt::format("{}: reads the input of {} with its branches swapped", where.describe(), negation->describe()));
  return 1;
}

}  // namespace

std::unique_ptr<Pass> make_eliminate_where_not() {
  return make_node_pass("eliminate-where-not", "make a Where on Not(c) read c with its two branches swapped", {"Where"}, rewrite);
}

}  // namespace onnxkit::passes::eliminate
