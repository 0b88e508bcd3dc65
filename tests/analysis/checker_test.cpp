// The checker on models made to break it or to slip past the Debian ONNX
// library's own checks: each problem is reported, named, and nothing
// reaches the library's shape inference that would crash it.
#include <gtest/gtest.h>

#include "analysis/checker.h"
#include "analysis/onnx_inference.h"
#include "support/test_support.h"

namespace onnxkit::testing {
namespace {

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

std::string problems(const analysis::CheckReport& report) {
  std::string out;
  for (const auto& p : report.problems) out += p.location + ": " + p.message + "\n";
  return out;
}

analysis::CheckReport check(const onnx::ModelProto& model, bool full = true) {
  return analysis::check_model(model, ".", {.full = full});
}

constexpr const char* kRelu = R"(
<ir_version: 8, opset_import: ["" : 13, "local" : 1]>
g (float[2] x) => (float[2] y) {
  y = Relu(x)
})";

// A model-local function `name` in domain "local" whose one node calls `callee`.
onnx::FunctionProto calling(const std::string& name, const std::string& callee) {
  onnx::FunctionProto f;
  f.set_domain("local");
  f.set_name(name);
  f.add_input("a");
  f.add_output("b");
  for (const char* domain : {"", "local"}) {
    auto* op = f.add_opset_import();
    op->set_domain(domain);
    op->set_version(domain[0] == '\0' ? 13 : 1);
  }
  onnx::NodeProto* node = f.add_node();
  node->set_domain("local");
  node->set_op_type(callee);
  node->add_input("a");
  node->add_output("b");
  return f;
}

TEST(Checker, RecursiveFunctionsAreAProblemNotAStackOverflow) {
  // ONNX's inference expands calls into bodies without end on these: info,
  // check --full and edit crashed.
  for (const auto& functions : std::vector<std::vector<onnx::FunctionProto>>{
           {calling("F", "F")}, {calling("G", "H"), calling("H", "K"), calling("K", "G")}}) {
    onnx::ModelProto model = parse_model_text(kRelu);
    model.mutable_graph()->mutable_node(0)->set_domain("local");
    model.mutable_graph()->mutable_node(0)->set_op_type(functions[0].name());
    for (const auto& f : functions) *model.add_functions() = f;
    auto report = check(model);
    ASSERT_FALSE(report.valid());
    EXPECT_CONTAINS(problems(report), "calls itself");
    EXPECT_CONTAINS(problems(report), "'local:" + functions[0].name() + "' -> ");
    auto imported = ir::import_model(model);
    ASSERT_TRUE(imported.ok()) << imported.error().message();
    EXPECT_CONTAINS(analysis::infer_types_with_onnx(**imported).warning, "calls itself");
  }
  // Calls that end are fine: F calls G, twice over.
  onnx::ModelProto model = parse_model_text(kRelu);
  *model.add_functions() = calling("F", "G");
  onnx::FunctionProto g = calling("G", "Relu");
  g.mutable_node(0)->set_domain("");
  *model.add_functions() = g;
  *model.mutable_functions(0)->add_node() = model.functions(0).node(0);
  model.mutable_functions(0)->mutable_node(1)->set_output(0, "c");
  EXPECT_EQ(problems(check(model)), "");
}

TEST(Checker, ALongNodeNameInAnInferenceErrorIsReported) {
  // Strict inference names the node in its message; a 32 KB name crashed
  // the std::regex that read it.
  onnx::ModelProto model = parse_model_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x, float[4, 5] w) => (float[2, 5] y) {
  y = MatMul(x, w)
})");
  const std::string name(32768, 'n');
  model.mutable_graph()->mutable_node(0)->set_name(name);
  auto report = check(model);
  ASSERT_EQ(report.problems.size(), 1u) << problems(report);
  EXPECT_EQ(report.problems[0].node_name, name);
  EXPECT_EQ(report.problems[0].node_index, 0);
  EXPECT_CONTAINS(report.problems[0].message, "shape inference");
}

TEST(Checker, AShapeReadingAnUntypedValueIsNotACrash) {
  // ONNX 1.12's data propagation dereferences the type of a Shape node's
  // input: check --full, info, shapes and simplify crashed on a custom op's
  // output read by Shape, and on a Conv that inference refused (found by
  // the load_model fuzzer).
  constexpr const char* kCustom = R"(
<ir_version: 8, opset_import: ["" : 15, "com.example" : 1]>
g (float[1, 3, 8, 8] x) => (int64[4] s, float[2, 3] y) <int64[2] target = {2, 3}> {
  h = com.example.Foo(x)
  s = Shape(h)
  r = Reshape(x, target)
  y = Identity(r)
})";
  onnx::ModelProto custom = parse_model_text(kCustom);
  EXPECT_EQ(problems(check(custom)), "");
  auto imported = ir::import_model(custom);
  ASSERT_TRUE(imported.ok()) << imported.error().message();
  EXPECT_EQ(analysis::infer_types_with_onnx(**imported).warning, "");

  onnx::ModelProto conv = parse_model_text(R"(
<ir_version: 8, opset_import: ["" : 15]>
g (float[1, 3, 8, 8] x, float[4, 3, 3, 3] w) => (int64[4] s) {
  h = Conv <dilations = [1], kernel_shape = [3, 3]> (x, w)
  s = Shape(h)
})");
  EXPECT_CONTAINS(problems(check(conv)),
                  "node #0 (Conv): shape inference: [ShapeInferenceError] Attribute dilations has incorrect size");

  // The same inside an If branch, which the checker infers on its own.
  onnx::ModelProto branch = parse_model_text(R"(
<ir_version: 8, opset_import: ["" : 15, "com.example" : 1]>
g (float[1, 3, 8, 8] x, bool b) => (int64[4] s) {
  s = If (b) <then_branch = t () => (int64[4] t_out) { h = com.example.Foo(x)  t_out = Shape(h) },
              else_branch = e () => (int64[4] e_out) { e_out = Shape(x) }>
})");
  EXPECT_EQ(problems(check(branch)), "");
}

