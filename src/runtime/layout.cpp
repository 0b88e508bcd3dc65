#include "runtime/layout.h"

#include <optional>

#include "analysis/symbolic_shapes.h"
#include "runtime/kernels/nn/blocked.h"

namespace onnxkit::runtime {
namespace {

// A squeeze-excitation gate on partial blocks: a Sigmoid or HardSigmoid (its
// values in [0, 1], so finite, but 1/2 in the padded channels, not zero)
// read only by Muls that scale a blocked value of its channels, whose zero
// padding the product keeps (0 * finite). MobileNetV3's gates of 72 and 120
// channels otherwise sent each block's activations to the plain layout and
// back, around the Mul: 6% of its run.
bool is_gate_of_blocked(const ir::Node& node, int64_t channels, const std::unordered_map<const ir::Value*, int64_t>& planned,
                        const std::unordered_set<const ir::Value*>& gates) {
  if (!node.is_onnx_op("Sigmoid") && !node.is_onnx_op("HardSigmoid")) return false;
  const ir::Value* gate = node.output(0);
  if (gate->is_any_graph_output() || gate->uses().empty()) return false;
  for (const auto& use : gate->uses()) {
    const ir::Node* mul = use.node;
    if (mul->graph() != gate->owner() || !mul->is_onnx_op("Mul") || mul->inputs().size() != 2 || mul->outputs().size() != 1)
      return false;
    const ir::Value* scaled = ir::other_operand(*mul, gate);
    auto it = scaled == nullptr || gates.count(scaled) ? planned.end() : planned.find(scaled);
    if (it == planned.end() || it->second != channels) return false;  // blocked before the gate, zeros padding it
  }
  return true;
}

using analysis::DimExpr;
using analysis::SymbolicDims;

// Finds the nodes that only move channels of blocked values (nn::ChannelMove),
// from the symbolic shapes of the graph, evaluated once when first asked.
class ChannelMoves {
 public:
  ChannelMoves(const ir::Graph& graph, int64_t opset, const IsReturned& returned, const nn::ChannelsOf& channels_of,
               std::unordered_map<const ir::Node*, nn::ChannelMove>& planned)
      : graph_(graph), opset_(opset), returned_(returned), channels_of_(channels_of), planned_(planned) {}

  // The move `node` makes of its blocked input(s), or none. A channel
  // shuffle's first Reshape plans its Transpose and second Reshape too,
  // given when the loop over the nodes reaches them.
  std::optional<nn::ChannelMove> find(const ir::Node& node) {
    if (auto it = chain_.find(&node); it != chain_.end()) return it->second;
    const int64_t in = channels_of_(node.input(0));
    if (in < 0 || node.outputs().size() != 1) return std::nullopt;
    const std::string& op = node.op_type();
    if (op == "Shape") return nn::ChannelMove{nn::ChannelMove::Kind::shape, {in}, {}, {}, {}};
    if (op == "Transpose" && node.attr_ints("perm") == std::vector<int64_t>{0, 2, 3, 1})
      return nn::ChannelMove{nn::ChannelMove::Kind::channels_last, {in}, {}, {}, {}};
    if (op == "Concat") return concat(node);
    if (op == "Slice") return slice(node, in);
    if (op == "Reshape") return shuffle(node, in);
    return std::nullopt;
  }

 private:
  analysis::SymbolicShapes& shapes() {
    if (!shapes_) shapes_.emplace(graph_, opset_);
    return *shapes_;
  }

  // The value's only reader, of `op` in this graph; the value not returned.
  const ir::Node* sole_reader(const ir::Value* v, const char* op) const {
    const ir::Node* reader = runtime::sole_reader(v, returned_);
    return reader != nullptr && reader->is_onnx_op(op) && reader->outputs().size() == 1 && reader->input(0) == v ? reader
                                                                                                                 : nullptr;
  }

  // Along channels, of any channel counts (those of whole blocks have
  // BlockedConcat and its in-place writes, tried first).
  std::optional<nn::ChannelMove> concat(const ir::Node& node) const {
    const int64_t axis = node.attr_int("axis", 1);
    if (axis != 1 && axis != -3) return std::nullopt;
    nn::ChannelMove move;
    for (size_t i = 0; i < node.inputs().size(); ++i) {
      const int64_t channels = channels_of_(node.input(i));
      if (channels <= 0) return std::nullopt;
      move.in_channels.push_back(channels);
      for (int64_t c = 0; c < channels; ++c) move.from.push_back({i, c});
    }
    return move;
  }

