// Setting graph-valued attributes (ir::import_attribute): the graph becomes
// a sub-graph of the IR whose nodes read outer values.

#include <gtest/gtest.h>

#include "ir/model.h"
#include "support/test_support.h"

namespace onnxkit {
namespace {

using testing::model_from_text;

TEST(ImportAttribute, GraphAttributesBecomeSubgraphsThatReadOuterValues) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 15]>
branches (float[2] x, bool c) => (float[2] y) {
  y = If (c) <then_branch = then_g () => (float[2] t) { t = Relu(x) },
              else_branch = else_g () => (float[2] e) { e = Neg(x) }>
}
)");
  ir::Graph& g = model->graph();
  ir::Node* node = g.find_value("y")->producer();
  onnx::AttributeProto attr;
  attr.set_name("else_branch");
  attr.set_type(onnx::AttributeProto::GRAPH);
  *attr.mutable_g() = testing::parse_model_text(R"(
<ir_version: 8, opset_import: ["" : 15]>
else_g2 () => (float[2] s) { s = Sigmoid(x) }
)")
                          .graph();
  attr.mutable_g()->clear_input();  // a branch takes no inputs: x is the outer value
  auto set = ir::import_attribute(*node, attr);
  ASSERT_TRUE(set.ok()) << set.error().message();
  ASSERT_TRUE((*set)->graph);
  const ir::Node& sigmoid = (*set)->graph->nodes().front();
  EXPECT_EQ(sigmoid.op_type(), "Sigmoid");
  EXPECT_EQ(sigmoid.input(0), g.find_value("x"));
  // The old else branch let go of x: Relu (then) and Sigmoid (new else) read it.
  EXPECT_EQ(g.find_value("x")->uses().size(), 2u);
  onnx::ModelProto exported = ir::export_model(*model);
  EXPECT_EQ(exported.graph().node(0).attribute(1).g().node(0).op_type(), "Sigmoid");
}

}  // namespace
}  // namespace onnxkit
