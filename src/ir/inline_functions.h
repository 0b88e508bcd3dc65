#pragma once
// Model-local functions (ModelProto.functions) and their expansion into the
// graphs that call them. A node calls a function when its (domain, op_type,
// overload) is the function's (domain, name, overload); the default domain
// may be spelled "" or "ai.onnx".
//
// Precedence: the IR spec makes a model-local function "a default or
// fallback implementation of the corresponding operator" that a runtime may
// replace by its own kernel, the function's name standing for the op's
// semantics; onnx.proto leaves other clashes to the runtime. So a call that
// InlineOptions::keep_call accepts (the runtime has a kernel for its domain,
// op and opset: a function Relu in the default domain, or Gelu in
// com.microsoft) stays a node and runs that kernel, as ONNX Runtime does;
// every other call, e.g. a function named Relu in a custom domain, is
// expanded. (onnx.inliner expands them all.)

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/model.h"
#include "util/result.h"

namespace onnxkit::ir {

struct InlineOptions {
  // Refuse when the expanded graphs would get more nodes than this: a chain
  // of functions each calling the next twice doubles the count per level.
  uint64_t max_nodes = uint64_t{1} << 24;
  // Calls to leave as they are (null: none); the functions they call are
  // kept in the model then.
  std::function<bool(const onnx::NodeProto& call)> keep_call;
};

struct InlineSummary {
  uint64_t calls = 0;  // call sites expanded, nested ones included
  uint64_t nodes = 0;  // nodes their bodies added
};

// Replaces every call of a model-local function, in the main graph, in
// sub-graphs and in the bodies it expands, by a copy of the function's body:
// formal inputs and outputs become the call's values, every other name of
// the body a fresh one (named "<call node>/<name>") that no graph of the
// model uses, attributes that refer to the function's (ref_attr_name) take
// the call's value or else the function's default, or are left out. The
// functions' opset imports join the model's; a version that differs from the
// model's is refused, as is a function that calls itself, directly or not.
// The model's `functions` are then removed (all of them, unless a call was
// kept). On error the model is unchanged.
Result<InlineSummary> inline_functions(onnx::ModelProto& model, const InlineOptions& options = {});

// The same on the IR: a new model with the calls expanded (its tensors are
// copies). The runtime calls it at session build.
Result<std::unique_ptr<Model>> inline_functions(const Model& model, const InlineOptions& options = {});

// True when some node of the model's graphs calls one of its functions.
bool calls_local_functions(const Model& model);

// A model-local function as `info` and `check` list it.
struct LocalFunction {
  std::string domain;
  std::string name;
  std::string overload;  // "" unless the function is one of several of that name
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<std::string> attributes;         // the names it declares, defaults included
  std::vector<onnx::AttributeProto> defaults;  // the values it gives some of them
  size_t nodes = 0;                            // of its body, sub-graphs included
  size_t call_sites = 0;                       // nodes calling it, in the graphs and in other functions
};

// "__main__:Block(x, w) -> (y), attributes [eps], 5 nodes, 3 call sites".
std::string describe(const LocalFunction& function);

// Needs the whole model, graph included, to count the call sites.
std::vector<LocalFunction> list_local_functions(const onnx::ModelProto& model);

}  // namespace onnxkit::ir
