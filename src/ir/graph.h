#pragma once
// The in-memory graph, in the spirit of onnx-graphsurgeon: Values connect
// Nodes, and connecting an edge updates both ends, so a Value always knows its
// producer and its consumers. Sub-graphs (If/Loop/Scan bodies) are nested
// Graphs whose nodes may use Values of enclosing graphs directly.
//
// Leaf data stays in ONNX's own protobuf types (TypeProto, TensorProto,
// AttributeProto): every field survives an import/export round trip,
// including fields this build does not know (kept as unknown fields).

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "util/result.h"

namespace onnxkit::ir {

class Graph;
class Model;
class Node;
class ProtoImporter;

// The default ONNX domain is named "" or "ai.onnx": both come back as "".
inline std::string_view canonical_domain(std::string_view domain) { return domain == "ai.onnx" ? std::string_view() : domain; }

// One consumer of a Value: input `index` of `node`.
struct Use {
  Node* node;
  size_t index;
  bool operator==(const Use&) const = default;
};

// A tensor (or sequence, map, optional) flowing along the graph's edges.
class Value {
 public:
  Value(const Value&) = delete;
  Value& operator=(const Value&) = delete;

  const std::string& name() const { return name_; }
  Graph* owner() const { return owner_; }       // the graph whose scope defines it
  Node* producer() const { return producer_; }  // null for inputs, initializers
  size_t producer_output() const { return producer_output_; }
  const std::vector<Use>& uses() const { return uses_; }  // consumers, in any graph below owner

  // Declared or inferred type, as ONNX's ValueInfoProto (its name field is
  // unused: name() is the truth). Empty when nothing is known.
  const onnx::ValueInfoProto& info() const { return info_; }
  onnx::ValueInfoProto& mutable_info() { return info_; }
  bool has_type() const { return info_.has_type(); }
  const onnx::TypeProto& type() const { return info_.type(); }
  // The element type of a tensor type, 0 when unknown or not a tensor.
  int32_t elem_type() const;
  // Dims of a tensor type with a shape; symbolic dims come back as -1.
  std::optional<std::vector<int64_t>> static_shape() const;

  // Constant data: set for initializers (the name field is kept in sync).
  const onnx::TensorProto* initializer() const { return initializer_.get(); }
  onnx::TensorProto* mutable_initializer() { return initializer_.get(); }
  const onnx::SparseTensorProto* sparse_initializer() const { return sparse_initializer_.get(); }
  bool is_constant() const { return initializer_ != nullptr || sparse_initializer_ != nullptr; }

  bool is_graph_input() const;
  bool is_graph_output() const;  // of its owner graph
  // Listed as an output of any graph: its owner's, or a sub-graph's that
  // returns this outer value directly.
  bool is_any_graph_output() const { return output_refs_ > 0; }
  // The tensor this value always holds: its initializer (unless it is also a
  // graph input, whose initializer is only a default) or the `value` of the
  // Constant node making it; null otherwise.
  const onnx::TensorProto* constant_tensor() const;
  // Read by a node or returned by a graph: removing its producer matters.
  bool is_used() const { return !uses_.empty() || is_any_graph_output(); }

 private:
  friend class Graph;
  friend class Node;
  friend class ProtoImporter;
  Value(Graph* owner, std::string name) : owner_(owner), name_(std::move(name)) {}

  Graph* owner_;
  std::string name_;
  Node* producer_ = nullptr;
  size_t producer_output_ = 0;
  std::vector<Use> uses_;
  size_t output_refs_ = 0;  // how many graph output slots hold this value
  onnx::ValueInfoProto info_;
  std::unique_ptr<onnx::TensorProto> initializer_;
  std::unique_ptr<onnx::SparseTensorProto> sparse_initializer_;
};

// A node attribute. Graph-valued attributes hold IR sub-graphs; everything
// else stays in the AttributeProto (whose g/graphs fields are unused).
struct Attribute {
  onnx::AttributeProto proto;
  std::unique_ptr<Graph> graph;                // type GRAPH
  std::vector<std::unique_ptr<Graph>> graphs;  // type GRAPHS

  const std::string& name() const { return proto.name(); }
};

class Node {
 public:
  // Only Graph (and the importer) make nodes; Key keeps the constructor,
  // which std::list must reach, out of other hands.
  class Key {
    friend class Graph;
    friend class ProtoImporter;
    Key() = default;
  };
  Node(Key, Graph* graph, onnx::NodeProto header) : graph_(graph), header_(std::move(header)) {}
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  Graph* graph() const { return graph_; }

