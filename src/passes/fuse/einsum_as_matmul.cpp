// einsum-as-matmul: an Einsum that is a (batched) matrix product is a MatMul.
//
// Before:  y = Einsum<equation = "bij,bjk->bik">(a, b)
// After:   y = MatMul(a, b)
//
// Conditions: two operands; the equation, spaces aside, is "Pij,Pjk->Pik"
// where P is the same run of batch letters (possibly none) in all three
// terms and i, j, k are three other letters, each term's letters distinct;
// no ellipsis. Einsum then sums a[P, i, j] * b[P, j, k] over j for every
// P, i, k, which is MatMul's product on the last two axes; the batch axes
// carry the same letters, so their sizes are equal (Einsum requires it) and
// MatMul's broadcasting has nothing to do. The two ops differ in accuracy
// only by the order of the sum, as two MatMul kernels do.

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "passes/fuse/fuse_common.h"

namespace onnxkit::passes::fuse {
namespace {

// True when `equation` is "Pij,Pjk->Pik" (see above).
bool is_matrix_product(std::string equation) {
  equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
  const size_t comma = equation.find(',');
  const size_t arrow = equation.find("->");
  if (comma == std::string::npos || arrow == std::string::npos || comma > arrow) return false;
  const std::string a = equation.substr(0, comma), b = equation.substr(comma + 1, arrow - comma - 1),
                    y = equation.substr(arrow + 2);
  if (a.size() < 2 || a.size() != b.size() || a.size() != y.size()) return false;
  for (const std::string* term : {&a, &b, &y}) {
    if (!std::all_of(term->begin(), term->end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); }))
      return false;
    if (std::set<char>(term->begin(), term->end()).size() != term->size()) return false;
  }
  const size_t n = a.size();
  const std::string batch = a.substr(0, n - 2);
  if (b.substr(0, n - 2) != batch || y.substr(0, n - 2) != batch) return false;
  const char i = a[n - 2], j = a[n - 1], k = b[n - 1];
  return b[n - 2] == j && y[n - 2] == i && y[n - 1] == k && std::set<char>{i, j, k}.size() == 3 &&
         batch.find_first_of(std::string{i, j, k}) == std::string::npos;
}

size_t rewrite(ir::Node& einsum, PassContext& context) {
  if (einsum.inputs().size() != 2 || einsum.input(0) == nullptr || einsum.input(1) == nullptr ||
      !is_matrix_product(einsum.attr_string("equation", "")))
    return 0;
  ir::Graph& graph = *einsum.graph();
  const std::string what = einsum.describe();
  ir::Node* matmul =
      graph.insert_node(&einsum, "MatMul", {einsum.input(0), einsum.input(1)}, {einsum.output(0)->name() + "_matmul"});
  if (!einsum.name().empty()) matmul->set_name(graph.unique_node_name(einsum.name() + "_matmul"));
  if (!replace_value(graph, einsum.output(0), matmul->output(0))) {
    graph.remove_node(matmul);
    return 0;
  }
  graph.remove_node(&einsum);
  context.note(fmt::format("{} is a matrix product: now a MatMul", what));
  return 1;
}

}  // namespace

std::unique_ptr<Pass> make_einsum_as_matmul() {
  return make_node_pass("einsum-as-matmul", "make an Einsum that is a batched matrix product a MatMul", {"Einsum"}, rewrite);
}

}  // namespace onnxkit::passes::fuse
