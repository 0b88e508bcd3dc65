#include "runtime/executor.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <unordered_set>

#include "analysis/onnx_inference.h"
#include "runtime/fusion.h"
#include "runtime/kernels/nn/blocked.h"
#include "runtime/kernels/nn/conv_fusion.h"
#include "runtime/layout.h"
#include "runtime/parallel.h"
#include "runtime/tensor_proto.h"

namespace onnxkit::runtime {
namespace {

// Output 0 is input `index` as it is: the step of a node fused into its producer.
class PassThrough final : public Kernel {
 public:
  explicit PassThrough(size_t index) : index_(index) {}
  Status compute(KernelContext& ctx) const override {
    ctx.set_output(0, ctx.input_value(index_));
    return {};
  }

 private:
  size_t index_;
};

// A step the plan adds after or before `node`: copies slot `from` into slot
// `to` in the other layout.
GraphPlan::Step reorder_step(const ir::Node& node, const char* kind, int from, int to, std::unique_ptr<Kernel> kernel) {
  GraphPlan::Step step;
  step.node = &node;
  step.kind = kind;
  step.inputs = {from};
  step.outputs = {to};
  step.wanted = {true};
  step.kernel = std::move(kernel);
  return step;
}

// Builds one graph's plan in stages, each a member: slots and constants,
// outputs, kernel choices (layout and fusions), a step per node with the
// reorders its layout needs, in-place Concats, buffer releases.
class PlanBuilder {
 public:
  PlanBuilder(const ir::Graph& graph, const GraphPlan* parent, const std::vector<const ir::Value*>& returned,
              const PlanContext& context)
      : graph_(graph), parent_(parent), returned_(returned), context_(context), plan_(std::make_shared<GraphPlan>()) {
    plan_->graph = &graph;
  }

  Result<std::shared_ptr<GraphPlan>> build() {
    ONNXKIT_TRY(add_sources());
    ONNXKIT_TRY(add_constant_nodes());
    ONNXKIT_TRY(add_outputs());
    find_constants();
    choose_layout_and_fusions();
    for (const ir::Node* node : order_)
      if (!absorbed_.count(node)) ONNXKIT_TRY(add_node_steps(*node));  // else its fused chain's step computes it
    place_shared_outputs();
    add_releases();
    mark_memo_steps();
    for (const GraphPlan::Step& step : plan_->steps)
      plan_->widest_step = std::max({plan_->widest_step, step.inputs.size(), step.outputs.size()});
    plan_->profile = parent_ == nullptr && context_.options.profile;
    plan_->step_nanos = std::vector<std::atomic<int64_t>>(plan_->steps.size());
    plan_->step_calls = std::vector<std::atomic<int64_t>>(plan_->steps.size());
    return plan_;
  }

 private:
  int slot(const ir::Value* v) {
    auto [it, added] = plan_->slots.emplace(v, static_cast<int>(plan_->slot_count));
    if (added) ++plan_->slot_count;
    return it->second;
  }
  int new_slot() { return static_cast<int>(plan_->slot_count++); }

  // Outer-scope values (from the parent's frame), inputs and initializers.
  Status add_sources() {
    for (const ir::Value* v : graph_.outer_values_used()) {
      if (parent_ == nullptr) return make_error("graph '{}' reads '{}', which nothing defines", graph_.name(), v->name());
      auto it = parent_->slots.find(v);
      if (it == parent_->slots.end())
        return make_error("graph '{}' reads '{}' from an enclosing graph that does not provide it", graph_.name(), v->name());
      plan_->captures.emplace_back(slot(v), it->second);
    }
    for (const ir::Value* v : graph_.inputs()) plan_->inputs.push_back(slot(v));
    for (const ir::Value* v : graph_.initializers()) {
      auto tensor = tensor_from_proto(*v->initializer(), context_.model.external_data(),
                                      std::shared_ptr<const void>(context_.owner, v->initializer()));
      if (!tensor.ok()) return tensor.error().in(fmt::format("initializer '{}'", v->name()));
      plan_->constants.emplace_back(slot(v), Datum(std::move(tensor).value()));
      if (!v->is_graph_input()) known_.emplace(v, plan_->constants.back().second);  // an input's is only a default
    }
    if (!graph_.sparse_initializers().empty())
      return make_error("sparse initializer '{}' is not supported by the runtime", graph_.sparse_initializers()[0]->name());
    return {};
  }

