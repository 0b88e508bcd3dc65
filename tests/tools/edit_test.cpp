// The graph-surgery API (tools/edit.h) and the operations of `onnxkit edit`
// (tools/edit_file.h), on small models in ONNX's text syntax.

#include <gtest/gtest.h>
#include <onnx/defs/attr_proto_util.h>

#include <cmath>
#include <limits>

#include "runtime/session.h"
#include "runtime/tensor_proto.h"
#include "support/test_support.h"
#include "tools/edit.h"
#include "tools/edit_file.h"

namespace onnxkit {
namespace {

using testing::model_from_text;
using testing::op_types;

// Names every node of the main graph after its first output ("n_<output>"),
// since the text syntax of this ONNX version leaves nodes unnamed.
void name_nodes(ir::Model& model) {
  for (ir::Node& n : model.graph().nodes()) n.set_name("n_" + n.output(0)->name());
}

std::vector<float> run_one(const ir::Model& model, const runtime::NamedValues& feeds) {
  auto exported = ir::import_model(ir::export_model(model));
  EXPECT_TRUE(exported.ok());
  auto session = runtime::Session::create(std::shared_ptr<const ir::Model>(std::move(exported).value()));
  EXPECT_TRUE(session.ok()) << session.error().message();
  auto out = (*session)->run(feeds);
  EXPECT_TRUE(out.ok()) << out.error().message();
  auto values = (*out)[0].tensor().values<float>();
  return {values.begin(), values.end()};
}

constexpr const char* kChain = R"(
<ir_version: 8, opset_import: ["" : 17]>
chain (float[1, 4] x) => (float[1, 4] z) {
  y = Relu(x)
  i = Identity(y)
  z = Add(i, y)
}
)";

// --- finding -----------------------------------------------------------------

TEST(EditFind, UnknownNamesSuggestTheClosestOne) {
  auto model = model_from_text(kChain);
  name_nodes(*model);
  ir::Graph& g = model->graph();
  ASSERT_TRUE(tools::find_node(g, "n_y").ok());
  auto typo = tools::find_node(g, "n_yy");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message().find("did you mean 'n_y'"), std::string::npos) << typo.error().message();
  auto tensor_for_node = tools::find_node(g, "y");
  ASSERT_FALSE(tensor_for_node.ok());
  EXPECT_NE(tensor_for_node.error().message().find("produced by Relu node 'n_y'"), std::string::npos);
  auto node_for_tensor = tools::find_tensor(g, "n_z");
  ASSERT_FALSE(node_for_tensor.ok());
  EXPECT_NE(node_for_tensor.error().message().find("whose output is 'z'"), std::string::npos);
  EXPECT_EQ(tools::find_nodes_by_op(g, "Identity").size(), 1u);
}

// --- nodes -----------------------------------------------------------------

TEST(EditNodes, RemoveNodeBypassesIt) {
  auto model = model_from_text(kChain);
  ir::Graph& g = model->graph();
  ASSERT_TRUE(tools::remove_node(*g.find_value("i")->producer()).ok());
  EXPECT_EQ(op_types(g), (std::vector<std::string>{"Relu", "Add"}));
  EXPECT_EQ(g.find_value("z")->producer()->input(0), g.find_value("y"));
  EXPECT_TRUE(tools::validate_edited_model(*model).ok());
}

TEST(EditNodes, RemovingANodeWithoutInputThatIsUsedIsRefused) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y) {
  k = Constant <value = float[2] {1.0, 2.0}> ()
  y = Add(x, k)
}
)");
  ir::Graph& g = model->graph();
  auto removed = tools::remove_node(*g.find_value("k")->producer());
  ASSERT_FALSE(removed.ok());
  EXPECT_NE(removed.error().message().find("Add node"), std::string::npos) << removed.error().message();
  EXPECT_EQ(g.nodes().size(), 2u);
}

TEST(EditNodes, ReplaceNodeKeepsNameInputsAndOutputs) {
  auto model = model_from_text(kChain);
  name_nodes(*model);
  ir::Graph& g = model->graph();
  auto fresh = tools::replace_node(*g.find_value("y")->producer(), "Sigmoid");
  ASSERT_TRUE(fresh.ok()) << fresh.error().message();
  EXPECT_EQ((*fresh)->name(), "n_y");
  EXPECT_EQ((*fresh)->output(0)->name(), "y");
  EXPECT_EQ(op_types(g), (std::vector<std::string>{"Sigmoid", "Identity", "Add"}));
  EXPECT_TRUE(tools::validate_edited_model(*model).ok());
}

