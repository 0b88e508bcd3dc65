// Two runs compared tensor by tensor: pairing, per-tensor statistics, and
// local errors (B's node re-run on A's values of its inputs).

#include "tools/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <unordered_set>

#include "runtime/evaluate.h"
#include "runtime/parallel.h"
#include "runtime/tensor_proto.h"
#include "tools/compare_pairing.h"
#include "tools/edit.h"
#include "tools/info.h"
#include "tools/reference.h"
#include "util/text.h"

namespace onnxkit::tools {
namespace {

namespace fs = std::filesystem;
using runtime::Datum;

// The worse of two verdicts on the same tensor: not comparable, then
// failing, then the lower signal-to-noise ratio.
bool worse(const TensorStats& x, const TensorStats& y) {
  if (x.comparable != y.comparable) return !x.comparable;
  if (x.passed != y.passed) return !x.passed;
  return x.snr_db < y.snr_db;
}

std::string value_text(const std::string& name, const Datum& v) { return name + " " + v.describe(); }

int64_t elements(const NamedTensors& values, const std::string& name) {
  auto it = values.find(name);
  return it != values.end() && it->second.is_tensor() ? it->second.tensor().numel() : 0;
}

// 0..count-1, the largest work first: threads taking items in turn then
// finish close together.
std::vector<size_t> largest_first(size_t count, const std::function<int64_t(size_t)>& size) {
  std::vector<int64_t> sizes(count);
  std::vector<size_t> order(count);
  for (size_t i = 0; i < count; ++i) {
    sizes[i] = size(i);
    order[i] = i;
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return sizes[x] > sizes[y]; });
  return order;
}

// Everything a comparison keeps between samples.
struct Comparison {
  const ir::Model& model_b;
  std::vector<ir::Node*> order_b;
  const ir::Model* model_a = nullptr;  // null: a reference
  std::vector<ir::Node*> order_a;
  const CompareOptions& options;
  CompareReport report;
  Pairs pairs;
  std::vector<const ir::Value*> tensor_b;  // per report.tensors entry, B's value
  std::vector<const ir::Node*> node_b;     // per report.nodes entry
  bool paired = false;

  Comparison(const ir::Model& b, const ir::Model* a, const CompareOptions& o) : model_b(b), model_a(a), options(o) {}

  Status prepare() {
    ONNXKIT_ASSIGN(order_b, model_b.graph().topological_order());
    if (model_a != nullptr) {
      ONNXKIT_ASSIGN(order_a, model_a->graph().topological_order());
    }
    report.tolerance = options.tolerance;
    return {};
  }

  // Pairs on the first sample (types must agree for structure), and lays out the report.
  Status pair(const NamedTensors& va, const NamedTensors& vb) {
    const ir::Graph& b = model_b.graph();
    pairs = model_a != nullptr ? pair_with_model(model_a->graph(), order_a, b, order_b, va, vb, report.pairing)
                               : pair_with_reference(b, order_b, va, report.pairing);
    // Tensors in A's order (B's for a reference), graph inputs left out: both sides got the same.
    std::unordered_map<std::string, const ir::Value*> b_of_a;
    for (const auto& [v, pair] : pairs.of_b) b_of_a[pair.first] = v;
    auto add_tensor = [&](const ir::Value* vb_value) {
      const auto& [a_name, how] = pairs.of_b.at(vb_value);
      TensorReport t;
      t.name = a_name;
      t.name_b = vb_value->name();
      t.paired_by = how;
      if (const ir::Node* p = vb_value->producer()) {
        t.producer = p->name();
        t.producer_op = p->op_type();
      }
      t.is_output = vb_value->is_graph_output();
      t.type_a = type_of(va, a_name);
      t.type_b = type_of(vb, vb_value->name());
      report.tensors.push_back(std::move(t));
      tensor_b.push_back(vb_value);
    };
    if (model_a != nullptr) {
      for (const ir::Value* v : computed_values(model_a->graph(), order_a)) {
        auto it = b_of_a.find(v->name());
        if (it != b_of_a.end() && !it->second->is_graph_input()) add_tensor(it->second);
      }
    } else {
      for (const ir::Value* v : computed_values(b, order_b))
        if (pairs.of_b.count(v) && !v->is_graph_input()) add_tensor(v);
    }
    if (report.tensors.empty()) {
      if (model_a == nullptr)
        return make_error(
            "no tensor of the reference has the name of a tensor the model computes ({} reference tensors, e.g. '{}')", va.size(),
            va.empty() ? "" : va.begin()->first);
      return make_error("no tensor of A could be paired with one of B: the models have nothing in common to compare");
    }
    for (const ir::Node* node : order_b) {
      if (node->is_onnx_op("Constant")) continue;
      bool any = false;
      for (const ir::Value* v : node->outputs()) any = any || (v != nullptr && pairs.of_b.count(v) && !v->is_graph_input());
      if (!any) continue;
      NodeReport n;
      n.name = node->name();
      n.op_type = node->op_type();
      n.domain = node->domain();
      for (const ir::Attribute& a : node->attributes()) n.attributes[a.name()] = attribute_json(a);
      report.nodes.push_back(std::move(n));
      node_b.push_back(node);
    }
    paired = true;
    return {};
  }

