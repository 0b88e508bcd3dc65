// fuse-pad-into-maxpool.
#include <limits>

#include "passes/fuse/fuse_test_support.h"

namespace onnxkit::testing {
namespace {

// The text syntax has no -inf: the initializer `name` gets it afterwards.
void set_minus_infinity(ir::Model& model, std::string_view name) {
  ir::Value* value = model.graph().find_value(name);
  ASSERT_NE(value, nullptr);
  model.graph().set_initializer(
      value, runtime::tensor_to_proto(runtime::Tensor::from<float>({}, {-std::numeric_limits<float>::infinity()})));
}

TEST(FusePadIntoMaxPool, MinusInfinityOrZeroAfterRelu) {
  // p: -inf on H (1, 0) and W (0, 1) of any input; r: zeros around a Relu.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 5, 5] x) => (float[1, 2, 5, 5] y, float[1, 2, 5, 5] z)
  <int64[8] hw = {0, 0, 1, 0, 0, 0, 0, 1}, float ninf = {0}, int64[8] all1 = {0, 0, 1, 1, 0, 0, 1, 1}> {
  p = Pad(x, hw, ninf)
  y = MaxPool <kernel_shape = [2, 2]> (p)
  r = Relu(x)
  q = Pad(r, all1)
  z = MaxPool <kernel_shape = [3, 3]> (q)
})");
  set_minus_infinity(*model, "ninf");
  auto before = clone(*model);
  EXPECT_EQ(run_pass("fuse-pad-into-maxpool", *model), 2u);
  EXPECT_EQ(count_ops(model->graph(), "Pad"), 0u);
  const ir::Node* y = model->graph().outputs()[0]->producer();
  EXPECT_EQ(y->attr_ints("pads"), (std::vector<int64_t>{1, 0, 0, 1}));
  expect_same_outputs(*before, *model);
}

TEST(FusePadIntoMaxPool, DeclinesZerosOfAnyInputWidePadsAndIndices) {
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 5, 5] x) => (float[1, 2, 5, 5] y, float[1, 2, 8, 8] z, float[1, 2, 5, 5] w, int64[1, 2, 5, 5] i)
  <int64[8] all1 = {0, 0, 1, 1, 0, 0, 1, 1}, int64[8] wide = {0, 0, 2, 2, 0, 0, 2, 2}, float ninf = {0}> {
  p = Pad(x, all1)
  y = MaxPool <kernel_shape = [3, 3]> (p)
  q = Pad(x, wide, ninf)
  z = MaxPool <kernel_shape = [2, 2], strides = [1, 1]> (q)
  r = Pad(x, all1, ninf)
  w, i = MaxPool <kernel_shape = [3, 3]> (r)
})");
  set_minus_infinity(*model, "ninf");
  // p pads x (maybe negative) with zeros; q's pads of 2 reach past a kernel
  // of 2 (a window of padding alone); the third MaxPool's indices are used.
  EXPECT_EQ(run_pass("fuse-pad-into-maxpool", *model), 0u);
}

}  // namespace
}  // namespace onnxkit::testing
