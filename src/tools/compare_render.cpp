// A comparison report as text and as JSON (docs/compare-json.md).

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "tools/compare.h"
#include "tools/info.h"
#include "util/text.h"

namespace onnxkit::tools {
namespace {

using json = nlohmann::json;

// JSON has no infinities: they are written as strings.
json number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

std::string num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.3g}", v);
}

json stats_json(const TensorStats& s) {
  json j = {{"passed", s.passed},
            {"comparable", s.comparable},
            {"elements", s.elements},
            {"mismatches", s.mismatches},
            {"max_abs", number(s.max_abs)},
            {"max_rel", number(s.max_rel)},
            {"mean_abs", number(s.mean_abs)},
            {"median_abs", number(s.median_abs)},
            {"quantile_abs", number(s.quantile_abs)},
            {"cosine", number(s.cosine)},
            {"snr_db", number(s.snr_db)},
            {"nan", {{"a", s.nan_expected}, {"b", s.nan_actual}}},
            {"inf", {{"a", s.inf_expected}, {"b", s.inf_actual}}},
            {"required_atol", number(s.required_atol)},
            {"required_rtol", number(s.required_rtol)}};
  j["mismatch"] = s.mismatch.empty() ? json(nullptr) : json(s.mismatch);
  return j;
}

json tensor_json(const TensorReport& t) {
  return {{"name", t.name},
          {"name_b", t.name_b},
          {"paired_by", to_string(t.paired_by)},
          {"producer", t.producer.empty() && t.producer_op.empty() ? json(nullptr)
                                                                   : json({{"name", t.producer}, {"op_type", t.producer_op}})},
          {"is_output", t.is_output},
          {"type_a", t.type_a},
          {"type_b", t.type_b},
          {"sample", t.sample},
          {"stats", stats_json(t.stats)}};
}

// The local error as one number for `draw --overlay`: |local - A| / |A|
// (the square root of the SNR's ratio), 0 when exact; an infinite one is
// written as 1e30, a number draw can still colour.
json relative_error(const std::optional<TensorStats>& local) {
  if (!local) return nullptr;
  if (std::isinf(local->snr_db)) return local->snr_db > 0 ? 0.0 : 1e30;
  return std::min(1e30, std::pow(10.0, -local->snr_db / 20));
}

json node_json(const NodeReport& n, size_t rank) {
  return {{"rank", rank + 1},
          {"name", n.name},
          {"op_type", n.op_type},
          {"domain", n.domain},
          {"attributes", n.attributes},
          {"inputs", n.inputs},
          {"outputs", n.outputs},
          {"inputs_from_b", n.inputs_from_b},
          {"local", n.local ? stats_json(*n.local) : json(nullptr)},
          {"error", relative_error(n.local)},
          {"output", stats_json(n.output)},
          {"suspect", n.suspect},
          {"sample", n.sample},
          {"note", n.note.empty() ? json(nullptr) : json(n.note)}};
}

std::string node_label(const std::string& op, const std::string& name) {
  return name.empty() ? fmt::format("{} node (unnamed)", op) : fmt::format("{} node '{}'", op, name);
}

std::string attributes_text(const json& attributes) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : attributes.items()) parts.push_back(k + "=" + attribute_text(v));
  return parts.empty() ? "(none)" : join(parts, " ");
}

std::string tensor_summary(const TensorReport& t) {
  const TensorStats& s = t.stats;
  std::string where = t.producer_op.empty() ? "a graph input" : node_label(t.producer_op, t.producer);
  std::string names = t.name == t.name_b ? fmt::format("'{}'", t.name) : fmt::format("'{}' (B: '{}')", t.name, t.name_b);
  if (!s.comparable) return fmt::format("{} from {}: {}", names, where, s.mismatch);
  return fmt::format("{} from {}: max abs {}, max rel {}, SNR {} dB, {} of {} elements mismatch ({})", names, where,
                     num(s.max_abs), num(s.max_rel), num(s.snr_db), s.mismatches, s.elements, s.mismatch);
}

