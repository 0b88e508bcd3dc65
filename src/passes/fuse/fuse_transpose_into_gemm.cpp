// fuse-transpose-into-gemm: a Gemm can read its A or B transposed itself.
//
// Before:  t = Transpose<perm = [1, 0]>(a)    y = Gemm<transA = 0>(t, B, C)
// After:   y = Gemm<transA = 1>(a, B, C)      (the same for B and transB)
//
// Conditions: the Transpose swaps the two axes of a 2-D tensor (perm [1, 0],
// or no perm over an input known to be 2-D) and is not excluded; the Gemm
// reads its output as A or B. Gemm's transA flag means "use A'": toggling
// it absorbs one transposition, A'' = A. The Transpose goes when nothing
// else reads it. Each of A and B is tried: both may fold.

#include <fmt/format.h>
#include <onnx/defs/attr_proto_util.h>

#include "passes/fuse/fuse_common.h"

namespace onnxkit::passes::fuse {
namespace {

bool swaps_two_axes(const ir::Node& transpose) {
  if (transpose.attribute("perm") != nullptr) return transpose.attr_ints("perm") == std::vector<int64_t>{1, 0};
  auto shape = transpose.input(0) != nullptr ? transpose.input(0)->static_shape() : std::nullopt;
  return shape && shape->size() == 2;
}

bool fuse(ir::Node& gemm, PassContext& context) {
  for (size_t index = 0; index < 2; ++index) {
    ir::Value* operand = gemm.input(index);
    ir::Node* transpose = operand != nullptr ? operand->producer() : nullptr;
    if (transpose == nullptr || transpose->graph() != gemm.graph() || !transpose->is_onnx_op("Transpose") ||
        context.excluded(*transpose) || transpose->input(0) == nullptr || !swaps_two_axes(*transpose))
      continue;
    const std::string flag = index == 0 ? "transA" : "transB";
    gemm.set_input(index, transpose->input(0));
    gemm.set_attribute(onnx::MakeAttribute(flag, int64_t{1} - gemm.attr_int(flag, 0)));
    context.note(fmt::format("{}: folded {} into {}", gemm.describe(), transpose->describe(), flag));
    return true;
  }
  return false;
}

}  // namespace

std::unique_ptr<Pass> make_fuse_transpose_into_gemm() {
  // A Gemm may absorb the Transposes of both A and B.
  return make_fusion_pass("fuse-transpose-into-gemm", "fold a 2-D Transpose of a Gemm's A or B into transA/transB", {"Gemm"},
                          Repeat::while_it_fuses, fuse);
}

}  // namespace onnxkit::passes::fuse