TEST(Checker, DataPropagationStillFindsShapesComputedFromShape) {
  // The guard above leaves data propagation on where Shape reads typed values:
  // z's shape is known only through the values of Shape(x).
  onnx::ModelProto model = parse_model_text(R"(
<ir_version: 8, opset_import: ["" : 15]>
g (float[2, 3] x, float[6] v) => (float[A, B] y) {
  s = Shape(x)
  z = Reshape(v, s)
  y = Identity(z)
})");
  EXPECT_EQ(problems(check(model)), "");
  auto imported = ir::import_model(model);
  ASSERT_TRUE(imported.ok()) << imported.error().message();
  auto types = analysis::infer_types_with_onnx(**imported).types;
  ASSERT_TRUE(types.count("z"));
  const auto& shape = types["z"].tensor_type().shape();
  ASSERT_EQ(shape.dim_size(), 2);
  EXPECT_EQ(shape.dim(0).dim_value(), 2);
  EXPECT_EQ(shape.dim(1).dim_value(), 3);
}

TEST(Checker, StrictInferenceReachesIntoIfBranches) {
  // ONNX 1.12 drops errors inside branches even in strict mode; ONNX Runtime
  // refused such a model ("Graph attribute inferencing failed: Node (add)
  // Op (Add) [ShapeInferenceError] Incompatible dimensions").
  const char* kText = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 4] x, bool b) => (float[2, 4] y) <float[ROWS, 4] c = {VALUES}> {
  y = If (b) <then_branch = t () => (float[2, 4] t_out) { t_out = Identity(x) },
              else_branch = e () => (float[2, 4] e_out) {
                z = If (b) <then_branch = t2 () => (float[2, 4] t2_out) { t2_out = Add(x, c) },
                            else_branch = e2 () => (float[2, 4] e2_out) { e2_out = Identity(x) }>
                e_out = Identity(z)
              }>
})";
  auto text = [&](int rows) {
    std::string t = kText, values;
    for (int i = 0; i < rows * 4; ++i) values += i == 0 ? "1" : ", 1";
    t.replace(t.find("ROWS"), 4, std::to_string(rows));
    t.replace(t.find("VALUES"), 6, values);
    return t;
  };
  auto report = check(parse_model_text(text(3)));
  ASSERT_EQ(report.problems.size(), 1u) << problems(report);
  EXPECT_CONTAINS(problems(report), "node #0 (Add) in the then_branch of node #0 (If) in the else_branch of node #0 (If)");
  EXPECT_CONTAINS(problems(report), "Incompatible dimensions");

  EXPECT_EQ(problems(check(parse_model_text(text(1)))), "");
}

TEST(Checker, WhatTheOnnxLibraryLetsThrough) {
  onnx::ModelProto twice = parse_model_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x, float[2] x) => (float[2] y) {
  y = Relu(x)
})");
  EXPECT_CONTAINS(problems(check(twice, false)), "graph input 'x': is listed twice");

  onnx::ModelProto negative = parse_model_text(kRelu);
  negative.set_ir_version(-3);
  EXPECT_CONTAINS(problems(check(negative, false)), "model: ir_version -3 is negative");

  onnx::ModelProto initializers = parse_model_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x) => (float[2] y) <float[2] w = {1.0, 2.0}> {
  y = Add(x, w)
})");
  *initializers.mutable_graph()->add_initializer() = initializers.graph().initializer(0);
  EXPECT_CONTAINS(problems(check(initializers, false)), "initializer 'w': is defined twice");
}

TEST(Checker, OpsNewerThanTheLibrarysSchemasKeepTheirLeastCounts) {
  // Pad and Split changed at opset 18, after the library's schemas: their
  // least counts still hold.
  onnx::ModelProto newer = parse_model_text(R"(
<ir_version: 8, opset_import: ["" : 18]>
g (float[4] x) => (float[4] y) {
  y = Pad(x)
})");
  EXPECT_CONTAINS(problems(check(newer, false)), "node #0 (Pad): Pad takes at least 2 inputs, got 1");
}

}  // namespace
}  // namespace onnxkit::testing