  // A constant of `model` as its run had it (`values`), or from its data.
  static Result<Datum> constant_value(const ir::Value* v, const ir::Model& model, const NamedTensors& values) {
    if (auto it = values.find(v->name()); it != values.end()) return it->second;
    const onnx::TensorProto* proto = v->constant_tensor();
    if (proto == nullptr) return make_error("constant '{}' has no data the runtime reads", v->name());
    auto owner = std::shared_ptr<const void>(std::shared_ptr<const void>{}, &model);
    ONNXKIT_ASSIGN(runtime::Tensor t, runtime::tensor_from_proto(*proto, model.external_data(), owner));
    return Datum(std::move(t));
  }

  // A value B's node reads when re-run: its constants as B has them, the rest as A computed them.
  Result<Datum> local_input(const ir::Value* v, const NamedTensors& va, const NamedTensors& vb, bool& from_b) const {
    from_b = false;
    if (holds_constant(v)) return constant_value(v, model_b, vb);
    if (const std::string* a = pairs.a_name(v)) {
      if (auto it = va.find(*a); it != va.end()) return it->second;
    }
    from_b = true;
    if (auto it = vb.find(v->name()); it != vb.end()) return it->second;
    if (v->initializer() != nullptr) {  // an input with a default nobody fed
      ONNXKIT_ASSIGN(runtime::Tensor t,
                     runtime::tensor_from_proto(*v->initializer(), model_b.external_data(),
                                                std::shared_ptr<const void>(std::shared_ptr<const void>{}, &model_b)));
      return Datum(std::move(t));
    }
    return make_error("no value for '{}'", v->name());
  }

  // A's node re-run alone on A's values of its inputs, as B's node is. In
  // a whole run a node's kernel depends on what surrounds it (the layout,
  // the nodes fused into it) and sums in another order (ResNet-18's last
  // 3x3 Convs, 4608 terms a sum, 1.6e-5 apart on AVX2): the same node must
  // not fail against itself. None for a node with sub-graphs, or an input
  // A's run did not keep.
  std::optional<std::vector<Datum>> rerun_alone(const ir::Node& na, const NamedTensors& va) const {
    if (!na.subgraphs().empty()) return std::nullopt;
    std::vector<Datum> inputs;
    for (const ir::Value* v : na.inputs()) {
      if (v == nullptr) {
        inputs.emplace_back();
        continue;
      }
      auto it = va.find(v->name());
      if (it != va.end()) {
        inputs.push_back(it->second);
      } else if (!holds_constant(v)) {
        return std::nullopt;
      } else {
        auto constant = constant_value(v, *model_a, va);
        if (!constant.ok()) return std::nullopt;
        inputs.push_back(std::move(constant).value());
      }
    }
    auto results = runtime::evaluate_node(na, *model_a, inputs);
    if (!results.ok()) return std::nullopt;
    return std::move(results).value();
  }