constexpr const char* kConstantIf = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y) {
  c = Constant <value = bool {0}> ()
  y = If (c) <then_branch = then_g () => (float[2] t) { t = Relu(x) },
              else_branch = else_g () => (float[2] e) { n = Neg(x)  e = Sigmoid(n) }>
}
)";

TEST(EditNodes, InlineIfKeepsTheBranchItsConstantConditionTakes) {
  auto model = model_from_text(kConstantIf);
  ir::Graph& g = model->graph();
  ir::Node* node = g.find_value("y")->producer();
  ASSERT_EQ(tools::constant_if_condition(*node), std::optional<bool>(false));
  ASSERT_TRUE(tools::inline_if(*node).ok());
  EXPECT_EQ(op_types(g), (std::vector<std::string>{"Neg", "Sigmoid"}));
  EXPECT_TRUE(g.find_value("y")->is_graph_output());
  EXPECT_EQ(g.find_value("y")->producer()->op_type(), "Sigmoid");
  EXPECT_TRUE(tools::validate_edited_model(*model).ok());
}

TEST(EditNodes, AnIfWithAnInputAsConditionStays) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x, bool c) => (float[2] y) {
  y = If (c) <then_branch = then_g () => (float[2] t) { t = Relu(x) },
              else_branch = else_g () => (float[2] e) { e = Neg(x) }>
}
)");
  std::vector<std::string> skipped;
  auto removed = tools::remove_op(*model, "If", &skipped);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 0u);
  EXPECT_EQ(skipped.size(), 1u);
  EXPECT_FALSE(tools::inline_if(model->graph().nodes().front()).ok());
}

TEST(EditNodes, RenameReachesSubgraphs) {
  auto model = model_from_text(kConstantIf);
  ir::Graph& g = model->graph();
  ASSERT_TRUE(tools::rename_tensor(*g.find_value("x"), "image").ok());
  onnx::ModelProto proto = ir::export_model(*model);
  EXPECT_EQ(proto.graph().input(0).name(), "image");
  EXPECT_EQ(proto.graph().node(1).attribute(0).g().node(0).input(0), "image");
  EXPECT_FALSE(tools::rename_tensor(*g.find_value("image"), "y").ok());  // taken
}

TEST(EditNodes, SetNodeInputFollowsTheSchema) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 1, 2, 2] x, int64[4] sizes) => (float[1, 1, 4, 4] y) {
  y = Resize(x, , , sizes)
}
)");
  ir::Graph& g = model->graph();
  ir::Node* resize = g.find_value("y")->producer();
  auto scales = tools::parse_tensor_literal("float:[1,1,2,2]");
  ASSERT_TRUE(scales.ok());
  ir::Value* s = g.add_initializer("scales", *scales);
  ASSERT_TRUE(tools::set_node_input(*resize, 2, s).ok());
  ASSERT_TRUE(tools::set_node_input(*resize, 3, nullptr).ok());
  EXPECT_EQ(resize->inputs().size(), 3u);  // the trailing omitted input is dropped
  auto required = tools::set_node_input(*resize, 0, nullptr);
  ASSERT_FALSE(required.ok());
  EXPECT_NE(required.error().message().find("required"), std::string::npos);
  EXPECT_FALSE(tools::set_node_input(*resize, 7, s).ok());
  ASSERT_TRUE(tools::remove_graph_input(*model, "sizes").ok());
  EXPECT_TRUE(tools::validate_edited_model(*model).ok());
  EXPECT_EQ(tools::input_name(*resize, 2), "scales");
}

// --- attributes ----------------------------------------------------------------

