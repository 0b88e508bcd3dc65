#pragma once
// The kernel interface and registry. A kernel is built once per node when a
// session is created (attributes parsed, constant weights prepacked) and then
// computes, possibly from several threads at once, so compute() is const.
//
// Kernels are registered by (domain, op type, opset range) in one explicit
// table (registry.cpp), family by family; an op whose semantics changed
// between opsets has one entry per range.

#include <any>
#include <climits>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "runtime/datum.h"
#include "util/result.h"

namespace onnxkit::runtime {

struct GraphPlan;
struct Frame;
struct SessionOptions;
class KernelRegistry;

inline constexpr int64_t kLatestOpset = INT_MAX;

// What a kernel sees when it is built.
class KernelInfo {
 public:
  KernelInfo(const ir::Node& node, int64_t opset, std::vector<const Tensor*> constant_inputs, const SessionOptions& options,
             const KernelRegistry& registry,
             std::function<Result<std::shared_ptr<const GraphPlan>>(const ir::Graph&)> build_subgraph)
      : node_(node),
        opset_(opset),
        constant_inputs_(std::move(constant_inputs)),
        options_(options),
        registry_(registry),
        build_subgraph_(std::move(build_subgraph)) {}

  const ir::Node& node() const { return node_; }
  int64_t opset() const { return opset_; }

  // What the session fused into this node (ProducerFusions, runtime/fusion.h),
  // of a type the op's kernel defines (nn::ConvFusion for Conv); empty
  // for most nodes.
  const std::any& fusion() const { return fusion_; }
  void set_fusion(std::any fusion) { fusion_ = std::move(fusion); }
  const SessionOptions& options() const { return options_; }
  const KernelRegistry& registry() const { return registry_; }

  size_t num_inputs() const { return node_.inputs().size(); }
  size_t num_outputs() const { return node_.outputs().size(); }
  bool has_input(size_t i) const { return node_.input(i) != nullptr; }
  bool has_output(size_t i) const { return node_.output(i) != nullptr; }
  // The value of input i when it is known at build time (an initializer).
  const Tensor* constant_input(size_t i) const { return i < constant_inputs_.size() ? constant_inputs_[i] : nullptr; }

  bool has_attr(std::string_view name) const { return node_.attribute(name) != nullptr; }
  int64_t attr_int(std::string_view name, int64_t fallback) const;
  float attr_float(std::string_view name, float fallback) const;
  std::string attr_string(std::string_view name, std::string fallback) const;
  std::vector<int64_t> attr_ints(std::string_view name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attr_floats(std::string_view name, std::vector<float> fallback = {}) const;
  std::vector<std::string> attr_strings(std::string_view name) const;
  // A tensor attribute (null when absent).
  Result<std::optional<Tensor>> attr_tensor(std::string_view name) const;

  // The plan of a sub-graph attribute, scoped under the node's graph.
  Result<std::shared_ptr<const GraphPlan>> subgraph(std::string_view attr) const;

 private:
  const ir::Node& node_;
  int64_t opset_;
  std::vector<const Tensor*> constant_inputs_;
  const SessionOptions& options_;
  const KernelRegistry& registry_;
  std::function<Result<std::shared_ptr<const GraphPlan>>(const ir::Graph&)> build_subgraph_;
  std::any fusion_;
};

// Where a step's output 0 goes when the plan has several steps of a run
// write into one buffer (kernels/nn/blocked.h: the inputs of a blocked
// Concat, written straight into its output, which copies only the others).
class BufferPart {
 public:
  virtual ~BufferPart() = default;
  // The part of `buffer` an output of `type` and `shape` takes, allocating
  // the buffer while it is undefined; nothing when the output does not fit,
  // and it is then allocated on its own.
  virtual std::optional<Tensor> place(Tensor& buffer, DataType type, const Shape& shape) const = 0;
};

// A step's output 0 in a buffer of its run.
struct SharedOutput {
  const BufferPart* part = nullptr;  // null: output 0 is allocated on its own
  Tensor* buffer = nullptr;
};

// What a kernel sees when it computes.
class KernelContext {
 public:
  KernelContext(std::vector<const Datum*> inputs, std::vector<Datum>& outputs, const std::vector<bool>& wanted,
                const Frame& frame, int threads, SharedOutput shared = {})
      : owned_inputs_(std::move(inputs)),
        inputs_(owned_inputs_),
        outputs_(outputs),
        wanted_(wanted),
        frame_(frame),
        threads_(threads),
        shared_(shared) {}
  // Inputs the caller keeps alive while the context lives: the executor
  // fills one array for all the steps of a run instead of allocating one
  // per step.
  KernelContext(std::span<const Datum* const> inputs, std::vector<Datum>& outputs, const std::vector<bool>& wanted,
                const Frame& frame, int threads, SharedOutput shared = {})
      : inputs_(inputs), outputs_(outputs), wanted_(wanted), frame_(frame), threads_(threads), shared_(shared) {}
  // A copy would view the original's inputs; a move keeps the vector's
  // array, so the view stays valid.
  KernelContext(const KernelContext&) = delete;
  KernelContext(KernelContext&&) = default;

