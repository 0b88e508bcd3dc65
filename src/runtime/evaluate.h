#pragma once
// Runs one node on values the caller already has, with the kernels a session
// would use but without a session: what constant folding needs.

#include <vector>

#include "ir/model.h"
#include "runtime/datum.h"
#include "runtime/kernel.h"
#include "runtime/session.h"
#include "util/result.h"

namespace onnxkit::runtime {

// `inputs` follows node.inputs() (an empty Datum for an omitted one); the
// result follows node.outputs(). Nodes with sub-graphs are refused. `limits`
// bound the outputs' elements (and the time) as they bound a session's run.
Result<std::vector<Datum>> evaluate_node(const ir::Node& node, const ir::Model& model, const std::vector<Datum>& inputs,
                                         const RunLimits& limits = {},
                                         const KernelRegistry& registry = KernelRegistry::builtin());

}  // namespace onnxkit::runtime