  // Constant nodes holding a tensor, and Identity nodes of constants (torch
  // shares a weight between layers so), become constants of the plan like
  // initializers: no step, and kernels see their values when built (fusion
  // patterns, Reshape shapes). The other nodes make `order_`.
  Status add_constant_nodes() {
    ONNXKIT_ASSIGN(std::vector<ir::Node*> all_nodes, graph_.topological_order());
    for (const ir::Node* node : all_nodes) ONNXKIT_TRY(check_node_arity(*node, context_.model.opset(node->domain())));
    for (const ir::Node* node : all_nodes)
      for (const ir::Value* v : node->outputs())
        if (v != nullptr) slot(v);
    for (ir::Node* node : all_nodes) {
      const ir::Value* out = node->output(0);
      std::optional<Datum> value;
      if (out == nullptr || node->outputs().size() != 1) {
        // not a value-producing node of the two kinds
      } else if (const onnx::TensorProto* proto = node->is_onnx_op("Constant") ? out->constant_tensor() : nullptr) {
        auto tensor =
            tensor_from_proto(*proto, context_.model.external_data(), std::shared_ptr<const void>(context_.owner, proto));
        if (!tensor.ok()) return tensor.error().in(node->describe());
        value = Datum(std::move(tensor).value());
      } else if (node->is_onnx_op("Identity") && known_.count(node->input(0))) {
        value = known_.at(node->input(0));
      }
      if (!value) {
        order_.push_back(node);
        continue;
      }
      known_.emplace(out, *value);
      plan_->constants.emplace_back(slot(out), std::move(*value));
    }
    // A value read but defined nowhere: neither input, initializer, node output nor capture.
    for (const ir::Node* node : order_)
      for (const ir::Value* v : node->inputs())
        if (v != nullptr && !plan_->slots.count(v))
          return make_error("{} reads '{}', which nothing produces", node->describe(), v->name());
    return {};
  }

  Status add_outputs() {
    const std::vector<const ir::Value*>& results =
        returned_.empty() ? std::vector<const ir::Value*>(graph_.outputs().begin(), graph_.outputs().end()) : returned_;
    for (const ir::Value* v : results) {
      auto it = plan_->slots.find(v);
      if (it == plan_->slots.end()) return make_error("output '{}' is not produced by the graph", v->name());
      plan_->outputs.push_back(it->second);
      returned_slots_.insert(it->second);
    }
    return {};
  }

  // Kernels are built with the constants they can see: not an initializer
  // that is also an input, which a run may replace (kernels that prepack
  // weights or fuse chains would otherwise ignore the value fed).
  void find_constants() {
    std::unordered_set<int> replaceable;
    for (const ir::Value* v : graph_.initializers())
      if (v->is_graph_input()) replaceable.insert(plan_->slots.at(v));
    for (const auto& [s, value] : plan_->constants)
      if (!replaceable.count(s)) constant_by_slot_[s] = &value.tensor();
  }
  const Tensor* constant_of_slot(int s) const {
    auto c = constant_by_slot_.find(s);
    return c != constant_by_slot_.end() ? c->second : nullptr;
  }
  const Tensor* constant_of(const ir::Value* v) const {
    auto it = v == nullptr ? plan_->slots.end() : plan_->slots.find(v);
    return it == plan_->slots.end() ? nullptr : constant_of_slot(it->second);
  }
  bool is_returned(const ir::Value* v) const { return returned_slots_.count(plan_->slots.at(v)) != 0; }
  OpTraits traits_of(const ir::Node& node) const { return context_.registry.traits(node.domain(), node.op_type()); }