  // Each of A's nodes re-run for one node of B, at most once.
  using Reruns = std::unordered_map<const ir::Node*, std::optional<std::vector<Datum>>>;

  // A's tensor `name` as its producer computes it re-run alone (rerun_alone);
  // null for a graph input or where the re-run gives none.
  const Datum* a_value_alone(const std::string& name, const NamedTensors& va, Reruns& reruns) const {
    const ir::Value* value = model_a != nullptr ? model_a->graph().find_value(name) : nullptr;
    const ir::Node* producer = value != nullptr ? value->producer() : nullptr;
    if (producer == nullptr) return nullptr;
    auto [it, added] = reruns.try_emplace(producer);
    if (added) it->second = rerun_alone(*producer, va);
    for (size_t i = 0; it->second && i < producer->outputs().size() && i < it->second->size(); ++i)
      if (producer->output(i) == value) return &(*it->second)[i];
    return nullptr;
  }

  // A node holding sub-graphs (If, Loop, Scan) runs as a model of its own:
  // its inputs, and the outer values its bodies read, as graph inputs.
  Result<std::vector<Datum>> run_with_subgraphs(const ir::Node& node, const std::vector<Datum>& inputs, const NamedTensors& va,
                                                const NamedTensors& vb) const {
    runtime::NamedValues feeds;
    std::vector<std::string> names, outputs;
    auto feed = [&](const ir::Value* v, const Datum& value) {
      if (holds_constant(v) || std::find(names.begin(), names.end(), v->name()) != names.end()) return;
      names.push_back(v->name());
      feeds.emplace_back(v->name(), value);
    };
    for (size_t i = 0; i < node.inputs().size(); ++i)
      if (node.input(i) != nullptr) feed(node.input(i), inputs[i]);
    for (const ir::Graph* sub : node.subgraphs())
      for (const ir::Value* v : sub->outer_values_used()) {
        if (v->owner() != &model_b.graph() || holds_constant(v)) continue;
        bool from_b = false;
        ONNXKIT_ASSIGN(Datum value, local_input(v, va, vb, from_b));
        feed(v, value);
      }
    for (const ir::Value* v : node.outputs())
      if (v != nullptr) outputs.push_back(v->name());
    ONNXKIT_ASSIGN(auto alone, cut_model(model_b, names, outputs));
    std::shared_ptr<const ir::Model> shared(std::move(alone));
    ONNXKIT_ASSIGN(NamedTensors values, run_all_values(shared, feeds, options.threads));
    std::vector<Datum> results;
    for (const ir::Value* v : node.outputs())
      results.push_back(v != nullptr && values.count(v->name()) ? values.at(v->name()) : Datum());
    return results;
  }

