// eliminate-noop-transpose: a Transpose whose permutation keeps every axis.
//
// Before:  y = Transpose<perm = [0, 1, 2]>(x)
// After:   readers of y read x
//
// Conditions: perm is 0, 1, ..., n-1; or perm is absent (reverse the axes)
// and x is known to have rank 0 or 1.

#include "passes/eliminate/eliminate_common.h"

namespace onnxkit::passes::eliminate {
namespace {

bool keeps_axes(const ir::Node& transpose, const PassContext&) {
  if (transpose.attribute("perm") == nullptr) {
    auto rank = known_rank(transpose.input(0));
    return rank && *rank <= 1;
  }
  std::vector<int64_t> perm = transpose.attr_ints("perm");
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

}  // namespace

std::unique_ptr<Pass> make_eliminate_noop_transpose() {
  return make_bypass_pass("eliminate-noop-transpose", "remove Transpose with the identity permutation", {"Transpose"},
                          keeps_axes);
}

}  // namespace onnxkit::passes::eliminate