  // A main-graph value's shape as ONNX's shape inference gives it (run once,
  // when a fusion rule first asks), if it has one.
  const onnx::TensorShapeProto* inferred_shape(const ir::Value* v) {
    if (parent_ != nullptr) return nullptr;
    if (!types_) types_ = analysis::infer_types_with_onnx(context_.model).types;
    auto t = types_->find(v->name());
    return t != types_->end() && t->second.tensor_type().has_shape() ? &t->second.tensor_type().shape() : nullptr;
  }

  std::optional<int64_t> known_rank(const ir::Value* v) {
    const onnx::TensorShapeProto* shape = inferred_shape(v);
    return shape != nullptr ? std::optional<int64_t>(shape->dim_size()) : std::nullopt;
  }

  // Whether two main-graph values surely have one shape (for residual Adds):
  // dims must be known numbers or the same symbol.
  bool same_shape(const ir::Value* a, const ir::Value* b) {
    const onnx::TensorShapeProto *sa = inferred_shape(a), *sb = inferred_shape(b);
    if (sa == nullptr || sb == nullptr || sa->dim_size() != sb->dim_size()) return false;
    for (int i = 0; i < sa->dim_size(); ++i) {
      const auto &da = sa->dim(i), &db = sb->dim(i);
      const bool same = (da.has_dim_value() && db.has_dim_value() && da.dim_value() == db.dim_value()) ||
                        (da.has_dim_param() && db.has_dim_param() && !da.dim_param().empty() && da.dim_param() == db.dim_param());
      if (!same) return false;
    }
    return true;
  }

  // The main graph's convolution chains run on blocked activations. Every
  // value keeps its plain slot; a value that also exists blocked gets a
  // second slot, and reorder steps fill whichever a consumer needs. Then
  // the fusions: kernels that take over the nodes after them (Conv's, in
  // kernels/nn/conv_fusion.h), and chains (runtime/fusion.h).
  void choose_layout_and_fusions() {
    const ConstantOf constant = [this](const ir::Value* v) { return constant_of(v); };
    const IsReturned returned = [this](const ir::Value* v) { return is_returned(v); };
    const SameShape same = [this](const ir::Value* a, const ir::Value* b) { return same_shape(a, b); };
    const TraitsOf traits = [this](const ir::Node& n) { return traits_of(n); };
    if (parent_ == nullptr && context_.options.blocked_layout)
      layout_ = plan_layout(order_, constant, traits, returned, context_.model.opset(""));
    for (const auto& [v, channels] : layout_.channels) blocked_slot_[v] = new_slot();
    if (!context_.options.fuse) return;
    producer_fusions_ = nn::find_conv_fusions(order_, context_.model.opset(""), constant, returned, same, layout_.blocked_nodes);
    chains_ = find_fused_chains(order_, context_.model.opset(""), constant, returned, same,
                                [this](const ir::Value* v) { return known_rank(v); });
    // A chain stays away from nodes another kernel already runs (a
    // residual Add that also feeds a LayerNormalization), and out of
    // blocked regions unless it runs its last node's own kernel on nodes
    // and inputs all blocked.
    auto taken = [&](const ir::Node* n) {
      return producer_fusions_.pass_through.count(n) || producer_fusions_.producers.count(n);
    };
    for (const FusedChain& chain : chains_) {
      std::vector<const ir::Node*> nodes = chain.absorbed;
      nodes.push_back(chain.last);
      const auto blocked_nodes = std::ranges::count_if(nodes, [&](const ir::Node* n) { return is_blocked(*n); });
      const bool inputs_blocked =
          std::ranges::all_of(chain.inputs, [&](const ir::Value* v) { return layout_.channels.count(v) != 0; });
      const bool runs_blocked = !chain.create && inputs_blocked && blocked_nodes == std::ssize(nodes);
      if (std::ranges::any_of(nodes, taken) || (blocked_nodes > 0 && !runs_blocked)) continue;
      chain_ending_at_[chain.last] = &chain;
      absorbed_.insert(chain.absorbed.begin(), chain.absorbed.end());
    }
  }
  bool is_blocked(const ir::Node& node) const { return layout_.blocked_nodes.count(&node) != 0; }