  // op_type, domain, name, doc_string, and any field this build does not
  // know, live in this NodeProto; its input/output/attribute are unused.
  const onnx::NodeProto& header() const { return header_; }
  onnx::NodeProto& mutable_header() { return header_; }
  const std::string& op_type() const { return header_.op_type(); }
  const std::string& domain() const { return header_.domain(); }
  // The domain with the default one as "" (see canonical_domain).
  std::string_view canonical_domain() const { return ir::canonical_domain(domain()); }
  // True in the default ONNX domain, which is named "" or "ai.onnx".
  bool in_onnx_domain() const { return canonical_domain().empty(); }
  // True for `op` of the default ONNX domain.
  bool is_onnx_op(std::string_view op) const { return op_type() == op && in_onnx_domain(); }
  const std::string& name() const { return header_.name(); }
  void set_name(std::string name) { header_.set_name(std::move(name)); }

  // Inputs in order; null stands for an omitted optional input ("").
  const std::vector<Value*>& inputs() const { return inputs_; }
  Value* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  void set_input(size_t i, Value* value);  // grows the list if needed
  void add_input(Value* value) { set_input(inputs_.size(), value); }
  void remove_input(size_t i);  // later inputs shift down

  // Outputs in order; null stands for an omitted optional output.
  const std::vector<Value*>& outputs() const { return outputs_; }
  Value* output(size_t i) const { return i < outputs_.size() ? outputs_[i] : nullptr; }
  // Appends a new output value, in this node's graph, named uniquely after
  // `name`; an empty name appends an omitted output.
  Value* add_output(std::string_view name);

  std::vector<Attribute>& attributes() { return attributes_; }
  const std::vector<Attribute>& attributes() const { return attributes_; }
  const Attribute* attribute(std::string_view name) const;
  Attribute* attribute(std::string_view name);
  // Replaces or appends an attribute (the proto's name decides which).
  Attribute& set_attribute(onnx::AttributeProto proto);
  bool remove_attribute(std::string_view name);

  int64_t attr_int(std::string_view name, int64_t fallback) const;
  float attr_float(std::string_view name, float fallback) const;
  std::string attr_string(std::string_view name, std::string fallback) const;
  std::vector<int64_t> attr_ints(std::string_view name) const;

  // Every sub-graph held by this node's attributes.
  std::vector<Graph*> subgraphs() const;

  // "Conv node 'conv1'" or "Conv node #12" when unnamed: for messages.
  std::string describe() const;

 private:
  friend class Graph;
  friend class ProtoImporter;
  void drop_input_use(size_t i);

  Graph* graph_;
  onnx::NodeProto header_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::vector<Attribute> attributes_;
  std::list<Node>::iterator position_;
};

class Graph {
 public:
  using NodeList = std::list<Node>;

  // A top-level graph of `model`, or (when `parent` is set) a sub-graph held
  // by an attribute of `parent`.
  Graph(Model* model, Node* parent);
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph();

  Model* model() const { return model_; }
  Node* parent_node() const { return parent_; }
  Graph* parent_graph() const;

  // name, doc_string, quantization_annotation and unknown fields live here.
  const onnx::GraphProto& header() const { return header_; }
  onnx::GraphProto& mutable_header() { return header_; }
  const std::string& name() const { return header_.name(); }

  NodeList& nodes() { return nodes_; }
  const NodeList& nodes() const { return nodes_; }

  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  const std::vector<Value*>& value_info() const { return value_info_; }  // values with a value_info entry
  const std::vector<Value*>& initializers() const { return initializers_; }
  const std::vector<Value*>& sparse_initializers() const { return sparse_initializers_; }

  // A value defined in this graph (not in enclosing ones), or null.
  Value* find_value(std::string_view name) const;
  // A value visible from this graph: its own, then enclosing graphs'.
  Value* lookup(std::string_view name) const;
  // Every value defined in this graph, in no particular order.
  std::vector<Value*> values() const;

  // --- building and editing ---------------------------------------------

  // A new value in this graph with no producer, named uniquely after `name`.
  Value* add_value(std::string_view name);
  Value* add_input(std::string_view name, const onnx::TypeProto& type);
  // Declares an existing value as a graph input (e.g. after a cut).
  void declare_input(Value* value);
  void add_output(Value* value);
  void set_output(size_t index, Value* value);
  void remove_input(size_t index);  // the value stays, without the declaration
  void remove_output(size_t index);
  void add_value_info(Value* value);  // no-op if already listed
  void clear_value_info();
  // A new initializer value named uniquely after `name` (the tensor's own
  // name is overwritten).
  Value* add_initializer(std::string_view name, onnx::TensorProto tensor);
  // Gives an existing value constant data (or replaces it).
  void set_initializer(Value* value, onnx::TensorProto tensor);
  void remove_initializer(Value* value);  // the value stays, without data