TEST(EditAttributes, ValuesAreTypedByTheSchema) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 4, 4] x, float[2] s, float[2] b) => (float[1, 2, 4, 4] y) {
  y = InstanceNormalization(x, s, b)
}
)");
  ir::Node& node = model->graph().nodes().front();
  // "1" is an int literal, but epsilon is a float.
  auto eps = tools::parse_attribute(node, "epsilon", "1");
  ASSERT_TRUE(eps.ok());
  EXPECT_EQ(eps->type(), onnx::AttributeProto::FLOAT);
  EXPECT_FLOAT_EQ(eps->f(), 1.0f);
  ASSERT_TRUE(tools::set_attribute(node, onnx::MakeAttribute("epsilon", 1e-5f)).ok());
  EXPECT_FLOAT_EQ(node.attr_float("epsilon", 0), 1e-5f);
  auto wrong = tools::set_attribute(node, onnx::MakeAttribute("epsilon", int64_t{1}));
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message().find("is a float, not an int"), std::string::npos) << wrong.error().message();
  auto not_a_number = tools::parse_attribute(node, "epsilon", "small");
  ASSERT_FALSE(not_a_number.ok());
  EXPECT_NE(not_a_number.error().message().find("'small' is not a number"), std::string::npos);
  auto typo = tools::parse_attribute(node, "epsilom", "1e-5");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message().find("did you mean 'epsilon'"), std::string::npos);
  EXPECT_TRUE(tools::delete_attribute(node, "epsilon").ok());
  EXPECT_FALSE(tools::delete_attribute(node, "epsilon").ok());
}

TEST(EditAttributes, EveryKindOfLiteral) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17, "custom" : 1]>
g (float[1, 1, 4, 4] x, int64[2] shape) => (float[1, 1, 4, 4] y) {
  y = Conv(x, x)
  z = ConstantOfShape(shape)
  w = custom.Thing(x)
}
)");
  auto it = model->graph().nodes().begin();
  ir::Node& conv = *it++;
  ir::Node& fill = *it++;
  ir::Node& custom = *it;
  auto pads = tools::parse_attribute(conv, "pads", "[1, 1, 1, 1]");
  ASSERT_TRUE(pads.ok());
  EXPECT_EQ(pads->type(), onnx::AttributeProto::INTS);
  EXPECT_EQ(pads->ints_size(), 4);
  auto pad_mode = tools::parse_attribute(conv, "auto_pad", "SAME_UPPER");
  ASSERT_TRUE(pad_mode.ok());
  EXPECT_EQ(pad_mode->s(), "SAME_UPPER");
  auto value = tools::parse_attribute(fill, "value", "float:[0.5]");
  ASSERT_TRUE(value.ok()) << value.error().message();
  EXPECT_EQ(value->type(), onnx::AttributeProto::TENSOR);
  // No schema: the literal decides.
  EXPECT_EQ(tools::parse_attribute(custom, "a", "3")->type(), onnx::AttributeProto::INT);
  EXPECT_EQ(tools::parse_attribute(custom, "b", "3.5")->type(), onnx::AttributeProto::FLOAT);
  EXPECT_EQ(tools::parse_attribute(custom, "c", "[1.5, 2]")->type(), onnx::AttributeProto::FLOATS);
  EXPECT_EQ(tools::parse_attribute(custom, "d", "[a, b]")->type(), onnx::AttributeProto::STRINGS);
  EXPECT_EQ(tools::parse_attribute(custom, "e", "linear")->type(), onnx::AttributeProto::STRING);
  ASSERT_TRUE(tools::set_attribute(custom, *tools::parse_attribute(custom, "a", "3")).ok());
  // Then the attribute the node has decides.
  EXPECT_EQ(tools::parse_attribute(custom, "a", "4")->type(), onnx::AttributeProto::INT);
  EXPECT_FALSE(tools::parse_attribute(custom, "a", "4.5").ok());
}

TEST(EditTensors, Literals) {
  auto t = tools::parse_tensor_literal("int64:[[1, 2, 3], [4, 5, 6]]");
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(std::vector<int64_t>(t->dims().begin(), t->dims().end()), (std::vector<int64_t>{2, 3}));
  auto values = runtime::tensor_from_proto(*t);
  ASSERT_TRUE(values.ok());
  EXPECT_EQ(values->values<int64_t>()[5], 6);
  auto scalar = tools::parse_tensor_literal("float:0.5");
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(scalar->dims_size(), 0);
  EXPECT_TRUE(tools::parse_tensor_literal("bool:[true, 0]").ok());
  EXPECT_FALSE(tools::parse_tensor_literal("int64:[[1, 2], [3]]").ok());  // ragged
  EXPECT_FALSE(tools::parse_tensor_literal("uint8:[-1]").ok());
  EXPECT_FALSE(tools::parse_tensor_literal("int8:[300]").ok());
  EXPECT_FALSE(tools::parse_tensor_literal("int64:[1.5]").ok());
  EXPECT_FALSE(tools::parse_tensor_literal("complex:[1]").ok());
  EXPECT_TRUE(tools::looks_like_tensor_literal("int64:[-1,4096]"));
  EXPECT_FALSE(tools::looks_like_tensor_literal("/conv1/Conv_output_0"));
}