  // A blocked value also needs its plain form when a plain node, a sub-graph
  // or the caller reads it.
  bool needs_plain(const ir::Value* v) const {
    if (v->is_any_graph_output() || is_returned(v)) return true;
    for (const ir::Use& use : v->uses()) {
      if (use.node->graph() != &graph_ || !is_blocked(*use.node)) return true;
      auto acts = activation_inputs(*use.node, traits_of(*use.node));
      if (std::find(acts.begin(), acts.end(), use.index) == acts.end()) return true;
    }
    return false;
  }

  // The node's step, preceded by the reorders into the blocked layout its
  // inputs need and followed by the one back its output needs.
  Status add_node_steps(const ir::Node& node) {
    const bool blocked = is_blocked(node);
    GraphPlan::Step step;
    step.node = &node;
    bool plain_input = false;
    add_step_inputs(node, step, plain_input);
    for (const ir::Value* v : node.outputs()) {
      int s = v != nullptr ? plan_->slots.at(v) : -1;
      if (blocked && v != nullptr && layout_.channels.count(v)) s = blocked_slot_.at(v);  // else plain (a blocked Shape's)
      step.outputs.push_back(s);
      step.wanted.push_back(v != nullptr && (!v->uses().empty() || is_returned(v) || v->is_any_graph_output()));
    }
    ONNXKIT_TRY(add_kernel(node, step, plain_input));
    step_of_[&node] = plan_->steps.size();
    plan_->steps.push_back(std::move(step));

    const ir::Value* out = node.output(0);
    if (blocked && out != nullptr && layout_.channels.count(out) && needs_plain(out))
      plan_->steps.push_back(reorder_step(node, "ToPlain", blocked_slot_.at(out), plan_->slots.at(out),
                                          nn::make_to_plain(layout_.channels.at(out))));
    return {};
  }

  // The step's input slots: blocked ones for the activations of a blocked
  // node. `plain_input`: the node is a first layer reading its plain input.
  void add_step_inputs(const ir::Node& node, GraphPlan::Step& step, bool& plain_input) {
    std::vector<size_t> acts = is_blocked(node) ? activation_inputs(node, traits_of(node)) : std::vector<size_t>();
    for (size_t i = 0; i < node.inputs().size(); ++i) {
      const ir::Value* v = node.input(i);
      int s = v != nullptr ? plan_->slots.at(v) : -1;
      if (v != nullptr && std::find(acts.begin(), acts.end(), i) != acts.end()) {
        if (!blocked_slot_.count(v)) {
          // A plain value entering a blocked region, at a node that starts one.
          const nn::RegionEntry entry = nn::region_entry(node, [this](const ir::Value* w) { return constant_of(w); });
          plain_input = entry.reads_plain;
          if (!plain_input) {
            blocked_slot_[v] = new_slot();
            plan_->steps.push_back(reorder_step(node, "ToBlocked", s, blocked_slot_[v], nn::make_to_blocked(entry.channels)));
          }
        }
        if (!plain_input) s = blocked_slot_.at(v);
      }
      step.inputs.push_back(s);
    }
  }

