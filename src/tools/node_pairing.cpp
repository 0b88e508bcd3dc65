#include "tools/node_pairing.h"

#include <fmt/format.h>

#include <google/protobuf/util/message_differencer.h>

#include "io/tensor_proto.h"

namespace onnxkit::tools {
namespace {

// Same type and dims; with `data`, the same bytes too (external tensors by
// where their bytes are: two files of the same weights differ only if
// rewritten).
bool same_constant(const onnx::TensorProto& a, const onnx::TensorProto& b, bool data) {
  if (a.data_type() != b.data_type() || a.dims_size() != b.dims_size()) return false;
  for (int i = 0; i < a.dims_size(); ++i)
    if (a.dims(i) != b.dims(i)) return false;
  if (!data) return true;
  if (io::is_external(a) || io::is_external(b)) {
    if (io::is_external(a) != io::is_external(b) || a.external_data_size() != b.external_data_size()) return false;
    for (int i = 0; i < a.external_data_size(); ++i)
      if (a.external_data(i).key() != b.external_data(i).key() || a.external_data(i).value() != b.external_data(i).value())
        return false;
    return true;
  }
  if (a.data_type() == onnx::TensorProto::STRING) return google::protobuf::util::MessageDifferencer::Equals(a, b);
  auto bytes_a = io::inline_bytes(a);
  auto bytes_b = io::inline_bytes(b);
  return bytes_a.ok() && bytes_b.ok() && *bytes_a == *bytes_b;
}

// Whether value `va` of graph a and `vb` of graph b hold the same thing: the
// same output of paired nodes, the graph input of the same name, or equal
// constants (`constant_data`: compared by their bytes, else by type and dims).
bool same_source(const ir::Value* va, const ir::Value* vb, const NodePairing& pairing, bool constant_data) {
  if (va == nullptr || vb == nullptr) return va == vb;
  const onnx::TensorProto* ca = va->constant_tensor();
  const onnx::TensorProto* cb = vb->constant_tensor();
  if (ca != nullptr || cb != nullptr) return ca != nullptr && cb != nullptr && same_constant(*ca, *cb, constant_data);
  if (va->producer() == nullptr || vb->producer() == nullptr) return va->producer() == vb->producer() && va->name() == vb->name();
  return pairing.partner_in_b(va->producer()) == vb->producer() && va->producer_output() == vb->producer_output();
}

bool same_inputs(const ir::Node& a, const ir::Node& b, const NodePairing& pairing, bool constant_data) {
  if (a.inputs().size() != b.inputs().size()) return false;
  for (size_t i = 0; i < a.inputs().size(); ++i)
    if (!same_source(a.input(i), b.input(i), pairing, constant_data)) return false;
  return true;
}

// The value of graph a that `vb` (of graph b) corresponds to, when one does.
const ir::Value* counterpart(const ir::Value* vb, const ir::Graph& a, const NodePairing& pairing) {
  if (vb->producer() == nullptr) return vb->is_graph_input() ? a.find_value(vb->name()) : nullptr;
  const ir::Node* pa = pairing.partner_in_a(vb->producer());
  return pa != nullptr ? pa->output(vb->producer_output()) : nullptr;
}

}  // namespace

const ir::Node* NodePairing::partner_in_b(const ir::Node* a) const {
  auto it = a_to_b.find(a);
  return it != a_to_b.end() ? it->second : nullptr;
}

const ir::Node* NodePairing::partner_in_a(const ir::Node* b) const {
  auto it = b_to_a.find(b);
  return it != b_to_a.end() ? it->second : nullptr;
}

NodePairing pair_nodes(const ir::Graph& a, const ir::Graph& b) {
  NodePairing pairing;
  auto pair = [&](const ir::Node* x, const ir::Node* y) {
    pairing.a_to_b[x] = y;
    pairing.b_to_a[y] = x;
  };
  std::unordered_map<std::string_view, const ir::Node*> a_by_name;
  for (const ir::Node& n : a.nodes())
    if (!n.name().empty()) a_by_name.emplace(n.name(), &n);
  for (const ir::Node& n : b.nodes()) {
    if (n.name().empty()) continue;
    auto it = a_by_name.find(n.name());
    if (it != a_by_name.end() && it->second->op_type() == n.op_type() && pairing.partner_in_b(it->second) == nullptr)
      pair(it->second, &n);
  }

  std::vector<const ir::Node*> b_order;
  if (auto order = b.topological_order(); order.ok()) b_order.assign(order->begin(), order->end());
  else
    for (const ir::Node& n : b.nodes()) b_order.push_back(&n);
  for (const ir::Node* nb : b_order) {
    if (pairing.partner_in_a(nb) != nullptr) continue;
    // Candidates read the counterpart of nb's first non-constant input.
    const ir::Value* anchor = nullptr;
    for (const ir::Value* v : nb->inputs())
      if (v != nullptr && v->constant_tensor() == nullptr) {
        anchor = counterpart(v, a, pairing);
        break;
      }
    if (anchor == nullptr) continue;
    for (const ir::Use& use : anchor->uses()) {
      const ir::Node* na = use.node;
      if (na->graph() != &a || na->op_type() != nb->op_type() || pairing.partner_in_b(na) != nullptr) continue;
      if (same_inputs(*na, *nb, pairing, false)) {
        pair(na, nb);
        break;
      }
    }
  }
  return pairing;
}

std::string node_difference(const ir::Node& a, const ir::Node& b, const NodePairing& pairing) {
  if (a.op_type() != b.op_type() || a.domain() != b.domain()) return "op type";
  if (a.inputs().size() != b.inputs().size()) return "input count";
  for (size_t i = 0; i < a.inputs().size(); ++i)
    if (!same_source(a.input(i), b.input(i), pairing, true))
      return fmt::format("input {} ('{}')", i, a.input(i) != nullptr ? a.input(i)->name() : "");
  if (a.attributes().size() != b.attributes().size()) return "attribute count";
  for (const ir::Attribute& attr : a.attributes()) {
    const ir::Attribute* other = b.attribute(attr.name());
    if (other == nullptr) return fmt::format("attribute '{}'", attr.name());
    // Sub-graphs are not compared node by node: their size stands for them.
    bool same = attr.graph || attr.proto.type() == onnx::AttributeProto::GRAPHS
                    ? (attr.graph ? attr.graph->nodes().size() : attr.graphs.size()) ==
                          (other->graph ? other->graph->nodes().size() : other->graphs.size())
                    : google::protobuf::util::MessageDifferencer::Equals(attr.proto, other->proto);
    if (!same) return fmt::format("attribute '{}'", attr.name());
  }
  return "";
}

}  // namespace onnxkit::tools
