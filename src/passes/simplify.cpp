#include "passes/simplify.h"

#include <fmt/format.h>

#include <algorithm>

#include "analysis/onnx_inference.h"

namespace onnxkit::passes {

namespace {

void count(SimplifyReport& report, std::string_view name, size_t n) {
  for (auto& [pass, total] : report.changes)
    if (pass == name) {
      total += n;
      return;
    }
  report.changes.emplace_back(std::string(name), n);
}

void warn_once(SimplifyReport& report, const std::string& warning) {
  if (!warning.empty() && std::find(report.warnings.begin(), report.warnings.end(), warning) == report.warnings.end())
    report.warnings.push_back(warning);
}

}  // namespace

Result<SimplifyReport> simplify_model(ir::Model& model, const SimplifyOptions& options) {
  SimplifyReport report;
  for (const std::string& name : options.passes.skipped_passes)
    if (find_pass(name) == nullptr) return make_error("--skip: no pass named '{}' (see --list-passes)", name);

  ir::Graph& graph = model.graph();
  // Declared intermediate shapes may be stale or wrong: inference redoes them.
  graph.for_each_graph([](ir::Graph& g) { g.clear_value_info(); });
  report.removed_nodes += graph.cleanup(options.passes.remove_unused_inputs);
  PassContext context(model, options.passes);

  auto changed = [&](std::string_view pass, size_t n) -> Status {
    count(report, pass, n);
    if (n == 0) return {};
    report.removed_nodes += graph.cleanup(options.passes.remove_unused_inputs);
    warn_once(report, analysis::apply_inferred_types(model));
    if (options.after_change) {
      Status status = options.after_change(model, pass);
      if (!status.ok()) return status.error().in(fmt::format("after pass {}", pass));
    }
    return {};
  };

  warn_once(report, analysis::apply_inferred_types(model));
  for (int iteration = 0;; ++iteration) {
    if (iteration == options.max_iterations) {
      report.hit_iteration_cap = true;
      report.warnings.push_back(
          fmt::format("stopped after {} rounds without reaching a fixed point; the result is valid but may simplify further",
                      options.max_iterations));
      break;
    }
    report.iterations = iteration + 1;
    size_t round = 0;
    for (const auto& pass : all_passes()) {
      if (options.passes.skipped_passes.count(pass->name())) continue;
      size_t n = run_on_all_graphs(*pass, graph, context);
      for (const std::string& w : context.take_warnings()) warn_once(report, w);
      round += n;
      ONNXKIT_TRY(changed(pass->name(), n));
    }
    if (round == 0) break;
  }
  report.notes = context.notes();
  // What inference knows goes back into the file, for viewers and engines.
  for (ir::Node& node : graph.nodes())
    for (ir::Value* v : node.outputs())
      if (v != nullptr && v->has_type() && !v->is_graph_output()) graph.add_value_info(v);
  return report;
}

}  // namespace onnxkit::passes