  // The step's kernel: a pass-through for a node its producer absorbed, a fused
  // chain's, the blocked kernel of an op that has one, or the op's own.
  Status add_kernel(const ir::Node& node, GraphPlan::Step& step, bool plain_input) {
    std::vector<const Tensor*> constants;
    for (const ir::Value* v : node.inputs()) constants.push_back(v != nullptr ? constant_of(v) : nullptr);
    auto build_subgraph = [self = plan_.get(),
                           context = &context_](const ir::Graph& sub) -> Result<std::shared_ptr<const GraphPlan>> {
      ONNXKIT_ASSIGN(auto child, build_plan(sub, self, {}, *context));
      return std::shared_ptr<const GraphPlan>(std::move(child));
    };
    if (auto fused = producer_fusions_.pass_through.find(&node); fused != producer_fusions_.pass_through.end()) {
      // The producer's kernel already did this node's work: pass the value on.
      step.kernel = std::make_unique<PassThrough>(fused->second);
      step.kind = producer_fusions_.kind;
      return {};
    }
    const bool blocked = is_blocked(node);
    std::any chain_fusion;  // for the node's own kernel, when its chain has none
    if (auto chain = chain_ending_at_.find(&node); chain != chain_ending_at_.end()) {
      step.inputs.clear();
      for (const ir::Value* v : chain->second->inputs) step.inputs.push_back(blocked ? blocked_slot_.at(v) : plan_->slots.at(v));
      step.kind = chain->second->kind;
      if (chain->second->create) {
        KernelInfo info(node, context_.model.opset(""), std::move(constants), context_.options, context_.registry,
                        build_subgraph);
        ONNXKIT_ASSIGN(step.kernel, build_kernel(chain->second->create, info));
        return {};
      }
      chain_fusion = chain->second->fusion;
    }
    const int64_t opset = context_.model.opset(node.domain());
    ONNXKIT_ASSIGN(const KernelDef* def, context_.registry.find(node, opset));
    const auto fused = producer_fusions_.producers.find(&node);
    if (fused != producer_fusions_.producers.end() && !fused->second.extra.empty()) {
      const ProducerFusions::Producer& producer = fused->second;
      step.inputs.resize(producer.extra_from, -1);  // an omitted input stays omitted
      constants.resize(producer.extra_from, nullptr);
      for (const ir::Value* v : producer.extra) {
        // A weight of the node taken over stays plain; an activation is read in the node's layout.
        const bool activation = blocked && blocked_slot_.count(v);
        step.inputs.push_back(activation ? blocked_slot_.at(v) : plan_->slots.at(v));
        constants.push_back(constant_of(v));
      }
    }
    KernelInfo info(node, opset, std::move(constants), context_.options, context_.registry, build_subgraph);
    if (fused != producer_fusions_.producers.end()) info.set_fusion(fused->second.fusion);
    if (chain_fusion.has_value()) info.set_fusion(std::move(chain_fusion));
    if (blocked && traits_of(node).blocked == OpTraits::Blocked::own_kernel) {
      auto in = layout_.channels.find(node.input(0));
      const int64_t channels = in != layout_.channels.end() ? in->second : -1;
      auto move = layout_.moves.find(&node);
      const nn::ChannelMove* channel_move = move != layout_.moves.end() ? &move->second : nullptr;
      const KernelFactory create = [&](const KernelInfo& i) {
        return nn::make_blocked_kernel(i, plain_input, channels, channel_move);
      };
      ONNXKIT_ASSIGN(step.kernel, build_kernel(create, info));
    } else {
      ONNXKIT_ASSIGN(step.kernel, build_kernel(def->create, info));  // element-wise ops read blocked tensors as they are
    }
    return {};
  }

  // Steps that write into a buffer of the run several share (the blocked
  // layout's in-place Concats).
  void place_shared_outputs() {
    // The node whose own step writes `v`, through the steps passing a fused value on.
    const nn::ComputedBy computed_by = [this](const ir::Value* v) -> const ir::Node* {
      const ir::Node* writer = v->producer();
      while (writer != nullptr && producer_fusions_.pass_through.count(writer))
        writer = writer->input(producer_fusions_.pass_through.at(writer))->producer();
      return writer != nullptr && step_of_.count(writer) ? writer : nullptr;
    };
    const nn::ChannelsOf channels_of = [this](const ir::Value* v) -> int64_t {
      auto it = layout_.channels.find(v);
      return it == layout_.channels.end() ? -1 : it->second;
    };
    nn::InPlaceWrites in_place = nn::plan_in_place_writes(order_, layout_.blocked_nodes, channels_of, computed_by);
    for (nn::InPlaceWrites::Write& write : in_place.writes) {
      GraphPlan::Step& step = plan_->steps[step_of_.at(write.node)];
      step.shared_buffer = static_cast<int>(write.buffer);
      step.part = std::move(write.part);
      step.last_writer = write.last;
    }
    plan_->shared_buffers = in_place.buffers;
  }