TEST(EditTensors, LiteralsBeyondJson) {
  // JSON's numbers, and the words numpy prints that JSON lacks.
  auto floats = tools::parse_tensor_literal("float:[nan, -inf, inf, 1e-3, -2]");
  ASSERT_TRUE(floats.ok()) << floats.error().message();
  auto f = runtime::tensor_from_proto(*floats);
  ASSERT_TRUE(f.ok());
  auto v = f->values<float>();
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(v[2], std::numeric_limits<float>::infinity());
  EXPECT_FLOAT_EQ(v[3], 1e-3f);
  EXPECT_EQ(v[4], -2.0f);
  auto bools = tools::parse_tensor_literal("bool:[True, False, 1, false]");
  ASSERT_TRUE(bools.ok()) << bools.error().message();
  EXPECT_EQ(runtime::tensor_from_proto(*bools)->values<bool>()[0], true);
  auto big = tools::parse_tensor_literal("uint64:[18446744073709551615]");
  ASSERT_TRUE(big.ok()) << big.error().message();
  EXPECT_EQ(runtime::tensor_from_proto(*big)->values<uint64_t>()[0], std::numeric_limits<uint64_t>::max());
  auto empty = tools::parse_tensor_literal("float:[[], []]");
  ASSERT_TRUE(empty.ok()) << empty.error().message();
  EXPECT_EQ(std::vector<int64_t>(empty->dims().begin(), empty->dims().end()), (std::vector<int64_t>{2, 0}));
  for (const char* bad : {"int64:[1, [2]]", "int64:[[1], 2]", "int64:[1e3]", "float:[1,]", "float:{\"a\": 1}", "float:[null]",
                          "float:[1] 2", "int64:[-9223372036854775809]"})
    EXPECT_FALSE(tools::parse_tensor_literal(bad).ok()) << bad;
  // Nesting 100,000 deep recursed once per '[' in the hand-written parser.
  const std::string deep = "float:" + std::string(100000, '[') + "1" + std::string(100000, ']');
  auto refused = tools::parse_tensor_literal(deep);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("nested deeper than 64 levels"), std::string::npos);
  EXPECT_LT(refused.error().message().size(), 200u);  // the literal is quoted by its start
}

TEST(EditTensors, SetInitializerKeepsTheDeclaredShapeInStep) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 3] x, float[3] w) => (float[1, 3] y) <float[3] w = {1.0, 2.0, 3.0}> {
  y = Mul(x, w)
}
)");
  ir::Value* w = model->graph().find_value("w");
  ASSERT_TRUE(tools::set_initializer(*w, *tools::parse_tensor_literal("float:[[4.0]]")).ok());
  EXPECT_EQ(w->static_shape(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(w->initializer()->dims_size(), 2);
  EXPECT_FALSE(tools::set_initializer(*w, *tools::parse_tensor_literal("int64:[1]")).ok());
  EXPECT_FALSE(tools::set_initializer(*model->graph().find_value("y"), *tools::parse_tensor_literal("float:[1]")).ok());
}

// --- graph inputs and outputs, whole-model fixes -------------------------------

TEST(EditModel, AddOutputTakesTheInferredType) {
  auto model = model_from_text(kChain);
  ir::Value* y = model->graph().find_value("y");
  ASSERT_TRUE(tools::add_graph_output(*model, *y).ok());
  ASSERT_TRUE(y->is_graph_output());
  EXPECT_EQ(y->elem_type(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(y->static_shape(), (std::vector<int64_t>{1, 4}));
  EXPECT_TRUE(tools::remove_graph_output(*model, "y").ok());
  EXPECT_FALSE(tools::remove_graph_output(*model, "y").ok());
  EXPECT_EQ(tools::add_all_outputs(*model), 2u);  // y and i; z is one already
  EXPECT_EQ(model->graph().outputs().size(), 3u);
  EXPECT_TRUE(tools::validate_edited_model(*model).ok());
}

TEST(EditModel, FreezeInitializersDropsOnlyTheInputsWithData) {
  // An IR 3 model must list its initializer w as an input; x has no data and stays.
  auto model = model_from_text(R"(
<ir_version: 3, opset_import: ["" : 17]>
g (float[1, 3] x, float[3] w) => (float[1, 3] y) <float[3] w = {1.0, 2.0, 3.0}> {
  y = Mul(x, w)
}
)");
  EXPECT_EQ(tools::describe_initializer_inputs(*model), "1: 'w'");
  EXPECT_EQ(tools::freeze_initializers(*model), 1u);
  ASSERT_EQ(model->graph().inputs().size(), 1u);
  EXPECT_EQ(model->graph().inputs()[0]->name(), "x");
  EXPECT_NE(model->graph().find_value("w")->constant_tensor(), nullptr);  // a constant now, not a default
  EXPECT_EQ(model->header().ir_version(), 4);
  EXPECT_EQ(tools::describe_initializer_inputs(*model), "");
  EXPECT_EQ(tools::freeze_initializers(*model), 0u);
  EXPECT_TRUE(tools::validate_edited_model(*model).ok());

  // Many: the description names three; IR 8 stays.
  auto many = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1] x, float[1] a, float[1] b, float[1] c, float[1] d) => (float[1] y)
    <float[1] a = {1.0}, float[1] b = {2.0}, float[1] c = {3.0}, float[1] d = {4.0}> {
  s = Sum(x, a, b, c, d)
  y = Identity(s)
}
)");
  EXPECT_EQ(tools::describe_initializer_inputs(*many), "4: 'a', 'b', 'c', ...");
  EXPECT_EQ(tools::freeze_initializers(*many), 4u);
  EXPECT_EQ(many->header().ir_version(), 8);
}

