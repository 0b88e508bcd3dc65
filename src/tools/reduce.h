#pragma once
// `onnxkit debug reduce`: shrinks a failing model to a small sub-graph that
// still fails, as Polygraphy's `debug reduce` does, but with onnxkit's own
// comparison as the default judge and every input sample checked.
//
// Candidates are runs of consecutive nodes in topological order. Bisect
// first finds the shortest prefix that fails (cutting outputs), then the
// shortest suffix of it that fails (cutting inputs), then tries to drop
// each remaining node (linear refinement); --mode linear steps one node at a
// time instead. A cut sub-graph reads the reference run's values: its main
// inputs (those of its first node) stay graph inputs, other tensors it needs
// from outside (side branches) are frozen to constants in the models
// written; the judge always feeds every sample's own values.

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "tools/compare.h"
#include "util/result.h"

namespace onnxkit::tools {

enum class ReduceMode { bisect, linear };

struct ReduceOptions {
  // The judge. With `check`, a command run on each candidate ("{model}" is
  // replaced by its path, "{inputs}" by an .npz of its inputs' values); it
  // fails when it exits non-zero, or, with fail_regex, when its output
  // matches. Without, onnxkit compares the candidate's outputs with the
  // reference values.
  std::vector<std::string> check;
  std::string fail_regex;
  // Reference values: files as compare --reference reads them, or one .onnx
  // model run on the same inputs. Empty: the model's own run (only useful with `check`).
  std::vector<std::filesystem::path> reference;
  CompareOptions compare;  // tolerance, inputs, iterations (samples), threads
  ReduceMode mode = ReduceMode::bisect;
  std::filesystem::path output;    // the minimal failing model
  std::filesystem::path min_good;  // optional: a passing model close in size to it
};

struct ReduceStep {
  int run = 0;              // check runs so far, this one included
  std::string phase;        // "whole model", "outputs", "inputs", "refine"
  size_t nodes = 0;         // in the candidate
  std::string first, last;  // its first and last node
  bool fails = false;
  std::string detail;  // the judge's word: a divergent output, the command's exit code
};

struct ReduceReport {
  size_t original_nodes = 0;  // main graph, Constant nodes left out
  std::vector<ReduceStep> steps;
  int check_runs = 0;
  std::vector<std::string> kept;    // "Conv node 'c1'", in order
  std::vector<std::string> inputs;  // graph inputs of the result
  std::vector<std::string> frozen;  // tensors frozen to constants in it
  std::vector<std::string> outputs;
  bool min_good_written = false;
  size_t min_good_nodes = 0;
  std::vector<std::string> notes;
};

// `on_step` sees each candidate's verdict as it comes (the CLI prints it).
Result<ReduceReport> reduce_model(const std::filesystem::path& model, const ReduceOptions& options,
                                  const std::function<void(const ReduceStep&)>& on_step = {});

std::string render_reduce_step(const ReduceStep& step);
std::string render_reduce_text(const ReduceReport& report, const ReduceOptions& options);

}  // namespace onnxkit::tools