  // Inserts a node before `before` (at the end when null). Its outputs are
  // new values named uniquely after `output_names`; an empty name leaves that
  // output omitted.
  Node* insert_node(Node* before, std::string_view op_type, const std::vector<Value*>& inputs,
                    const std::vector<std::string>& output_names, std::string_view domain = "");
  Node* add_node(std::string_view op_type, const std::vector<Value*>& inputs, const std::vector<std::string>& output_names,
                 std::string_view domain = "") {
    return insert_node(nullptr, op_type, inputs, output_names, domain);
  }
  // Deletes a node. Its outputs that nothing uses go with it; outputs still
  // in use stay as values without a producer.
  void remove_node(Node* node);
  // Moves `node` so it sits just before `before` (at the end when null).
  void move_node(Node* node, Node* before);
  // Moves every node, value and initializer of `sub` (a sub-graph of one of
  // this graph's nodes, with no inputs: an If branch) into this graph, just
  // before `before`. Names need no change: they are unique in the model.
  // `sub` keeps its output list, now naming values of this graph, until its
  // node goes. Fails, changing nothing, when `sub` is not such a graph.
  Status absorb_subgraph(Graph& sub, Node* before);

  // Points every node input that reads `from` at `to`, in sub-graphs too.
  // Graph outputs are left alone (see set_output).
  void replace_all_uses(Value* from, Value* to);

  // Renames a value; the new name must be free in the whole model.
  Status rename_value(Value* value, std::string name);

  // A name not used by any value or node anywhere in the model: `base`
  // itself if free, else base_1, base_2...
  std::string unique_name(std::string_view base) const;
  std::string unique_node_name(std::string_view base) const;

  // Removes nodes, initializers and value_info entries that no graph output
  // needs, here and in sub-graphs. Graph inputs stay unless
  // `remove_unused_inputs`. Returns how many nodes went.
  size_t cleanup(bool remove_unused_inputs = false);

  // Orders nodes so each comes after the producers of its inputs (and of the
  // outer values its sub-graphs use), keeping the current order where free.
  Status toposort();
  // That order, without changing the graph (sub-graphs not included).
  Result<std::vector<Node*>> topological_order() const;

  // Values defined outside this graph (in enclosing ones) that it or its
  // sub-graphs read or return, each once, in first-use order.
  std::vector<Value*> outer_values_used() const;

  // Deletes a value that nothing refers to any more.
  void erase_value(Value* value);

  // Lets go of every value outside this graph that it refers to (uses and
  // output slots), before the graph is thrown away with its node.
  void detach();

  // The root graph of the model this graph belongs to.
  Graph* root();
  const Graph* root() const;

  // Visits this graph and every sub-graph below it, parents first.
  void for_each_graph(const std::function<void(Graph&)>& visit);
  void for_each_graph(const std::function<void(const Graph&)>& visit) const;

 private:
  friend class Node;
  friend class Value;
  friend class ProtoImporter;
  bool name_in_use(std::string_view name) const;  // anywhere in the model
  Value* create_value(std::string name);
  bool node_name_in_use(std::string_view name) const;
  std::string unique(std::string_view base, bool (Graph::*in_use)(std::string_view) const) const;

  Model* model_;
  Node* parent_;
  onnx::GraphProto header_;
  NodeList nodes_;
  std::unordered_map<std::string, std::unique_ptr<Value>> values_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::vector<Value*> value_info_;
  std::vector<Value*> initializers_;
  std::vector<Value*> sparse_initializers_;
  // Root graph only: per base name, the suffix where unique_name resumes.
  mutable std::unordered_map<std::string, uint64_t> next_suffix_;
};

// --- walking a chain of nodes (the optimizer's fusions, the runtime's) ------

// The node that alone reads `value`, when `value` has exactly one use, that
// use is in the same graph (not inside a sub-graph), and no graph lists
// `value` as an output; else null. A rewrite may then make `value` disappear.
Node* sole_consumer(const Value* value);

// The input of the two-input `binary` node that is not `value`, when exactly
// one of its two inputs is `value`; else null.
Value* other_operand(const Node& binary, const Value* value);

}  // namespace onnxkit::ir
