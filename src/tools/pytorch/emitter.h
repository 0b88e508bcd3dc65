#pragma once
// The working parts of the ONNX -> PyTorch source generator, shared by the op
// emitters (ops_*.cpp). An emitter writes the Python for one ONNX node through
// an Emit: it asks for its inputs as Python expressions (a tensor, a list of
// ints, an int, a number), declares modules and constants on the class, and
// binds its outputs to expressions. The Writer owns what the whole module
// needs: names, modules, constants, helper functions, and the lines of
// forward() (generate.cpp); the public entry point is tools/pytorch_convert.h.
//
// How forward() holds an ONNX value (Kind): shapes and their arithmetic stay
// Python ints and lists (`b = x.shape[0]`, `x.reshape(b, -1)`), so a model
// with a symbolic batch still takes any batch and reads as a person writes
// it; everything else is a torch.Tensor.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "runtime/tensor.h"
#include "util/result.h"

namespace onnxkit::tools::pytorch {

enum class Kind {
  tensor,    // a torch.Tensor
  ints,      // a Python list of ints standing for a 1-D integer tensor
  integer,   // a Python int standing for a 0-d integer tensor
  sequence,  // a Python list of tensors (ONNX sequences)
  none,      // an omitted optional value: None
};

struct PyValue {
  Kind kind = Kind::tensor;
  std::string expr;   // a Python expression: a local, self.x, a literal
  int32_t dtype = 0;  // ONNX element type; 0 when unknown
  // ints: each element's expression, when the length is known.
  std::optional<std::vector<std::string>> elements;
  // ints, integer: every element is a size (from Shape and Size), so >= 0.
  bool sizes = false;
};

// A weight handed to a module: its attribute name on the module and its data.
struct ModuleWeight {
  std::string name;  // "weight", "bias", "running_mean"...
  runtime::Tensor data;
  bool parameter = true;  // nn.Parameter (false: a buffer)
};

// A tensor the generated module stores (state_dict key -> data).
struct StoredTensor {
  std::string key;
  runtime::Tensor data;
};

class Writer;

// The context of one node's emitter.
class Emit {
 public:
  Emit(Writer& writer, const ir::Node& node, int64_t opset) : w(writer), node(node), opset(opset) {}

  Writer& w;
  const ir::Node& node;
  const int64_t opset;

  // --- inputs ---------------------------------------------------------------
  size_t num_inputs() const { return node.inputs().size(); }
  bool has(size_t i) const { return node.input(i) != nullptr; }
  const ir::Value* input(size_t i) const { return node.input(i); }
  int32_t dtype(size_t i) const;  // 0: unknown
  std::optional<int64_t> rank(size_t i) const;
  std::optional<std::vector<int64_t>> dims(size_t i) const;  // -1: symbolic
  Kind kind(size_t i) const;
  // Input i's data when it is a constant (initializer or Constant node).
  const runtime::Tensor* constant(size_t i);
  std::optional<std::vector<int64_t>> constant_ints(size_t i);  // integer constants
  std::optional<double> constant_number(size_t i);              // a one-element numeric constant
  // Input i as a Python expression of each form (converting as needed).
  Result<std::string> tensor(size_t i);
  Result<std::string> ints(size_t i);     // a list of ints: literal, shape list, or t.tolist()
  Result<std::string> integer(size_t i);  // an int: literal, int var, or int(t)
  Result<std::string> number(size_t i);   // an int or float: literal, or t.item()
  // An operand of an element-wise op: a literal number when input i is a
  // one-element constant that broadcasting makes disappear (the other
  // operand `other` has at least its rank), the tensor otherwise.
  Result<std::string> operand(size_t i, std::optional<size_t> other);
  const PyValue* value(size_t i) const;

  // --- attributes -----------------------------------------------------------
  int64_t attr_int(std::string_view name, int64_t fallback) const { return node.attr_int(name, fallback); }
  float attr_float(std::string_view name, float fallback) const { return node.attr_float(name, fallback); }
  std::string attr_string(std::string_view name, std::string fallback) const { return node.attr_string(name, fallback); }
  std::vector<int64_t> attr_ints(std::string_view name) const { return node.attr_ints(name); }
  bool has_attr(std::string_view name) const { return node.attribute(name) != nullptr; }
  std::vector<float> attr_floats(std::string_view name) const;

