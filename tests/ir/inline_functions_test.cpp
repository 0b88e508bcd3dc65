// The structure of inlined models: names, attribute references, refusals.
// The numbers they compute are tested end to end against ONNX Runtime in
// tests/cli/test_functions.py.

#include "ir/inline_functions.h"

#include <gtest/gtest.h>
#include <onnx/defs/parser.h>

#include "support/test_support.h"

namespace onnxkit {
namespace {

onnx::FunctionProto parse_function(const char* text) {
  onnx::FunctionProto f;
  onnx::OnnxParser parser(text);
  auto status = parser.Parse(f);
  EXPECT_TRUE(status.IsOK()) << status.ErrorMessage();
  return f;
}

// local:Act(x) => y = LeakyRelu<alpha = @a>(x); intermediates named t.
constexpr const char* kAct = R"(
  <domain: "local", opset_import: ["" : 17]>
  Act <a> (x) => (y) {
    t = Neg(x)
    y = LeakyRelu <alpha: float = @a> (t)
  }
)";

constexpr const char* kTwice = R"(
  <domain: "local", opset_import: ["" : 17, "local" : 1]>
  Twice <a> (x) => (y) {
    t = local.Act <a: float = @a> (x)
    y = local.Act (t)
  }
)";

onnx::ModelProto model_calling(const char* graph, std::vector<const char*> functions) {
  onnx::ModelProto model = testing::parse_model_text(graph);
  for (const char* f : functions) *model.add_functions() = parse_function(f);
  return model;
}

TEST(InlineFunctions, NestedCallsGetFreshNamesAndResolvedAttributes) {
  auto model = model_calling(R"(
    <ir_version: 8, opset_import: ["" : 17, "local" : 1]>
    g (float[2] x) => (float[2] y) {
      t = Relu(x)
      u = Relu(t)
      y = local.Twice <a = 0.25> (u)
    }
  )",
                             {kAct, kTwice});
  // The graph already holds "call/t", the name the body's t would get.
  model.mutable_graph()->mutable_node(1)->set_output(0, "call/t");
  model.mutable_graph()->mutable_node(2)->set_input(0, "call/t");
  model.mutable_graph()->mutable_node(2)->set_name("call");
  auto summary = ir::inline_functions(model);
  ASSERT_TRUE(summary.ok()) << summary.error().message();
  EXPECT_EQ(summary->calls, 3u);  // Twice, and Act twice inside it
  EXPECT_EQ(model.functions_size(), 0);
  ASSERT_EQ(model.graph().node_size(), 6);
  std::set<std::string> outputs;
  for (const auto& n : model.graph().node()) {
    EXPECT_TRUE(outputs.insert(n.output(0)).second) << n.output(0) << " defined twice";
    EXPECT_NE(n.domain(), "local");
  }
  EXPECT_EQ(model.graph().node(5).output(0), "y");
  const auto& first = model.graph().node(3);  // LeakyRelu of the first Act
  ASSERT_EQ(first.op_type(), "LeakyRelu");
  ASSERT_EQ(first.attribute_size(), 1);
  EXPECT_FLOAT_EQ(first.attribute(0).f(), 0.25f);
  EXPECT_TRUE(first.attribute(0).ref_attr_name().empty());
  // The second Act gets no `a`: the attribute is left out (LeakyRelu's default).
  EXPECT_EQ(model.graph().node(5).attribute_size(), 0);
  // Body names are prefixed with the call's name and never reuse the graph's.
  EXPECT_EQ(model.graph().node(2).output(0).rfind("call/", 0), 0u) << model.graph().node(2).output(0);
  EXPECT_NE(model.graph().node(2).output(0), "call/t");
}

TEST(InlineFunctions, RecursionIsRefusedAndTheModelKept) {
  auto model = model_calling(R"(
    <ir_version: 8, opset_import: ["" : 17, "local" : 1]>
    g (float[2] x) => (float[2] y) { y = local.F (x) }
  )",
                             {R"(
    <domain: "local", opset_import: ["" : 17, "local" : 1]>
    F (x) => (y) { y = local.G (x) }
  )",
                              R"(
    <domain: "local", opset_import: ["" : 17, "local" : 1]>
    G (x) => (y) { y = local.F (x) }
  )"});
  const std::string before = model.SerializeAsString();
  auto summary = ir::inline_functions(model);
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.error().message().find("'local:F' calls itself ('local:F' -> 'local:G' -> 'local:F')"), std::string::npos)
      << summary.error().message();
  EXPECT_EQ(model.SerializeAsString(), before);
}

TEST(InlineFunctions, ExpansionIsCapped) {
  auto model = model_calling(R"(
    <ir_version: 8, opset_import: ["" : 17, "local" : 1]>
    g (float[2] x) => (float[2] y) { y = local.Twice <a = 0.5> (x) }
  )",
                             {kAct, kTwice});
  ir::InlineOptions options;
  options.max_nodes = 3;
  auto summary = ir::inline_functions(model, options);
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.error().message().find("more than 3 nodes"), std::string::npos) << summary.error().message();
}

TEST(InlineFunctions, ListsFunctionsWithCallSites) {
  auto model = model_calling(R"(
    <ir_version: 8, opset_import: ["" : 17, "local" : 1]>
    g (float[2] x) => (float[2] y) {
      t = local.Act <a = 0.1> (x)
      y = local.Twice <a = 0.5> (t)
    }
  )",
                             {kAct, kTwice});
  auto functions = ir::list_local_functions(model);
  ASSERT_EQ(functions.size(), 2u);
  EXPECT_EQ(functions[0].call_sites, 3u);  // one in the graph, two in Twice
  EXPECT_EQ(functions[1].call_sites, 1u);
  EXPECT_EQ(ir::describe(functions[0]), "local:Act(x) -> (y), attributes [a], 2 nodes, 3 call sites");
}

}  // namespace
}  // namespace onnxkit
