#pragma once
// Model validation by ONNX's checker, run node by node so that every problem
// is reported (the library's check_model stops at the first), each naming
// the node at fault. With `full`, strict shape and type inference too.

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace onnxkit::analysis {

struct CheckProblem {
  std::string location;     // "node #3 'conv1' (Conv)", "initializer 'w'", "model"...
  std::string message;      // ONNX's own words
  int64_t node_index = -1;  // index in the main graph when a node is at fault
  std::string node_name;
  std::string op_type;
};

struct CheckReport {
  std::vector<CheckProblem> problems;
  // What could not be checked, and why (opsets newer than the checker's).
  std::vector<std::string> notes;
  // The model-local functions, one line each (ir::describe): name, inputs,
  // outputs, attributes, nodes, call sites.
  std::vector<std::string> functions;
  bool valid() const { return problems.empty(); }
};

struct CheckOptions {
  bool full = false;  // strict shape and type inference as well
  // Check initializer data. Off for structural checks of models exported
  // without their weights.
  bool tensors = true;
};

// `model_dir` is where external data files are looked up.
CheckReport check_model(const onnx::ModelProto& model, const std::filesystem::path& model_dir, const CheckOptions& options = {});

}  // namespace onnxkit::analysis
