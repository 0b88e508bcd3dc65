#pragma once
// The runtime's public face: a Session is built once from a model (kernels
// chosen and built, weights prepacked, the plan made) and then runs it, as
// often as wanted, from as many threads as wanted.

#include <onnx/onnx_pb.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/inline_functions.h"
#include "ir/model.h"
#include "runtime/contention.h"
#include "runtime/datum.h"
#include "util/result.h"

namespace onnxkit::runtime {

class KernelRegistry;
struct GraphPlan;

struct SessionOptions {
  // Threads per run for the heavy kernels. 0: one per core, shared among the
  // runs in progress in the process (k concurrent runs get cores / k each).
  int threads = 0;
  // While other work keeps the cores busy, runs use one thread (see
  // runtime/contention.h); false: always the count above.
  bool adapt_to_load = true;
  // Values to return, by name; empty: the graph's outputs.
  std::vector<std::string> outputs;
  // Also return every value a main-graph node produces (after the outputs).
  bool all_outputs = false;
  const KernelRegistry* registry = nullptr;  // null: KernelRegistry::builtin()
  bool profile = false;                      // time every node of the main graph (see Session::profile)
  // Run convolution chains on blocked activations (see runtime/layout.h).
  bool blocked_layout = true;
  // Run chains such as torch's five-node GELU or MatMul -> Add as one kernel
  // (see runtime/fusion.h), and Conv -> Relu or Clip as one oneDNN primitive.
  bool fuse = true;
  // Kernels may keep constant weights in the layout they run fastest on, a
  // copy beside the model's (oneDNN's reordered convolution weights,
  // Winograd transforms, transposed MatMul weights). false: they read the
  // weights where the model holds them (its memory or the mapped side
  // file), or reorder them into a buffer that lives for one node's run:
  // slower over many runs, but without a second copy of the weights, for
  // runs that must not double the memory a large model takes (simplify's
  // check).
  bool prepack_weights = true;
};

// Limits of one run, each an error naming the node where it was reached.
// Time is checked between steps (a Loop's every iteration runs steps), so
// one long kernel runs to its end first; elements before each output is
// allocated.
struct RunLimits {
  // Time; zero: no limit.
  std::chrono::nanoseconds timeout{0};
  // Elements of all the outputs the steps allocate over the run, a Loop's
  // every iteration included (elements x iterations); 0: no limit.
  uint64_t max_elements = 0;
  // Runs of sub-graphs (If branches, Loop and Scan bodies); 0: no limit.
  uint64_t max_subgraph_runs = 0;
};

// Where the time went, per node of the main graph, over every run so far.
struct NodeProfile {
  std::string name;
  std::string op_type;
  int64_t calls = 0;
  double total_ms = 0;
};

// A graph input or output as the model declares it.
struct ValueInfo {
  std::string name;
  onnx::TypeProto type;      // may be empty when the model does not say
  bool has_default = false;  // an input backed by an initializer: feeding it is optional
};

using NamedValues = std::vector<std::pair<std::string, Datum>>;

// How a session expands the calls of model-local functions: every call but
// those of an op `registry` has a kernel for at `model`'s opset, which run
// that kernel (precedence: ir/inline_functions.h). Holds references to both.
ir::InlineOptions function_inlining(const ir::Model& model, const KernelRegistry& registry);

class Session {
 public:
  static Result<std::unique_ptr<Session>> create(std::shared_ptr<const ir::Model> model, SessionOptions options = {});
  ~Session();

  // Inputs the caller must or may feed (initializers listed as inputs are
  // optional: their data is the default).
  const std::vector<ValueInfo>& inputs() const { return inputs_; }
  const std::vector<ValueInfo>& outputs() const { return outputs_; }
  int threads() const { return threads_; }
  // The model it runs: the one given, or a copy with the calls of its
  // model-local functions expanded.
  const ir::Model& model() const { return *model_; }

  // Runs the model; the result follows outputs(). Feeds are checked against
  // the declared inputs: an unknown or missing name, or a wrong element type,
  // rank or fixed dim, is an error naming the input.
  Result<std::vector<Datum>> run(const NamedValues& feeds, const RunLimits& limits = {}) const;

  // Per-node times, in plan order (empty unless options.profile).
  std::vector<NodeProfile> profile() const;

 private:
  Session() = default;
  Status validate(const NamedValues& feeds, std::vector<Datum>& ordered) const;

  std::shared_ptr<const ir::Model> model_;
  SessionOptions options_;
  int threads_ = 1;
  std::shared_ptr<const GraphPlan> plan_;
  // Whether runs take their threads while the contention watch holds runs.
  mutable HoldTrial hold_trial_;
  mutable SpreadBudget spread_budget_;
  std::vector<ValueInfo> inputs_;
  std::vector<ValueInfo> outputs_;
};

}  // namespace onnxkit::runtime
