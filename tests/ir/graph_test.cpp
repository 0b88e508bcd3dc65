// Editing primitives of the IR: use lists, sub-graph scoping, removal,
// cleanup, topological sort, names.

#include <gtest/gtest.h>

#include <algorithm>

#include "ir/model.h"
#include "support/test_support.h"

namespace onnxkit {
namespace {

using testing::model_from_text;
using testing::op_types;

constexpr const char* kChain = R"(
<ir_version: 8, opset_import: ["" : 15]>
chain (float[2] x) => (float[2] z) {
  y = Relu(x)
  z = Add(y, y)
}
)";

constexpr const char* kIf = R"(
<ir_version: 8, opset_import: ["" : 15]>
branches (float[2] x, bool c) => (float[2] y) {
  y = If (c) <then_branch = then_g () => (float[2] t) { t = Relu(x) },
              else_branch = else_g () => (float[2] e) { e = Neg(x) }>
}
)";

TEST(Graph, ValuesKnowProducerAndConsumers) {
  auto model = model_from_text(kChain);
  ir::Graph& g = model->graph();
  ir::Value* y = g.find_value("y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->producer()->op_type(), "Relu");
  ASSERT_EQ(y->uses().size(), 2u);
  EXPECT_EQ(y->uses()[0].node->op_type(), "Add");
  EXPECT_EQ(y->uses()[0].index, 0u);
  EXPECT_EQ(y->uses()[1].index, 1u);
  EXPECT_TRUE(g.find_value("z")->is_graph_output());
  EXPECT_TRUE(g.find_value("x")->is_graph_input());
}

TEST(Graph, SubgraphNodesUseOuterValuesDirectly) {
  auto model = model_from_text(kIf);
  ir::Graph& g = model->graph();
  ir::Value* x = g.find_value("x");
  ASSERT_EQ(x->uses().size(), 2u);  // Relu in then_branch, Neg in else_branch
  for (const ir::Use& use : x->uses()) {
    EXPECT_NE(use.node->graph(), &g);
    EXPECT_EQ(use.node->graph()->parent_graph(), &g);
  }
  ir::Node& if_node = g.nodes().front();
  ASSERT_EQ(if_node.subgraphs().size(), 2u);
  EXPECT_EQ(if_node.subgraphs()[0]->lookup("x"), x);
  EXPECT_EQ(if_node.subgraphs()[0]->find_value("x"), nullptr);
}

TEST(Graph, ReplaceAllUsesReachesSubgraphs) {
  auto model = model_from_text(kIf);
  ir::Graph& g = model->graph();
  ir::Value* x = g.find_value("x");
  ir::Node* abs = g.insert_node(&g.nodes().front(), "Abs", {x}, {"x_abs"});
  ir::Value* x_abs = abs->output(0);
  g.replace_all_uses(x, x_abs);
  abs->set_input(0, x);  // replace_all_uses moved the Abs input too; put it back
  EXPECT_EQ(x->uses().size(), 1u);
  EXPECT_EQ(x_abs->uses().size(), 2u);
  auto proto = ir::export_model(*model);
  const auto& then_branch = proto.graph().node(1).attribute(0).g();
  EXPECT_EQ(then_branch.node(0).input(0), "x_abs");
}

TEST(Graph, RemoveNodeKeepsValuesStillInUse) {
  auto model = model_from_text(kChain);
  ir::Graph& g = model->graph();
  ir::Node* relu = g.find_value("y")->producer();
  g.remove_node(relu);
  ir::Value* y = g.find_value("y");
  ASSERT_NE(y, nullptr) << "y is still read by Add";
  EXPECT_EQ(y->producer(), nullptr);
  EXPECT_EQ(g.find_value("x")->uses().size(), 0u);
}

TEST(Graph, RemoveNodeDropsOuterUsesOfItsSubgraphs) {
  auto model = model_from_text(kIf);
  ir::Graph& g = model->graph();
  ir::Value* x = g.find_value("x");
  ASSERT_EQ(x->uses().size(), 2u);
  g.remove_node(&g.nodes().front());
  EXPECT_TRUE(x->uses().empty());
}

TEST(Graph, AbsorbSubgraphMovesABranchIntoItsParent) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 15]>
branches (float[2] x, bool c) => (float[2] y) {
  y = If (c) <then_branch = then_g () => (float[2] t) <float[2] k = {1, 2}> { m = Mul(x, k)  t = Relu(m) },
              else_branch = else_g () => (float[2] e) { e = Neg(x) }>
}
)");
  ir::Graph& g = model->graph();
  ir::Node* if_node = &g.nodes().front();
  ir::Graph& then_g = *if_node->subgraphs().front();
  EXPECT_FALSE(g.absorb_subgraph(g, if_node).ok());  // not a sub-graph of g
  ASSERT_TRUE(g.absorb_subgraph(then_g, if_node).ok());
  EXPECT_EQ(op_types(g), (std::vector<std::string>{"Mul", "Relu", "If"}));
  EXPECT_TRUE(then_g.nodes().empty());
  ir::Value* t = g.find_value("t");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->owner(), &g);
  EXPECT_EQ(t->producer()->graph(), &g);
  ASSERT_NE(g.find_value("k"), nullptr);
  EXPECT_NE(g.find_value("k")->initializer(), nullptr);
  EXPECT_EQ(then_g.outputs().front(), t);  // still listed until the If goes
  // Rewire the If's reader to the absorbed value, then drop the If.
  g.replace_all_uses(g.find_value("y"), t);
  g.set_output(0, t);
  g.remove_node(if_node);
  EXPECT_EQ(g.find_value("x")->uses().size(), 1u);  // the else branch's use went with the If
  auto proto = ir::export_model(*model);
  EXPECT_EQ(proto.graph().node_size(), 2);
  EXPECT_EQ(proto.graph().initializer_size(), 1);
}