std::string local_summary(const NodeReport& n) {
  if (!n.local) return n.note.empty() ? "not re-run" : n.note;
  return fmt::format("local error: max abs {}, SNR {} dB{}; its output in B's own run: SNR {} dB", num(n.local->max_abs),
                     num(n.local->snr_db), n.local->passed ? " (within tolerance)" : "", num(n.output.snr_db));
}

}  // namespace

std::string summarize_divergence(const CompareReport& report) {
  std::vector<std::string> parts;
  if (report.first_divergent)
    parts.push_back("first divergent tensor " + tensor_summary(report.tensors[*report.first_divergent]));
  if (report.culprit) {
    const NodeReport& n = report.nodes[*report.culprit];
    parts.push_back(fmt::format("culprit {} ({})", node_label(n.op_type, n.name), local_summary(n)));
  } else if (report.first_divergent) {
    parts.push_back("no single node is wrong on the original's inputs");
  }
  return join(parts, "; ");
}

std::string render_compare_text(const CompareReport& r, size_t top, bool all_tensors) {
  std::string out;
  out += fmt::format("A: {}\nB: {}\n", r.a.empty() ? "(given)" : r.a, r.b.empty() ? "(given)" : r.b);
  for (const std::string& in : r.inputs) out += fmt::format("inputs: {}\n", in);
  out += fmt::format("tolerance: rtol {:g}, atol {:g}, stat {}{}; {} sample{}\n", r.tolerance.rtol, r.tolerance.atol,
                     to_string(r.tolerance.stat),
                     r.tolerance.stat == ErrorStat::quantile ? fmt::format(" {:g}", r.tolerance.quantile) : "", r.samples,
                     r.samples == 1 ? "" : "s");
  const PairingSummary& p = r.pairing;
  std::vector<std::string> how;
  if (p.by_name) how.push_back(fmt::format("{} by name", p.by_name));
  if (p.by_position) how.push_back(fmt::format("{} by position", p.by_position));
  if (p.by_structure) how.push_back(fmt::format("{} by structure", p.by_structure));
  out += fmt::format("paired {} tensors ({}); computed only in A: {}, only in B: {}\n",
                     p.by_name + p.by_position + p.by_structure, join(how, ", "), p.unpaired_a.size(), p.unpaired_b.size());
  if (!r.reference.empty() && !p.unpaired_a.empty()) {
    std::vector<std::string> shown(p.unpaired_a.begin(), p.unpaired_a.begin() + std::min<size_t>(5, p.unpaired_a.size()));
    out += fmt::format("reference tensors the model does not have: {}{}\n", join(shown, ", "),
                       p.unpaired_a.size() > 5 ? ", ..." : "");
  }
  for (const std::string& note : r.notes) out += fmt::format("note: {}\n", note);

  out += "\n";
  if (r.first_divergent) out += "first divergent tensor: " + tensor_summary(r.tensors[*r.first_divergent]) + "\n";
  else out += "no tensor diverges\n";
  if (r.culprit) {
    const NodeReport& n = r.nodes[*r.culprit];
    out += fmt::format("culprit: {} ({})\n", node_label(n.op_type, n.name), local_summary(n));
    out += fmt::format("  attributes: {}\n", attributes_text(n.attributes));
    out += fmt::format("  inputs: {}\n", join(n.inputs, ", "));
    if (!n.inputs_from_b.empty()) out += fmt::format("  (B's own values for: {})\n", join(n.inputs_from_b, ", "));
  }

  if (!r.nodes.empty() && top > 0) {
    size_t shown = std::min(top, r.nodes.size());
    out += fmt::format("\nnodes by local error (B's node on A's inputs), {} of {}:\n", shown, r.nodes.size());
    size_t width = 4;
    for (size_t k = 0; k < shown; ++k) width = std::max(width, node_label(r.nodes[k].op_type, r.nodes[k].name).size());
    out +=
        fmt::format("  {:>3}  {:<{}}  {:>12}  {:>11}  {:>12}\n", "#", "node", width, "local maxabs", "local SNR", "output SNR");
    for (size_t k = 0; k < shown; ++k) {
      const NodeReport& n = r.nodes[k];
      out += fmt::format("  {:>3}  {:<{}}  {:>12}  {:>11}  {:>12}{}\n", k + 1, node_label(n.op_type, n.name), width,
                         n.local ? num(n.local->max_abs) : "-", n.local ? num(n.local->snr_db) : "-", num(n.output.snr_db),
                         n.suspect                     ? "  suspect"
                         : !n.note.empty() && !n.local ? "  (" + n.note + ")"
                                                       : "");
    }
  }

  std::vector<size_t> rows;
  for (size_t i = 0; i < r.tensors.size(); ++i)
    if (all_tensors || r.tensors[i].is_output || (r.first_divergent && *r.first_divergent == i)) rows.push_back(i);
  if (!rows.empty()) {
    out += fmt::format("\ntensors ({} of {}{}):\n", rows.size(), r.tensors.size(),
                       all_tensors ? "" : "; --all-tensors lists every one");
    size_t width = 6;
    for (size_t i : rows) width = std::max(width, r.tensors[i].name.size());
    out +=
        fmt::format("  {:<{}}  {:>4}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}  {:>8}  {:>10}  {:>9}  {:>9}  {:>9}\n", "tensor",
                    width, "ok", "max abs", "max rel", "mean abs", "median", fmt::format("q{:g}", r.tolerance.quantile), "cosine",
                    "SNR dB", "mismatch", "NaN/Inf", "atol req", "rtol req");
    for (size_t i : rows) {
      const TensorReport& t = r.tensors[i];
      const TensorStats& s = t.stats;
      out += fmt::format("  {:<{}}  {:>4}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}  {:>8}  {:>10}  {:>9}  {:>9}  {:>9}{}\n",
                         t.name, width, s.passed ? "yes" : "NO", num(s.max_abs), num(s.max_rel), num(s.mean_abs),
                         num(s.median_abs), num(s.quantile_abs), num(s.cosine), num(s.snr_db), s.mismatches,
                         fmt::format("{}/{} {}/{}", s.nan_expected, s.inf_expected, s.nan_actual, s.inf_actual),
                         num(s.required_atol), num(s.required_rtol), s.comparable ? "" : "  " + s.mismatch);
    }
  }
  size_t outputs = 0, failed = 0;
  for (const TensorReport& t : r.tensors)
    if (t.is_output) {
      ++outputs;
      failed += !t.stats.passed;
    }
  out += fmt::format("\n{}: {} of {} outputs within tolerance\n", r.passed ? "PASSED" : "FAILED", outputs - failed, outputs);
  return out;
}

