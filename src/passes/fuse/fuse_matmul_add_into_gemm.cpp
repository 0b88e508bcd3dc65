// fuse-matmul-add-into-gemm: a 2-D MatMul followed by adding a bias is a Gemm.
//
// Before:  p = MatMul(A, B)     y = Add(p, C)    (or Add(C, p))
// After:   y = Gemm(A, B, C)                     (alpha = beta = 1; the Gemm's output takes y's place and name)
//
// Conditions: A and B known to be rank 2 (declared or inferred types, or B an
// initializer), so that MatMul is the plain [M, K] x [K, N] product Gemm
// computes (MatMul on other ranks broadcasts batches or promotes vectors);
// N known; the MatMul's output read by the Add alone and not a graph output;
// C of known shape that Gemm can broadcast to [M, N] without changing the
// Add's result shape: [N], [1, N], [M, N], [M, 1], [1] or a scalar, each dim
// matching a known dim of [M, N] or 1 (a symbolic M is matched only by 1);
// element type float32, float64 or float16; opset 7+ (Gemm's C needed the
// `broadcast` attribute before). Neither node excluded. C need not be constant.
//
// The algebra: Gemm(A, B, C) = alpha * A B + beta * C = A B + C with
// alpha = beta = 1, C broadcast to [M, N] exactly as Add broadcasts it.

#include <fmt/format.h>

#include "passes/fuse/fuse_common.h"

namespace onnxkit::passes::fuse {
namespace {

bool is_gemm_type(int32_t elem_type) {
  return elem_type == onnx::TensorProto::FLOAT || elem_type == onnx::TensorProto::DOUBLE ||
         elem_type == onnx::TensorProto::FLOAT16;
}

// True when a tensor of `bias` shape broadcasts to `product` ([M, N], -1 for
// a symbolic dim) and leaves it as it is.
bool broadcasts_to(const std::vector<int64_t>& bias, const std::vector<int64_t>& product) {
  if (bias.size() > product.size()) return false;
  const size_t offset = product.size() - bias.size();
  for (size_t i = 0; i < bias.size(); ++i) {
    const int64_t dim = bias[i], target = product[i + offset];
    if (dim == 1) continue;
    if (dim < 0 || target < 0 || dim != target) return false;
  }
  return true;
}

bool fuse(ir::Node& matmul, PassContext& context) {
  ir::Value* product = matmul.output(0);
  ir::Node* add = sole_consumer(product);
  if (add == nullptr || !add->is_onnx_op("Add") || context.excluded(*add) || context.opset() < 7) return false;
  ir::Value* a = matmul.input(0);
  ir::Value* b = matmul.input(1);
  ir::Value* c = other_operand(*add, product);
  if (a == nullptr || b == nullptr || c == nullptr || add->output(0) == nullptr) return false;
  auto a_shape = a->static_shape();
  auto b_shape = b->static_shape();
  auto c_shape = c->static_shape();
  if (!a_shape || !b_shape || !c_shape || a_shape->size() != 2 || b_shape->size() != 2) return false;
  const int32_t elem_type = a->elem_type();
  if (!is_gemm_type(elem_type) || b->elem_type() != elem_type || c->elem_type() != elem_type) return false;
  const int64_t n = (*b_shape)[1];
  if (n < 0 || !broadcasts_to(*c_shape, {(*a_shape)[0], n})) return false;

  ir::Graph& graph = *matmul.graph();
  ir::Value* sum = add->output(0);
  // Before the Add, every input of the Gemm (C included) is already computed.
  ir::Node* gemm = graph.insert_node(add, "Gemm", {a, b, c}, {sum->name()});
  ir::Value* gemm_out = gemm->output(0);
  if (sum->has_type()) *gemm_out->mutable_info().mutable_type() = sum->type();
  if (!replace_value(graph, sum, gemm_out)) {
    graph.remove_node(gemm);
    return false;
  }
  gemm->set_name(graph.unique_node_name(matmul.name().empty() ? "Gemm" : matmul.name() + "_gemm"));
  context.note(fmt::format("{} and {} became {}", matmul.describe(), add->describe(), gemm->describe()));
  graph.remove_node(add);
  graph.remove_node(&matmul);
  return true;
}

}  // namespace

std::unique_ptr<Pass> make_fuse_matmul_add_into_gemm() {
  // The step removes the MatMul it fuses.
  return make_fusion_pass("fuse-matmul-add-into-gemm", "turn a 2-D MatMul followed by a bias Add into one Gemm", {"MatMul"},
                          Repeat::once, fuse);
}

}  // namespace onnxkit::passes::fuse