  // Numbers the symbolic evaluation found for input i, every entry constant.
  std::optional<std::vector<int64_t>> constant_ints(const ir::Node& node, size_t i) {
    const analysis::SymbolicInts* ints = i < node.inputs().size() ? shapes().ints(node.input(i)) : nullptr;
    if (ints == nullptr) return std::nullopt;
    std::vector<int64_t> out;
    for (const DimExpr& d : ints->values) {
      if (!d.constant_value()) return std::nullopt;
      out.push_back(*d.constant_value());
    }
    return out;
  }

  std::optional<nn::ChannelMove> slice(const ir::Node& node, int64_t in) {
    std::vector<std::vector<int64_t>> args(4);
    if (node.inputs().size() == 1) {  // Slice-1: attributes
      args = {node.attr_ints("starts"), node.attr_ints("ends"), node.attr_ints("axes"), {}};
    } else {
      for (size_t i = 1; i < 5; ++i) {
        if (i >= node.inputs().size() || node.input(i) == nullptr) continue;
        auto v = constant_ints(node, i);
        if (!v) return std::nullopt;
        args[i - 1] = std::move(*v);
      }
    }
    auto range = nn::channel_slice(in, args[0], args[1], args[2], args[3]);
    if (!range) return std::nullopt;
    nn::ChannelMove move{nn::ChannelMove::Kind::gather, {in}, {}, {}, {}};
    for (int64_t c = range->first; c < range->second; ++c) move.from.push_back({0, c});
    return move;
  }

  // Reshape -> Transpose -> Reshape whose shapes are, for every value of the
  // symbolic dims, [N, C, H, W] -> [N, f1..fk, H, W] -> permuted f -> [N, C, H, W].
  std::optional<nn::ChannelMove> shuffle(const ir::Node& first, int64_t c) {
    const ir::Node* transpose = sole_reader(first.output(0), "Transpose");
    const ir::Node* second = transpose != nullptr ? sole_reader(transpose->output(0), "Reshape") : nullptr;
    if (second == nullptr) return std::nullopt;
    const SymbolicDims* x = shapes().shape(first.input(0));
    const SymbolicDims* split = shapes().shape(first.output(0));
    const SymbolicDims* merged = shapes().shape(second->output(0));
    if (x == nullptr || split == nullptr || merged == nullptr || x->size() != 4 || (*x)[1] != DimExpr::constant(c))
      return std::nullopt;
    const size_t k = split->size() < 4 ? 0 : split->size() - 3;  // factors of C
    if (k < 2 || (*split)[0] != (*x)[0] || (*split)[k + 1] != (*x)[2] || (*split)[k + 2] != (*x)[3] || *merged != *x)
      return std::nullopt;
    std::vector<int64_t> factors;
    int64_t product = 1;
    for (size_t i = 1; i <= k; ++i) {
      const std::optional<int64_t> f = (*split)[i].constant_value();
      if (!f || *f <= 0) return std::nullopt;
      factors.push_back(*f);
      product *= *f;
    }
    const std::vector<int64_t> perm = transpose->attr_ints("perm");
    if (product != c || perm.size() != k + 3 || perm[0] != 0 || perm[k + 1] != static_cast<int64_t>(k + 1) ||
        perm[k + 2] != static_cast<int64_t>(k + 2))
      return std::nullopt;
    std::vector<int64_t> order, permuted;
    std::vector<bool> seen(k, false);
    for (size_t i = 1; i <= k; ++i) {
      const int64_t axis = perm[i] - 1;
      if (axis < 0 || axis >= static_cast<int64_t>(k) || seen[static_cast<size_t>(axis)]) return std::nullopt;
      seen[static_cast<size_t>(axis)] = true;
      order.push_back(axis);
      permuted.push_back(factors[static_cast<size_t>(axis)]);
    }
    using Kind = nn::ChannelMove::Kind;
    chain_[transpose] = nn::ChannelMove{Kind::view, {c}, {}, {}, {}};
    const std::vector<int64_t> shuffled = nn::shuffled_channels(factors, order);
    if (nn::ChannelMove* gather = gather_that_may_shuffle(first.input(0), first)) {
      // The gather before (a Concat) writes the channels shuffled: one pass instead of two.
      std::vector<nn::ChannelMove::Source> from;
      for (int64_t channel : shuffled) from.push_back(gather->from[static_cast<size_t>(channel)]);
      gather->from = std::move(from);
      chain_[second] = nn::ChannelMove{Kind::view, {c}, {}, permuted, {c}};
    } else {
      nn::ChannelMove gather_move{Kind::gather, {c}, {}, permuted, {c}};
      for (int64_t channel : shuffled) gather_move.from.push_back({0, channel});
      chain_[second] = std::move(gather_move);
    }
    return nn::ChannelMove{Kind::view, {c}, {}, {c}, factors};
  }

