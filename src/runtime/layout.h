#pragma once
// Which nodes of a graph run on activations in the blocked layout
// (kernels/nn/blocked.h). Convolutions that oneDNN runs blocked start a
// region; pools, element-wise ops and the ops that only move channels of
// blocked values (concatenations, slices, shuffles: nn::ChannelMove) stay
// in it; the executor reorders at the region's edges.

#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"
#include "runtime/fusion.h"
#include "runtime/kernel.h"
#include "runtime/kernels/nn/blocked.h"
#include "runtime/tensor.h"

namespace onnxkit::runtime {

struct LayoutPlan {
  std::unordered_set<const ir::Node*> blocked_nodes;
  // Every blocked value a blocked node produces, with its logical channel
  // count (a blocked Shape's output is plain, and not here).
  std::unordered_map<const ir::Value*, int64_t> channels;
  // The blocked nodes that only move channels, and how (kernels/nn/blocked.h).
  std::unordered_map<const ir::Node*, nn::ChannelMove> moves;
};

using TraitsOf = std::function<OpTraits(const ir::Node&)>;

// `constant` gives the data of initializers (null for other values);
// `traits` what each node's kernel declares (kernel.h): element-wise ops join
// a region as they are, ops with blocked kernels of their own as
// kernels/nn/blocked.h decides; channel moves (Shape, Slice, Concat, a
// channel shuffle's Reshape -> Transpose -> Reshape) where the model's
// shapes (analysis/symbolic_shapes.h, at `opset`) prove them so for every
// batch, height and width. `returned`: the values the caller gets back.
LayoutPlan plan_layout(const std::vector<ir::Node*>& order, const ConstantOf& constant, const TraitsOf& traits,
                       const IsReturned& returned, int64_t opset);

// The inputs of a blocked node that are activations (read in the blocked
// layout); its other inputs (Clip's bounds, Conv's weights) stay plain.
std::vector<size_t> activation_inputs(const ir::Node& node, const OpTraits& traits);

}  // namespace onnxkit::runtime
