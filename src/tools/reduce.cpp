#include "tools/reduce.h"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <regex>
#include <unordered_set>

#include "io/tensor_file.h"
#include "ir/model.h"
#include "runtime/tensor_proto.h"
#include "tools/compare_pairing.h"
#include "tools/edit.h"
#include "tools/reference.h"
#include "util/text.h"

extern char** environ;

namespace onnxkit::tools {
namespace {

namespace fs = std::filesystem;
using runtime::Datum;

// The node of `graph` that holds `node` (itself, or the node whose sub-graph it is in).
const ir::Node* top_level(const ir::Node* node, const ir::Graph& graph) {
  while (node != nullptr && node->graph() != &graph) node = node->graph()->parent_node();
  return node;
}

struct CommandResult {
  int exit_code = 0;   // 128 + signal when killed
  std::string output;  // stdout and stderr together
};

// Runs argv[0] (looked up in PATH) with no shell in between.
Result<CommandResult> run_command(const std::vector<std::string>& argv) {
  int fds[2];
  if (pipe(fds) != 0) return make_error("cannot make a pipe: {}", std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return make_error("--check: cannot run '{}': {}", argv[0], std::strerror(rc));
  }
  CommandResult result;
  char buffer[65536];
  for (;;) {
    ssize_t n = read(fds[0], buffer, sizeof buffer);
    if (n > 0) result.output.append(buffer, static_cast<size_t>(n));
    else if (n == 0 || errno != EINTR) break;
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return result;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// Where the candidate's inputs come from, and what it gives out.
struct Cut {
  std::vector<const ir::Value*> main_inputs;  // its first node's computed ones, graph inputs: stay inputs
  std::vector<const ir::Value*> side_inputs;  // other branches: frozen in the models written
  std::vector<const ir::Value*> outputs;      // what leaves it, or the graph's outputs it makes
};

class Reducer {
 public:
  Reducer(const ReduceOptions& options, const std::function<void(const ReduceStep&)>& on_step)
      : options_(options), on_step_(on_step) {}

  Status load(const fs::path& path) {
    ONNXKIT_ASSIGN(std::unique_ptr<ir::Model> model, ir::load_model(path));
    ONNXKIT_TRY(make_truth(std::move(model)));
    ONNXKIT_ASSIGN(std::vector<ir::Node*> all, model_->graph().topological_order());
    for (ir::Node* n : all)
      if (!n->is_onnx_op("Constant")) order_.push_back(n);
    for (size_t i = 0; i < order_.size(); ++i) index_[order_[i]] = i;
    fixed_ = fixed_values(model_->graph(), all, false);
    report_.original_nodes = order_.size();
    if (order_.empty()) return make_error("{}: the main graph has no node to reduce", path.string());
    return {};
  }

  Result<ReduceReport> run() {
    std::vector<size_t> all(order_.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    ONNXKIT_ASSIGN(bool whole_fails, judge(all, "whole model"));
    if (!whole_fails)
      return make_error("the whole model passes {}: nothing to reduce", options_.check.empty() ? "the comparison" : "--check");

    const size_t n = order_.size();
    size_t end = n - 1, start = 0;
    auto range = [&](size_t first, size_t last) {
      std::vector<size_t> nodes;
      for (size_t i = first; i <= last; ++i) nodes.push_back(i);
      return nodes;
    };
    if (options_.mode == ReduceMode::bisect) {
      // The shortest failing prefix: [0, end].
      size_t lo = 0, hi = n - 1;
      while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        ONNXKIT_ASSIGN(bool fails, judge(range(0, mid), "outputs"));
        if (fails) hi = mid;
        else lo = mid + 1;
      }
      end = hi;
      // The shortest failing suffix of it: [start, end].
      lo = 0;
      hi = end;
      while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        ONNXKIT_ASSIGN(bool fails, judge(range(mid, end), "inputs"));
        if (fails) lo = mid;
        else hi = mid - 1;
      }
      start = lo;
    } else {
      while (end > 0) {
        ONNXKIT_ASSIGN(bool fails, judge(range(0, end - 1), "outputs"));
        if (!fails) break;
        --end;
      }
      while (start < end) {
        ONNXKIT_ASSIGN(bool fails, judge(range(start + 1, end), "inputs"));
        if (!fails) break;
        ++start;
      }
    }
    // Nodes of other branches inside the range: drop each that is not needed to fail.
    std::vector<size_t> kept = range(start, end);
    for (size_t k = 0; kept.size() > 1 && k < kept.size();) {
      std::vector<size_t> fewer = kept;
      fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(k));
      ONNXKIT_ASSIGN(bool fails, judge(fewer, "refine"));
      if (fails) kept = std::move(fewer);
      else ++k;
    }
    ONNXKIT_TRY(write_result(kept));
    return std::move(report_);
  }

 private:
  // Reference values for every tensor the judge may need, per sample, under
  // the model's names; first, If nodes that take the same branch on every
  // sample become that branch (in the reference model too), so that the
  // search can enter it.
  Status make_truth(std::unique_ptr<ir::Model> model) {
    const auto& refs = options_.reference;
    const bool model_reference = refs.size() == 1 && refs[0].extension() == ".onnx";
    std::unique_ptr<ir::Model> good;
    std::vector<runtime::NamedValues> feeds, good_feeds;  // per sample, for the model and for the good one
    std::optional<Reference> files;
    truth_unfused_ = model_reference;
    if (model_reference) {
      ONNXKIT_ASSIGN(good, ir::load_model(refs[0]));
      ONNXKIT_ASSIGN(good_feeds, make_input_samples(borrow(*good), options_.compare, &report_.notes));
      for (const auto& f : good_feeds) {
        ONNXKIT_ASSIGN(auto renamed, feeds_for(*good, *model, f));
        feeds.push_back(std::move(renamed));
      }
    } else if (!refs.empty()) {
      ONNXKIT_ASSIGN(files, load_reference(refs));
      report_.notes.insert(report_.notes.end(), files->notes.begin(), files->notes.end());
      ONNXKIT_ASSIGN(auto session, runtime::Session::create(borrow(*model)));
      for (size_t s = 0; s < files->samples.size(); ++s) {
        InputOptions inputs = options_.compare.inputs;
        inputs.seed += s;
        ONNXKIT_ASSIGN(auto f, feeds_from_reference(*session, files->samples[s], inputs, s == 0 ? &report_.notes : nullptr));
        feeds.push_back(std::move(f));
      }
    } else if (options_.check.empty()) {
      return make_error("nothing to judge the candidates by: give --check CMD..., or --reference DIR|FILE|GOOD.onnx");
    } else {
      ONNXKIT_ASSIGN(feeds, make_input_samples(borrow(*model), options_.compare, &report_.notes));
    }
    ONNXKIT_TRY(inline_taken_branches(*model, feeds, good.get(), good_feeds));
    model_ = std::shared_ptr<const ir::Model>(std::move(model));
    // Owned from here on: values a run returns may view the model's weights.
    std::shared_ptr<const ir::Model> reference(std::move(good));

    for (size_t s = 0; s < feeds.size(); ++s) {
      NamedTensors values;
      if (reference != nullptr) {
        ONNXKIT_ASSIGN(values, paired_values(reference, model_, good_feeds[s], options_.compare.threads));
      } else if (files) {
        for (auto& [name, value] : feeds[s]) values.emplace(name, value);
        for (const ir::Node& node : model_->graph().nodes())
          for (const ir::Value* v : node.outputs())
            if (v != nullptr)
              if (const Datum* r = find_reference(files->samples[s], v->name())) values.emplace(v->name(), *r);
      } else {
        // An external judge: cut tensors take the model's own values.
        auto own = run_all_values(model_, feeds[s], options_.compare.threads);
        if (!own.ok()) return own.error().in("the model fails to run");
        values = std::move(own).value();
      }
      truth_.push_back(std::move(values));
    }
    return {};
  }

  // A session's handle on a model that outlives it and the values its runs
  // return (which may view its weights), without copying it.
  static std::shared_ptr<const ir::Model> borrow(const ir::Model& model) {
    return std::shared_ptr<const ir::Model>(std::shared_ptr<const ir::Model>{}, &model);
  }

  // Ifs of the main graph whose condition is the same on every sample are
  // replaced by the branch they take (inline_if), in rounds for Ifs inside
  // branches; the good model's If of the same name goes the same way.
  // Loop bodies are not entered: their iterations differ.
  Status inline_taken_branches(ir::Model& model, const std::vector<runtime::NamedValues>& feeds, ir::Model* good,
                               const std::vector<runtime::NamedValues>& good_feeds) {
    for (int round = 0; round < 4; ++round) {
      std::vector<ir::Node*> ifs =
          find_nodes(model.graph(), [&](const ir::Node& n) { return n.is_onnx_op("If") && n.graph() == &model.graph(); });
      if (ifs.empty()) return {};
      std::vector<NamedTensors> runs;
      for (const auto& f : feeds) {
        auto values = run_all_values(borrow(model), f, options_.compare.threads);
        if (!values.ok()) return values.error().in("the model fails to run");
        runs.push_back(std::move(values).value());
      }
      bool inlined = false;
      for (ir::Node* node : ifs) {
        std::optional<bool> taken = same_condition(node, runs);
        if (!taken) continue;
        const std::string name = node->name(), described = node->describe();
        ONNXKIT_TRY(take_branch(model, *node, *taken));
        if (good != nullptr && !name.empty()) {
          std::vector<ir::Node*> twins = find_nodes(good->graph(), [&](const ir::Node& n) {
            return n.is_onnx_op("If") && n.name() == name && n.graph() == &good->graph();
          });
          std::vector<NamedTensors> good_runs;
          for (const auto& f : good_feeds) {
            auto values = run_all_values(borrow(*good), f, options_.compare.threads);
            if (!values.ok()) return values.error().in("the reference model fails to run");
            good_runs.push_back(std::move(values).value());
          }
          if (twins.size() == 1 && same_condition(twins[0], good_runs) == taken)
            ONNXKIT_TRY(take_branch(*good, *twins[0], *taken));
        }
        report_.notes.push_back(
            fmt::format("{} became its {} branch, taken on every sample", described, *taken ? "then" : "else"));
        inlined = true;
        break;  // the other Ifs' nodes may have moved: look again
      }
      if (!inlined) return {};
    }
    return {};
  }

  static std::optional<bool> same_condition(const ir::Node* node, const std::vector<NamedTensors>& runs) {
    const ir::Value* cond = node->input(0);
    std::optional<bool> taken;
    for (const NamedTensors& run : runs) {
      auto it = cond != nullptr ? run.find(cond->name()) : run.end();
      if (it == run.end() || !it->second.is_tensor() || it->second.tensor().numel() != 1 ||
          it->second.tensor().dtype() != runtime::DataType::boolean)
        return std::nullopt;
      const bool value = it->second.tensor().data<bool>()[0];
      if (taken && *taken != value) return std::nullopt;
      taken = value;
    }
    return taken;
  }

  static Status take_branch(ir::Model& model, ir::Node& node, bool taken) {
    onnx::TensorProto condition;
    condition.set_data_type(onnx::TensorProto::BOOL);
    condition.add_int32_data(taken ? 1 : 0);
    ir::Value* constant = model.graph().add_initializer(node.input(0)->name() + "_taken", condition);
    node.set_input(0, constant);
    ONNXKIT_TRY(inline_if(node));
    model.graph().cleanup();
    return {};
  }

  bool known(const ir::Value* v) const { return truth_[0].count(v->name()) != 0; }

  // The cut of `nodes`, grown backwards over tensors the reference has no value for.
  Cut cut(std::vector<size_t>& nodes) const {
    const ir::Graph& graph = model_->graph();
    for (;;) {
      std::unordered_set<const ir::Node*> inside;
      for (size_t i : nodes) inside.insert(order_[i]);
      Cut c;
      std::unordered_set<const ir::Value*> seen;
      std::vector<size_t> missing;
      auto need = [&](const ir::Value* v, bool first_node) {
        if (v == nullptr || holds_constant(v) || v->owner() != &graph || !seen.insert(v).second) return;
        if (v->producer() != nullptr && inside.count(v->producer())) return;
        if (!known(v) && v->producer() != nullptr) {
          missing.push_back(index_.at(v->producer()));
          return;
        }
        // A weight behind an Identity is no input a user would feed: frozen too.
        const bool fed = v->is_graph_input() || (first_node && !fixed_.count(v));
        (fed ? c.main_inputs : c.side_inputs).push_back(v);
      };
      for (size_t k = 0; k < nodes.size(); ++k) {
        const ir::Node* node = order_[nodes[k]];
        for (const ir::Value* v : node->inputs()) need(v, k == 0);
        for (const ir::Graph* sub : node->subgraphs())
          for (const ir::Value* v : sub->outer_values_used()) need(v, k == 0);
      }
      if (!missing.empty()) {
        nodes.insert(nodes.end(), missing.begin(), missing.end());
        std::sort(nodes.begin(), nodes.end());
        nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
        continue;
      }
      for (size_t i : nodes)
        for (const ir::Value* v : order_[i]->outputs()) {
          if (v == nullptr) continue;
          bool leaves = v->is_graph_output();
          for (const ir::Use& use : v->uses()) leaves = leaves || !inside.count(top_level(use.node, graph));
          if (leaves) c.outputs.push_back(v);
        }
      return c;
    }
  }

  // The candidate as a model of its own; side inputs frozen to sample 0's values when `freeze`.
  Result<std::unique_ptr<ir::Model>> build(const Cut& c, bool freeze) const {
    std::vector<std::string> inputs, outputs;
    for (const ir::Value* v : c.main_inputs) inputs.push_back(v->name());
    for (const ir::Value* v : c.side_inputs) inputs.push_back(v->name());
    for (const ir::Value* v : c.outputs) outputs.push_back(v->name());
    ONNXKIT_ASSIGN(auto copy, cut_model(*model_, inputs, outputs));
    if (!freeze) return copy;
    ir::Graph& graph = copy->graph();
    for (const ir::Value* side : c.side_inputs) {
      const Datum& value = truth_[0].at(side->name());
      if (!value.is_tensor()) continue;  // a sequence stays an input
      ir::Value* v = graph.find_value(side->name());
      for (size_t i = 0; i < graph.inputs().size(); ++i)
        if (graph.inputs()[i] == v) {
          graph.remove_input(i);
          break;
        }
      graph.set_initializer(v, runtime::tensor_to_proto(value.tensor(), side->name()));
    }
    return copy;
  }

  std::string describe(size_t i) const { return order_[i]->describe(); }

  Result<bool> judge(std::vector<size_t> nodes, const std::string& phase) {
    Cut c = cut(nodes);
    ReduceStep step;
    step.run = ++report_.check_runs;
    step.phase = phase;
    step.nodes = nodes.size();
    step.first = describe(nodes.front());
    step.last = describe(nodes.back());
    ONNXKIT_ASSIGN(bool fails, options_.check.empty() ? compare(c, step.detail) : external(c, step.detail));
    step.fails = fails;
    if (!fails) good_.push_back(nodes);
    report_.steps.push_back(step);
    if (on_step_) on_step_(step);
    return fails;
  }

  // onnxkit's own judge: the candidate on each sample's values against the reference's.
  Result<bool> compare(const Cut& c, std::string& detail) {
    ONNXKIT_ASSIGN(auto candidate, build(c, false));
    std::shared_ptr<const ir::Model> shared(std::move(candidate));
    runtime::SessionOptions session_options;
    session_options.threads = options_.compare.threads;
    // Compare like with like: a fused kernel (Conv with a HardSwish
    // post-op) rounds differently from the nodes one by one, and over tens
    // of layers that exceeds a tight rtol in prefixes holding no bad node.
    session_options.fuse = !truth_unfused_;
    ONNXKIT_ASSIGN(auto session, runtime::Session::create(shared, session_options));
    bool judged = false;
    for (size_t s = 0; s < truth_.size(); ++s) {
      runtime::NamedValues feeds;
      for (const runtime::ValueInfo& in : session->inputs()) {
        auto it = truth_[s].find(in.name);
        if (it == truth_[s].end()) return make_error("sample {} has no value for '{}'", s, in.name);
        feeds.emplace_back(in.name, it->second);
      }
      auto results = session->run(feeds);
      if (!results.ok()) return results.error().in("a candidate fails to run");
      for (size_t i = 0; i < results->size(); ++i) {
        const std::string& name = session->outputs()[i].name;
        auto expected = truth_[s].find(name);
        if (expected == truth_[s].end()) continue;
        judged = true;
        TensorStats stats = compare_value_stats(expected->second, (*results)[i], options_.compare.tolerance);
        if (stats.passed) continue;
        detail =
            fmt::format("'{}' differs{}: {}", name, truth_.size() > 1 ? fmt::format(" on sample {}", s) : "", stats.mismatch);
        return true;
      }
    }
    if (!judged) detail = "no output has a reference value: counted as passing";
    return false;
  }

  // The user's judge: the candidate written out, the command run on it.
  Result<bool> external(const Cut& c, std::string& detail) {
    if (work_dir_.empty()) {
      std::string pattern = (fs::temp_directory_path() / "onnxkit-reduce-XXXXXX").string();
      if (mkdtemp(pattern.data()) == nullptr) return make_error("cannot make a temporary folder: {}", std::strerror(errno));
      work_dir_ = pattern;
    }
    ONNXKIT_ASSIGN(auto candidate, build(c, true));
    const fs::path model_path = work_dir_ / "candidate.onnx", inputs_path = work_dir_ / "candidate_inputs.npz";
    ONNXKIT_TRY(ir::save_model(*candidate, model_path));
    std::vector<std::pair<std::string, onnx::TensorProto>> arrays;
    for (const ir::Value* v : candidate->graph().inputs()) {
      if (v->is_constant()) continue;
      const Datum& value = truth_[0].at(v->name());
      if (value.is_tensor()) arrays.emplace_back(v->name(), runtime::tensor_to_proto(value.tensor(), v->name()));
    }
    ONNXKIT_TRY(io::write_npz(inputs_path, arrays));
    std::vector<std::string> argv;
    for (const std::string& a : options_.check)
      argv.push_back(replace_all(replace_all(a, "{model}", model_path.string()), "{inputs}", inputs_path.string()));
    ONNXKIT_ASSIGN(CommandResult result, run_command(argv));
    if (!options_.fail_regex.empty()) {
      bool matched = false;
      try {
        matched =
            std::regex_search(result.output, std::regex(options_.fail_regex, std::regex::ECMAScript | std::regex::multiline));
      } catch (const std::regex_error& e) {
        return make_error("--fail-regex '{}': {}", options_.fail_regex, e.what());
      }
      detail = fmt::format("exit {}, --fail-regex {}", result.exit_code, matched ? "matched" : "did not match");
      return matched;
    }
    detail = fmt::format("exit {}", result.exit_code);
    return result.exit_code != 0;
  }

  Status write_result(std::vector<size_t> kept) {
    Cut c = cut(kept);
    ONNXKIT_ASSIGN(auto result, build(c, true));
    ONNXKIT_TRY(validate_edited_model(*result));
    if (!options_.output.empty()) ONNXKIT_TRY(ir::save_model(*result, options_.output));
    for (size_t i : kept) report_.kept.push_back(describe(i));
    for (const ir::Value* v : result->graph().inputs())
      if (!v->is_constant()) report_.inputs.push_back(v->name());
    for (const ir::Value* v : c.side_inputs)
      if (truth_[0].at(v->name()).is_tensor()) report_.frozen.push_back(v->name());
    for (const ir::Value* v : c.outputs) report_.outputs.push_back(v->name());
    if (!work_dir_.empty()) {
      std::error_code ec;
      fs::remove_all(work_dir_, ec);
    }
    if (options_.min_good.empty()) return {};
    // As Polygraphy: the largest passing candidate smaller than the result, else the smallest larger one.
    const std::vector<size_t>* best = nullptr;
    for (const auto& g : good_)
      if (g.size() < kept.size() && (best == nullptr || g.size() > best->size())) best = &g;
    if (best == nullptr)
      for (const auto& g : good_)
        if (best == nullptr || g.size() < best->size()) best = &g;
    if (best == nullptr) {
      report_.notes.push_back("no candidate passed: --min-good not written");
      return {};
    }
    std::vector<size_t> nodes = *best;
    Cut good_cut = cut(nodes);
    ONNXKIT_ASSIGN(auto good, build(good_cut, true));
    ONNXKIT_TRY(validate_edited_model(*good));
    ONNXKIT_TRY(ir::save_model(*good, options_.min_good));
    report_.min_good_written = true;
    report_.min_good_nodes = nodes.size();
    return {};
  }

  const ReduceOptions& options_;
  const std::function<void(const ReduceStep&)>& on_step_;
  std::shared_ptr<const ir::Model> model_;
  std::vector<ir::Node*> order_;
  std::unordered_map<const ir::Node*, size_t> index_;
  std::unordered_set<const ir::Value*> fixed_;  // computed from constants alone
  std::vector<NamedTensors> truth_;
  // The truth is onnxkit's own run of a reference model, returning every
  // value, so no fusion: candidates then run unfused too.
  bool truth_unfused_ = false;
  std::vector<std::vector<size_t>> good_;
  fs::path work_dir_;
  ReduceReport report_;
};

}  // namespace

Result<ReduceReport> reduce_model(const fs::path& model, const ReduceOptions& options,
                                  const std::function<void(const ReduceStep&)>& on_step) {
  if (options.output.empty() && options.min_good.empty()) return make_error("-o MIN.onnx (or --min-good) is required");
  Reducer reducer(options, on_step);
  ONNXKIT_TRY(reducer.load(model));
  return reducer.run();
}

std::string render_reduce_step(const ReduceStep& s) {
  std::string span = s.nodes == 1 ? s.first : fmt::format("{} .. {}", s.first, s.last);
  return fmt::format("step {:>3} ({}): {} node{}: {}: {}{}", s.run, s.phase, s.nodes, s.nodes == 1 ? "" : "s", span,
                     s.fails ? "fails" : "passes", s.detail.empty() ? "" : " (" + s.detail + ")");
}

std::string render_reduce_text(const ReduceReport& r, const ReduceOptions& options) {
  std::string out;
  out += fmt::format("\n{} of {} nodes kept after {} check runs:\n", r.kept.size(), r.original_nodes, r.check_runs);
  for (const std::string& k : r.kept) out += "  " + k + "\n";
  out += fmt::format("inputs: {}\n", r.inputs.empty() ? "(none)" : join(r.inputs, ", "));
  if (!r.frozen.empty()) out += fmt::format("frozen to the reference's values: {}\n", join(r.frozen, ", "));
  out += fmt::format("outputs: {}\n", join(r.outputs, ", "));
  if (!options.output.empty()) out += fmt::format("written: {}\n", options.output.string());
  if (r.min_good_written)
    out += fmt::format("passing model of {} nodes written: {}\n", r.min_good_nodes, options.min_good.string());
  for (const std::string& note : r.notes) out += fmt::format("note: {}\n", note);
  return out;
}

}  // namespace onnxkit::tools
