#include "runtime/session.h"

#include <fmt/format.h>
#include <omp.h>

#include <atomic>
#include <thread>
#include <unordered_map>

#include "io/tensor_proto.h"
#include "ir/inline_functions.h"
#include "runtime/contention.h"
#include "runtime/executor.h"
#include "runtime/kernel.h"
#include "util/text.h"

namespace onnxkit::runtime {
namespace {

// Checks a fed value against the declared type: kind, element type, rank,
// and every fixed dim.
Status check_feed(const ValueInfo& info, const Datum& value) {
  const onnx::TypeProto& type = info.type;
  auto mismatch = [&](const std::string& what) {
    return make_error("input '{}': {}; got {}, the model expects {}", info.name, what, value.describe(), io::type_text(type));
  };
  if (type.has_tensor_type()) {
    if (!value.is_tensor()) return mismatch("not a tensor");
    const Tensor& t = value.tensor();
    const auto& tt = type.tensor_type();
    if (tt.elem_type() != 0 && static_cast<int32_t>(t.dtype()) != tt.elem_type()) return mismatch("wrong element type");
    if (tt.has_shape()) {
      if (static_cast<int>(t.rank()) != tt.shape().dim_size()) return mismatch("wrong rank");
      for (int i = 0; i < tt.shape().dim_size(); ++i) {
        const auto& d = tt.shape().dim(i);
        if (d.has_dim_value() && d.dim_value() != t.dim(static_cast<size_t>(i)))
          return mismatch(fmt::format("dim {} should be {}", i, d.dim_value()));
      }
    }
  } else if (type.has_sequence_type() && !value.is_sequence()) {
    return mismatch("not a sequence");
  } else if (type.has_optional_type() && !value.is_optional()) {
    return mismatch("not an optional");
  } else if (type.has_map_type() && !value.is_map()) {
    return mismatch("not a map");
  }
  return {};
}

}  // namespace

ir::InlineOptions function_inlining(const ir::Model& model, const KernelRegistry& registry) {
  ir::InlineOptions options;
  options.keep_call = [&model, &registry](const onnx::NodeProto& call) {
    return registry.find(call.domain(), call.op_type(), model.opset(call.domain())) != nullptr;
  };
  return options;
}

Session::~Session() = default;

Result<std::unique_ptr<Session>> Session::create(std::shared_ptr<const ir::Model> model, SessionOptions options) {
  // Calls of model-local functions run as their bodies, expanded once here
  // into a copy of the model.
  if (ir::calls_local_functions(*model)) {
    const KernelRegistry& kernels = options.registry != nullptr ? *options.registry : KernelRegistry::builtin();
    ONNXKIT_ASSIGN(std::unique_ptr<ir::Model> inlined, ir::inline_functions(*model, function_inlining(*model, kernels)));
    model = std::move(inlined);
  }
  std::unique_ptr<Session> session(new Session());
  session->model_ = model;
  session->options_ = std::move(options);
  const SessionOptions& opts = session->options_;
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  session->threads_ = opts.threads > 0 ? opts.threads : cores;
  const KernelRegistry& registry = opts.registry != nullptr ? *opts.registry : KernelRegistry::builtin();
  const ir::Graph& graph = model->graph();

  std::vector<const ir::Value*> returned;
  std::unordered_set<const ir::Value*> seen;
  auto add_returned = [&](const ir::Value* v) {
    if (seen.insert(v).second) returned.push_back(v);
  };
  if (opts.outputs.empty()) {
    for (const ir::Value* v : graph.outputs()) add_returned(v);
  } else {
    for (const std::string& name : opts.outputs) {
      const ir::Value* v = graph.find_value(name);
      if (v == nullptr) {
        std::vector<std::string> names;
        for (const ir::Value* c : graph.values()) names.push_back(c->name());
        std::string hint = closest_match(name, names);
        return make_error("output '{}' is not a value of the model{}", name,
                          hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint));
      }
      add_returned(v);
    }
  }
  if (opts.all_outputs) {
    ONNXKIT_ASSIGN(std::vector<ir::Node*> order, graph.topological_order());
    for (const ir::Node* n : order)
      for (const ir::Value* v : n->outputs())
        if (v != nullptr) add_returned(v);
  }

  PlanContext context{*model, session->options_, registry, model};
  ONNXKIT_ASSIGN(auto plan, build_plan(graph, nullptr, returned, context));
  session->plan_ = std::move(plan);

  for (const ir::Value* v : graph.inputs()) {
    session->inputs_.push_back({v->name(), v->type(), v->is_constant()});
  }
  for (const ir::Value* v : returned) {
    onnx::TypeProto type = v->type();
    if (!v->has_type() && v->initializer() != nullptr) {
      type.mutable_tensor_type()->set_elem_type(v->initializer()->data_type());
      for (int64_t d : v->initializer()->dims()) type.mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
    }
    session->outputs_.push_back({v->name(), type});
  }
  return session;
}