  // B's node `k` on A's inputs; the worst of its paired outputs.
  void local_error(size_t k, const NamedTensors& va, const NamedTensors& vb, int sample) {
    const ir::Node& node = *node_b[k];
    NodeReport& n = report.nodes[k];
    std::vector<Datum> inputs;
    std::vector<std::string> input_text, from_b_names;
    for (const ir::Value* v : node.inputs()) {
      if (v == nullptr) {
        inputs.emplace_back();
        input_text.push_back("(none)");
        continue;
      }
      bool from_b = false;
      auto value = local_input(v, va, vb, from_b);
      if (!value.ok()) {
        n.note = "not re-run: " + value.error().message();
        return;
      }
      if (from_b) from_b_names.push_back(v->name());
      input_text.push_back(value_text(v->name(), *value));
      inputs.push_back(std::move(value).value());
    }
    auto results =
        node.subgraphs().empty() ? runtime::evaluate_node(node, model_b, inputs) : run_with_subgraphs(node, inputs, va, vb);
    if (!results.ok()) {
      n.note = "re-run on A's inputs failed: " + results.error().message();
      return;
    }
    std::optional<TensorStats> worst;
    bool against_a_alone = false;
    Reruns reruns;
    for (size_t i = 0; i < node.outputs().size() && i < results->size(); ++i) {
      const ir::Value* out = node.output(i);
      const std::string* a = out != nullptr ? pairs.a_name(out) : nullptr;
      if (a == nullptr || !va.count(*a)) continue;
      TensorStats s = compare_value_stats(va.at(*a), (*results)[i], options.tolerance);
      if (!s.passed) {
        if (const Datum* alone = a_value_alone(*a, va, reruns)) {
          TensorStats t = compare_value_stats(*alone, (*results)[i], options.tolerance);
          if (t.passed) s = t, against_a_alone = true;
        }
      }
      if (!worst || worse(s, *worst)) worst = s;
    }
    if (!worst) return;
    if (!n.local || worse(*worst, *n.local)) {
      n.local = *worst;
      if (against_a_alone && worst->passed)
        n.note = "checked against A's node re-run alone: A's own run computed it with other kernels";
      n.inputs = std::move(input_text);
      n.inputs_from_b = std::move(from_b_names);
      n.sample = sample;
      n.outputs.clear();
      for (const ir::Value* out : node.outputs())
        if (out != nullptr) n.outputs.push_back(value_text(out->name(), vb.count(out->name()) ? vb.at(out->name()) : Datum()));
    }
  }

  // One sample: every paired tensor, then local errors.
  Status compare_sample(const NamedTensors& va, const NamedTensors& vb, int sample) {
    if (!paired) ONNXKIT_TRY(pair(va, vb));
    const size_t count = report.tensors.size();
    std::vector<TensorStats> stats(count);
    std::vector<char> done(count, 0);  // written from several threads: no vector<bool>
    auto compare_one = [&](size_t i) {
      const TensorReport& t = report.tensors[i];
      auto ia = va.find(t.name);
      auto ib = vb.find(t.name_b);
      if (ia == va.end() || ib == vb.end()) return;
      stats[i] = compare_value_stats(ia->second, ib->second, options.tolerance);
      done[i] = 1;
    };
    size_t limit = count;
    if (options.fail_fast) {
      for (size_t i = 0; i < count; ++i) {
        compare_one(i);
        if (done[i] && !stats[i].passed) {
          limit = i + 1;
          break;
        }
      }
    } else {
      std::vector<size_t> order = largest_first(count, [&](size_t i) { return elements(vb, report.tensors[i].name_b); });
      runtime::parallel_for(static_cast<int64_t>(count), true, [&](int64_t i) { compare_one(order[static_cast<size_t>(i)]); });
    }
    for (size_t i = 0; i < limit; ++i) {
      if (!done[i]) continue;
      TensorReport& t = report.tensors[i];
      if (sample == 0 || worse(stats[i], t.stats)) {
        t.stats = stats[i];
        t.sample = sample;
      }
    }
    if (options.fail_fast && limit < count) {
      report.tensors.resize(limit);
      tensor_b.resize(limit);
    }

    // Each node's own outputs, for the verdict on the node.
    std::unordered_map<const ir::Value*, size_t> tensor_index;
    for (size_t i = 0; i < tensor_b.size(); ++i) tensor_index[tensor_b[i]] = i;
    for (size_t k = 0; k < node_b.size(); ++k) {
      bool any = false;
      TensorStats worst;
      for (const ir::Value* out : node_b[k]->outputs()) {
        auto it = out != nullptr ? tensor_index.find(out) : tensor_index.end();
        if (it == tensor_index.end() || !done[it->second]) continue;
        if (!any || worse(stats[it->second], worst)) worst = stats[it->second];
        any = true;
      }
      if (any && (sample == 0 || worse(worst, report.nodes[k].output))) report.nodes[k].output = worst;
    }
    if (!options.local_errors) return {};
    if (options.fail_fast) {
      // Only the node that made the first divergent tensor.
      if (limit == 0 || stats[limit - 1].passed) return {};
      const ir::Node* maker = tensor_b[limit - 1]->producer();
      for (size_t k = 0; k < node_b.size(); ++k)
        if (node_b[k] == maker) local_error(k, va, vb, sample);
      return {};
    }
    // Nodes side by side, each kernel on one thread: a kernel is built
    // (weights transformed, primitives made) on one thread anyway, and a
    // second thread waiting for the next parallel region through each build
    // took three times the whole comparison's time on a busy machine.
    std::vector<size_t> order = largest_first(node_b.size(), [&](size_t k) {
      const ir::Value* out = node_b[k]->output(0);
      return out != nullptr ? elements(vb, out->name()) : 0;
    });
    runtime::parallel_for(static_cast<int64_t>(order.size()), true,
                          [&](int64_t i) { local_error(order[static_cast<size_t>(i)], va, vb, sample); });
    return {};
  }

