#pragma once
// Shape rules for operators that changed after the newest opset the Debian
// ONNX library knows (see opset_history.h): its inference applies the old
// schema and loses their output shapes (Split's num_outputs, Pad's axes,
// Reduce*'s axes input, Resize's axes...), and every shape downstream with
// them. These rules fill the gap; apply_inferred_types alternates them with
// the library's inference.

#include <cstddef>

#include "ir/graph.h"

namespace onnxkit::analysis {

// Types outputs of newer ops in `graph` (main graph) whose inputs are typed
// and whose outputs are not; returns how many values got a type.
size_t infer_newer_op_types(ir::Graph& graph, int64_t opset);

}  // namespace onnxkit::analysis
