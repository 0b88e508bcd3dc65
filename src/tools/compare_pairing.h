#pragma once
// How compare finds, for each tensor B computes, the tensor of A (or of a
// reference) holding the same numbers: by name; graph inputs and outputs by
// position; then by structure (the same op on paired inputs), which also
// sees through fusions. Shared by compare.cpp and reduce.cpp only.

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "tools/compare.h"

namespace onnxkit::tools {

// Fixed on every run: a weight (an initializer that is no graph input) or a Constant's output.
bool holds_constant(const ir::Value* v);

// Values computed from constants alone (an Identity of a weight, a folded
// expression); with `shapes`, also from Shape and Size: then they are fixed
// once the input shapes are (the glue simplify folds away).
std::unordered_set<const ir::Value*> fixed_values(const ir::Graph& graph, const std::vector<ir::Node*>& order, bool shapes);

// The values a run computes, in order: graph inputs, then node outputs (constants left out).
std::vector<const ir::Value*> computed_values(const ir::Graph& graph, const std::vector<ir::Node*>& order);

// "float32[1,1000]" for the value named `name`, "" when there is none.
std::string type_of(const NamedTensors& values, const std::string& name);

// Which tensor of A each computed tensor of B is paired with.
struct Pairs {
  std::unordered_map<const ir::Value*, std::pair<std::string, Pairing>> of_b;
  std::unordered_set<std::string> used_a;

  void add(const ir::Value* b, const std::string& a, Pairing how) {
    of_b[b] = {a, how};
    used_a.insert(a);
  }
  const std::string* a_name(const ir::Value* b) const {
    auto it = of_b.find(b);
    return it == of_b.end() ? nullptr : &it->second.first;
  }
};

// `order_*`: each graph's nodes in topological order; `va`, `vb`: one run's
// values of each (types must agree for a structural pair).
Pairs pair_with_model(const ir::Graph& a, const std::vector<ir::Node*>& order_a, const ir::Graph& b,
                      const std::vector<ir::Node*>& order_b, const NamedTensors& va, const NamedTensors& vb,
                      PairingSummary& summary);
// A reference pairs by name: the tensor's own, or the file stem it would have in a folder.
Pairs pair_with_reference(const ir::Graph& b, const std::vector<ir::Node*>& order_b, const NamedTensors& reference,
                          PairingSummary& summary);

}  // namespace onnxkit::tools
