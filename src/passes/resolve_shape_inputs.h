#pragma once
#include <memory>

#include "passes/pass.h"

namespace onnxkit::passes {

// See resolve_shape_inputs.cpp.
std::unique_ptr<Pass> make_resolve_shape_inputs();

}  // namespace onnxkit::passes