  size_t num_inputs() const { return inputs_.size(); }
  // Given, and not an omitted optional.
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr && !inputs_[i]->empty(); }
  const Datum& input_value(size_t i) const { return *inputs_[i]; }
  // Input i as a tensor; an error (naming the input) if it is absent or not a tensor.
  Result<const Tensor*> tensor(size_t i) const;
  // For inputs the kernel has checked with has_input (or that are required
  // and validated by the executor).
  const Tensor& input(size_t i) const { return inputs_[i]->tensor(); }

  size_t num_outputs() const { return outputs_.size(); }
  bool wants_output(size_t i) const { return i < wanted_.size() && wanted_[i]; }
  // Allocates output i. A shape checked_shape_size refuses (a negative dim,
  // too many elements) throws ShapeError, which run_kernel reports with the
  // node: no kernel can allocate from an unchecked shape.
  Tensor& output(size_t i, DataType type, Shape shape);
  void set_output(size_t i, Datum value) { outputs_[i] = std::move(value); }

  int threads() const { return threads_; }

  // The same context with other inputs, for kernels that adapt their inputs
  // before handing them to another kernel.
  KernelContext with_inputs(std::vector<const Datum*> inputs) const {
    return KernelContext(std::move(inputs), outputs_, wanted_, frame_, threads_, shared_);
  }

  // Runs a sub-graph (If/Loop/Scan body) with this node's scope as its outer
  // scope; returns its outputs in order.
  Result<std::vector<Datum>> run_subgraph(const GraphPlan& plan, std::vector<Datum> inputs) const;