  // The gather that computes `v`, when nothing but the shuffle's `first`
  // Reshape and Shape nodes read v's data: it may as well write the
  // shuffled channels, and the shuffle's gather becomes a view.
  nn::ChannelMove* gather_that_may_shuffle(const ir::Value* v, const ir::Node& first) const {
    auto it = v->producer() != nullptr ? planned_.find(v->producer()) : planned_.end();
    if (it == planned_.end() || it->second.kind != nn::ChannelMove::Kind::gather) return nullptr;
    if (v->is_any_graph_output() || returned_(v)) return nullptr;
    for (const ir::Use& use : v->uses())
      if (use.node != &first &&
          (use.node->graph() != &graph_ || !use.node->is_onnx_op("Shape") || use.node->output(0) == nullptr))
        return nullptr;
    return &it->second;
  }

  const ir::Graph& graph_;
  int64_t opset_;
  const IsReturned& returned_;
  const nn::ChannelsOf& channels_of_;
  std::unordered_map<const ir::Node*, nn::ChannelMove>& planned_;  // the moves planned so far
  std::optional<analysis::SymbolicShapes> shapes_;
  std::unordered_map<const ir::Node*, nn::ChannelMove> chain_;  // a shuffle's nodes after its first
};

}  // namespace

std::vector<size_t> activation_inputs(const ir::Node& node, const OpTraits& traits) {
  if (traits.blocked == OpTraits::Blocked::own_kernel) return nn::blocked_activation_inputs(node);
  if (traits.blocked == OpTraits::Blocked::elementwise_binary) return {0, 1};
  return {0};
}

LayoutPlan plan_layout(const std::vector<ir::Node*>& order, const ConstantOf& constant, const TraitsOf& traits_of,
                       const IsReturned& returned, int64_t opset) {
  LayoutPlan plan;
  if (order.empty()) return plan;
  std::unordered_set<const ir::Value*> gates;  // the blocked values whose padding is not zero
  const nn::ChannelsOf channels_of = [&](const ir::Value* v) -> int64_t {
    auto it = v == nullptr ? plan.channels.end() : plan.channels.find(v);
    return it == plan.channels.end() ? -1 : it->second;
  };
  ChannelMoves moves(*order.front()->graph(), opset, returned, channels_of, plan.moves);
  for (const ir::Node* node : order) {
    if (!node->in_onnx_domain() || node->outputs().empty() || node->output(0) == nullptr) continue;
    const OpTraits traits = traits_of(*node);
    int64_t out = -1;
    if (traits.blocked == OpTraits::Blocked::own_kernel) {
      out = nn::blocked_output_channels(*node, channels_of, constant);
      std::optional<nn::ChannelMove> move = out > 0 ? std::nullopt : moves.find(*node);
      if (move && move->writes_plain()) {
        plan.blocked_nodes.insert(node);
        plan.moves[node] = std::move(*move);
        continue;
      }
      if (move) {
        out = move->kind == nn::ChannelMove::Kind::view ? move->in_channels[0] : static_cast<int64_t>(move->from.size());
        plan.moves[node] = std::move(*move);
      }
    } else if (const int64_t in = channels_of(node->input(0));
               in >= 0 && (traits.blocked == OpTraits::Blocked::elementwise_unary ||
                           traits.blocked == OpTraits::Blocked::elementwise_binary)) {
      // Padding channels must stay zero, or there must be none.
      const bool gate = !traits.zero_preserving && in % nn::channel_block() != 0 && !gates.count(node->input(0)) &&
                        is_gate_of_blocked(*node, in, plan.channels, gates);
      const bool fits = traits.zero_preserving || in % nn::channel_block() == 0 || gate;
      if (gate) gates.insert(node->output(0));
      const bool operands = traits.blocked == OpTraits::Blocked::elementwise_unary ||
                            (node->inputs().size() == 2 && channels_of(node->input(1)) == in);
      if (fits && operands) out = in;
    }  // everything else stays plain
    if (out <= 0) continue;
    plan.blocked_nodes.insert(node);
    plan.channels[node->output(0)] = out;
  }
  return plan;
}

}  // namespace onnxkit::runtime
