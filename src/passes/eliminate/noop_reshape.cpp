// eliminate-noop-reshape: a Reshape to the shape its input already has.
//
// Before:  y = Reshape(x: float[batch, 64], shape = [0, 64])
// After:   readers of y read x
//
// Conditions: `shape` constant, of x's rank, and each entry provably keeps
// its dim: 0 (copy the dim; not under allowzero = 1), the dim itself when
// known, or one -1 when every other entry keeps its dim (the element count
// then forces the same value, provided the other dims are known and not 0:
// a product of 0 leaves -1 undetermined).

#include "passes/eliminate/eliminate_common.h"

namespace onnxkit::passes::eliminate {
namespace {

bool keeps_shape(const ir::Node& reshape, const PassContext& context) {
  auto dims = reshape.input(0) ? reshape.input(0)->static_shape() : std::nullopt;
  auto target = context.constant_ints(reshape.input(1));
  if (!dims || !target || target->size() != dims->size()) return false;
  const bool allow_zero = reshape.attr_int("allowzero", 0) != 0;
  std::optional<size_t> inferred;
  for (size_t i = 0; i < dims->size(); ++i) {
    const int64_t want = (*target)[i], have = (*dims)[i];
    if (want == 0 && !allow_zero) continue;
    if (want > 0 && want == have) continue;
    if (want == -1 && !inferred) {
      inferred = i;
      continue;
    }
    return false;
  }
  if (!inferred) return true;
  for (size_t i = 0; i < dims->size(); ++i)
    if (i != *inferred && (*dims)[i] <= 0) return false;  // a symbolic dim might be 0
  return true;
}

}  // namespace

std::unique_ptr<Pass> make_eliminate_noop_reshape() {
  return make_bypass_pass("eliminate-noop-reshape", "remove Reshape to the input's own shape", {"Reshape"}, keeps_shape);
}

}  // namespace onnxkit::passes::eliminate