 private:
  std::vector<const Datum*> owned_inputs_;  // empty when the caller holds the inputs
  std::span<const Datum* const> inputs_;    // owned_inputs_, or the caller's
  std::vector<Datum>& outputs_;
  const std::vector<bool>& wanted_;
  const Frame& frame_;
  int threads_;
  SharedOutput shared_;  // for output 0; none for most steps
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual Status compute(KernelContext& ctx) const = 0;
};

using ComputeFn = std::function<Status(KernelContext&)>;
using KernelFactory = std::function<Result<std::unique_ptr<Kernel>>(const KernelInfo&)>;

// A kernel made of a function: the build step returns the compute step,
// which captures whatever the build parsed.
KernelFactory make_kernel(std::function<Result<ComputeFn>(const KernelInfo&)> build);

// A kernel with nothing to build.
KernelFactory make_kernel(ComputeFn compute);

// create(info), with errors naming the node.
Result<std::unique_ptr<Kernel>> build_kernel(const KernelFactory& create, const KernelInfo& info);

// kernel.compute(ctx), with errors naming `node`. What the libraries a kernel
// calls throw (the allocator, oneDNN), the run's BudgetExceeded and the
// ShapeError of an output or tensor shape become errors too: kernels
// themselves return theirs.
Status run_kernel(const Kernel& kernel, KernelContext& ctx, const ir::Node& node);

// The data of a value fixed when a plan is built (an initializer, a
// Constant), null for any other.
using ConstantOf = std::function<const Tensor*(const ir::Value*)>;

// What the session and the optimizer may assume about an op whatever its
// inputs, declared with its kernel in its family's registration.
struct OpTraits {
  // How it runs on blocked activations (kernels/nn/blocked.h). Element-wise
  // ops read them as they are, on input 0 alone (the other inputs are
  // parameters, as Clip's bounds) or on inputs 0 and 1 of one shape; Conv,
  // the pools and Concat have blocked kernels of their own.
  enum class Blocked : uint8_t { no, elementwise_unary, elementwise_binary, own_kernel };
  Blocked blocked = Blocked::no;
  // Maps zero to zero (f(0) = 0, f(0, 0) = 0): the zero channels padding a
  // blocked tensor stay zero, so an element-wise op runs blocked whatever
  // its channel count; one that does not, only on whole blocks.
  bool zero_preserving = false;
  // Its results may differ from run to run: never folded, never merged with
  // a twin.
  bool random = false;
  // Quantizes or dequantizes: constant folding keeps it, for the engines
  // that read Q/DQ pairs.
  bool quantization = false;
};

struct KernelDef {
  std::string domain;  // "" for the default ai.onnx domain
  std::string op_type;
  int64_t since = 1;             // first opset version this kernel serves
  int64_t until = kLatestOpset;  // last one, inclusive
  KernelFactory create;
  OpTraits traits;
};

class KernelRegistry {
 public:
  void add(std::string domain, std::string op_type, int64_t since, int64_t until, KernelFactory create, OpTraits traits = {});
  // The kernel serving `op_type` at `opset` of `domain` ("ai.onnx" is ""), or null.
  const KernelDef* find(std::string_view domain, std::string_view op_type, int64_t opset) const;
  // The kernel serving `node` at `opset` of its domain, or an error naming
  // the node: "is not supported (other versions are)" when another opset of
  // the op has one, "unsupported operator" when none has.
  Result<const KernelDef*> find(const ir::Node& node, int64_t opset) const;
  // True when some opset of the op has a kernel.
  bool knows(std::string_view domain, std::string_view op_type) const;
  // The traits of the op (of its first opset with a kernel); none for an op
  // without one.
  OpTraits traits(std::string_view domain, std::string_view op_type) const;
  const std::vector<KernelDef>& all() const { return defs_; }

  // Every kernel onnxkit has.
  static const KernelRegistry& builtin();

 private:
  std::vector<KernelDef> defs_;
};

// analysis::arity_problem for a node about to get a kernel, as an error
// naming it: the executor and evaluate_node call it once for every kernel.
Status check_node_arity(const ir::Node& node, int64_t opset);

// A family's registration reads as one table: each of its files' register
// functions, called in order.
using RegisterFn = void (*)(KernelRegistry&);
void register_each(KernelRegistry& registry, std::initializer_list<RegisterFn> functions);

// The families, each in kernels/<family>/ (called by builtin()).
void register_elementwise_kernels(KernelRegistry& registry);
void register_math_kernels(KernelRegistry& registry);
void register_nn_kernels(KernelRegistry& registry);
void register_tensor_kernels(KernelRegistry& registry);
void register_indexing_kernels(KernelRegistry& registry);
void register_reduce_kernels(KernelRegistry& registry);
void register_control_kernels(KernelRegistry& registry);
void register_sequence_kernels(KernelRegistry& registry);
void register_detection_kernels(KernelRegistry& registry);
void register_rnn_kernels(KernelRegistry& registry);
void register_quantization_kernels(KernelRegistry& registry);
void register_signal_kernels(KernelRegistry& registry);
void register_text_kernels(KernelRegistry& registry);
void register_random_kernels(KernelRegistry& registry);
void register_ml_kernels(KernelRegistry& registry);
void register_image_kernels(KernelRegistry& registry);

}  // namespace onnxkit::runtime
