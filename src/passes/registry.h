#pragma once
// The families of passes, each registering its own (in order) from its
// folder's register.cpp; all_passes() runs elimination before fusion.

#include <initializer_list>
#include <memory>
#include <vector>

#include "passes/pass.h"

namespace onnxkit::passes {

// A family's registration reads as one table: its factories, appended in
// the order they run.
using PassFactory = std::unique_ptr<Pass> (*)();
void add_each(std::vector<std::unique_ptr<Pass>>& passes, std::initializer_list<PassFactory> factories);

// passes/eliminate/: removing what computes nothing.
void add_elimination_passes(std::vector<std::unique_ptr<Pass>>& passes);
// passes/fuse/: merging nodes into fewer.
void add_fusion_passes(std::vector<std::unique_ptr<Pass>>& passes);

}  // namespace onnxkit::passes
