// resolve-shape-inputs: shape glue over a symbolic batch becomes constants.
#include <gtest/gtest.h>

#include "passes/pass_test_support.h"
#include "runtime/tensor_proto.h"

namespace onnxkit::testing {
namespace {

std::vector<int64_t> ints_of(const ir::Value* v) {
  EXPECT_NE(v->initializer(), nullptr) << v->name();
  if (v->initializer() == nullptr) return {};
  auto t = runtime::tensor_from_proto(*v->initializer());
  return std::vector<int64_t>(t->data<int64_t>(), t->data<int64_t>() + t->numel());
}

const ir::Node* find_op(const ir::Graph& g, std::string_view op) {
  for (const ir::Node& n : g.nodes())
    if (n.op_type() == op) return &n;
  return nullptr;
}

// x.view(x.size(0), -1) as torch exports it.
constexpr const char* kViewBatchMinusOne = R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[N, 4, 2, 2] x) => (float[N, 16] y) <int64 zero = {0}, int64[1] axes = {0}, int64[1] minus_one = {-1}> {
  s = Shape(x)
  n = Gather(s, zero)
  u = Unsqueeze(n, axes)
  shape = Concat <axis = 0> (u, minus_one)
  y = Reshape(x, shape)
})";

TEST(ResolveShapeInputs, ViewOfBatchAndMinusOneBecomesConstantCopyAndNumber) {
  auto model = model_from_text(kViewBatchMinusOne);
  auto before = clone(*model);
  EXPECT_GE(run_pass("resolve-shape-inputs", *model), 1u);
  model->graph().cleanup();
  const ir::Node* reshape = find_op(model->graph(), "Reshape");
  ASSERT_NE(reshape, nullptr);
  EXPECT_EQ(ints_of(reshape->input(1)), (std::vector<int64_t>{0, 16}));  // 4*2*2, batch copied
  EXPECT_EQ(model->graph().nodes().size(), 1u);
  expect_same_outputs(*before, *model);
}

TEST(ResolveShapeInputs, IntegerArithmeticIsTheKernelsTruncationAndNeverTraps) {
  // ONNX's Div of integers truncates toward zero, as the runtime does: -5 / 2
  // is -2 (numpy's floor would make it -3, and the Reshape below would fail).
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[N, 4, 6] x) => (float[N, 24] y) <int64 zero = {0}, int64[1] axes = {0}, int64 minus_five = {-5},
                                          int64 two = {2}, int64 twenty_six = {26}> {
  s = Shape(x)
  n = Gather(s, zero)
  u = Unsqueeze(n, axes)
  q = Div(minus_five, two)
  w = Add(q, twenty_six)
  v = Unsqueeze(w, axes)
  shape = Concat <axis = 0> (u, v)
  y = Reshape(x, shape)
})");
  auto before = clone(*model);
  EXPECT_GE(run_pass("resolve-shape-inputs", *model), 1u);
  model->graph().cleanup();
  EXPECT_EQ(ints_of(find_op(model->graph(), "Reshape")->input(1)), (std::vector<int64_t>{0, 24}));
  expect_same_outputs(*before, *model);

  // INT64_MIN / -1 raised SIGFPE here; a sum past int64 is no shape either:
  // both stay as they are (low itself is an ordinary number).
  for (const char* op : {"Div", "Add"}) {
    auto overflow = model_from_text(std::string(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[N, 4] x) => (float[N, 4] y) <int64[1] m = {-9223372036854775807}, int64[1] one = {1},
                                      int64[1] minus_one = {-1}> {
  low = Sub(m, one)
  q = )") + op + R"((low, minus_one)
  y = Reshape(x, q)
})");
    run_pass("resolve-shape-inputs", *overflow);
    EXPECT_EQ(count_ops(overflow->graph(), op), 1u) << op;
  }
}