TEST(EditModel, ExtractCutsBetweenTensors) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 4] x) => (float[1, 4] out) <float[4] mean = {0.5, 0.5, 0.5, 0.5}> {
  a = Sub(x, mean)
  b = Relu(a)
  c = Sigmoid(b)
  out = Softmax(c)
}
)");
  ASSERT_TRUE(tools::extract_subgraph(*model, {"a"}, {"c"}).ok());
  ir::Graph& g = model->graph();
  EXPECT_EQ(op_types(g), (std::vector<std::string>{"Relu", "Sigmoid"}));
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.inputs()[0]->name(), "a");
  EXPECT_EQ(g.inputs()[0]->static_shape(), (std::vector<int64_t>{1, 4}));
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.outputs()[0]->name(), "c");
  EXPECT_EQ(g.find_value("mean"), nullptr);  // no longer needed
  EXPECT_TRUE(tools::validate_edited_model(*model).ok());

  auto again = model_from_text(kChain);
  auto missing = tools::extract_subgraph(*again, {"i"}, {"z"});  // z needs y, which needs x
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("'x'"), std::string::npos) << missing.error().message();
}

constexpr const char* kPRelu = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3, 4, 5] x) => (float[2, 3, 4, 5] y) <float[3, 1, 1] s = {0.1, 0.2, 0.3}> {
  y = PRelu(x, s)
}
)";

TEST(EditModel, ReplacePReluIsExact) {
  auto model = model_from_text(kPRelu);
  runtime::NamedValues feeds = {{"x", runtime::Datum(testing::random_tensor({2, 3, 4, 5}, 7))}};
  std::vector<float> before = run_one(*model, feeds);
  EXPECT_EQ(tools::replace_prelu(*model), 1u);
  EXPECT_TRUE(tools::find_nodes_by_op(model->graph(), "PRelu").empty());
  EXPECT_EQ(model->graph().outputs()[0]->name(), "y");
  ASSERT_TRUE(tools::validate_edited_model(*model).ok());
  std::vector<float> after = run_one(*model, feeds);
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(before[i], after[i]) << i;
}

TEST(EditModel, FixPReluSlopeReshapesInitializerAndDeclaration) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 3, 2, 2] x, float[3] s) => (float[1, 3, 2, 2] y) <float[3] s = {0.1, 0.2, 0.3}> {
  y = PRelu(x, s)
}
)");
  auto fixed = tools::fix_prelu_slope(*model);
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(*fixed, 1u);
  ir::Value* s = model->graph().find_value("s");
  EXPECT_EQ(std::vector<int64_t>(s->initializer()->dims().begin(), s->initializer()->dims().end()),
            (std::vector<int64_t>{3, 1, 1}));
  EXPECT_EQ(s->static_shape(), (std::vector<int64_t>{3, 1, 1}));
  EXPECT_EQ(*tools::fix_prelu_slope(*model), 0u);  // done already
  EXPECT_TRUE(tools::validate_edited_model(*model).ok());
}

