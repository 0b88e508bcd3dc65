#pragma once
// The families of passes, each registering its own (in order) from its
// folder's register.cpp; all_passes() runs elimination before fusion.

#include <memory>
#include <vector>

#include "passes/pass.h"

namespace onnxkit::passes {

// passes/eliminate/: removing what computes nothing.
void add_elimination_passes(std::vector<std::unique_ptr<Pass>>& passes);
// passes/fuse/: merging nodes into fewer.
void add_fusion_passes(std::vector<std::unique_ptr<Pass>>& passes);

}  // namespace onnxkit::passes
