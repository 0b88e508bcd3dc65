// eliminate-identity: Identity copies its input; its readers read the input.
//
// Before:  y = Identity(x)   z = Relu(y)
// After:   z = Relu(x)
//
// Declined when y is a graph output and x is a graph input or another output
// (the interface would lose a name), see replace_value.

#include "passes/eliminate/eliminate_common.h"

namespace onnxkit::passes::eliminate {

std::unique_ptr<Pass> make_eliminate_identity() {
  return make_bypass_pass("eliminate-identity", "remove Identity nodes", {"Identity"},
                          [](const ir::Node&, const PassContext&) { return true; });
}

}  // namespace onnxkit::passes::eliminate