TEST(EditModel, SetBatchWarnsAboutAReshapeThatPinsTheOldBatch) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 3] x) => (float[1, 6] y) <int64[2] shape = {1, -1}> {
  y = Reshape(x, shape)
}
)");
  auto warnings = tools::set_batch(*model, "batch");
  ASSERT_TRUE(warnings.ok());
  ASSERT_EQ(warnings->size(), 1u);
  EXPECT_NE((*warnings)[0].find("int64:[0,-1]"), std::string::npos) << (*warnings)[0];
  EXPECT_EQ(model->graph().inputs()[0]->type().tensor_type().shape().dim(0).dim_param(), "batch");
  EXPECT_FALSE(tools::set_batch(*model, "-3").ok());
}

TEST(EditModel, ValidationNamesADanglingInput) {
  auto model = model_from_text(kChain);
  ir::Graph& g = model->graph();
  g.remove_node(g.find_value("y")->producer());  // Identity and Add still read y
  auto valid = tools::validate_edited_model(*model);
  ASSERT_FALSE(valid.ok());
  EXPECT_NE(valid.error().message().find("reads 'y', which nothing defines"), std::string::npos) << valid.error().message();
}

TEST(EditModel, ConvertOpset) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 11]>
g (float[2, 3] x) => (float[2] y) {
  y = ReduceSum <axes = [1], keepdims = 0> (x)
}
)");
  auto converted = tools::convert_opset(*model, 13);
  ASSERT_TRUE(converted.ok()) << converted.error().message();
  EXPECT_EQ((*converted)->opset(""), 13);
  // The converter feeds the axes from a Constant it adds.
  const ir::Node& reduce = (*converted)->graph().nodes().back();
  EXPECT_EQ(reduce.op_type(), "ReduceSum");
  EXPECT_EQ(reduce.inputs().size(), 2u);
  EXPECT_TRUE(tools::validate_edited_model(**converted).ok());
  EXPECT_FALSE(tools::convert_opset(*model, 99).ok());
}

// --- operations and scripts --------------------------------------------------

TEST(EditOperations, ScriptsParseLineByLine) {
  auto ops = tools::parse_edit_script(
      "# fixes for engine X\n"
      "--batch 1\n"
      "set-attr n_y:alpha=0.5   # trailing comment\n"
      "\n"
      "cleanup\n"
      "set-input n_z:1=\n",
      "fix.txt");
  ASSERT_TRUE(ops.ok()) << ops.error().message();
  ASSERT_EQ(ops->size(), 4u);
  EXPECT_EQ((*ops)[0].name, "batch");
  EXPECT_EQ((*ops)[0].argument, "1");
  EXPECT_EQ((*ops)[1].argument, "n_y:alpha=0.5");
  EXPECT_EQ((*ops)[2].origin, "fix.txt:5");
  EXPECT_EQ((*ops)[3].argument, "n_z:1=");
  auto typo = tools::parse_edit_script("set-atr a:b=1\n", "fix.txt");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message().find("fix.txt:1"), std::string::npos);
  EXPECT_NE(typo.error().message().find("did you mean 'set-attr'"), std::string::npos);
  EXPECT_FALSE(tools::parse_edit_script("cleanup now\n", "f").ok());
  EXPECT_FALSE(tools::parse_edit_script("rename\n", "f").ok());
}

TEST(EditOperations, AppliedInOrder) {
  auto model = model_from_text(kChain);
  name_nodes(*model);
  tools::EditToolReport report;
  for (const tools::EditOperation& op : std::vector<tools::EditOperation>{{"remove-node", "n_i", "--remove-node"},
                                                                          {"rename", "x=image", "--rename"},
                                                                          {"add-output", "y", "--add-output"},
                                                                          {"cleanup", "", "--cleanup"}}) {
    Status applied = tools::apply_edit_operation(model, op, report);
    ASSERT_TRUE(applied.ok()) << op.name << ": " << applied.error().message();
  }
  EXPECT_EQ(report.done.size(), 4u);
  EXPECT_EQ(model->graph().inputs()[0]->name(), "image");
  EXPECT_EQ(model->graph().outputs().size(), 2u);
  EXPECT_TRUE(tools::validate_edited_model(*model).ok());
  // A rename onto a taken name fails and says so.
  Status taken = tools::apply_edit_operation(model, {"rename", "image=y", "--rename"}, report);
  ASSERT_FALSE(taken.ok());
  EXPECT_NE(taken.error().message().find("already used"), std::string::npos);
}

}  // namespace
}  // namespace onnxkit
