// Sequence and optional kernels on forms the backend data (opset <= 17)
// leaves out: from opset 18 the Optional ops also take plain tensors.

#include <gtest/gtest.h>

#include "support/node_runner.h"

namespace onnxkit {
namespace {

using runtime::Tensor;
using testing::expect_tensor_near;
using testing::run_node;
using testing::try_run_node;

TEST(Optional, Opset18TakesPlainTensors) {
  auto x = Tensor::from<float>({2}, {1, 2});
  auto has = run_node({.op_type = "OptionalHasElement", .opset = 18, .inputs = {{"x", x}}});
  expect_tensor_near(has[0].tensor(), Tensor::from<bool>({}, {true}));
  auto absent = run_node({.op_type = "OptionalHasElement", .opset = 18, .inputs = {{"", Tensor()}}});
  expect_tensor_near(absent[0].tensor(), Tensor::from<bool>({}, {false}));
  auto element = run_node({.op_type = "OptionalGetElement", .opset = 18, .inputs = {{"x", x}}});
  expect_tensor_near(element[0].tensor(), x);
  auto missing = try_run_node({.op_type = "OptionalGetElement", .opset = 18, .inputs = {{"", Tensor()}}});
  EXPECT_FALSE(missing.ok());
}

}  // namespace
}  // namespace onnxkit