  CompareReport finish() {
    CompareReport& r = report;
    for (size_t i = 0; i < r.tensors.size() && !r.first_divergent; ++i)
      if (!r.tensors[i].stats.passed) r.first_divergent = i;
    bool any_output = false, outputs_pass = true, all_pass = true;
    for (const TensorReport& t : r.tensors) {
      all_pass = all_pass && t.stats.passed;
      if (!t.is_output) continue;
      any_output = true;
      outputs_pass = outputs_pass && t.stats.passed;
    }
    r.passed = any_output ? outputs_pass : all_pass;
    if (!any_output) r.notes.push_back("no graph output of B was compared: the verdict covers every compared tensor");

    // Nodes that were compared at all, ranked: suspects (wrong on A's inputs
    // and wrong in their own run), then by local error. A node whose own
    // error is a small part of what its output carries (local SNR more than
    // 20 dB above the output's, a tenth of its error) only inherits: re-run
    // alone, a Conv downstream of an altered one may take another kernel than
    // in the whole graph's run (128 dB against 18 dB on lraspp), and at a
    // tight tolerance that rounding fails a few elements.
    constexpr double kOwnShareDb = 20;
    std::vector<size_t> order;
    for (size_t k = 0; k < r.nodes.size(); ++k) {
      NodeReport& n = r.nodes[k];
      n.suspect = n.local && !n.local->passed && !n.output.passed &&
                  (!n.local->comparable || !n.output.comparable || n.local->snr_db <= n.output.snr_db + kOwnShareDb);
      order.push_back(k);
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      const NodeReport &a = r.nodes[x], &b = r.nodes[y];
      if (a.suspect != b.suspect) return a.suspect;
      if (a.local.has_value() != b.local.has_value()) return a.local.has_value();
      if (a.local && b.local && (worse(*a.local, *b.local) || worse(*b.local, *a.local))) return worse(*a.local, *b.local);
      return worse(a.output, b.output);
    });
    std::vector<NodeReport> ranked;
    for (size_t k : order) ranked.push_back(std::move(r.nodes[k]));
    r.nodes = std::move(ranked);
    if (!r.nodes.empty() && r.nodes[0].suspect) r.culprit = 0;
    if (!r.passed && !r.culprit)
      r.notes.push_back(
          r.first_divergent && options.local_errors
              ? "no node is wrong on A's own inputs: the error builds up over many nodes (or comes from one that was not re-run)"
              : "local errors were not computed");
    return std::move(report);
  }
};

