#include "tools/simplify.h"

#include <fmt/format.h>

#include <algorithm>

#include "analysis/checker.h"
#include "io/atomic_file.h"
#include "ir/inline_functions.h"
#include "ir/model.h"
#include "runtime/kernel.h"
#include "runtime/session.h"
#include "tools/compare.h"
#include "tools/edit.h"
#include "tools/edit_literals.h"
#include "tools/runnable_inputs.h"
#include "util/text.h"

namespace onnxkit::tools {

namespace fs = std::filesystem;

namespace {

ModelSummary summarize(const ir::Model& model) {
  ModelSummary s;
  for (const ir::Node& node : model.graph().nodes()) {
    ++s.ops[node.in_onnx_domain() ? node.op_type() : node.domain() + ":" + node.op_type()];
    ++s.nodes;
  }
  for (const ir::Value* v : model.graph().initializers()) {
    uint64_t n = 1;
    for (int64_t d : v->initializer()->dims()) n *= static_cast<uint64_t>(d);
    s.parameters += n;
  }
  return s;
}

uint64_t files_size(const fs::path& model, const std::string& side_file) {
  std::error_code ec;
  uint64_t bytes = fs::file_size(model, ec);
  if (ec) bytes = 0;
  if (!side_file.empty()) {
    uint64_t side = fs::file_size(model.parent_path() / side_file, ec);
    if (!ec) bytes += side;
  }
  return bytes;
}

Status override_input_shapes(ir::Model& model, const SimplifyToolOptions& options) {
  for (const auto& [name, dims] : options.input_shapes) {
    if (options.keep_dynamic) {
      for (const ir::Value* v : model.graph().inputs()) {
        if (v->name() != name || !v->has_type() || !v->type().tensor_type().has_shape()) continue;
        const auto& declared = v->type().tensor_type().shape();
        for (int i = 0; i < declared.dim_size() && i < static_cast<int>(dims.size()); ++i)
          if (declared.dim(i).has_dim_param() && literals::is_int(dims[static_cast<size_t>(i)]))
            return make_error("--keep-dynamic: --input-shape would fix dim {} of '{}' ('{}') to {}", i, name,
                              declared.dim(i).dim_param(), dims[static_cast<size_t>(i)]);
      }
    }
    Status set = set_input_shape(model, name, dims);
    if (!set.ok()) return make_error("--input-shape: {}", set.error().message());
  }
  return {};
}

// A session's handle on a model that outlives it, without copying it.
std::shared_ptr<const ir::Model> borrow(const ir::Model& model) {
  return std::shared_ptr<const ir::Model>(std::shared_ptr<const ir::Model>{}, &model);
}

// The original's outputs on the check's inputs, and the comparison of models
// with them. The original is run once, before the passes change it, and is
// not kept: the simplified model shares its weights (and the memory they
// take) instead of a second copy of the file standing by. Only to explain a
// failure is the original loaded again.
class Checker {
 public:
  Checker(fs::path original_path, const SimplifyToolOptions& options)
      : original_path_(std::move(original_path)), options_(options) {}

  // Makes the inputs of each check run and `original`'s outputs on them:
  // inputs the original runs on, found by trying (tools/runnable_inputs.h).
  // Returns what was chosen beyond the defaults, for the report. The session
  // (and the weights its kernels prepack) is gone when this returns.
  Result<std::string> prepare(const ir::Model& original) {
    ONNXKIT_ASSIGN(std::unique_ptr<runtime::Session> reference, runtime::Session::create(borrow(original), lean_session()));
    for (const runtime::ValueInfo& output : reference->outputs()) output_names_.push_back(output.name);
    RunnableInputOptions search;
    search.inputs = options_.check_inputs;
    search.sets = options_.check_runs;
    search.limits = options_.check_limits;
    auto found = find_runnable_inputs(*reference, search);
    if (!found.ok())
      return make_error(
          "the original model does not run on the check's inputs: {}; give real inputs with --input "
          "NAME=FILE, fix shapes with --input-shape NAME:D0,D1,..., or turn the check off with --check 0",
          found.error().message());
    feeds_ = std::move(found->feeds);
    expected_ = std::move(found->outputs);
    return std::move(found->chosen);
  }

