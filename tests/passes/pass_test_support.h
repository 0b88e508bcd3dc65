#pragma once
// Helpers for pass tests: models written in ONNX's text syntax, one pass run
// the way the driver runs it, and numeric equivalence on random inputs.
//
//   auto model = model_from_text(R"(
//     <ir_version: 8, opset_import: ["" : 17]>
//     g (float[2, 3] x) => (float[2, 3] y) { t = Identity(x)  y = Relu(t) })");
//   auto before = clone(*model);
//   EXPECT_EQ(run_pass("eliminate-identity", *model), 1);
//   EXPECT_EQ(count_ops(model->graph(), "Identity"), 0);
//   expect_same_outputs(*before, *model);

#include <memory>
#include <string_view>

#include "ir/model.h"
#include "passes/pass.h"
#include "support/test_support.h"  // model_from_text

namespace onnxkit::testing {

// A deep copy through export and import.
std::unique_ptr<ir::Model> clone(const ir::Model& model);

// Infers shapes into the model's values, then runs the named pass on every
// graph; returns how many rewrites it made. Fails the test when the pass
// does not exist.
size_t run_pass(std::string_view name, ir::Model& model, const passes::PassOptions& options = {});

// Nodes of `op_type` in `graph` and its sub-graphs.
size_t count_ops(const ir::Graph& graph, std::string_view op_type);

// Checks `after` with ONNX's checker, then runs both models on the same
// random inputs (symbolic dims set to 2; floats in [-1, 1)) and expects every
// graph output, matched by position, to agree within the tolerances.
void expect_same_outputs(const ir::Model& before, const ir::Model& after, double atol = 1e-5, double rtol = 1e-5);

}  // namespace onnxkit::testing