  // Buffers go after their last read (an unread output right after its
  // step); what the caller gets back stays.
  void add_releases() {
    std::unordered_map<int, size_t> last_read;
    for (size_t k = 0; k < plan_->steps.size(); ++k) {
      const GraphPlan::Step& step = plan_->steps[k];
      for (int s : step.inputs)
        if (s >= 0) last_read[s] = k;
      if (step.kind == nullptr)
        for (const ir::Graph* sub : step.node->subgraphs())
          for (const ir::Value* v : sub->outer_values_used()) last_read[plan_->slots.at(v)] = k;
      for (int s : step.outputs)
        if (s >= 0 && !last_read.count(s)) last_read[s] = k;
    }
    for (const auto& [s, k] : last_read)
      if (!returned_slots_.count(s)) plan_->steps[k].release.push_back(s);
    for (auto& step : plan_->steps) std::sort(step.release.begin(), step.release.end());
  }

  // Exports with dynamic dims compute Reshape targets, Slice bounds and
  // masks at run time, from Shape through chains of small ops (Gather,
  // Unsqueeze, Concat, Div...): hundreds of steps in a Swin, each costing
  // more to start than its work. Such a step, fed only by constants, Shape
  // and Size and steps like it, gives the same outputs for the same inputs;
  // run_plan reuses the last run's when its inputs are unchanged. Not for
  // outputs the caller gets (it may write into them), random ops, or ops
  // with sub-graphs (they read more than their inputs).
  void mark_memo_steps() {
    std::unordered_set<int> derived;
    for (const auto& [s, value] : plan_->constants) derived.insert(s);
    for (GraphPlan::Step& step : plan_->steps) {
      if (step.kind != nullptr) continue;
      const bool shape = step.node->is_onnx_op("Shape") || step.node->is_onnx_op("Size");
      bool memo = !shape && step.node->subgraphs().empty() && step.shared_buffer < 0 && !traits_of(*step.node).random;
      for (int s : step.inputs) memo = memo && (s < 0 || derived.count(s));
      for (int s : step.outputs) memo = memo && !returned_slots_.count(s);
      step.memo = memo;
      if (shape || memo)
        for (int s : step.outputs)
          if (s >= 0) derived.insert(s);
    }
    plan_->memos.resize(plan_->steps.size());
  }

  const ir::Graph& graph_;
  const GraphPlan* parent_;
  const std::vector<const ir::Value*>& returned_;
  const PlanContext& context_;
  std::shared_ptr<GraphPlan> plan_;

  std::unordered_map<const ir::Value*, Datum> known_;  // values fixed at build
  std::vector<ir::Node*> order_;                       // the nodes that get steps
  std::unordered_set<int> returned_slots_;
  std::unordered_map<int, const Tensor*> constant_by_slot_;
  std::optional<analysis::TypeMap> types_;  // for same_shape, inferred once when asked