  // Compares `candidate` with the original on every prepared input.
  Status check(std::shared_ptr<const ir::Model> candidate, double& max_abs_diff) {
    ONNXKIT_ASSIGN(auto session, runtime::Session::create(candidate, lean_session()));
    for (size_t run = 0; run < feeds_.size(); ++run) {
      auto actual = session->run(feeds_[run], options_.check_limits);
      if (!actual.ok()) return make_error("the simplified model fails to run: {}", actual.error().message());
      for (size_t i = 0; i < actual->size() && i < expected_[run].size(); ++i) {
        Difference d = compare_values(expected_[run][i], (*actual)[i], options_.rtol, options_.atol);
        max_abs_diff = std::max(max_abs_diff, d.max_abs_diff);
        if (d.close) continue;
        session.reset();  // its prepacked weights: the original is loaded again below
        return make_error("output '{}' differs from the original's ({}; max abs diff {:g}){}", output_names_[i], d.detail,
                          d.max_abs_diff, divergence(std::move(candidate), feeds_[run]));
      }
    }
    return {};
  }

  // Input sets prepared: check_runs, plus one per other scalar value that runs.
  size_t sets() const { return feeds_.size(); }

 private:
  // Kernels read the weights where the model holds them: a reordered copy
  // beside them would double what a large model takes, for a few runs.
  // Every run takes the same threads, never one thread while the cores are
  // busy (runtime/contention.h): oneDNN's plain-layout convolutions may
  // split their sums by thread, and the rounding of a 1-thread run against
  // a 2-thread one (2e-5 on a ResNet-50's logits) is no difference between
  // the models.
  static runtime::SessionOptions lean_session() {
    runtime::SessionOptions options;
    options.prepack_weights = false;
    options.adapt_to_load = false;
    return options;
  }

  // "; first divergent tensor 'x' from Conv node 'c1' ...; culprit ...":
  // compare's own report on these inputs, against the original as loaded
  // (with the same input shapes).
  std::string divergence(std::shared_ptr<const ir::Model> candidate, const runtime::NamedValues& feeds) const {
    auto original = ir::load_model(original_path_);
    if (!original.ok() || !override_input_shapes(**original, options_).ok()) return "";
    CompareOptions options;
    options.tolerance.rtol = options_.rtol;
    options.tolerance.atol = options_.atol;
    auto report =
        compare_models_on(std::shared_ptr<const ir::Model>(std::move(*original)), std::move(candidate), {feeds}, options);
    if (!report.ok()) return "";
    std::string text = summarize_divergence(*report);
    return text.empty() ? "" : "; " + text;
  }

