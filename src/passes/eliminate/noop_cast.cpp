// eliminate-noop-cast: a Cast (or CastLike) to the type its input already has.
//
// Before:  y = Cast<to = FLOAT>(x: float)
// After:   readers of y read x
//
// Conditions: the input's element type known (declared or inferred) and
// equal to the target (Cast's `to`, CastLike's second input's type).

#include "passes/eliminate/eliminate_common.h"

namespace onnxkit::passes::eliminate {
namespace {

bool casts_to_own_type(const ir::Node& cast, const PassContext&) {
  const ir::Value* input = cast.input(0);
  if (input == nullptr || input->elem_type() == 0) return false;
  if (cast.op_type() == "Cast") return cast.attr_int("to", 0) == input->elem_type();
  const ir::Value* like = cast.input(1);
  return like != nullptr && like->elem_type() == input->elem_type();
}

}  // namespace

std::unique_ptr<Pass> make_eliminate_noop_cast() {
  return make_bypass_pass("eliminate-noop-cast", "remove Cast and CastLike to the type the input already has",
                          {"Cast", "CastLike"}, casts_to_own_type);
}

}  // namespace onnxkit::passes::eliminate
