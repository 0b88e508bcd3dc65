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
//   norm    Add(a, b) -> LayerNormalization, a and b of one shape      =>  Add+LayerNormalization
//           (the residual connection of a transformer layer)
//   heads   MatMul(Transpose?(A) [/ or * c], Transpose?(B) [/ or * c])
//           [-> Transpose]                                            =>  one strided product
//           (attention's head split and merge and its 1 / sqrt(d); a
//           Transpose before must keep a matrix dim contiguous, the one
//           after the last dim last; nodes the chains above took stay theirs)
//
// A value inside a chain must have no reader outside it and must not be
// returned by the run; the constants must be what the pattern says (to
// float rounding), so the fused kernel computes the same function.
//
// Convolutions take what follows them into their own kernel instead
// (KernelInfo::fused_activation): Conv -> Relu or Clip with constant bounds
// (ReLU6), and Conv -> Add(residual) [-> Relu or Clip] when the residual has
// the Conv's shape and is computed before it (ResNet's blocks).

#include <functional>
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
};

using IsReturned = std::function<bool(const ir::Value*)>;
using SameShape = std::function<bool(const ir::Value*, const ir::Value*)>;  // surely, not maybe

// The chains of `order` (one graph's nodes, topologically sorted), none
// overlapping another.
std::vector<FusedChain> find_fused_chains(const std::vector<ir::Node*>& order, const ConstantOf& constant_of,
                                          const IsReturned& is_returned, const SameShape& same_shape);

struct ConvFusions {
  // Fused Add and activation nodes -> their input that carries the Conv's
  // final value (their steps pass it on).
  std::unordered_map<const ir::Node*, size_t> fused;
  struct Conv {
    FusedActivation activation;
    const ir::Value* residual = nullptr;  // read as input FusedActivation::kResidualInput
  };
  std::unordered_map<const ir::Node*, Conv> convs;
};

// The Conv fusions of `order`. A Conv in `blocked` (runtime/layout.h) fuses
// an Add only when the Add is blocked too and the residual is produced
// blocked, so that it is at hand in the Conv's layout.
ConvFusions find_conv_fusions(const std::vector<ir::Node*>& order, int64_t opset, const ConstantOf& constant_of,
                              const IsReturned& is_returned, const SameShape& same_shape,
                              const std::unordered_set<const ir::Node*>& blocked);

}  // namespace onnxkit::runtime
