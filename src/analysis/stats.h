#pragma once
// Model statistics: operator histogram, parameters, and compute cost.
//
// Cost conventions (docs/info-json.md): a MAC is one multiply-accumulate of
// a matrix product: Conv, ConvTranspose, Gemm, MatMul (and their integer and
// quantized forms), Einsum, the gate products of LSTM/GRU/RNN and the two
// products of Attention. FLOPs count 2 per MAC plus one per element for bias
// adds, element-wise ops and activations, one per window element for
// pooling, and a fixed number per element for normalizations, softmax,
// interpolation and the recurrent cells' gates. Control flow costs what its
// bodies cost: a Loop times its trip count, an If its costlier branch.

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
// needs are unknown; zero for ops that only move data and for ops outside
// the ONNX domain (has_cost_model tells those apart). A node with sub-graphs
// costs zero here: compute_stats counts its bodies.
std::optional<NodeCost> node_cost(const ir::Node& node, const ShapeLookup& shapes);

// Whether node_cost knows what `node` costs (zero for ops that only move
// data): false for ops of other domains (custom ops, ai.onnx.ml) and for
// the few ONNX ops not modelled (NonMaxSuppression, DFT, STFT, Det, ...).
bool has_cost_model(const ir::Node& node);

// Tensors counted as parameters: how many, their elements and bytes.
struct TensorTally {
  size_t tensors = 0;
  uint64_t elements = 0;
  uint64_t bytes = 0;
};

struct OpCount {
  std::string domain;  // "" for the default domain
  std::string op_type;
  size_t count = 0;
};

struct ModelStats {
  size_t node_count = 0;           // main graph
  size_t total_node_count = 0;     // sub-graphs included
  std::vector<OpCount> operators;  // most frequent first, then by name
  size_t initializer_count = 0;
  uint64_t parameter_count = 0;  // elements of all initializers of the main graph
  uint64_t parameter_bytes = 0;
  // Weights kept elsewhere (PaddleOCR- and Silero-style exports): the
  // `value` of Constant nodes in every graph, except single numbers and
  // integer and bool tensors (shapes, axes, indices, flags), and sub-graph
  // initializers.
  TensorTally constant_nodes;
  TensorTally subgraph_initializers;
  // Per main-graph node, in order: nullopt where shapes were missing. A node
  // with sub-graphs holds what its bodies cost (their unknown nodes aside).
  std::vector<std::optional<NodeCost>> node_costs;
  uint64_t total_macs = 0;
  uint64_t total_flops = 0;
  // Not counted, sub-graphs included: nodes with a cost model but unknown
  // shapes, and nodes without one (has_cost_model), by op type
  // ("com.microsoft:FusedConv" outside the ONNX domain).
  size_t nodes_without_shapes = 0;
  std::map<std::string, size_t> ops_without_shapes;
  size_t nodes_without_cost_model = 0;
  std::map<std::string, size_t> ops_without_cost_model;
  // How control flow was counted where it is not exact: "Loop 'l': trip count
  // not constant; one iteration counted".
  std::vector<std::string> cost_notes;
};

ModelStats compute_stats(const ir::Model& model, const TypeMap& types);

}  // namespace onnxkit::analysis
