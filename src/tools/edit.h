#pragma once
// Graph surgery, the library behind `onnxkit edit`: onnx-graphsurgeon's
// moves over the IR (find, bypass, rewire, set attributes, cut), and the
// fixes of the seeds as whole-model operations (set the batch, rewrite
// PReLU, inline an If whose condition is constant...).
//
// Lookups by name fail with an error that names what was asked for and, when
// one is close, suggests it. Operations check what they touch and decline
// with an error rather than leave a half-made edit behind where they can;
// validate_edited_model() is the final word on the whole model.

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/model.h"
#include "util/result.h"

namespace onnxkit::tools {

// --- finding -----------------------------------------------------------------

// Every node of `graph` and of the sub-graphs below it for which `match` is
// true, parents first, each graph in its node order.
std::vector<ir::Node*> find_nodes(ir::Graph& graph, const std::function<bool(const ir::Node&)>& match);
std::vector<ir::Node*> find_nodes_by_op(ir::Graph& graph, std::string_view op_type);
// The same, but none is an error that suggests the closest op of the model.
Result<std::vector<ir::Node*>> require_nodes_by_op(ir::Graph& graph, std::string_view op_type);
// The node named `name` anywhere in the model that `graph` belongs to.
Result<ir::Node*> find_node(ir::Graph& graph, std::string_view name);
// The tensor named `name` anywhere in the model (sub-graphs included).
Result<ir::Value*> find_tensor(ir::Graph& graph, std::string_view name);

// --- nodes -----------------------------------------------------------------

// The seeds' remove_node: the node's consumers (and a graph output it
// produces) read its first input instead, and the node goes. An If node
// whose condition is a constant is inlined instead (inline_if).
Status remove_node(ir::Node& node);

// True, with the branch taken, when `node` is an If whose condition is an
// initializer or the output of a Constant node.
std::optional<bool> constant_if_condition(ir::Node& node);

// Replaces an If node whose condition is constant by the nodes of the branch
// it takes (simplify's inline-constant-if); the If's outputs become that
// branch's outputs.
Status inline_if(ir::Node& node);

// A new node of `op_type` (with `attributes`) that takes over `node`'s
// inputs, outputs and name; `node` goes. Returns the new node.
Result<ir::Node*> replace_node(ir::Node& node, std::string_view op_type, std::vector<onnx::AttributeProto> attributes = {},
                               std::string_view domain = "");

// Renames a node; the name must not be used by another node of the model.
Status rename_node(ir::Node& node, std::string name);
// Renames a tensor everywhere it is referred to (sub-graphs included).
Status rename_tensor(ir::Value& value, std::string name);

// Points input `index` of `node` at `value` (null unsets an optional input:
// trailing unset inputs are dropped). The op's schema, when known, decides
// whether the index exists and whether the input may be left out.
Status set_node_input(ir::Node& node, size_t index, ir::Value* value);

// The schema's name for input `index` of `node` ("scales" for Resize's #2),
// or "input<index>" when the op has no schema here.
std::string input_name(const ir::Node& node, size_t index);

// --- attributes ----------------------------------------------------------------

// The type the op's schema gives attribute `name` of `node` (UNDEFINED when
// the op has no schema here); an error when the schema has no such attribute.
Result<onnx::AttributeProto::AttributeType> schema_attribute_type(const ir::Node& node, std::string_view name);

// Sets (replaces or adds) an attribute of `node` (make it with onnx::MakeAttribute,
// <onnx/defs/attr_proto_util.h>). A type that disagrees
// with the op's schema is an error naming both. Graph-valued attributes (g,
// graphs) are imported into the IR as the node's sub-graphs.
Status set_attribute(ir::Node& node, onnx::AttributeProto attribute);
// Removes an attribute; an error when the node has none of that name.
Status delete_attribute(ir::Node& node, std::string_view name);

// Parses `text` as the value of attribute `name` of `node`, typed by the
// op's schema, else by the attribute the node already has, else by the
// literal: 3 -> int, 1e-5 -> float, [1,2,3] -> ints, [0.5,1] -> floats,
// float:[1,2] or FILE.npy -> tensor, anything else -> string.
Result<onnx::AttributeProto> parse_attribute(const ir::Node& node, std::string_view name, std::string_view text);

// --- tensors -----------------------------------------------------------------

// Replaces the data of an initializer, keeping its name. Its declared type
// (as a graph input or in value_info) follows the new shape. A different
// element type is an error.
Status set_initializer(ir::Value& value, onnx::TensorProto tensor);

// A tensor literal: "float:[1,1,2,2]", "int64:[-1,4096]", "int64:[[1,2],[3,4]]",
// "float:0.5" (a scalar). Types: float, float16, double, int8..int64,
// uint8..uint64, bool.
Result<onnx::TensorProto> parse_tensor_literal(std::string_view text);
// True when `text` starts like a tensor literal ("TYPE:").
bool looks_like_tensor_literal(std::string_view text);
// A value typed on the command line for a graph input (edit --freeze-input,
// run and bench --input): a tensor literal (int64:[[1,2,3]]), or a bare
// number or [list] taking `elem_type`, the input's declared element type
// (16000 for an int64 input). One parser, so every command reads the same text.
Result<onnx::TensorProto> parse_value_literal(std::string_view text, int32_t elem_type);
// True when `text` reads as such a value rather than a file name.
bool looks_like_value_literal(std::string_view text);

// --- graph inputs and outputs ----------------------------------------------------

// Makes `value` (of the main graph) an output of the model, typed by shape
// inference (the seeds' add_extra_output); nothing happens when it is one.
Status add_graph_output(ir::Model& model, ir::Value& value);
// Removes the output named `name` (the tensor stays while something uses it).
Status remove_graph_output(ir::Model& model, std::string_view name);
// Adds a new input of the main graph.
Result<ir::Value*> add_graph_input(ir::Model& model, std::string_view name, const onnx::TypeProto& type);
// Removes an input that nothing reads any more.
Status remove_graph_input(ir::Model& model, std::string_view name);

// --- whole-model operations (the seeds' fixes) -------------------------------

// The declared shape of input `name`: each dim a number or a symbol.
Status set_input_shape(ir::Model& model, std::string_view name, const std::vector<std::string>& dims);
// The name and dims of an --input-shape flag: "NAME:1,3,224,224" or
// "NAME:batch,3,224,224" (simplify, shapes and edit take it).
Result<std::pair<std::string, std::vector<std::string>>> parse_input_shape_flag(const std::string& flag);
// Dim 0 of every graph input and output (the seeds' set_model_input_batch):
// a number, or a symbol such as "batch" to make the batch dynamic.
// Returns warnings, e.g. a Reshape whose constant shape fixes the old batch.
Result<std::vector<std::string>> set_batch(ir::Model& model, std::string_view batch);
// Graph input `name` becomes the constant `tensor` (of its declared element
// type, and its declared dims where they are numbers); then what it decides
// is folded, to a fixed point: constant folding, and every If of the main
// graph whose condition became constant inlined (sr=16000 keeps the 16 kHz
// branch).
struct FreezeInputReport {
  size_t folded = 0;   // nodes computed into constants
  size_t inlined = 0;  // If nodes replaced by their branch
  std::vector<std::string> warnings;
};
Result<FreezeInputReport> freeze_input(ir::Model& model, std::string_view name, onnx::TensorProto tensor);
// Replaces If node `node` by its then (or else) branch, whatever its
// condition: for a branch the user knows is the one taken.
Status choose_if_branch(ir::Node& node, bool then_branch);

// Shows that a batch set by set_batch(model, batch) is free: the model runs
// once on random inputs (symbolic dims as 2) within a time and memory
// budget, and every output's dim 0 is that batch. An error naming the node or
// output at fault; when the budget ran out first, `not_tried` says so and the
// result is ok.
Status run_at_new_batch(const ir::Model& model, std::string_view batch, std::string* not_tried);
// Graph inputs of the main graph that have an initializer stop being inputs:
// their data becomes a constant, which runtimes may prepack and simplify may
// fold (old exports, before IR version 4, list every weight as an input).
// The IR version goes up to 4 where it is lower. Returns how many went.
size_t freeze_initializers(ir::Model& model);
// "N: 'a', 'b', 'c', ..." naming the main graph's inputs that have an
// initializer; empty when none has.
std::string describe_initializer_inputs(const ir::Model& model);
// Removes every node of `op_type` (remove_node); If nodes only where their
// condition is constant. Returns how many went; `skipped` gets a line per node
// that stayed, naming it and why.
Result<size_t> remove_op(ir::Model& model, std::string_view op_type, std::vector<std::string>* skipped = nullptr);
// Every node output of the main graph becomes a graph output with its
// inferred type. Returns how many were added; `untyped` names those left
// out because inference knows nothing of them.
size_t add_all_outputs(ir::Model& model, std::vector<std::string>* untyped = nullptr);
// Keeps only what computes `outputs` from `inputs` (tensors of the main
// graph), as onnx.utils.extract_model: intermediate tensors listed as inputs
// become graph inputs, and anything the outputs need beyond the inputs and
// constants is an error that names it.
Status extract_subgraph(ir::Model& model, const std::vector<std::string>& inputs, const std::vector<std::string>& outputs);
// PRelu(x, s) = Relu(x) - Relu(-x) * s, for engines without PRelu. Exact:
// each branch is one rounding of x * s or none. Returns how many.
size_t replace_prelu(ir::Model& model);
// A PRelu slope of shape [C] becomes [C,1,...,1] (per channel of an NCHW
// input), initializer and declared shape together (the seeds' MXNet fix).
// Returns how many slopes changed.
Result<size_t> fix_prelu_slope(ir::Model& model);
// Converts the default domain to opset `version` with ONNX's version converter,
// then, above its newest opset, with onnxkit's own steps (tools/opset_upgrade.h).
Result<std::unique_ptr<ir::Model>> convert_opset(const ir::Model& model, int64_t version);

// The final word before writing: no input left without a producer, nodes in
// order, types re-inferred (declared output shapes that inference now
// contradicts follow it), then ONNX's checker with strict shape inference.
// With `shapeless_outputs`, graph outputs whose shape inference cannot tell
// (declared by element type alone, which the IR allows and runtimes accept)
// are not problems: their names are added there instead.
Status validate_edited_model(ir::Model& model, std::vector<std::string>* shapeless_outputs = nullptr);

}  // namespace onnxkit::tools