// Feeds for B: A's feeds, renamed where B's inputs are named otherwise (by position).
Result<runtime::NamedValues> feeds_for_graphs(const ir::Graph& a, const ir::Graph& b, const runtime::NamedValues& feeds) {
  std::vector<const ir::Value*> ia, ib;
  for (const ir::Value* v : a.inputs())
    if (!v->is_constant()) ia.push_back(v);
  for (const ir::Value* v : b.inputs())
    if (!v->is_constant()) ib.push_back(v);
  auto describe = [](const std::vector<const ir::Value*>& list) {
    std::vector<std::string> parts;
    for (const ir::Value* v : list) parts.push_back(fmt::format("'{}'", v->name()));
    return join(parts, ", ");
  };
  bool same_names = ia.size() == ib.size();
  for (size_t i = 0; i < ia.size() && same_names; ++i)
    same_names = b.find_value(ia[i]->name()) != nullptr && b.find_value(ia[i]->name())->is_graph_input();
  if (same_names) return feeds;
  if (ia.size() != ib.size())
    return make_error("the models take different inputs: A takes {}, B takes {}", describe(ia), describe(ib));
  runtime::NamedValues renamed;
  for (const auto& [name, value] : feeds) {
    size_t i = 0;
    while (i < ia.size() && ia[i]->name() != name) ++i;
    if (i == ia.size()) continue;
    if (ia[i]->elem_type() != ib[i]->elem_type())
      return make_error("the models take different inputs: A's input {} '{}' and B's '{}' differ in element type", i,
                        ia[i]->name(), ib[i]->name());
    renamed.emplace_back(ib[i]->name(), value);
  }
  return renamed;
}

Result<std::shared_ptr<const ir::Model>> load(const fs::path& path) {
  ONNXKIT_ASSIGN(auto model, ir::load_model(path));
  return std::shared_ptr<const ir::Model>(std::move(model));
}

std::string input_text(const runtime::NamedValues& feeds, const InputOptions& options, const std::string& source) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : feeds) {
    bool from_file = std::any_of(options.files.begin(), options.files.end(),
                                 [&name = name](const auto& f) { return f.first == name || f.first.empty(); });
    parts.push_back(fmt::format("{} ({})", value_text(name, value), from_file ? "file" : source));
  }
  return join(parts, ", ");
}

}  // namespace

const char* to_string(Pairing pairing) {
  switch (pairing) {
    case Pairing::name: return "name";
    case Pairing::position: return "position";
    case Pairing::structure: return "structure";
  }
  return "?";
}

Result<NamedTensors> run_all_values(std::shared_ptr<const ir::Model> model, const runtime::NamedValues& feeds, int threads) {
  runtime::SessionOptions options;
  options.all_outputs = true;
  options.threads = threads;
  ONNXKIT_ASSIGN(auto session, runtime::Session::create(model, options));
  ONNXKIT_ASSIGN(std::vector<Datum> results, session->run(feeds));
  NamedTensors values;
  for (size_t i = 0; i < results.size(); ++i) values.emplace(session->outputs()[i].name, std::move(results[i]));
  for (const auto& [name, value] : feeds) values.emplace(name, value);
  return values;
}

Result<CompareReport> compare_models_on(std::shared_ptr<const ir::Model> a, std::shared_ptr<const ir::Model> b,
                                        const std::vector<runtime::NamedValues>& samples, const CompareOptions& options) {
  Comparison comparison(*b, a.get(), options);
  ONNXKIT_TRY(comparison.prepare());
  Progress progress(options.progress);
  for (const ir::Model* m : {a.get(), b.get()}) progress.size_up(m->file_size(), m->graph().nodes().size());
  for (size_t s = 0; s < samples.size(); ++s) {
    const std::string of = samples.size() > 1 ? fmt::format(", input set {} of {}", s + 1, samples.size()) : "";
    // One model at a time: A's session goes before B's is built.
    progress.step("running A" + of);
    auto va = run_all_values(a, samples[s], options.threads);
    if (!va.ok()) return va.error().in("A fails to run");
    ONNXKIT_ASSIGN(runtime::NamedValues feeds_b, feeds_for(*a, *b, samples[s]));
    progress.step("running B" + of);
    auto vb = run_all_values(b, feeds_b, options.threads);
    if (!vb.ok()) return vb.error().in("B fails to run");
    progress.step("comparing" + of);
    ONNXKIT_TRY(comparison.compare_sample(*va, *vb, static_cast<int>(s)));
    if (options.fail_fast && comparison.report.first_divergent) break;
  }
  comparison.report.samples = static_cast<int>(samples.size());
  return comparison.finish();
}

