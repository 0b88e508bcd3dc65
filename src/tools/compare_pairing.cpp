#include "tools/compare_pairing.h"

#include <algorithm>

#include "tools/reference.h"

namespace onnxkit::tools {

bool holds_constant(const ir::Value* v) {
  if (v->initializer() != nullptr || v->sparse_initializer() != nullptr) return !v->is_graph_input();
  return v->producer() != nullptr && v->producer()->is_onnx_op("Constant");
}

std::vector<const ir::Value*> computed_values(const ir::Graph& graph, const std::vector<ir::Node*>& order) {
  std::vector<const ir::Value*> out;
  for (const ir::Value* v : graph.inputs())
    if (!holds_constant(v)) out.push_back(v);
  for (const ir::Node* node : order)
    for (const ir::Value* v : node->outputs())
      if (v != nullptr && !holds_constant(v)) out.push_back(v);
  return out;
}

std::string type_of(const NamedTensors& values, const std::string& name) {
  auto it = values.find(name);
  return it == values.end() ? "" : it->second.describe();
}

namespace {

bool same_domain(const ir::Node& a, const ir::Node& b) {
  return a.in_onnx_domain() ? b.in_onnx_domain() : a.domain() == b.domain();
}

// Ops that only rearrange their input's elements stand for one another when
// their output types agree: simplify turns a Transpose that moves size-1
// axes into a Reshape, and a Reshape pair into one.
bool is_view(const ir::Node& node) {
  static const std::unordered_set<std::string> views = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Identity"};
  return node.in_onnx_domain() && views.count(node.op_type()) != 0;
}

bool same_op(const ir::Node& a, const ir::Node& b) {
  if (!same_domain(a, b)) return false;
  return a.op_type() == b.op_type() || (is_view(a) && is_view(b));
}

bool is_commutative(const ir::Node& node) {
  static const std::unordered_set<std::string> ops = {"Add", "Mul", "Max", "Min", "Sum", "Mean", "Equal", "And", "Or", "Xor"};
  return node.in_onnx_domain() && ops.count(node.op_type()) != 0;
}

bool same_tensor_proto(const onnx::TensorProto* a, const onnx::TensorProto* b) {
  if (a == nullptr || b == nullptr) return a == b;
  if (a->data_type() != b->data_type() || a->dims_size() != b->dims_size()) return false;
  for (int i = 0; i < a->dims_size(); ++i)
    if (a->dims(i) != b->dims(i)) return false;
  if (a->has_raw_data() && b->has_raw_data()) return a->raw_data() == b->raw_data();
  return a->SerializeAsString() == b->SerializeAsString();
}

}  // namespace

std::unordered_set<const ir::Value*> fixed_values(const ir::Graph& graph, const std::vector<ir::Node*>& order, bool shapes) {
  std::unordered_set<const ir::Value*> fixed;
  for (const ir::Node* node : order) {
    bool all = node->subgraphs().empty();
    if (!shapes || (!node->is_onnx_op("Shape") && !node->is_onnx_op("Size")))
      for (const ir::Value* v : node->inputs()) all = all && (v == nullptr || holds_constant(v) || fixed.count(v));
    if (all)
      for (const ir::Value* v : node->outputs())
        if (v != nullptr) fixed.insert(v);
  }
  for (const ir::Value* v : graph.values())
    if (holds_constant(v)) fixed.insert(v);
  return fixed;
}

namespace {

// Structure: A's node `na` and B's node `nb` do the same op where every
// input B computes from the inputs is paired with A's at that position (in
// any order for a commutative op of two inputs), and where one side has a
// fixed value (a constant, or shape glue) so does the other.
// `via` stands B value via.first for A's via.second, whatever it is paired with.
bool same_inputs(const ir::Node& na, const ir::Node& nb, const Pairs& pairs, const std::unordered_set<const ir::Value*>& fixed_a,
                 const std::unordered_set<const ir::Value*>& fixed_b, std::pair<const ir::Value*, const ir::Value*> via) {
  auto fits = [&](const std::vector<ir::Value*>& ia, const std::vector<ir::Value*>& ib) {
    bool any_paired = false;
    for (size_t i = 0; i < std::max(ia.size(), ib.size()); ++i) {
      const ir::Value* a = i < ia.size() ? ia[i] : nullptr;
      const ir::Value* b = i < ib.size() ? ib[i] : nullptr;
      const bool fa = a == nullptr || fixed_a.count(a), fb = b == nullptr || fixed_b.count(b);
      if (fa != fb) return false;
      if (fa) continue;
      if (b == via.first) {
        if (a != via.second) return false;
      } else if (const std::string* paired = pairs.a_name(b); paired == nullptr || *paired != a->name()) {
        return false;
      }
      any_paired = true;
    }
    return any_paired;
  };
  if (fits(na.inputs(), nb.inputs())) return true;
  if (!is_commutative(nb) || nb.inputs().size() != 2) return false;
  std::vector<ir::Value*> swapped = {nb.inputs()[1], nb.inputs()[0]};
  return fits(na.inputs(), swapped);
}

bool same_constants(const ir::Node& na, const ir::Node& nb) {
  if (na.inputs().size() != nb.inputs().size()) return false;
  for (size_t i = 0; i < na.inputs().size(); ++i) {
    const ir::Value *a = na.input(i), *b = nb.input(i);
    if ((a != nullptr && holds_constant(a)) != (b != nullptr && holds_constant(b))) return false;
    if (a != nullptr && b != nullptr && holds_constant(a) && !same_tensor_proto(a->constant_tensor(), b->constant_tensor()))
      return false;
  }
  return true;
}

}  // namespace

Pairs pair_with_model(const ir::Graph& a, const std::vector<ir::Node*>& order_a, const ir::Graph& b,
                      const std::vector<ir::Node*>& order_b, const NamedTensors& va_values, const NamedTensors& vb_values,
                      PairingSummary& summary) {
  Pairs pairs;
  const std::vector<const ir::Value*> computed_b = computed_values(b, order_b);
  auto a_value = [&](const std::string& name) -> const ir::Value* {
    const ir::Value* v = a.find_value(name);
    return v != nullptr && !holds_constant(v) && (v->producer() != nullptr || v->is_graph_input()) ? v : nullptr;
  };
  for (const ir::Value* v : computed_b)
    if (a_value(v->name()) != nullptr) pairs.add(v, v->name(), Pairing::name);

  // Graph inputs and outputs by position, where the names differ.
  auto by_position = [&](const std::vector<ir::Value*>& list_a, const std::vector<ir::Value*>& list_b) {
    std::vector<const ir::Value*> la, lb;
    for (const ir::Value* v : list_a)
      if (!holds_constant(v)) la.push_back(v);
    for (const ir::Value* v : list_b)
      if (!holds_constant(v)) lb.push_back(v);
    if (la.size() != lb.size()) return;
    for (size_t i = 0; i < la.size(); ++i)
      if (!pairs.of_b.count(lb[i]) && !pairs.used_a.count(la[i]->name()) &&
          type_of(va_values, la[i]->name()) == type_of(vb_values, lb[i]->name()))
        pairs.add(lb[i], la[i]->name(), Pairing::position);
  };
  by_position(a.inputs(), b.inputs());
  by_position(a.outputs(), b.outputs());
  const auto fixed_a = fixed_values(a, order_a, true), fixed_b = fixed_values(b, order_b, true);

  // Consumers vouch for their inputs: where paired nodes doing the same op
  // read, at the same place, tensors that are not paired with each other,
  // those tensors are the same numbers under different names. A fusion keeps
  // the first node's output name for the fused value (Conv + BatchNorm ->
  // Conv writes 'conv_out', which A computes before the BatchNorm): the
  // Relu after it reads A's BatchNorm output, so that is its partner.
  // Each B value moves once: consumers that disagree (DenseNet's Concats
  // read every earlier feature map) would otherwise move it back and forth
  // for ever.
  std::unordered_set<const ir::Value*> moved;
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = order_b.rbegin(); it != order_b.rend(); ++it) {
      const ir::Node* nb = *it;
      const ir::Value* out = nb->output(0);
      const std::string* paired = out != nullptr ? pairs.a_name(out) : nullptr;
      const ir::Value* out_a = paired != nullptr ? a.find_value(*paired) : nullptr;
      const ir::Node* na = out_a != nullptr ? out_a->producer() : nullptr;
      if (na == nullptr || na->op_type() != nb->op_type() || !same_domain(*na, *nb) || na->inputs().size() != nb->inputs().size())
        continue;
      std::vector<std::pair<const ir::Value*, const ir::Value*>> moves;  // (B value, A value)
      bool consistent = true;
      for (size_t i = 0; i < nb->inputs().size() && consistent; ++i) {
        const ir::Value *vb = nb->input(i), *va = na->input(i);
        if (vb == nullptr || va == nullptr || fixed_b.count(vb) || fixed_a.count(va)) continue;
        const std::string* current = pairs.a_name(vb);
        if (current != nullptr && *current == va->name()) continue;
        if (type_of(va_values, va->name()) != type_of(vb_values, vb->name()) || va->is_graph_input() != vb->is_graph_input())
          consistent = false;
        else moves.emplace_back(vb, va);
      }
      // Operands of a commutative op may come in the other order: no evidence then.
      if (!consistent || moves.empty() || (is_commutative(*nb) && nb->inputs().size() == 2)) continue;
      for (const auto& [vb, va] : moves) {
        if (pairs.used_a.count(va->name())) continue;  // already another's partner
        if (!moved.insert(vb).second) continue;
        if (const std::string* old = pairs.a_name(vb)) pairs.used_a.erase(*old);
        pairs.add(vb, va->name(), Pairing::structure);
        changed = true;
      }
    }
  }
  std::unordered_map<const ir::Node*, size_t> rank_a;
  for (size_t i = 0; i < order_a.size(); ++i) rank_a[order_a[i]] = i;
  for (const ir::Node* nb : order_b) {
    if (nb->is_onnx_op("Constant")) continue;
    bool open = false;
    for (const ir::Value* v : nb->outputs()) open = open || (v != nullptr && !pairs.of_b.count(v));
    std::vector<const ir::Value*> inputs;
    for (const ir::Value* v : nb->inputs())
      if (v != nullptr && !fixed_b.count(v)) inputs.push_back(v);
    if (!open || inputs.empty()) continue;
    const std::string* first = pairs.a_name(inputs[0]);
    const ir::Value* first_a = first != nullptr ? a.find_value(*first) : nullptr;
    if (first_a == nullptr) continue;
    // A's nodes doing nb's op on what stands for B's first input in A.
    auto candidates_via = [&](const ir::Value* via_a) {
      std::vector<const ir::Node*> found;
      for (const ir::Use& use : via_a->uses()) {
        const ir::Node* na = use.node;
        if (na->graph() != &a || !same_op(*na, *nb) || na->outputs().size() != nb->outputs().size() ||
            !same_inputs(*na, *nb, pairs, fixed_a, fixed_b, {inputs[0], via_a}) ||
            std::find(found.begin(), found.end(), na) != found.end())
          continue;
        bool fits = true;
        for (size_t k = 0; k < nb->outputs().size() && fits; ++k) {
          const ir::Value *ob = nb->output(k), *oa = na->output(k);
          if (ob == nullptr || pairs.of_b.count(ob)) continue;
          fits = oa != nullptr && !pairs.used_a.count(oa->name()) &&
                 type_of(va_values, oa->name()) == type_of(vb_values, ob->name());
        }
        if (fits) found.push_back(na);
      }
      return found;
    };
    std::vector<const ir::Node*> candidates = candidates_via(first_a);
    // None: B may have fused into its producer nodes that A still runs after
    // it (a BatchNormalization, a bias Add). Step through up to three such
    // single-input, single-consumer nodes of A; B's input then stands for
    // the last one's output.
    const ir::Value* through = first_a;
    for (int step = 0; candidates.empty() && step < 3; ++step) {
      if (through->uses().size() != 1 || through->is_graph_output()) break;
      const ir::Node* next = through->uses()[0].node;
      size_t dynamic = 0;
      for (const ir::Value* v : next->inputs()) dynamic += v != nullptr && !fixed_a.count(v);
      if (next->graph() != &a || dynamic != 1 || next->outputs().size() != 1 || next->output(0) == nullptr ||
          type_of(va_values, next->output(0)->name()) != type_of(vb_values, inputs[0]->name()))
        break;
      through = next->output(0);
      if (pairs.used_a.count(through->name())) break;
      candidates = candidates_via(through);
      if (!candidates.empty()) {
        pairs.used_a.erase(*first);
        pairs.add(inputs[0], through->name(), Pairing::structure);
      }
    }
    // None, and B's node only rearranges elements: it may stand for a chain
    // of such nodes of A that simplify merged (Reshape, then a Transpose of
    // unit axes, become one Reshape): the one whose output B's matches.
    if (candidates.empty() && is_view(*nb) && nb->outputs().size() == 1 && nb->output(0) != nullptr) {
      const ir::Value* at = first_a;
      for (int step = 0; step < 4; ++step) {
        if (at->uses().size() != 1 || at->is_graph_output()) break;
        const ir::Node* next = at->uses()[0].node;
        if (next->graph() != &a || !is_view(*next) || next->output(0) == nullptr) break;
        at = next->output(0);
        if (!pairs.used_a.count(at->name()) && type_of(va_values, at->name()) == type_of(vb_values, nb->output(0)->name())) {
          candidates.push_back(next);
          break;
        }
      }
    }
    if (candidates.size() > 1) {
      // Look-alikes (a transformer's q, k and v projections): the one with the same weights, else the first in A.
      std::vector<const ir::Node*> same;
      for (const ir::Node* na : candidates)
        if (same_constants(*na, *nb)) same.push_back(na);
      if (same.size() == 1) candidates = same;
      std::sort(candidates.begin(), candidates.end(),
                [&](const ir::Node* x, const ir::Node* y) { return rank_a[x] < rank_a[y]; });
    }
    if (candidates.empty()) continue;
    const ir::Node* na = candidates[0];
    for (size_t k = 0; k < nb->outputs().size(); ++k) {
      const ir::Value *ob = nb->output(k), *oa = na->output(k);
      if (ob != nullptr && oa != nullptr && !pairs.of_b.count(ob)) pairs.add(ob, oa->name(), Pairing::structure);
    }
  }

  for (const auto& [v, pair] : pairs.of_b) {
    if (pair.second == Pairing::name) ++summary.by_name;
    else if (pair.second == Pairing::position) ++summary.by_position;
    else ++summary.by_structure;
  }
  for (const ir::Value* v : computed_values(a, order_a))
    if (!pairs.used_a.count(v->name()) && !v->is_graph_input()) summary.unpaired_a.push_back(v->name());
  for (const ir::Value* v : computed_b)
    if (!pairs.of_b.count(v) && !v->is_graph_input()) summary.unpaired_b.push_back(v->name());
  return pairs;
}

Pairs pair_with_reference(const ir::Graph& b, const std::vector<ir::Node*>& order_b, const NamedTensors& reference,
                          PairingSummary& summary) {
  Pairs pairs;
  for (const ir::Value* v : computed_values(b, order_b)) {
    if (reference.count(v->name())) pairs.add(v, v->name(), Pairing::name);
    else if (std::string stem = tensor_file_stem(v->name()); reference.count(stem)) pairs.add(v, stem, Pairing::name);
    else if (!v->is_graph_input()) summary.unpaired_b.push_back(v->name());
  }
  summary.by_name = pairs.of_b.size();
  std::vector<std::string> unmatched;
  for (const auto& [name, value] : reference) {
    const ir::Value* v = b.find_value(name);
    if (!pairs.used_a.count(name) && (v == nullptr || !holds_constant(v))) unmatched.push_back(name);
  }
  std::sort(unmatched.begin(), unmatched.end());
  summary.unpaired_a = std::move(unmatched);
  return pairs;
}

}  // namespace onnxkit::tools