  // --- outputs --------------------------------------------------------------
  size_t num_outputs() const { return node.outputs().size(); }
  bool has_output(size_t k) const { return node.output(k) != nullptr; }
  int32_t out_dtype(size_t k) const;
  std::optional<std::vector<int64_t>> out_dims(size_t k) const;
  // `out = expr  # node`, binding output k (a tensor unless `kind` says).
  void assign(size_t k, const std::string& expr, Kind kind = Kind::tensor);
  // An ints output whose elements are known one by one.
  void assign_ints(size_t k, const std::vector<std::string>& elements, bool sizes);
  // `a, b = expr  # node` for outputs `ks` (omitted outputs become `_`).
  void assign_many(const std::vector<size_t>& ks, const std::string& expr);
  // Output k is another value's expression without a statement of its own
  // (a node absorbed into the one before it).
  void alias(const ir::Value* out, const PyValue& value);
  // A statement of this node's own, written before its assignment.
  void line(const std::string& text);
  // A fresh local variable named after `hint`.
  std::string local(std::string_view hint);
  // The local name output k will get (to build statements around it).
  std::string output_name(size_t k);

  // --- the class ------------------------------------------------------------
  // Declares `self.<name> = <constructor>` with the given weights (stored in
  // the module's state_dict under <name>.<weight>); returns "self.<name>".
  std::string module(const std::string& constructor, std::vector<ModuleWeight> weights);
  // Marks a helper function of the generated file as used; returns its name.
  std::string helper(std::string_view name);
  // Marks another node as emitted by this one (its outputs bound by alias()).
  void absorb(const ir::Node& other);
  // The consumers of output k, when they are all in this graph.
  std::vector<const ir::Node*> consumers(size_t k) const;

  // "cannot convert <op> node '<name>': <reason>".
  Error fail(std::string_view reason) const;
};

using EmitFn = Status (*)(Emit&);
using EmitterTable = std::unordered_map<std::string, EmitFn>;

// Each family adds its emitters (ops_*.cpp); emitter_table() holds them all.
void add_elementwise_emitters(EmitterTable& table);
void add_nn_emitters(EmitterTable& table);
void add_tensor_emitters(EmitterTable& table);
void add_reduce_emitters(EmitterTable& table);
void add_control_emitters(EmitterTable& table);
void add_rnn_emitters(EmitterTable& table);
void add_misc_emitters(EmitterTable& table);
const EmitterTable& emitter_table();

// Ops onnxkit's runtime runs that have no PyTorch form, with the reason.
const std::map<std::string, std::string>& unconvertible_ops();

// --- Python text -------------------------------------------------------------

// "torch.float32" for an ONNX element type; "" when torch has none.
std::string torch_dtype(int32_t data_type);
bool is_float_type(int32_t data_type);
// A Python literal: 1e-05, 0.5, float("inf"); ints as they are.
std::string py_float(double v);
std::string py_int(int64_t v);
std::string py_bool(bool v);
// "[1, 2, 3]" and "(1, 2)" (a one-element tuple gets its comma).
std::string py_list(const std::vector<int64_t>& values);
std::string py_tuple(const std::vector<int64_t>& values);
std::string py_list(const std::vector<std::string>& items);
std::string py_tuple(const std::vector<std::string>& items);
// A Python string literal.
std::string py_str(std::string_view text);
// `text` in parentheses unless it is one term (a name, a number, x.shape[0]).
std::string parenthesized(const std::string& text);
// The elements of a small constant as Python literals ([1, 2], [0.5]).
std::vector<std::string> py_elements(const runtime::Tensor& t);

// --- helpers shared by the emitters ------------------------------------------

// An axis made non-negative with the rank, when known.
std::optional<int64_t> non_negative_axis(int64_t axis, std::optional<int64_t> rank);
// ONNX pads [b1..bn, e1..en] over the last n dims -> F.pad's order (last dim
// first), trailing all-zero pairs dropped.
std::vector<int64_t> torch_pad_order(const std::vector<int64_t>& begins, const std::vector<int64_t>& ends);

// Weight rearrangements, in C++ so the generated file holds plain weights.
runtime::Tensor transpose_2d(const runtime::Tensor& t);
// Rows grouped in `order.size()` equal blocks, reordered: block k of the
// result is block order[k] of the input (gate orders of LSTM and GRU).
runtime::Tensor reorder_blocks(const runtime::Tensor& t, const std::vector<int>& order);

}  // namespace onnxkit::tools::pytorch