TEST(Graph, CleanupRemovesWhatNoOutputNeeds) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 15]>
g (float[2] x, float[2] unused) => (float[2] y) <float[2] w = {1.0, 2.0}, float[2] dead_w = {3.0, 4.0}> {
  a = Mul(x, w)
  dead = Mul(x, dead_w)
  dead2 = Relu(dead)
  y = Relu(a)
}
)");
  ir::Graph& g = model->graph();
  g.add_value_info(g.find_value("dead2"));
  EXPECT_EQ(g.cleanup(), 2u);
  EXPECT_EQ(op_types(g), (std::vector<std::string>{"Mul", "Relu"}));
  EXPECT_EQ(g.find_value("dead_w"), nullptr);
  EXPECT_EQ(g.find_value("dead2"), nullptr);
  EXPECT_TRUE(g.value_info().empty());
  EXPECT_EQ(g.initializers().size(), 1u);
  EXPECT_EQ(g.inputs().size(), 2u) << "inputs stay unless asked";
  g.cleanup(/*remove_unused_inputs=*/true);
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.inputs()[0]->name(), "x");
}

TEST(Graph, CleanupKeepsOuterValuesThatSubgraphsRead) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 15]>
g (float[2] x, bool c) => (float[2] y) {
  s = Sigmoid(x)
  y = If (c) <then_branch = t () => (float[2] t_out) { t_out = Relu(s) },
              else_branch = e () => (float[2] e_out) { e_out = Neg(s) }>
}
)");
  ir::Graph& g = model->graph();
  EXPECT_EQ(g.cleanup(), 0u);
  EXPECT_EQ(op_types(g), (std::vector<std::string>{"Sigmoid", "If"}));
}

TEST(Graph, ToposortOrdersProducersFirstAndIsStable) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 15]>
g (float[2] x) => (float[2] z, float[2] w) {
  z = Relu(y)
  w = Neg(x)
  y = Abs(x)
}
)");
  ir::Graph& g = model->graph();
  ASSERT_TRUE(g.toposort().ok());
  EXPECT_EQ(op_types(g), (std::vector<std::string>{"Neg", "Abs", "Relu"}));
}

TEST(Graph, ToposortAccountsForSubgraphReads) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 15]>
g (float[2] x, bool c) => (float[2] y) {
  y = If (c) <then_branch = t () => (float[2] t_out) { t_out = Relu(s) },
              else_branch = e () => (float[2] e_out) { e_out = Neg(x) }>
  s = Sigmoid(x)
}
)");
  ASSERT_TRUE(model->graph().toposort().ok());
  EXPECT_EQ(op_types(model->graph()), (std::vector<std::string>{"Sigmoid", "If"}));
}

