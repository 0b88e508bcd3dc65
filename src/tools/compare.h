#pragma once
// Comparing numbers: two tensors (statistics and a verdict), two runs of
// models whose intermediate tensors are paired by name or by graph
// structure, or a model against another engine's values (a reference). The
// report names the first tensor that diverges and ranks nodes by their local
// error: the node of B re-run on A's values of its inputs, which tells a node
// that is wrong itself from one that only inherits error from above.
//
// `onnxkit compare`, `debug reduce` and simplify's checks all go through
// here; the report is a plain struct (rendered as text or as the JSON of
// docs/compare-json.md).

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/model.h"
#include "runtime/datum.h"
#include "runtime/session.h"
#include "tools/inputs.h"
#include "util/progress.h"
#include "util/result.h"

namespace onnxkit::tools {

// --- two tensors ----------------------------------------------------------------

// Which statistic of the errors decides a verdict. elemwise: every element
// within atol + rtol * |expected| (numpy.allclose). The others: that
// statistic of |actual - expected| within atol + rtol * the same statistic
// of |expected|.
enum class ErrorStat { elemwise, max, mean, median, quantile };

struct Tolerance {
  double rtol = 1e-4;
  double atol = 1e-5;
  ErrorStat stat = ErrorStat::elemwise;
  double quantile = 0.99;  // for ErrorStat::quantile, and reported always
};

Result<ErrorStat> parse_error_stat(const std::string& text);
const char* to_string(ErrorStat stat);

// The errors of `actual` against `expected`. Integers, bools and strings
// must be equal; floats go by the tolerance. NaN equals NaN and an infinity
// the same infinity; any other pair involving a NaN or an infinity is a
// mismatch whose error is infinite.
struct TensorStats {
  bool passed = true;
  std::string mismatch;  // why not, in a few words: "shape [1,10] vs [1,12]", "at [0,3]: expected 0.5, got 0.75"
  int64_t elements = 0;
  int64_t mismatches = 0;  // elements outside atol + rtol * |expected|
  double max_abs = 0, max_rel = 0, mean_abs = 0, median_abs = 0, quantile_abs = 0;
  double cosine = 1;         // of the two tensors as vectors (finite elements); 1 when both are zero
  double snr_db = INFINITY;  // 10 log10(sum expected^2 / sum error^2); infinite when exact
  int64_t nan_expected = 0, inf_expected = 0, nan_actual = 0, inf_actual = 0;
  double required_atol = 0;  // the smallest atol that passes elementwise with the given rtol
  double required_rtol = 0;  // the smallest rtol that passes elementwise with the given atol (infinite if none)
  bool comparable = true;    // false when type or shape differ: only `mismatch` says anything
};

TensorStats compare_tensor_stats(const runtime::Tensor& expected, const runtime::Tensor& actual, const Tolerance& tolerance);
// Tensors, sequences (element by element, the worst kept) and optionals.
TensorStats compare_value_stats(const runtime::Datum& expected, const runtime::Datum& actual, const Tolerance& tolerance);

struct Difference {
  bool close = true;
  double max_abs_diff = 0;  // over numeric elements
  std::string detail;       // when not close: "shape [1,10] vs [1,12]", "at [0,3]: expected 0.5, got 0.75"
};

// compare_value_stats, elementwise, in short.
Difference compare_values(const runtime::Datum& expected, const runtime::Datum& actual, double rtol, double atol);

// --- two runs ----------------------------------------------------------------------

// How a tensor of A found its partner in B.
enum class Pairing { name, position, structure };
const char* to_string(Pairing pairing);

// One compared tensor, worst sample kept.
struct TensorReport {
  std::string name;    // in A (the reference's name for a reference)
  std::string name_b;  // in B
  Pairing paired_by = Pairing::name;
  std::string producer, producer_op;  // B's node making it ("" for a graph input)
  bool is_output = false;             // a graph output of B
  std::string type_a, type_b;         // "float32[1,1000]"
  int sample = 0;                     // the sample whose numbers these are
  TensorStats stats;
};

// One node of B whose outputs are paired, with its local error.
struct NodeReport {
  std::string name, op_type, domain;
  nlohmann::json attributes = nlohmann::json::object();  // as `info --json` writes them
  std::vector<std::string> inputs;                       // "name float32[1,64,56,56]" in the local run (A's values where paired)
  std::vector<std::string> outputs;
  // B's node on A's inputs against A's outputs (the worst output, worst
  // sample), or, where that fails, against A's node re-run alone on them
  // when that passes (`note` says so); empty when it was not re-run
  // (`note` says why).
  std::optional<TensorStats> local;
  TensorStats output;  // B's own values of those outputs against A's
  // Local and own outputs both fail, and the local error is no less than a
  // tenth of the output's (SNR within 20 dB): the node itself differs.
  bool suspect = false;
  // Inputs no A value was paired with: B's own values went in (its local
  // error then includes what B inherited there).
  std::vector<std::string> inputs_from_b;
  std::string note;
  int sample = 0;
};

struct PairingSummary {
  size_t by_name = 0, by_position = 0, by_structure = 0;
  std::vector<std::string> unpaired_a, unpaired_b;  // tensors computed on one side only
};

struct CompareReport {
  std::string a, b;                    // what was compared: file paths or labels
  std::vector<std::string> reference;  // the reference files, when A is one
  Tolerance tolerance;
  int samples = 0;
  std::vector<std::string> inputs;  // "name float32[1,3,224,224] (random, seed 0)"
  PairingSummary pairing;
  std::vector<TensorReport> tensors;      // in A's order (B's for a reference)
  std::optional<size_t> first_divergent;  // into tensors
  std::vector<NodeReport> nodes;          // ranked: worst local error first
  std::optional<size_t> culprit;          // into nodes: the first, when it is a suspect
  bool passed = true;                     // every compared output (every tensor, when no output is compared) within tolerance
  std::vector<std::string> notes;
};

struct CompareOptions {
  Tolerance tolerance;
  InputOptions inputs;  // files, shapes, random, seed
  int iterations = 1;   // input samples (random ones take seeds seed, seed+1, ...)
  int threads = 0;
  bool local_errors = true;  // re-run B's nodes on A's inputs
  bool fail_fast = false;    // stop at the first divergent tensor (and its node's local error)
  ProgressFn progress;       // told each step of the work on a big model (util/progress.h)
};

// A values of the runs, by tensor name. Values share their buffers with the
// run that made them: nothing is copied.
using NamedTensors = std::unordered_map<std::string, runtime::Datum>;

// Runs two models on the same inputs and compares every paired tensor.
Result<CompareReport> compare_models(const std::filesystem::path& a, const std::filesystem::path& b,
                                     const CompareOptions& options);
Result<CompareReport> compare_models(std::shared_ptr<const ir::Model> a, std::shared_ptr<const ir::Model> b,
                                     const CompareOptions& options);
// The same on inputs the caller made (one NamedValues per sample).
Result<CompareReport> compare_models_on(std::shared_ptr<const ir::Model> a, std::shared_ptr<const ir::Model> b,
                                        const std::vector<runtime::NamedValues>& samples, const CompareOptions& options);

// Runs `model` and compares it with reference values: a folder of .npy/.pb
// files (with run's outputs.json, if any, naming them), an .npz, a .pb, or
// Polygraphy's --save-outputs / --save-inputs JSON. Several files merge;
// several iterations in one are several samples. Model inputs come from
// options.inputs, else from the reference tensors of their names.
Result<CompareReport> compare_with_reference(const std::filesystem::path& model,
                                             const std::vector<std::filesystem::path>& reference, const CompareOptions& options);

// --- building blocks (debug reduce uses them) ------------------------------------

// Every value a model computes (with its inputs) on `feeds`, by name.
Result<NamedTensors> run_all_values(std::shared_ptr<const ir::Model> model, const runtime::NamedValues& feeds, int threads = 0);

// options.iterations input samples for `model`: files as given, the rest
// random (seeds seed, seed+1, ...; symbolic dims as 1, with a note each).
Result<std::vector<runtime::NamedValues>> make_input_samples(std::shared_ptr<const ir::Model> model,
                                                             const CompareOptions& options, std::vector<std::string>* notes);

// The inputs of one reference sample: --input files first, then reference
// tensors of the inputs' names, then random data if options.random; a
// missing input is an error naming it.
Result<runtime::NamedValues> feeds_from_reference(const runtime::Session& session, const NamedTensors& sample,
                                                  const InputOptions& options, std::vector<std::string>* notes);

// The tensor of `reference` for tensor `name` of a model: the same name, or
// the file stem a folder would give it (tensor_file_stem).
const runtime::Datum* find_reference(const NamedTensors& reference, const std::string& name);

// Runs A and B on `feeds` (named as A's inputs) and gives A's values under
// the names of the B tensors they pair with (graph inputs included).
Result<NamedTensors> paired_values(std::shared_ptr<const ir::Model> a, std::shared_ptr<const ir::Model> b,
                                   const runtime::NamedValues& feeds, int threads = 0);
// A copy of `model` keeping only what computes `outputs` from `inputs`
// (edit's extract_subgraph on it): a node or a run of nodes as a model.
Result<std::unique_ptr<ir::Model>> cut_model(const ir::Model& model, const std::vector<std::string>& inputs,
                                             const std::vector<std::string>& outputs);
// A's feeds renamed for B where B's inputs have other names (by position).
Result<runtime::NamedValues> feeds_for(const ir::Model& a, const ir::Model& b, const runtime::NamedValues& feeds);

// "first divergent tensor 'x' (Conv node 'c'): max abs 0.03 ...; culprit: ..."
// in one line, for messages (simplify's check).
std::string summarize_divergence(const CompareReport& report);

std::string render_compare_text(const CompareReport& report, size_t top = 10, bool all_tensors = false);
nlohmann::json compare_report_json(const CompareReport& report);

}  // namespace onnxkit::tools
