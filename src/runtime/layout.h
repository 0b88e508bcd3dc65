#pragma once
// Which nodes of a graph run on activations in the blocked layout
// (kernels/nn/blocked.h). Convolutions that oneDNN runs blocked start a
// region; pools, element-wise ops and channel concatenations of blocked
// values stay in it; the executor reorders at the region's edges.

#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"
#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace onnxkit::runtime {

struct LayoutPlan {
  std::unordered_set<const ir::Node*> blocked_nodes;
  // Every value a blocked node produces, with its logical channel count.
  std::unordered_map<const ir::Value*, int64_t> channels;
};

using TraitsOf = std::function<OpTraits(const ir::Node&)>;

// `constant` gives the data of initializers (null for other values);
// `traits` what each node's kernel declares (kernel.h): element-wise ops join
// a region as they are, ops with blocked kernels of their own as
// kernels/nn/blocked.h decides.
LayoutPlan plan_layout(const std::vector<ir::Node*>& order, const ConstantOf& constant, const TraitsOf& traits);

// The inputs of a blocked node that are activations (read in the blocked
// layout); its other inputs (Clip's bounds, Conv's weights) stay plain.
std::vector<size_t> activation_inputs(const ir::Node& node, const OpTraits& traits);

}  // namespace onnxkit::runtime
