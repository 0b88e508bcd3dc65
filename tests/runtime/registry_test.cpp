// The kernel registry as a whole: what kernels declare about their ops
// (OpTraits) is true of the kernels themselves.

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "runtime/kernel.h"
#include "support/node_runner.h"

namespace onnxkit {
namespace {

using runtime::KernelDef;
using runtime::KernelRegistry;
using runtime::OpTraits;
using runtime::Tensor;
using testing::NodeInput;

// An opset the kernel serves, 17 where it can.
int64_t opset_of(const KernelDef& def) { return std::clamp<int64_t>(17, def.since, def.until); }

TEST(KernelTraits, ZeroPreservingOpsMapZeroToZero) {
  // The blocked layout runs these ops over the zero channels that pad a
  // blocked tensor and counts on zeros coming out: a wrong declaration would
  // leak into the next convolution's sums.
  const Tensor zeros = Tensor::from<float>({1, 3, 2, 2}, std::vector<float>(12, 0.0f));
  size_t checked = 0;
  for (const KernelDef& def : KernelRegistry::builtin().all()) {
    if (!def.traits.zero_preserving) continue;
    std::vector<NodeInput> inputs = {{"x", zeros}};
    if (def.traits.blocked == OpTraits::Blocked::elementwise_binary) inputs.push_back({"y", zeros});
    auto out = testing::try_run_node({.op_type = def.op_type, .opset = opset_of(def), .inputs = inputs});
    ASSERT_TRUE(out.ok()) << def.op_type << ": " << out.error().message();
    SCOPED_TRACE(def.op_type);
    testing::expect_tensor_near((*out)[0].tensor(), zeros, 0, 0);
    ++checked;
  }
  EXPECT_GE(checked, 13u) << "Relu, Tanh, Add... declare it";
}

TEST(KernelTraits, OnlyElementwiseOpsPreserveZeroForTheLayout) {
  // zero_preserving speaks of element-wise ops; anything else marked so
  // would be read by the blocked layout as element-wise.
  for (const KernelDef& def : KernelRegistry::builtin().all()) {
    if (!def.traits.zero_preserving) continue;
    EXPECT_TRUE(def.traits.blocked == OpTraits::Blocked::elementwise_unary ||
                def.traits.blocked == OpTraits::Blocked::elementwise_binary)
        << def.op_type;
  }
}

}  // namespace
}  // namespace onnxkit