  fs::path original_path_;
  const SimplifyToolOptions& options_;
  std::vector<std::string> output_names_;
  std::vector<runtime::NamedValues> feeds_;
  std::vector<std::vector<runtime::Datum>> expected_;
};

// The first problem strict shape and type inference finds in `model`, in
// every graph including each If branch; nothing when it passes.
std::optional<analysis::CheckProblem> strict_inference_problem(const ir::Model& model) {
  ir::ExportOptions skeleton;  // inference reads small constants only
  skeleton.max_inline_data_bytes = 64 * 1024;
  analysis::CheckOptions strict;
  strict.full = true;
  strict.tensors = false;
  analysis::CheckReport report = analysis::check_model(ir::export_model(model, skeleton),
                                                       model.external_data() ? model.external_data()->base_dir() : ".", strict);
  if (report.valid()) return std::nullopt;
  return report.problems.front();
}

// Adds a second run of the passes (after --target-opset's conversion) to the first's report.
void merge_reports(passes::SimplifyReport& into, const passes::SimplifyReport& more) {
  for (const auto& change : more.changes) {
    auto same = std::find_if(into.changes.begin(), into.changes.end(), [&](const auto& c) { return c.first == change.first; });
    if (same == into.changes.end()) into.changes.push_back(change);
    else same->second += change.second;
  }
  into.notes.insert(into.notes.end(), more.notes.begin(), more.notes.end());
  for (const std::string& w : more.warnings)
    if (std::find(into.warnings.begin(), into.warnings.end(), w) == into.warnings.end()) into.warnings.push_back(w);
  into.iterations += more.iterations;
  into.hit_iteration_cap = into.hit_iteration_cap || more.hit_iteration_cap;
  into.removed_nodes += more.removed_nodes;
}

}  // namespace

Result<SimplifyToolReport> simplify_file(const fs::path& in, const fs::path& out, const SimplifyToolOptions& options) {
  SimplifyToolReport report;
  ONNXKIT_TRY(io::check_writable(out));
  Progress progress(options.progress);
  std::error_code size_error;
  progress.size_up(fs::file_size(in, size_error), 0);  // 0 when unknown: the load then says what is wrong
  progress.step("reading the model");
  ONNXKIT_ASSIGN(std::unique_ptr<ir::Model> model, ir::load_model(in));
  progress.size_up(model->file_size(), model->graph().nodes().size());
  if (options.inline_functions && model->header().functions_size() > 0) {
    onnx::ModelProto proto = ir::export_model(*model);
    // As a session would: the result then computes what the original does.
    ONNXKIT_ASSIGN(ir::InlineSummary inlined,
                   ir::inline_functions(proto, runtime::function_inlining(*model, runtime::KernelRegistry::builtin())));
    ONNXKIT_ASSIGN(std::unique_ptr<ir::Model> expanded, ir::import_model(std::move(proto), model->shared_external_data()));
    expanded->set_source(model->path(), model->file_size());
    model = std::move(expanded);
    report.inlined_calls = inlined.calls;
  }
  // The numeric check runs only the If branches its inputs take: strict
  // inference vouches for the others. Required of the result when the
  // original passes it (fixed input shapes can break a branch never run).
  const bool strict_before = !strict_inference_problem(*model).has_value();
  ONNXKIT_TRY(override_input_shapes(*model, options));
  for (const std::string& name : options.simplify.passes.excluded_nodes)
    if (auto node = find_node(model->graph(), name); !node.ok()) return node.error().in("--exclude-node");
  std::optional<Checker> checker;
  if (options.check_runs > 0) {
    // The reference is the model as loaded (with the same input shapes), before the passes touch it.
    checker.emplace(in, options);
    progress.step("finding inputs the original runs on");
    ONNXKIT_ASSIGN(report.check_inputs, checker->prepare(*model));
  }
  if (options.freeze_initializers) {
    report.frozen_initializers = freeze_initializers(*model);
  } else if (std::string weights = describe_initializer_inputs(*model); !weights.empty()) {
    report.passes.warnings.push_back(
        fmt::format("graph inputs backed by initializers ({}) stay inputs a caller may feed, so nothing folds or fuses through "
                    "them; --freeze-initializers makes them constants",
                    weights));
  }
  report.before = summarize(*model);
  report.before.file_bytes = model->file_size();

  passes::SimplifyOptions simplify = options.simplify;
  const bool verify = options.verify_each_pass && checker;
  simplify.after_change = [&](const ir::Model& current, std::string_view pass) -> Status {
    progress.step(fmt::format("simplifying (after {})", pass));
    if (!verify) return {};
    double ignored = 0;
    return checker->check(borrow(current), ignored);
  };
  progress.step("simplifying");
  ONNXKIT_ASSIGN(passes::SimplifyReport passed, passes::simplify_model(*model, simplify));
  passed.warnings.insert(passed.warnings.begin(), report.passes.warnings.begin(), report.passes.warnings.end());
  report.passes = std::move(passed);
  report.opset_before = model->opset("");
  if (options.target_opset > 0 && options.target_opset != report.opset_before) {
    auto converted = convert_opset(*model, options.target_opset);
    if (!converted.ok()) return converted.error().in(fmt::format("--target-opset {}", options.target_opset));
    model = std::move(converted).value();
    ONNXKIT_ASSIGN(passes::SimplifyReport again, passes::simplify_model(*model, simplify));
    merge_reports(report.passes, again);
  }
  report.opset_after = model->opset("");
  report.after = summarize(*model);

  if (checker) {
    progress.step("checking the result");
    Status checked = checker->check(borrow(*model), report.max_abs_diff);
    if (!checked.ok()) return checked.error().in("check failed, nothing written");
    report.checks_run = static_cast<int>(checker->sets());
  }
  if (strict_before) {
    if (auto problem = strict_inference_problem(*model))
      return make_error(
          "check failed, nothing written: the result fails strict shape inference, which the original "
          "passes ({}: {}){}",
          problem->location, problem->message,
          options.input_shapes.empty() ? ""
                                       : "; the input shapes given may not suit a branch the "
                                         "numeric check did not run");
  }
  progress.step("writing");
  ONNXKIT_ASSIGN(io::SaveSummary saved, ir::save_model(*model, out, options.save));
  report.after.file_bytes = files_size(out, saved.external_file);
  return report;
}

std::string render_simplify_text(const SimplifyToolReport& report, bool details) {
  std::string text;
  std::map<std::string, std::pair<size_t, size_t>> rows;
  for (const auto& [op, n] : report.before.ops) rows[op].first = n;
  for (const auto& [op, n] : report.after.ops) rows[op].second = n;
  size_t width = 10;
  for (const auto& [op, counts] : rows) width = std::max(width, op.size());
  auto row = [&](const std::string& label, const std::string& before, const std::string& after, bool mark) {
    text += fmt::format("{:<{}}  {:>10}  {:>10}{}\n", label, width, before, after, mark ? "  *" : "");
  };
  row("", "before", "after", false);
  for (const auto& [op, counts] : rows)
    row(op, std::to_string(counts.first), std::to_string(counts.second), counts.first != counts.second);
  row("nodes", std::to_string(report.before.nodes), std::to_string(report.after.nodes),
      report.before.nodes != report.after.nodes);
  row("parameters", human_count(report.before.parameters), human_count(report.after.parameters),
      report.before.parameters != report.after.parameters);
  row("file size", human_bytes(report.before.file_bytes), human_bytes(report.after.file_bytes), false);
  if (details) {
    text += "\nchanges per pass:\n";
    for (const auto& [pass, n] : report.passes.changes)
      if (n > 0) text += fmt::format("  {:<34} {}\n", pass, n);
    text += fmt::format("  {:<34} {}\n", "dead nodes removed", report.passes.removed_nodes);
    for (const std::string& note : report.passes.notes) text += fmt::format("  - {}\n", note);
  }
  if (report.opset_after != report.opset_before)
    text += fmt::format("converted from opset {} to {}\n", report.opset_before, report.opset_after);
  if (report.inlined_calls > 0)
    text +=
        fmt::format("{} call{} of model-local functions expanded\n", report.inlined_calls, report.inlined_calls == 1 ? "" : "s");
  if (report.frozen_initializers > 0)
    text += fmt::format("{} input{} backed by an initializer made constant{}\n", report.frozen_initializers,
                        report.frozen_initializers == 1 ? "" : "s", report.frozen_initializers == 1 ? "" : "s");
  for (const std::string& w : report.passes.warnings) text += fmt::format("warning: {}\n", w);
  text += fmt::format("{} round{} of passes and folding", report.passes.iterations, report.passes.iterations == 1 ? "" : "s");
  if (report.checks_run > 0)
    text += fmt::format("; checked on {} input set{}: max abs diff {:g}", report.checks_run, report.checks_run == 1 ? "" : "s",
                        report.max_abs_diff);
  else text += "; not checked (--check 0)";
  text += "\n";
  if (!report.check_inputs.empty()) text += fmt::format("check inputs: {}\n", report.check_inputs);
  return text;
}

}  // namespace onnxkit::tools
