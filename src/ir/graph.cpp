#include "ir/graph.h"

#include <algorithm>
#include <queue>
#include <unordered_set>

#include <fmt/format.h>

namespace onnxkit::ir {
namespace {

template <class T> void erase_all(std::vector<T*>& list, const T* item) {
  list.erase(std::remove(list.begin(), list.end(), item), list.end());
}

template <class T> bool contains(const std::vector<T*>& list, const T* item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// Values owned by `scope` that nodes inside `sub` (at any depth) read.
void collect_outer_uses(const Graph& sub, const Graph* scope, std::vector<Value*>& out) {
  for (const Node& node : sub.nodes()) {
    for (Value* v : node.inputs())
      if (v != nullptr && v->owner() == scope) out.push_back(v);
    for (const Graph* g : node.subgraphs()) collect_outer_uses(*g, scope, out);
  }
  for (Value* v : sub.outputs())
    if (v != nullptr && v->owner() == scope) out.push_back(v);
}

// Everything `node` reads from its own graph: inputs, and what its sub-graphs
// read from the node's graph.
std::vector<Value*> node_dependencies(const Node& node) {
  std::vector<Value*> deps;
  for (Value* v : node.inputs())
    if (v != nullptr) deps.push_back(v);
  for (const Graph* g : node.subgraphs()) collect_outer_uses(*g, node.graph(), deps);
  return deps;
}

}  // namespace

// --- Value -----------------------------------------------------------------

int32_t Value::elem_type() const {
  if (info_.type().has_tensor_type()) return info_.type().tensor_type().elem_type();
  if (initializer_) return initializer_->data_type();
  return 0;
}

std::optional<std::vector<int64_t>> Value::static_shape() const {
  const auto& type = info_.type();
  if (type.has_tensor_type() && type.tensor_type().has_shape()) {
    std::vector<int64_t> dims;
    for (const auto& d : type.tensor_type().shape().dim()) dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    return dims;
  }
  if (initializer_) return std::vector<int64_t>(initializer_->dims().begin(), initializer_->dims().end());
  return std::nullopt;
}

bool Value::is_graph_input() const { return contains(owner_->inputs_, this); }
bool Value::is_graph_output() const { return contains(owner_->outputs_, this); }

const onnx::TensorProto* Value::constant_tensor() const {
  if (initializer_ != nullptr) return is_graph_input() ? nullptr : initializer_.get();
  if (producer_ == nullptr || !producer_->is_onnx_op("Constant")) return nullptr;
  const Attribute* value = producer_->attribute("value");
  return value != nullptr && value->proto.has_t() ? &value->proto.t() : nullptr;
}

// --- Node ------------------------------------------------------------------

void Node::drop_input_use(size_t i) {
  if (i >= inputs_.size() || inputs_[i] == nullptr) return;
  auto& uses = inputs_[i]->uses_;
  auto it = std::find(uses.begin(), uses.end(), Use{this, i});
  if (it != uses.end()) uses.erase(it);
}

void Node::set_input(size_t i, Value* value) {
  if (i >= inputs_.size()) inputs_.resize(i + 1, nullptr);
  drop_input_use(i);
  inputs_[i] = value;
  if (value != nullptr) value->uses_.push_back({this, i});
}

void Node::remove_input(size_t i) {
  if (i >= inputs_.size()) return;
  drop_input_use(i);
  for (size_t j = i + 1; j < inputs_.size(); ++j) {
    if (inputs_[j] == nullptr) continue;
    for (Use& use : inputs_[j]->uses_)
      if (use.node == this && use.index == j) use.index = j - 1;
  }
  inputs_.erase(inputs_.begin() + static_cast<std::ptrdiff_t>(i));
}

Value* Node::add_output(std::string_view name) {
  Value* value = nullptr;
  if (!name.empty()) {
    value = graph_->create_value(graph_->unique_name(name));
    value->producer_ = this;
    value->producer_output_ = outputs_.size();
  }
  outputs_.push_back(value);
  return value;
}

const Attribute* Node::attribute(std::string_view name) const {
  for (const Attribute& a : attributes_)
    if (a.name() == name) return &a;
  return nullptr;
}

Attribute* Node::attribute(std::string_view name) {
  return const_cast<Attribute*>(static_cast<const Node*>(this)->attribute(name));
}

static void detach_attribute(Attribute& attr) {
  if (attr.graph) attr.graph->detach();
  for (auto& g : attr.graphs) g->detach();
}

Attribute& Node::set_attribute(onnx::AttributeProto proto) {
  proto.clear_g();
  proto.clear_graphs();
  if (Attribute* existing = attribute(proto.name())) {
    detach_attribute(*existing);
    existing->graph.reset();
    existing->graphs.clear();
    existing->proto = std::move(proto);
    return *existing;
  }
  attributes_.push_back(Attribute{std::move(proto), nullptr, {}});
  return attributes_.back();
}

bool Node::remove_attribute(std::string_view name) {
  auto it = std::find_if(attributes_.begin(), attributes_.end(), [&](const Attribute& a) { return a.name() == name; });
  if (it == attributes_.end()) return false;
  detach_attribute(*it);
  attributes_.erase(it);
  return true;
}

int64_t Node::attr_int(std::string_view name, int64_t fallback) const {
  const Attribute* a = attribute(name);
  return a != nullptr && a->proto.has_i() ? a->proto.i() : fallback;
}

float Node::attr_float(std::string_view name, float fallback) const {
  const Attribute* a = attribute(name);
  return a != nullptr && a->proto.has_f() ? a->proto.f() : fallback;
}

std::string Node::attr_string(std::string_view name, std::string fallback) const {
  const Attribute* a = attribute(name);
  return a != nullptr && a->proto.has_s() ? a->proto.s() : fallback;
}

std::vector<int64_t> Node::attr_ints(std::string_view name) const {
  const Attribute* a = attribute(name);
  if (a == nullptr) return {};
  return {a->proto.ints().begin(), a->proto.ints().end()};
}

std::vector<Graph*> Node::subgraphs() const {
  std::vector<Graph*> out;
  for (const Attribute& a : attributes_) {
    if (a.graph) out.push_back(a.graph.get());
    for (const auto& g : a.graphs) out.push_back(g.get());
  }
  return out;
}

std::string Node::describe() const {
  if (!name().empty()) return fmt::format("{} node '{}'", op_type(), name());
  size_t index = 0;
  for (const Node& n : graph_->nodes()) {
    if (&n == this) break;
    ++index;
  }
  return fmt::format("{} node #{}", op_type(), index);
}

// --- Graph -----------------------------------------------------------------

Graph::Graph(Model* model, Node* parent) : model_(model), parent_(parent) {}

Graph::~Graph() = default;

Graph* Graph::parent_graph() const { return parent_ != nullptr ? parent_->graph() : nullptr; }

Graph* Graph::root() {
  Graph* g = this;
  while (Graph* p = g->parent_graph()) g = p;
  return g;
}

const Graph* Graph::root() const { return const_cast<Graph*>(this)->root(); }

void Graph::for_each_graph(const std::function<void(Graph&)>& visit) {
  visit(*this);
  for (Node& node : nodes_)
    for (Graph* sub : node.subgraphs()) sub->for_each_graph(visit);
}

void Graph::for_each_graph(const std::function<void(const Graph&)>& visit) const {
  visit(*this);
  for (const Node& node : nodes_)
    for (const Graph* sub : node.subgraphs()) sub->for_each_graph(visit);
}

Value* Graph::find_value(std::string_view name) const {
  auto it = values_.find(std::string(name));
  return it == values_.end() ? nullptr : it->second.get();
}

Value* Graph::lookup(std::string_view name) const {
  for (const Graph* g = this; g != nullptr; g = g->parent_graph())
    if (Value* v = g->find_value(name)) return v;
  return nullptr;
}

std::vector<Value*> Graph::values() const {
  std::vector<Value*> out;
  out.reserve(values_.size());
  for (const auto& [_, v] : values_) out.push_back(v.get());
  return out;
}

Value* Graph::create_value(std::string name) {
  auto value = std::unique_ptr<Value>(new Value(this, name));
  Value* raw = value.get();
  values_.emplace(std::move(name), std::move(value));
  return raw;
}

Value* Graph::add_value(std::string_view name) { return create_value(unique_name(name)); }

Value* Graph::add_input(std::string_view name, const onnx::TypeProto& type) {
  Value* v = add_value(name);
  *v->info_.mutable_type() = type;
  inputs_.push_back(v);
  return v;
}

void Graph::declare_input(Value* value) {
  if (!contains(inputs_, value)) inputs_.push_back(value);
}

void Graph::add_output(Value* value) {
  outputs_.push_back(value);
  ++value->output_refs_;
}

void Graph::set_output(size_t index, Value* value) {
  --outputs_.at(index)->output_refs_;
  outputs_[index] = value;
  ++value->output_refs_;
}

void Graph::remove_input(size_t index) { inputs_.erase(inputs_.begin() + static_cast<std::ptrdiff_t>(index)); }

void Graph::remove_output(size_t index) {
  --outputs_.at(index)->output_refs_;
  outputs_.erase(outputs_.begin() + static_cast<std::ptrdiff_t>(index));
}

void Graph::add_value_info(Value* value) {
  if (!contains(value_info_, value)) value_info_.push_back(value);
}

void Graph::clear_value_info() { value_info_.clear(); }

Value* Graph::add_initializer(std::string_view name, onnx::TensorProto tensor) {
  Value* v = add_value(name);
  set_initializer(v, std::move(tensor));
  return v;
}

void Graph::set_initializer(Value* value, onnx::TensorProto tensor) {
  tensor.set_name(value->name_);
  if (!value->initializer_) initializers_.push_back(value);
  value->initializer_ = std::make_unique<onnx::TensorProto>(std::move(tensor));
}

void Graph::remove_initializer(Value* value) {
  erase_all(initializers_, value);
  erase_all(sparse_initializers_, value);
  value->initializer_.reset();
  value->sparse_initializer_.reset();
}

Node* Graph::insert_node(Node* before, std::string_view op_type, const std::vector<Value*>& inputs,
                         const std::vector<std::string>& output_names, std::string_view domain) {
  onnx::NodeProto header;
  header.set_op_type(std::string(op_type));
  if (!domain.empty()) header.set_domain(std::string(domain));
  auto where = before != nullptr ? before->position_ : nodes_.end();
  auto it = nodes_.emplace(where, Node::Key{}, this, std::move(header));
  Node* node = &*it;
  node->position_ = it;
  for (Value* v : inputs) node->add_input(v);
  for (const std::string& name : output_names) node->add_output(name);
  return node;
}

void Graph::detach() {
  for (Node& node : nodes_) {
    for (size_t i = 0; i < node.inputs_.size(); ++i) node.drop_input_use(i);
    for (Graph* sub : node.subgraphs()) sub->detach();
  }
  for (Value* v : outputs_) --v->output_refs_;
  outputs_.clear();
}

void Graph::remove_node(Node* node) {
  for (Graph* sub : node->subgraphs()) sub->detach();
  for (size_t i = 0; i < node->inputs_.size(); ++i) node->drop_input_use(i);
  for (Value* out : node->outputs_) {
    if (out == nullptr) continue;
    out->producer_ = nullptr;
    if (out->uses_.empty() && !out->is_any_graph_output()) erase_value(out);
  }
  nodes_.erase(node->position_);
}

void Graph::move_node(Node* node, Node* before) {
  nodes_.splice(before != nullptr ? before->position_ : nodes_.end(), nodes_, node->position_);
}

Status Graph::absorb_subgraph(Graph& sub, Node* before) {
  if (sub.parent_graph() != this) return make_error("graph '{}' is not a sub-graph of a node of '{}'", sub.name(), name());
  if (!sub.inputs_.empty()) return make_error("sub-graph '{}' has inputs: only an input-free graph can be inlined", sub.name());
  if (before != nullptr && before->graph_ != this) return make_error("insertion point is not a node of graph '{}'", name());
  for (Node& node : sub.nodes_) node.graph_ = this;
  nodes_.splice(before != nullptr ? before->position_ : nodes_.end(), sub.nodes_);
  for (auto& [name, value] : sub.values_) {
    value->owner_ = this;
    values_.emplace(name, std::move(value));
  }
  sub.values_.clear();
  auto move_all = [](std::vector<Value*>& from, std::vector<Value*>& to) {
    to.insert(to.end(), from.begin(), from.end());
    from.clear();
  };
  move_all(sub.initializers_, initializers_);
  move_all(sub.sparse_initializers_, sparse_initializers_);
  move_all(sub.value_info_, value_info_);
  return {};
}

void Graph::replace_all_uses(Value* from, Value* to) {
  if (from == to) return;
  std::vector<Use> uses = from->uses_;
  for (const Use& use : uses) use.node->set_input(use.index, to);
}

void Graph::erase_value(Value* value) {
  Graph* owner = value->owner_;
  erase_all(owner->value_info_, value);
  erase_all(owner->initializers_, value);
  erase_all(owner->sparse_initializers_, value);
  owner->values_.erase(value->name_);
}

Status Graph::rename_value(Value* value, std::string name) {
  if (name == value->name_) return {};
  if (name.empty()) return make_error("cannot rename '{}' to an empty name", value->name_);
  if (name_in_use(name)) return make_error("cannot rename '{}' to '{}': that name is already used", value->name_, name);
  Graph* owner = value->owner_;
  auto handle = owner->values_.extract(value->name_);
  handle.key() = name;
  owner->values_.insert(std::move(handle));
  value->name_ = name;
  if (value->initializer_) value->initializer_->set_name(name);
  if (value->sparse_initializer_) value->sparse_initializer_->mutable_values()->set_name(name);
  return {};
}

bool Graph::name_in_use(std::string_view name) const {
  bool found = false;
  root()->for_each_graph([&](const Graph& g) { found = found || g.find_value(name) != nullptr; });
  return found;
}

bool Graph::node_name_in_use(std::string_view name) const {
  bool found = false;
  root()->for_each_graph([&](const Graph& g) {
    for (const Node& n : g.nodes_) found = found || n.name() == name;
  });
  return found;
}

std::string Graph::unique(std::string_view base, bool (Graph::*in_use)(std::string_view) const) const {
  if (!base.empty() && !(this->*in_use)(base)) return std::string(base);
  std::string stem = base.empty() ? "v" : std::string(base);
  uint64_t& next = root()->next_suffix_[stem];
  while (true) {
    std::string candidate = fmt::format("{}_{}", stem, ++next);
    if (!(this->*in_use)(candidate)) return candidate;
  }
}

std::string Graph::unique_name(std::string_view base) const { return unique(base, &Graph::name_in_use); }
std::string Graph::unique_node_name(std::string_view base) const { return unique(base, &Graph::node_name_in_use); }

size_t Graph::cleanup(bool remove_unused_inputs) {
  // Mark what the outputs need, walking back through producers in this graph.
  std::unordered_set<const Value*> live_values;
  std::unordered_set<const Node*> live_nodes;
  std::vector<Value*> stack(outputs_.begin(), outputs_.end());
  while (!stack.empty()) {
    Value* v = stack.back();
    stack.pop_back();
    if (v == nullptr || !live_values.insert(v).second) continue;
    Node* producer = v->producer_;
    if (producer == nullptr || producer->graph_ != this || !live_nodes.insert(producer).second) continue;
    for (Value* dep : node_dependencies(*producer)) stack.push_back(dep);
  }

  size_t removed = 0;
  // Consumers before producers, so that producers' outputs end up unused.
  for (auto next = nodes_.end(); next != nodes_.begin();) {
    auto current = std::prev(next);
    if (live_nodes.count(&*current)) {
      next = current;
      continue;
    }
    remove_node(&*current);  // `next` stays valid
    ++removed;
  }
  for (Node& node : nodes_)
    for (Graph* sub : node.subgraphs()) removed += sub->cleanup(false);

  auto unused = [&](Value* v) { return v->uses_.empty() && !v->is_any_graph_output(); };
  if (remove_unused_inputs) {
    std::vector<Value*> keep;
    for (Value* v : inputs_)
      if (!unused(v) || parent_ != nullptr) keep.push_back(v);  // a sub-graph's inputs are fixed by its op
    inputs_ = std::move(keep);
  }
  for (Value* v : values()) {
    if (!unused(v) || v->producer_ != nullptr || v->is_graph_input()) continue;
    erase_value(v);  // dead initializers, and values left without producer or consumer
  }
  return removed;
}

Result<std::vector<Node*>> Graph::topological_order() const {
  std::vector<Node*> order;
  std::unordered_map<const Node*, size_t> index;
  for (const Node& n : nodes_) {
    index[&n] = order.size();
    order.push_back(const_cast<Node*>(&n));
  }
  std::vector<size_t> pending(order.size(), 0);
  std::vector<std::vector<size_t>> consumers(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    for (Value* dep : node_dependencies(*order[i])) {
      Node* p = dep->producer_;
      if (p == nullptr || p->graph_ != this) continue;
      ++pending[i];
      consumers[index[p]].push_back(i);
    }
  }
  // Among the nodes that are ready, the earliest in the current order goes first.
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < order.size(); ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<Node*> sorted;
  sorted.reserve(order.size());
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    sorted.push_back(order[i]);
    for (size_t c : consumers[i])
      if (--pending[c] == 0) ready.push(c);
  }
  if (sorted.size() != order.size()) {
    for (size_t i = 0; i < order.size(); ++i)
      if (pending[i] != 0) return make_error("graph '{}' has a cycle through {}", name(), order[i]->describe());
  }
  return sorted;
}

Status Graph::toposort() {
  ONNXKIT_ASSIGN(std::vector<Node*> sorted, topological_order());
  for (Node* n : sorted) nodes_.splice(nodes_.end(), nodes_, n->position_);
  for (Node& node : nodes_)
    for (Graph* sub : node.subgraphs()) ONNXKIT_TRY(sub->toposort());
  return {};
}

std::vector<Value*> Graph::outer_values_used() const {
  std::vector<Value*> used;
  for (const Node& node : nodes_) {
    for (Value* v : node.inputs())
      if (v != nullptr) used.push_back(v);
    for (const Graph* sub : node.subgraphs())
      for (Value* v : sub->outer_values_used()) used.push_back(v);
  }
  for (Value* v : outputs_) used.push_back(v);
  // Keep those defined outside this graph, once each, in first-use order.
  std::vector<Value*> outer;
  std::unordered_set<Value*> seen;
  for (Value* v : used) {
    bool inside = false;
    for (const Graph* g = v->owner_; g != nullptr; g = g->parent_graph())
      if (g == this) inside = true;
    if (!inside && seen.insert(v).second) outer.push_back(v);
  }
  return outer;
}

Node* sole_consumer(const Value* value) {
  if (value == nullptr || value->uses().size() != 1 || value->is_any_graph_output()) return nullptr;
  Node* consumer = value->uses().front().node;
  // A reader inside a sub-graph cannot be merged with a node of this graph.
  return consumer->graph() == value->owner() ? consumer : nullptr;
}

Value* other_operand(const Node& binary, const Value* value) {
  if (binary.inputs().size() != 2) return nullptr;
  if (binary.input(0) == value && binary.input(1) != value) return binary.input(1);
  if (binary.input(1) == value && binary.input(0) != value) return binary.input(0);
  return nullptr;
}

}  // namespace onnxkit::ir