  LayoutPlan layout_;
  std::unordered_map<const ir::Value*, int> blocked_slot_;
  ProducerFusions producer_fusions_;
  std::vector<FusedChain> chains_;
  std::unordered_map<const ir::Node*, const FusedChain*> chain_ending_at_;
  std::unordered_set<const ir::Node*> absorbed_;
  std::unordered_map<const ir::Node*, size_t> step_of_;  // a node's own step
};

}  // namespace

Result<std::shared_ptr<GraphPlan>> build_plan(const ir::Graph& graph, const GraphPlan* parent,
                                              const std::vector<const ir::Value*>& returned, const PlanContext& context) {
  return PlanBuilder(graph, parent, returned, context).build();
}

RunControl::RunControl(const RunLimits& limits) : limits_(limits) {
  // Counted only against a limit: a run without one allocates nothing here.
  if (limits.max_elements > 0 || limits.max_subgraph_runs > 0) usage_ = std::make_shared<Usage>();
  if (limits.timeout.count() > 0) deadline_ = std::chrono::steady_clock::now() + limits.timeout;
}

Status RunControl::check_time() const {
  if (!deadline_ && !single_thread_switch_) return {};
  const auto now = std::chrono::steady_clock::now();
  // Inside a region the setting would be a worker's own: the calling
  // thread's next step makes it.
  if (SingleThreadSwitch* to_one = single_thread_switch_.get(); to_one != nullptr && now >= to_one->from &&
                                                                !inside_parallel_region() && !to_one->asked.exchange(true) &&
                                                                to_one->confirm()) {
    omp_set_num_threads(1);
    to_one->went = true;
  }
  if (deadline_ && now >= *deadline_)
    return make_error("stopped at the run's time limit ({:g} s)", std::chrono::duration<double>(limits_.timeout).count());
  return {};
}

void RunControl::go_single_threaded_at(std::chrono::steady_clock::time_point when, std::function<bool()> confirm) {
  single_thread_switch_ = std::make_shared<SingleThreadSwitch>();
  single_thread_switch_->from = when;
  single_thread_switch_->confirm = std::move(confirm);
}

bool RunControl::went_single_threaded() const { return single_thread_switch_ && single_thread_switch_->went; }

Status RunControl::count_subgraph_run() const {
  if (usage_ && limits_.max_subgraph_runs > 0 && ++usage_->subgraph_runs > limits_.max_subgraph_runs)
    return make_error("stopped at the run's limit of {} sub-graph runs (a Loop's iterations count one each)",
                      limits_.max_subgraph_runs);
  return {};
}

void RunControl::charge_elements(uint64_t elements) const {
  if (!usage_ || limits_.max_elements == 0) return;
  const uint64_t before = usage_->elements.fetch_add(elements);
  if (elements > limits_.max_elements || before > limits_.max_elements - elements)
    throw BudgetExceeded(fmt::format("its outputs would take the run past its budget of {} elements", limits_.max_elements));
}

namespace {

// The buffers a run of `plan` from `parent` may reuse (new for a run of the
// main graph, or the first of a sub-graph from this frame).
FrameBuffers take_buffers(const GraphPlan& plan, const Frame* parent) {
  FrameBuffers buffers;
  if (parent != nullptr) {
    auto& spare = parent->spare;
    auto it = std::find_if(spare.begin(), spare.end(), [&](const SpareFrame& entry) { return entry.plan == &plan; });
    if (it != spare.end()) {
      buffers = std::move(it->buffers);
      spare.erase(it);
    }
  }
  buffers.slots.resize(plan.slot_count);
  buffers.args.resize(plan.widest_step);
  return buffers;
}

// Every step's inputs and outputs pass through `args` and `results`, sized
// for the widest step: no allocation per step. A sub-graph run gives them
// and its slots back to the frame that ran it, emptied, however it ends.
class RunBuffers {
 public:
  RunBuffers(Frame& frame, const Frame* parent, FrameBuffers& taken)
      : args(std::move(taken.args)), results(std::move(taken.results)), frame_(frame), parent_(parent) {}
  ~RunBuffers() {
    if (parent_ == nullptr) return;
    for (Datum& d : frame_.slots)
      if (!d.empty()) d = Datum();
    results.clear();
    parent_->spare.push_back(SpareFrame{
        &frame_.plan, FrameBuffers{std::move(frame_.slots), std::move(args), std::move(results), std::move(frame_.spare)}});
  }
  RunBuffers(const RunBuffers&) = delete;
  RunBuffers& operator=(const RunBuffers&) = delete;

  std::vector<const Datum*> args;
  std::vector<Datum> results;