TEST(Graph, ToposortReportsACycle) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 15]>
g (float[2] x) => (float[2] b) {
  a = Add(x, b)
  b = Relu(a)
}
)");
  auto status = model->graph().toposort();
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message().find("cycle"), std::string::npos) << status.error().message();
}

TEST(Graph, UniqueNamesAvoidEveryScope) {
  auto model = model_from_text(kIf);
  ir::Graph& g = model->graph();
  EXPECT_EQ(g.unique_name("fresh"), "fresh");
  EXPECT_EQ(g.unique_name("t"), "t_1") << "'t' is defined inside the then-branch";
  ir::Value* a = g.add_value("x");
  ir::Value* b = g.add_value("x");
  EXPECT_EQ(a->name(), "x_1");
  EXPECT_EQ(b->name(), "x_2");
  g.add_value("x_3");
  EXPECT_EQ(g.add_value("x")->name(), "x_4");
}

TEST(Graph, RenameKeepsInitializerNameInSync) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 15]>
g (float[2] x) => (float[2] y) <float[2] w = {1.0, 2.0}> {
  y = Mul(x, w)
}
)");
  ir::Graph& g = model->graph();
  ir::Value* w = g.find_value("w");
  ASSERT_TRUE(g.rename_value(w, "weight").ok());
  EXPECT_EQ(g.find_value("weight"), w);
  EXPECT_EQ(g.find_value("w"), nullptr);
  auto proto = ir::export_model(*model);
  EXPECT_EQ(proto.graph().initializer(0).name(), "weight");
  EXPECT_EQ(proto.graph().node(0).input(1), "weight");
  EXPECT_FALSE(g.rename_value(w, "x").ok()) << "x is taken";
}

TEST(Graph, InsertedNodesExportInPlace) {
  auto model = model_from_text(kChain);
  ir::Graph& g = model->graph();
  ir::Node* add = g.find_value("z")->producer();
  ir::Node* neg = g.insert_node(add, "Neg", {g.find_value("y")}, {"n"});
  add->set_input(1, neg->output(0));
  EXPECT_EQ(op_types(g), (std::vector<std::string>{"Relu", "Neg", "Add"}));
  g.move_node(neg, nullptr);
  EXPECT_EQ(op_types(g), (std::vector<std::string>{"Relu", "Add", "Neg"}));
  ASSERT_TRUE(g.toposort().ok());
  auto proto = ir::export_model(*model);
  EXPECT_EQ(proto.graph().node(1).op_type(), "Neg");
  EXPECT_EQ(proto.graph().node(2).input(1), "n");
}

TEST(Graph, RemoveInputShiftsLaterUses) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 15]>
g (float[2] a, float[2] b, float[2] c) => (float[2] y) {
  y = Sum(a, b, c)
}
)");
  ir::Graph& g = model->graph();
  ir::Node& sum = g.nodes().front();
  sum.remove_input(0);
  ASSERT_EQ(g.find_value("c")->uses().size(), 1u);
  EXPECT_EQ(g.find_value("c")->uses()[0].index, 1u);
  EXPECT_TRUE(g.find_value("a")->uses().empty());
}

TEST(Graph, ReplacingAGraphAttributeReleasesOuterUses) {
  auto model = model_from_text(kIf);
  ir::Graph& g = model->graph();
  ir::Node& if_node = g.nodes().front();
  onnx::AttributeProto replacement;
  replacement.set_name("then_branch");
  replacement.set_type(onnx::AttributeProto::GRAPH);
  if_node.set_attribute(replacement);
  EXPECT_EQ(g.find_value("x")->uses().size(), 1u);
}

TEST(Graph, DuplicateDefinitionIsAnImportError) {
  auto proto = testing::parse_model_text(kChain);
  proto.mutable_graph()->mutable_node(1)->set_output(0, "y");
  auto model = ir::import_model(proto);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.error().message().find("'y' is defined twice"), std::string::npos) << model.error().message();
}

TEST(Graph, UndefinedNamesSurviveARoundTrip) {
  auto proto = testing::parse_model_text(kChain);
  proto.mutable_graph()->mutable_node(0)->set_input(0, "nowhere");
  auto model = ir::import_model(proto);
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(testing::proto_diff(proto, ir::export_model(**model)), "");
}

}  // namespace
}  // namespace onnxkit