json compare_report_json(const CompareReport& r) {
  json j;
  j["schema"] = "onnxkit.compare/1";
  j["a"] = r.a;
  j["b"] = r.b;
  j["reference"] = r.reference;
  j["tolerance"] = {{"rtol", r.tolerance.rtol},
                    {"atol", r.tolerance.atol},
                    {"stat", to_string(r.tolerance.stat)},
                    {"quantile", r.tolerance.quantile}};
  j["samples"] = r.samples;
  j["inputs"] = r.inputs;
  j["pairing"] = {{"by_name", r.pairing.by_name},
                  {"by_position", r.pairing.by_position},
                  {"by_structure", r.pairing.by_structure},
                  {"unpaired_a", r.pairing.unpaired_a},
                  {"unpaired_b", r.pairing.unpaired_b}};
  j["passed"] = r.passed;
  j["first_divergent"] = r.first_divergent ? json(*r.first_divergent) : json(nullptr);
  j["culprit"] = r.culprit ? node_json(r.nodes[*r.culprit], *r.culprit) : json(nullptr);
  j["tensors"] = json::array();
  for (const TensorReport& t : r.tensors) j["tensors"].push_back(tensor_json(t));
  j["nodes"] = json::array();
  for (size_t k = 0; k < r.nodes.size(); ++k) j["nodes"].push_back(node_json(r.nodes[k], k));
  j["notes"] = r.notes;
  return j;
}

}  // namespace onnxkit::tools
