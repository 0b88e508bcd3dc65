#pragma once
// Model statistics: operator histogram, parameters, and compute cost.
//
// Cost conventions (docs/info.md): a MAC is one multiply-accumulate in
// Conv, ConvTranspose, Gemm and MatMul (and their integer/quantized forms);
// FLOPs count 2 per MAC plus one per element for bias adds, element-wise ops
// and activations, one per window element for pooling, and a fixed number
// per element for normalizations and softmax.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/onnx_inference.h"
#include "ir/model.h"

namespace onnxkit::analysis {

struct NodeCost {
  uint64_t macs = 0;
  uint64_t flops = 0;
};

// The static dims of a value (every dim a known number), from inferred types,
// its declaration, or its initializer.
class ShapeLookup {
 public:
  explicit ShapeLookup(const TypeMap& inferred) : inferred_(inferred) {}
  std::optional<std::vector<int64_t>> dims(const ir::Value* value) const;

 private:
  const TypeMap& inferred_;
};

// The cost of one node: nullopt when its op has a cost but the shapes it
// needs are unknown; zero for ops that only move data.
std::optional<NodeCost> node_cost(const ir::Node& node, const ShapeLookup& shapes);

struct OpCount {
  std::string domain;  // "" for the default domain
  std::string op_type;
  size_t count = 0;
};

struct ModelStats {
  size_t node_count = 0;        // main graph
  size_t total_node_count = 0;  // sub-graphs included
  std::vector<OpCount> operators;  // most frequent first, then by name
  size_t initializer_count = 0;
  uint64_t parameter_count = 0;  // elements of all initializers of the main graph
  uint64_t parameter_bytes = 0;
  // Per main-graph node, in order: nullopt where shapes were missing.
  std::vector<std::optional<NodeCost>> node_costs;
  uint64_t total_macs = 0;
  uint64_t total_flops = 0;
  size_t nodes_without_shapes = 0;  // nodes with a cost model but unknown shapes
};

ModelStats compute_stats(const ir::Model& model, const TypeMap& types);

}  // namespace onnxkit::analysis