Status Session::validate(const NamedValues& feeds, std::vector<Datum>& ordered) const {
  ordered.assign(inputs_.size(), Datum());
  std::vector<bool> fed(inputs_.size(), false);
  for (const auto& [name, value] : feeds) {
    size_t i = 0;
    while (i < inputs_.size() && inputs_[i].name != name) ++i;
    if (i == inputs_.size()) {
      std::vector<std::string> names;
      for (const ValueInfo& info : inputs_) names.push_back(info.name);
      return make_error("'{}' is not an input of the model{} (inputs: {})", name, did_you_mean(name, names), join(names, ", "));
    }
    if (fed[i]) return make_error("input '{}' is given twice", name);
    ONNXKIT_TRY(check_feed(inputs_[i], value));
    fed[i] = true;
    ordered[i] = value;
  }
  std::vector<std::string> missing;
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (!fed[i] && !inputs_[i].has_default)
      missing.push_back(fmt::format("'{}' ({})", inputs_[i].name, io::type_text(inputs_[i].type)));
  if (!missing.empty()) return make_error("missing input{} {}", missing.size() > 1 ? "s" : "", join(missing, ", "));
  return {};
}

namespace {

// Runs in progress in this process, of every session: each calling thread
// gets an OpenMP team of its own, and teams beyond the cores take turns
// at every barrier.
std::atomic<int> runs_in_progress{0};

// What a SpreadBudget tells runs apart by: the inputs' shapes (hashed once
// per run) and the thread count.
size_t mix_hash(size_t key, int64_t v) {
  return key ^ (std::hash<int64_t>{}(v) + 0x9e3779b97f4a7c15ULL + (key << 6) + (key >> 2));
}

size_t shapes_key(const std::vector<Datum>& inputs) {
  size_t key = 0;
  for (const Datum& d : inputs) {
    if (!d.is_tensor()) {
      key = mix_hash(key, -1);
      continue;
    }
    key = mix_hash(key, static_cast<int64_t>(d.tensor().rank()));
    for (int64_t dim : d.tensor().shape()) key = mix_hash(key, dim);
  }
  return key;
}

size_t spread_key(size_t shapes, int threads) { return mix_hash(shapes, threads); }

class RunInProgress {
 public:
  RunInProgress() : count_(runs_in_progress.fetch_add(1) + 1) {}
  ~RunInProgress() { runs_in_progress.fetch_sub(1); }
  int count() const { return count_; }  // this one included

 private:
  int count_;
};

}  // namespace

Result<std::vector<Datum>> Session::run(const NamedValues& feeds, const RunLimits& limits) const {
  std::vector<Datum> ordered;
  ONNXKIT_TRY(validate(feeds, ordered));
  const RunInProgress run;
  // One thread per core was asked for: concurrent runs share the cores
  // instead of each taking them all. An explicit count is obeyed.
  int threads = options_.threads > 0 ? threads_ : std::max(1, threads_ / run.count());
  ContentionWatch& watch = ContentionWatch::process();
  ContentionWatch::RunStart start{.threads = threads};
  if (options_.adapt_to_load) start = watch.start_run(threads, &hold_trial_);
  // OpenMP's thread count is per calling thread, so concurrent runs with
  // different settings do not disturb each other.
  omp_set_num_threads(start.threads);
  const auto started = ContentionWatch::Clock::now();
  RunControl control(limits);
  // Runs that may use more than one thread: the one-thread runs the watch
  // holds count too, for their budget.
  const bool budgeted = options_.adapt_to_load && threads > 1;
  const size_t shapes = budgeted ? shapes_key(ordered) : 0;
  const size_t key = spread_key(shapes, start.threads);
  if (budgeted && start.threads > 1)
    if (const auto budget = spread_budget_.budget(key, spread_key(shapes, 1)))
      control.go_single_threaded_at(started + *budget,
                                    [&] { return watch.contended(start, ContentionWatch::Clock::now() - started); });
  auto outputs = run_plan(*plan_, std::move(ordered), nullptr, start.threads, control);
  if (options_.adapt_to_load) {
    const auto wall = ContentionWatch::Clock::now() - started;
    if (control.went_single_threaded()) {
      omp_set_num_threads(start.threads);
      watch.spread_run_cut_short(start, wall);
    } else if (plan_->first_run_done.exchange(true)) {
      watch.run_finished(start, wall);
      if (budgeted && outputs.ok()) spread_budget_.run_finished(key, wall);
    } else {
      watch.run_discarded();
    }
  }
  return outputs;
}

}  // namespace onnxkit::runtime

namespace onnxkit::runtime {

std::vector<NodeProfile> Session::profile() const {
  std::vector<NodeProfile> out;
  if (!plan_->profile) return out;
  for (size_t k = 0; k < plan_->steps.size(); ++k) {
    const GraphPlan::Step& step = plan_->steps[k];
    const std::string op = step.kind != nullptr ? step.kind : step.node->op_type();
    out.push_back({step.node->name(), op, plan_->step_calls[k].load(), plan_->step_nanos[k].load() / 1e6});
  }
  return out;
}

}  // namespace onnxkit::runtime