Result<std::vector<runtime::NamedValues>> make_input_samples(std::shared_ptr<const ir::Model> model,
                                                             const CompareOptions& options, std::vector<std::string>* notes) {
  if (options.iterations < 1) return make_error("--iterations must be at least 1");
  std::vector<runtime::NamedValues> samples;
  ONNXKIT_ASSIGN(auto session, runtime::Session::create(std::move(model)));
  for (int s = 0; s < options.iterations; ++s) {
    InputOptions inputs = options.inputs;
    inputs.random = true;
    inputs.seed = options.inputs.seed + static_cast<uint64_t>(s);
    inputs.unbound_dims = 1;
    auto feeds = prepare_inputs(*session, inputs, s == 0 ? notes : nullptr);
    if (!feeds.ok()) return feeds.error().in("inputs");
    samples.push_back(std::move(feeds).value());
  }
  return samples;
}

Result<CompareReport> compare_models(std::shared_ptr<const ir::Model> a, std::shared_ptr<const ir::Model> b,
                                     const CompareOptions& options) {
  // Inputs are made against A's declarations; B must accept them.
  std::vector<std::string> notes;
  ONNXKIT_ASSIGN(std::vector<runtime::NamedValues> samples, make_input_samples(a, options, &notes));
  ONNXKIT_TRY(feeds_for(*a, *b, samples[0]));
  ONNXKIT_ASSIGN(CompareReport report, compare_models_on(a, b, samples, options));
  report.inputs.push_back(input_text(samples[0], options.inputs, fmt::format("random, seed {}", options.inputs.seed)));
  report.notes.insert(report.notes.begin(), notes.begin(), notes.end());
  return report;
}

Result<CompareReport> compare_models(const fs::path& a, const fs::path& b, const CompareOptions& options) {
  ONNXKIT_ASSIGN(auto model_a, load(a));
  ONNXKIT_ASSIGN(auto model_b, load(b));
  ONNXKIT_ASSIGN(CompareReport report, compare_models(model_a, model_b, options));
  report.a = a.string();
  report.b = b.string();
  return report;
}

const runtime::Datum* find_reference(const NamedTensors& reference, const std::string& name) {
  auto it = reference.find(name);
  if (it == reference.end()) it = reference.find(tensor_file_stem(name));
  return it == reference.end() ? nullptr : &it->second;
}

Result<std::unique_ptr<ir::Model>> cut_model(const ir::Model& model, const std::vector<std::string>& inputs,
                                             const std::vector<std::string>& outputs) {
  ONNXKIT_ASSIGN(auto copy, ir::import_model(ir::export_model(model), model.shared_external_data()));
  ONNXKIT_TRY(extract_subgraph(*copy, inputs, outputs));
  return copy;
}

Result<runtime::NamedValues> feeds_for(const ir::Model& a, const ir::Model& b, const runtime::NamedValues& feeds) {
  return feeds_for_graphs(a.graph(), b.graph(), feeds);
}

Result<NamedTensors> paired_values(std::shared_ptr<const ir::Model> a, std::shared_ptr<const ir::Model> b,
                                   const runtime::NamedValues& feeds, int threads) {
  auto va = run_all_values(a, feeds, threads);
  if (!va.ok()) return va.error().in("the reference model fails to run");
  ONNXKIT_ASSIGN(runtime::NamedValues feeds_b, feeds_for(*a, *b, feeds));
  auto vb = run_all_values(b, feeds_b, threads);
  if (!vb.ok()) return vb.error().in("the model fails to run");
  ONNXKIT_ASSIGN(auto order_a, a->graph().topological_order());
  ONNXKIT_ASSIGN(auto order_b, b->graph().topological_order());
  PairingSummary summary;
  Pairs pairs = pair_with_model(a->graph(), order_a, b->graph(), order_b, *va, *vb, summary);
  NamedTensors out;
  for (const auto& [v, pair] : pairs.of_b)
    if (auto it = va->find(pair.first); it != va->end()) out.emplace(v->name(), it->second);
  return out;
}

