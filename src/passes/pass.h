#pragma once
// The optimizer's passes. A pass rewrites one graph in place (the driver
// visits sub-graphs itself) and says how many rewrites it made; the driver
// runs every pass (constant folding last) and shape inference to a fixed
// point.
//
// Before passes run, the driver writes what shape inference knows into each
// value's type (Value::info), so a pass reads shapes with
// Value::static_shape() and element types with Value::elem_type(). A pass
// that cannot prove a rewrite safe (unknown shape, graph output that would
// change name, node in the user's exclusion list) declines it.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/model.h"
#include "runtime/tensor.h"

namespace onnxkit::passes {

// Constant folding's limits (passes/fold.h).
struct FoldOptions {
  // Bytes an output may take when it is also larger than the node's inputs.
  uint64_t size_limit = 1 << 20;
  // Elements a node's outputs may hold beyond its inputs' count: a
  // ConstantOfShape or Range asking for 2^40 is refused, where computing it
  // only to drop it by size_limit would take the memory first.
  uint64_t work_limit = 1 << 24;
};

struct PassOptions {
  // Nodes (by name) that no pass may rewrite, remove or fold.
  std::set<std::string, std::less<>> excluded_nodes;
  // Passes (by name) not to run.
  std::set<std::string, std::less<>> skipped_passes;
  // Also drop graph inputs that feed nothing.
  bool remove_unused_inputs = false;
  FoldOptions folding;
};

class PassContext {
 public:
  PassContext(ir::Model& model, const PassOptions& options) : model_(model), options_(options) {}

  ir::Model& model() { return model_; }
  const ir::Model& model() const { return model_; }
  const PassOptions& options() const { return options_; }
  int64_t opset(std::string_view domain = "") const { return model_.opset(domain); }

  // True when the user asked to keep this node as it is.
  bool excluded(const ir::Node& node) const;

  // The data of an initializer (null when `value` is not one, is a graph
  // input whose initializer is only a default, or its data cannot be read).
  // External data is viewed where it is mapped: copy before changing it.
  // Data inside the model file is copied, so a pass checks everything
  // cheaper first: a weight may be most of the model.
  std::optional<runtime::Tensor> constant(const ir::Value* value) const;
  // Whether constant() would find an initializer for `value`, without
  // reading it: a rewrite that needs several constants checks them all first.
  static bool has_constant(const ir::Value* value);
  // The elements of an int64 or int32 initializer of rank 0 or 1 (axes,
  // shapes, pads...); nullopt when `value` is not one.
  std::optional<std::vector<int64_t>> constant_ints(const ir::Value* value) const;

  // A new initializer holding `tensor`, named uniquely after `name`, in `graph`.
  ir::Value* add_constant(ir::Graph& graph, std::string_view name, const runtime::Tensor& tensor);

  // One line for `simplify --report`: what a pass changed, naming the nodes.
  void note(std::string text) { notes_.push_back(std::move(text)); }
  const std::vector<std::string>& notes() const { return notes_; }

  // One line for the user about a rewrite that could not be made (a node
  // whose kernel refused to fold it); the driver collects them after each
  // pass.
  void warn(std::string text) { warnings_.push_back(std::move(text)); }
  std::vector<std::string> take_warnings() { return std::exchange(warnings_, {}); }

 private:
  ir::Model& model_;
  const PassOptions& options_;
  std::vector<std::string> notes_;
  std::vector<std::string> warnings_;
};

class Pass {
 public:
  virtual ~Pass() = default;
  // Kebab-case, as --skip and --list-passes show it: "fuse-bn-into-conv".
  virtual std::string_view name() const = 0;
  // One line for --list-passes.
  virtual std::string_view summary() const = 0;
  // Rewrites `graph` only (not its sub-graphs); returns the number of rewrites.
  virtual size_t run(ir::Graph& graph, PassContext& context) const = 0;
};

// One rewrite tried at `node`: how many rewrites it made (0 when it
// declined, having changed nothing).
using NodeRewrite = std::function<size_t(ir::Node& node, PassContext& context)>;

// A pass that tries `rewrite` at each node of the default domain whose op
// is one of `op_types`, in graph order, unless the user excluded it. The
// nodes are a snapshot taken first: a rewrite may remove the node it is
// given and nodes of other op types, never another node of the snapshot.
// The elimination family's bypass passes and the fusion family are made so.
std::unique_ptr<Pass> make_node_pass(std::string_view name, std::string_view summary,
                                     std::initializer_list<std::string_view> op_types, NodeRewrite rewrite);

// Every pass, in the order the driver runs them: constant folding last.
const std::vector<std::unique_ptr<Pass>>& all_passes();
const Pass* find_pass(std::string_view name);

// --- shared helpers for passes ----------------------------------------------

// Makes the consumers of `from` (and graph output slots holding it: this
// graph's, and those of sub-graphs that return it directly) read `to`
// instead, so that the node producing `from` can go. When `from` is a
// graph output and `to` is a graph input or another output, the rewrite is
// impossible without renaming an interface value: returns false and changes
// nothing.
bool replace_value(ir::Graph& graph, ir::Value* from, ir::Value* to);
// Whether replace_value(graph, from, to) would succeed.
bool can_replace_value(const ir::Graph& graph, const ir::Value* from, const ir::Value* to);

// True when `node` has an output 0 and every other output is omitted or
// unused (BatchNormalization's running statistics, Dropout's mask).
bool only_first_output_used(const ir::Node& node);

// Removes a node whose output 0 is equivalent to its input 0 (Identity,
// inference Dropout, a no-op Cast...): its consumers read the input. False,
// and nothing changed, when replace_value declines.
bool bypass_node(ir::Node& node);

// True for ops whose result may be random (RandomNormal..., Multinomial,
// Bernoulli, Dropout in training), as their kernels declare (OpTraits):
// never folded, never merged.
bool may_be_random(const ir::Node& node);

// Chains of nodes are walked with ir::sole_consumer and ir::other_operand
// (ir/graph.h).
using ir::other_operand;
using ir::sole_consumer;

// Nodes of `graph` whose op is one of `op_types`, in order: a snapshot, so
// that a pass may remove other nodes while walking it.
std::vector<ir::Node*> nodes_of(ir::Graph& graph, const std::vector<std::string_view>& op_types);

}  // namespace onnxkit::passes

namespace onnxkit::passes {

// Runs `pass` on `graph`, then on every sub-graph below it (parents first,
// so a sub-graph that the parent's rewrite removed is never visited).
size_t run_on_all_graphs(const Pass& pass, ir::Graph& graph, PassContext& context);

}  // namespace onnxkit::passes