 private:
  Frame& frame_;
  const Frame* parent_;
};

// Memo steps (GraphPlan::Step::memo) keep outputs of at most this many
// elements, and compare inputs by value up to it (by buffer above).
constexpr int64_t kMemoElements = 1 << 14;

bool same_value(const Datum* now, const Datum& before) {
  if (now == nullptr || now->empty()) return before.empty();
  if (!now->is_tensor() || !before.is_tensor()) return false;
  const Tensor &a = now->tensor(), &b = before.tensor();
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  // The memo holds `before`: its buffer cannot have gone to another tensor.
  if (a.raw() == b.raw()) return true;
  return a.dtype() != DataType::string && a.numel() <= kMemoElements && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// The last run's outputs of memo step k into `results` when its inputs are
// the same as then.
bool recall(const GraphPlan& plan, size_t k, std::span<const Datum* const> args, std::vector<Datum>& results) {
  const std::lock_guard<std::mutex> lock(plan.memo_mutex);
  const GraphPlan::Memo& memo = plan.memos[k];
  if (memo.outputs.empty() || memo.inputs.size() != args.size()) return false;
  for (size_t i = 0; i < args.size(); ++i)
    if (!same_value(args[i], memo.inputs[i])) return false;
  for (size_t i = 0; i < results.size(); ++i) results[i] = memo.outputs[i];
  return true;
}

void remember(const GraphPlan& plan, size_t k, std::span<const Datum* const> args, const std::vector<Datum>& results) {
  for (const Datum& d : results)
    if (!d.empty() && (!d.is_tensor() || d.tensor().numel() > kMemoElements)) return;
  for (const Datum* d : args)
    if (d != nullptr && !d->empty() && !d->is_tensor()) return;
  GraphPlan::Memo memo;
  for (const Datum* d : args) memo.inputs.push_back(d != nullptr ? *d : Datum());
  memo.outputs = results;
  const std::lock_guard<std::mutex> lock(plan.memo_mutex);
  plan.memos[k] = std::move(memo);
}

}  // namespace

Result<std::vector<Datum>> run_plan(const GraphPlan& plan, std::vector<Datum> inputs, const Frame* parent, int threads,
                                    const RunControl& control) {
  FrameBuffers taken = take_buffers(plan, parent);
  Frame frame{plan, std::move(taken.slots), std::vector<Tensor>(plan.shared_buffers),
              parent != nullptr ? parent->control : control, std::move(taken.spare)};
  RunBuffers buffers(frame, parent, taken);
  std::vector<const Datum*>& args = buffers.args;
  std::vector<Datum>& results = buffers.results;
  if (parent != nullptr) ONNXKIT_TRY(frame.control.count_subgraph_run());
  // Also here, for bodies with no steps that a Loop runs over and over.
  ONNXKIT_TRY(frame.control.check_time());
  for (const auto& [mine, theirs] : plan.captures) frame.slots[mine] = parent->slots[theirs];
  for (const auto& [s, value] : plan.constants) frame.slots[s] = value;
  // Inputs come after constants: an initializer listed as an input is a default.
  for (size_t i = 0; i < plan.inputs.size() && i < inputs.size(); ++i)
    if (!inputs[i].empty()) frame.slots[plan.inputs[i]] = std::move(inputs[i]);

  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const GraphPlan::Step& step = plan.steps[k];
    if (Status go = frame.control.check_time(); !go.ok()) return go.error().in(step.node->describe());
    auto started = plan.profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    for (size_t i = 0; i < step.inputs.size(); ++i) args[i] = step.inputs[i] >= 0 ? &frame.slots[step.inputs[i]] : nullptr;
    results.clear();
    results.resize(step.outputs.size());
    SharedOutput shared;
    if (step.shared_buffer >= 0) shared = {step.part.get(), &frame.shared_buffers[static_cast<size_t>(step.shared_buffer)]};
    const std::span<const Datum* const> step_args(args.data(), step.inputs.size());
    if (!step.memo || !recall(plan, k, step_args, results)) {
      KernelContext ctx(step_args, results, step.wanted, frame, threads, shared);
      ONNXKIT_TRY(run_kernel(*step.kernel, ctx, *step.node));
      if (step.memo) remember(plan, k, step_args, results);
    }
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      if (step.outputs[i] < 0) continue;
      if (step.wanted[i] && results[i].empty())
        return make_error("{}: produced no value for output {} ('{}')", step.node->describe(), i, step.node->output(i)->name());
      frame.slots[step.outputs[i]] = std::move(results[i]);
    }
    for (int s : step.release) frame.slots[s] = Datum();
    // Its output holds the buffer now, and goes when no longer read.
    if (step.last_writer) frame.shared_buffers[static_cast<size_t>(step.shared_buffer)] = Tensor();
    if (plan.profile) {
      plan.step_nanos[k] +=
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started).count();
      ++plan.step_calls[k];
    }
  }
  std::vector<Datum> out;
  out.reserve(plan.outputs.size());
  for (int s : plan.outputs) out.push_back(frame.slots[s]);
  return out;
}

}  // namespace onnxkit::runtime