TEST(ResolveShapeInputs, TwoSymbolicDimsThatCannotBeCopiedAreDeclined) {
  // The target's first entry is dim 1 of x (symbolic), placed at position 0: not a copy.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[N, M] x) => (float[M, N] y) <int64[1] one = {1}, int64[1] zero = {0}> {
  s = Shape(x)
  a = Gather(s, one)
  b = Gather(s, zero)
  shape = Concat <axis = 0> (a, b)
  y = Reshape(x, shape)
})");
  EXPECT_EQ(run_pass("resolve-shape-inputs", *model), 0u);
  EXPECT_EQ(count_ops(model->graph(), "Shape"), 1u);
}

TEST(ResolveShapeInputs, ResizeSizesOverDynamicBatchBecomeConstantScales) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[N, 2, 3, 3] x) => (float[N, 2, 8, 8] y) <int64[1] start = {0}, int64[1] end = {2}, int64[2] hw = {8, 8}> {
  s = Shape(x)
  nc = Slice(s, start, end)
  sizes = Concat <axis = 0> (nc, hw)
  y = Resize <mode = "nearest"> (x, , , sizes)
})");
  auto before = clone(*model);
  EXPECT_GE(run_pass("resolve-shape-inputs", *model), 1u);
  model->graph().cleanup();
  const ir::Node* resize = find_op(model->graph(), "Resize");
  ASSERT_NE(resize, nullptr);
  EXPECT_EQ(resize->inputs().size(), 3u);  // no sizes
  ASSERT_NE(resize->input(2), nullptr);
  auto scales = runtime::tensor_from_proto(*resize->input(2)->initializer());
  ASSERT_TRUE(scales.ok());
  ASSERT_EQ(scales->numel(), 4);
  EXPECT_EQ(scales->data<float>()[0], 1.0f);
  EXPECT_EQ(scales->data<float>()[1], 1.0f);
  EXPECT_EQ(static_cast<int64_t>(std::floor(3.0f * scales->data<float>()[2])), 8);  // 8/3, exact after the floor
  EXPECT_EQ(model->graph().nodes().size(), 1u);
  expect_same_outputs(*before, *model);
}

TEST(ResolveShapeInputs, ExpandToTheInputsOwnBatch) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[N, 1] x) => (float[N, 5] y) <int64[1] zero = {0}, int64[1] five = {5}> {
  s = Shape(x)
  n = Gather(s, zero)
  shape = Concat <axis = 0> (n, five)
  y = Expand(x, shape)
})");
  auto before = clone(*model);
  EXPECT_GE(run_pass("resolve-shape-inputs", *model), 1u);
  model->graph().cleanup();
  const ir::Node* expand = find_op(model->graph(), "Expand");
  ASSERT_NE(expand, nullptr);
  EXPECT_EQ(ints_of(expand->input(1)), (std::vector<int64_t>{1, 5}));
  expect_same_outputs(*before, *model);
}

TEST(ResolveShapeInputs, StaticEntriesOfASymbolicShapeBecomeConstants) {
  // Shape(x)[1] is 4 whatever N is: the Gather's output is a constant, the graph output keeps its name.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[N, 4] x) => (int64 c) <int64 one = {1}> {
  s = Shape(x)
  c = Gather(s, one)
})");
  EXPECT_GE(run_pass("resolve-shape-inputs", *model), 1u);
  model->graph().cleanup();
  ASSERT_EQ(model->graph().outputs()[0]->name(), "c");
  EXPECT_EQ(ints_of(model->graph().outputs()[0]), (std::vector<int64_t>{4}));
  EXPECT_TRUE(model->graph().nodes().empty());
}

TEST(ResolveShapeInputs, ExcludedReshapeStays) {
  auto model = model_from_text(kViewBatchMinusOne);
  for (ir::Node& n : model->graph().nodes())
    if (n.op_type() == "Reshape") n.set_name("keep");
  passes::PassOptions options;
  options.excluded_nodes.insert("keep");
  run_pass("resolve-shape-inputs", *model, options);
  model->graph().cleanup();
  const ir::Node* reshape = find_op(model->graph(), "Reshape");
  ASSERT_NE(reshape, nullptr);
  EXPECT_EQ(reshape->input(1)->initializer(), nullptr);
}

}  // namespace
}  // namespace onnxkit::testing
