#pragma once
// Shape inference by ONNX's own C++ library. It knows operator schemas up to
// opset 17; for newer opsets it applies the newest schema it has, so shapes
// of ops changed since may be missing (never wrong: errors are dropped).

#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/model.h"

namespace onnxkit::analysis {

// Value name -> inferred type, for the main graph and its sub-graphs
// (declared types included).
using TypeMap = std::unordered_map<std::string, onnx::TypeProto>;

struct InferenceResult {
  TypeMap types;
  std::string warning;  // non-empty when inference stopped early, and why
};

// Numbers for the symbolic dims of the main graph's inputs and outputs, so
// that inference gives numbers downstream (costs need them): a whole shape
// per input, else by the dim's name, else `others` when set.
struct DimBindings {
  std::map<std::string, std::vector<int64_t>, std::less<>> input_shapes;
  std::map<std::string, int64_t, std::less<>> by_name;
  std::optional<int64_t> others;
  bool empty() const { return input_shapes.empty() && by_name.empty() && !others; }
};

InferenceResult infer_types_with_onnx(const ir::Model& model, const DimBindings& dims = {});

}  // namespace onnxkit::analysis

namespace onnxkit::analysis {

// Infers the main graph's types and writes them into its values (graph
// inputs and initializers keep theirs; what inference no longer knows is
// cleared, so no stale shape survives a rewrite). Ops newer than the
// library's schemas get their types from our own rules (newer_ops.h), in
// rounds with the library's inference, and so do the symbolic rules
// (symbolic_shapes.h) where the library loses a shape. Returns the warning.
std::string apply_inferred_types(ir::Model& model);

// The types apply_inferred_types would find, symbolic rules included, with
// `dims` bound as for infer_types_with_onnx; `model` is left as it is (the
// work is done on a copy of its skeleton, without weights).
InferenceResult infer_types(const ir::Model& model, const DimBindings& dims = {});

}  // namespace onnxkit::analysis
