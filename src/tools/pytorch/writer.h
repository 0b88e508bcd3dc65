#pragma once
// The state of one conversion: the class being written (its modules,
// parameters, buffers and helper functions), the lines of forward(), the
// Python names in use, and what forward() holds for each ONNX value. Emitters
// reach it through Emit (emitter.h); control-flow emitters also write blocks
// of sub-graphs through it.

#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/model.h"
#include "tools/pytorch/emitter.h"

namespace onnxkit::tools::pytorch {

class Writer {
 public:
  explicit Writer(const ir::Model& model);

  const ir::Model& model() const { return model_; }
  int64_t opset() const { return opset_; }

  // --- names ------------------------------------------------------------
  // A new local of forward() named after `raw` (an ONNX name or a hint).
  std::string new_local(std::string_view raw);
  // A new attribute of the class named after `raw`.
  std::string new_attribute(std::string_view raw);
  // The attribute name for a node's module: its name without the op type.
  std::string module_name(const ir::Node& node);
  // "# /layer1/layer1.0/conv1/Conv", or the op type and index when unnamed.
  std::string comment(const ir::Node& node) const;

  // --- values -------------------------------------------------------------
  void bind(const ir::Value* value, PyValue py);
  const PyValue* find(const ir::Value* value) const;
  const runtime::Tensor* constant(const ir::Value* value);
  // Gives a value constant data of the generator's own (Constant's value_float...).
  void set_constant(const ir::Value* value, runtime::Tensor data) { constants_[value] = std::move(data); }
  // A tensor attribute's data, decoded (kept for the conversion's life).
  const runtime::Tensor* constant_of_attribute(const onnx::TensorProto& proto);
  std::string stored(const ir::Value* value);
  std::string stored(const runtime::Tensor& data, std::string_view hint, bool parameter);
  int32_t dtype(const ir::Value* value) const;
  std::optional<std::vector<int64_t>> dims(const ir::Value* value) const;
  Result<std::string> as_tensor(const ir::Value* value);

  // --- the class ------------------------------------------------------------
  std::string add_module(const ir::Node& node, const std::string& constructor, std::vector<ModuleWeight> weights);
  void use_helper(std::string_view name);
  void absorb(const ir::Node* node) { absorbed_.insert(node); }
  // A random operator was written: outputs differ from any other run's.
  void mark_random() { random_ = true; }
  bool random() const { return random_; }

  // --- forward() ------------------------------------------------------------
  void line(const std::string& text) { lines_.push_back(std::string(indent_ * 4, ' ') + text); }
  int indent() const { return indent_; }
  // Emits every node of `graph` (in topological order) at the current indent.
  Status emit_nodes(const ir::Graph& graph);
  // The same into a block of its own, indented one level more, returned
  // instead of written (If branches, loop bodies).
  Result<std::vector<std::string>> emit_block(const ir::Graph& graph);
  // Writes a block's lines (from emit_block, or more) at the current position.
  void append(const std::vector<std::string>& lines) { lines_.insert(lines_.end(), lines.begin(), lines.end()); }

  // --- the whole file -----------------------------------------------------
  struct Inputs {
    std::string name;  // the ONNX name
    std::string local;
    int32_t dtype = 0;
    std::vector<std::string> dims;  // numbers or symbols
    bool sequence = false;          // a list of such tensors
  };
  // forward()'s parameters, bound to the main graph's inputs.
  Result<std::vector<Inputs>> bind_graph_inputs();
  // `return ...` for the main graph's outputs.
  Result<std::string> return_statement();

  const std::vector<std::string>& forward_lines() const { return lines_; }
  const std::vector<std::string>& init_lines() const { return init_lines_; }
  const std::vector<StoredTensor>& stored_tensors() const { return stored_tensors_; }
  const std::vector<std::string>& helpers_used() const { return helper_order_; }
  size_t module_count() const { return modules_; }
  // Initializers that were graph inputs too (old exporters): held as constants.
  size_t frozen_inputs() const { return frozen_inputs_; }

 private:
  std::string unique(std::string base, std::set<std::string>& used);
  Status emit_node(const ir::Node& node);

  const ir::Model& model_;
  int64_t opset_;
  std::set<std::string> locals_;
  std::set<std::string> attributes_;
  std::unordered_map<const ir::Value*, PyValue> values_;
  std::unordered_map<const ir::Value*, runtime::Tensor> constants_;
  std::unordered_map<const onnx::TensorProto*, runtime::Tensor> attribute_constants_;
  std::unordered_map<const ir::Value*, std::string> stored_;
  std::unordered_set<const ir::Node*> absorbed_;
  std::vector<std::string> lines_;
  int indent_ = 2;  // forward's body, inside the class
  std::vector<std::string> init_lines_;
  std::vector<StoredTensor> stored_tensors_;
  std::set<std::string> helpers_;
  std::vector<std::string> helper_order_;
  size_t modules_ = 0;
  size_t frozen_inputs_ = 0;
  bool random_ = false;
};

// The Python source of a helper function, and the helpers it calls.
struct Helper {
  std::string_view code;
  std::vector<std::string_view> needs;
};
const std::map<std::string, Helper, std::less<>>& python_helpers();

}  // namespace onnxkit::tools::pytorch