Result<runtime::NamedValues> feeds_from_reference(const runtime::Session& session, const NamedTensors& sample,
                                                  const InputOptions& options, std::vector<std::string>* notes) {
  InputOptions given = options;
  runtime::NamedValues feeds;
  for (const runtime::ValueInfo& in : session.inputs()) {
    bool from_file = std::any_of(given.files.begin(), given.files.end(), [&](const auto& f) { return f.first == in.name; });
    if (const Datum* v = find_reference(sample, in.name); v != nullptr && !from_file) feeds.emplace_back(in.name, *v);
  }
  if (given.random) given.unbound_dims = 1;
  auto rest = prepare_inputs(session, given, notes);
  if (!rest.ok()) return rest.error().in("inputs");
  for (auto& [name, value] : *rest)
    if (std::none_of(feeds.begin(), feeds.end(), [&name = name](const auto& f) { return f.first == name; }))
      feeds.emplace_back(name, value);
  std::vector<std::string> missing;
  for (const runtime::ValueInfo& in : session.inputs())
    if (!in.has_default && std::none_of(feeds.begin(), feeds.end(), [&](const auto& f) { return f.first == in.name; }))
      missing.push_back("'" + in.name + "'");
  if (!missing.empty())
    return make_error("input{} {} {} in no reference file: give {} with --input NAME=FILE (or --random)",
                      missing.size() > 1 ? "s" : "", join(missing, ", "), missing.size() > 1 ? "are" : "is",
                      missing.size() > 1 ? "them" : "it");
  return feeds;
}

Result<CompareReport> compare_with_reference(const fs::path& model_path, const std::vector<fs::path>& reference_paths,
                                             const CompareOptions& options) {
  ONNXKIT_ASSIGN(Reference reference, load_reference(reference_paths));
  ONNXKIT_ASSIGN(auto model, load(model_path));
  Comparison comparison(*model, nullptr, options);
  ONNXKIT_TRY(comparison.prepare());
  Progress progress(options.progress);
  progress.size_up(model->file_size(), model->graph().nodes().size());
  std::vector<std::string> inputs, notes;
  for (size_t s = 0; s < reference.samples.size(); ++s) {
    progress.step(reference.samples.size() > 1
                      ? fmt::format("running the model, input set {} of {}", s + 1, reference.samples.size())
                      : "running the model");
    runtime::NamedValues feeds;
    {
      ONNXKIT_ASSIGN(auto session, runtime::Session::create(model));
      InputOptions given = options.inputs;
      given.seed = options.inputs.seed + s;
      ONNXKIT_ASSIGN(feeds, feeds_from_reference(*session, reference.samples[s], given, s == 0 ? &notes : nullptr));
    }
    if (s == 0) inputs.push_back(input_text(feeds, options.inputs, "reference"));
    auto vb = run_all_values(model, feeds, options.threads);
    if (!vb.ok()) return vb.error().in(fmt::format("{} fails to run", model_path.string()));
    ONNXKIT_TRY(comparison.compare_sample(reference.samples[s], *vb, static_cast<int>(s)));
    if (options.fail_fast && comparison.report.first_divergent) break;
    reference.samples[s].clear();  // this sample's memory goes now
  }
  comparison.report.samples = static_cast<int>(reference.samples.size());
  comparison.report.inputs = std::move(inputs);
  comparison.report.notes.insert(comparison.report.notes.end(), notes.begin(), notes.end());
  comparison.report.notes.insert(comparison.report.notes.end(), reference.notes.begin(), reference.notes.end());
  CompareReport report = comparison.finish();
  report.b = model_path.string();
  for (const fs::path& p : reference_paths) report.reference.push_back(p.string());
  report.a = join(report.reference, " + ");
  return report;
}

}  // namespace onnxkit::tools
