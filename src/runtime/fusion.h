#pragma once
// Graph-level fusion at session build: chains of nodes, as exporters write
// them, that the plan runs as one kernel. The model is not changed; the
// absorbed nodes get no step and their values no buffer.
//
//   GELU    x -> Div(sqrt 2) -> Erf -> Add(1) -> Mul(x) -> Mul(0.5)  =>  Gelu(x)
//           (torch's export of nn.GELU; Mul(1 / sqrt 2) for the Div too)
//   linear  MatMul(A, B) -> Add(bias)                                 =>  MatMul+bias
//           with bias a float constant of one value per column
//   both    linear -> GELU                                            =>  MatMul+bias+Gelu
//           linear -> Softmax along the last axis                     =>  MatMul+bias+Softmax
//   norm    Add(a, b) -> LayerNormalization, a and b of one shape      =>  Add+LayerNormalization
//           (the residual connection of a transformer layer)
//   heads   MatMul(Transpose?(A) [/ or * c], Transpose?(B) [/ or * c])
//           [-> Transpose]                                            =>  one strided product
//           (attention's head split and merge and its 1 / sqrt(d); a
//           Transpose before must keep a matrix dim contiguous, the one
//           after the last dim last; nodes the chains above took stay theirs)
//   pad     Pad(x, zeros on H and W) -> AveragePool                =>  AveragePool(x)
//           with the pads added to its own and counted (Inception's
//           avg_pool2d with count_include_pad); blocked or plain
//   element-wise  Relu, Sigmoid, Tanh, Neg, Abs, or Add/Sub/Mul/Div by a
//           constant scalar, one after the other, then maybe Add/Sub/Mul/Div
//           with a tensor                                     =>  one pass
//           (at least two nodes, with a Sigmoid, a Tanh or a float
//           constant among them, so the values are surely floats; last, on
//           the nodes the chains above left)
//
// A value inside a chain must have no reader outside it and must not be
// returned by the run; the constants must be what the pattern says (to
// float rounding), so the fused kernel computes the same function.
//
// Kernels may also take over the nodes after them (ProducerFusions): which
// ones is their family's rule (kernels/nn/conv_fusion.h for Conv).

#include <any>
#include <functional>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"
#include "runtime/kernel.h"

namespace onnxkit::runtime {

struct FusedChain {
  const ir::Node* last = nullptr;         // the step writes this node's outputs
  std::vector<const ir::Node*> absorbed;  // the others: no step of their own
  std::vector<const ir::Value*> inputs;   // what the fused kernel reads, in order
  const char* kind = nullptr;             // the step's name in profiles
  KernelFactory create;                   // called with the last node's KernelInfo
  // Without `create`: the last node's own kernel, blocked if the node is,
  // told of the chain by `fusion` (KernelInfo::fusion). Such a chain runs
  // where its nodes are all blocked or all plain.
  std::any fusion;
};

using IsReturned = std::function<bool(const ir::Value*)>;
using SameShape = std::function<bool(const ir::Value*, const ir::Value*)>;  // surely, not maybe
using KnownRank = std::function<std::optional<int64_t>(const ir::Value*)>;  // none when unknown

// The chains of `order` (one graph's nodes, topologically sorted, of a
// model importing the default domain at `opset`), none overlapping another.
std::vector<FusedChain> find_fused_chains(const std::vector<ir::Node*>& order, int64_t opset, const ConstantOf& constant_of,
                                          const IsReturned& is_returned, const SameShape& same_shape, const KnownRank& rank_of);

// Nodes whose work the kernel of the node before them does (a Conv's
// activation and residual Add). Their steps pass that node's final value
// on; its kernel is built with `fusion` (KernelInfo::fusion) and reads the
// extra inputs.
struct ProducerFusions {
  // Absorbed node -> its input that carries the producer's final value.
  std::unordered_map<const ir::Node*, size_t> pass_through;
  struct Producer {
    std::any fusion;  // of the type the producer's kernel reads
    // Read as inputs extra_from, extra_from + 1, ...; those of the node's
    // own inputs before extra_from it lacks are omitted.
    size_t extra_from = 0;
    std::vector<const ir::Value*> extra;
  };
  std::unordered_map<const ir::Node*, Producer> producers;
  const char* kind = nullptr;  // the absorbed nodes' steps' name in profiles
};

// The one float32 value of a constant, if `v` is one.
std::optional<double> constant_scalar(const ir::Value* v, const ConstantOf& constant_of);

// The node that alone reads `v`, when v can be internal to a fusion: read
// once, in the same graph, and neither a graph output nor returned.
const ir::Node* sole_reader(const ir::Value* v, const IsReturned& is_returned);
// The same for the value of a single-output node.
const ir::Node* sole_reader(const ir::Node* node, const IsReturned& is_returned);

}  // namespace onnxkit::runtime
