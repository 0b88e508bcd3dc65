#pragma once
// Plans and runs one graph. A plan is built once: every value gets a slot,
// every node a kernel, and every slot the step after which nothing reads it,
// so its buffer is released there. Sub-graphs (If/Loop/Scan bodies) get
// plans of their own whose outer-scope values are captured from the frame of
// the graph running them.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/model.h"
#include "runtime/kernel.h"
#include "runtime/session.h"

namespace onnxkit::runtime {

struct GraphPlan {
  struct Step {
    const ir::Node* node = nullptr;
    std::unique_ptr<Kernel> kernel;
    std::vector<int> inputs;   // slot per input; -1 for an omitted one
    std::vector<int> outputs;  // slot per output; -1 for an omitted one
    std::vector<bool> wanted;  // outputs that someone reads (or returned)
    std::vector<int> release;  // slots nothing reads after this step
    const char* kind =
        nullptr;  // set for steps the plan adds (layout reorders) or fuses (runtime/fusion.h), null for the node's own
    // Output 0 goes into the run's buffer `shared_buffer` (Frame::shared_buffers)
    // where `part` puts it (kernels/nn/blocked.h's in-place writes); -1:
    // allocated on its own.
    int shared_buffer = -1;
    std::shared_ptr<const BufferPart> part;
    bool last_writer = false;  // the frame lets go of the buffer after it (its output holds it)
    // Its inputs derive from constants and tensor shapes alone: a run whose
    // inputs for it are those of the last run takes the last run's outputs
    // (GraphPlan::Memo) instead of running it.
    bool memo = false;
  };

  // The last inputs and outputs of a memo step.
  struct Memo {
    std::vector<Datum> inputs, outputs;
  };

  const ir::Graph* graph = nullptr;
  size_t slot_count = 0;
  std::unordered_map<const ir::Value*, int> slots;
  std::vector<int> inputs;                       // the graph's inputs, in order
  std::vector<int> outputs;                      // what a run returns, in order
  std::vector<std::pair<int, Datum>> constants;  // initializers
  std::vector<std::pair<int, int>> captures;     // (slot here, slot in the parent plan)
  std::vector<Step> steps;
  size_t shared_buffers = 0;  // buffers several steps of a run write into
  size_t widest_step = 0;     // the most inputs or outputs of a step

  // Time spent in each step over all runs, when the session profiles.
  bool profile = false;
  mutable std::vector<std::atomic<int64_t>> step_nanos;
  mutable std::vector<std::atomic<int64_t>> step_calls;
  // By step, for the memo steps; runs of the plan on several threads at once
  // share them under the mutex.
  mutable std::vector<Memo> memos;
  mutable std::mutex memo_mutex;
  // Whether a session of this plan has run (its first run does one-time work).
  mutable std::atomic<bool> first_run_done{false};
};

// The limits of a run and what it has used of them, shared by the frames of
// its sub-graphs.
class RunControl {
 public:
  RunControl() = default;
  explicit RunControl(const RunLimits& limits);

  // An error once the time is up. Past the time given to
  // go_single_threaded_at, the calling thread's parallel code takes one
  // thread from here on, if `confirm` says so.
  Status check_time() const;
  // The first step from `when` on asks `confirm` (once) whether the steps
  // from there on take one thread (runtime/contention.h's SpreadBudget).
  void go_single_threaded_at(std::chrono::steady_clock::time_point when, std::function<bool()> confirm);
  // Whether they did.
  bool went_single_threaded() const;
  // One more run of a sub-graph; an error past the limit.
  Status count_subgraph_run() const;
  // Counts `elements` about to be allocated; throws BudgetExceeded past the
  // limit (from KernelContext::output, which cannot return an error; the
  // executor turns it into one).
  void charge_elements(uint64_t elements) const;

 private:
  struct Usage {
    std::atomic<uint64_t> elements{0};
    std::atomic<uint64_t> subgraph_runs{0};
  };
  struct SingleThreadSwitch {
    std::chrono::steady_clock::time_point from;
    std::function<bool()> confirm;
    std::atomic<bool> asked{false}, went{false};
  };
  RunLimits limits_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  std::shared_ptr<Usage> usage_;
  std::shared_ptr<SingleThreadSwitch> single_thread_switch_;  // shared by the frames' copies
};

struct BudgetExceeded : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What a run of a plan allocates for itself: its values and the arrays its
// steps' inputs and outputs pass through. A sub-graph run gives them back,
// emptied, to the frame that ran it, for its next run of the same plan: a
// Loop's body allocates them once per run of the Loop, not per iteration,
// and so do the sub-graphs the body runs (they come back with it).
struct SpareFrame;
struct FrameBuffers {
  std::vector<Datum> slots;  // every one empty while spare
  std::vector<const Datum*> args;
  std::vector<Datum> results;
  // Those of the sub-graph runs of this frame's steps, while not in use.
  std::vector<SpareFrame> spare;
};
struct SpareFrame {
  const GraphPlan* plan;
  FrameBuffers buffers;
};

// The values of one run of a plan.
struct Frame {
  const GraphPlan& plan;
  std::vector<Datum> slots;
  std::vector<Tensor> shared_buffers;  // GraphPlan::shared_buffers, allocated by the first step to write one
  RunControl control;                  // the run's, shared by its sub-graphs' frames
  // FrameBuffers::spare of this run: sub-graphs run on the run's thread, one
  // at a time, so the kernels' const access to the frame may take and give.
  mutable std::vector<SpareFrame> spare;
};

struct PlanContext {
  const ir::Model& model;
  const SessionOptions& options;
  const KernelRegistry& registry;
  std::shared_ptr<const void> owner;  // keeps initializer memory alive
};

// `returned`: the values a run returns (the graph's outputs when empty).
Result<std::shared_ptr<GraphPlan>> build_plan(const ir::Graph& graph, const GraphPlan* parent,
                                              const std::vector<const ir::Value*>& returned, const PlanContext& context);

// Sub-graphs (parent set) run under their parent frame's control.
Result<std::vector<Datum>> run_plan(const GraphPlan& plan, std::vector<Datum> inputs, const Frame* parent, int threads,
                                    const RunControl& control = {});

}  // namespace onnxkit::runtime
