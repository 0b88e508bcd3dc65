#include "io/tensor_walk.h"

#include <fmt/format.h>

namespace onnxkit::io {
namespace {

Status walk_graph(onnx::GraphProto& graph, const TensorVisitor& visit);

Status walk_sparse(onnx::SparseTensorProto& sparse, const std::string& where, const TensorVisitor& visit) {
  ONNXKIT_TRY(visit(*sparse.mutable_values(), where + " values"));
  return visit(*sparse.mutable_indices(), where + " indices");
}

Status walk_node(onnx::NodeProto& node, const TensorVisitor& visit) {
  for (auto& attr : *node.mutable_attribute()) {
    std::string where = fmt::format("node '{}' ({}) attribute '{}'", node.name(), node.op_type(), attr.name());
    if (attr.has_t()) ONNXKIT_TRY(visit(*attr.mutable_t(), where));
    for (auto& t : *attr.mutable_tensors()) ONNXKIT_TRY(visit(t, where));
    if (attr.has_sparse_tensor()) ONNXKIT_TRY(walk_sparse(*attr.mutable_sparse_tensor(), where, visit));
    for (auto& s : *attr.mutable_sparse_tensors()) ONNXKIT_TRY(walk_sparse(s, where, visit));
    if (attr.has_g()) ONNXKIT_TRY(walk_graph(*attr.mutable_g(), visit));
    for (auto& g : *attr.mutable_graphs()) ONNXKIT_TRY(walk_graph(g, visit));
  }
  return {};
}

Status walk_graph(onnx::GraphProto& graph, const TensorVisitor& visit) {
  for (auto& t : *graph.mutable_initializer()) ONNXKIT_TRY(visit(t, fmt::format("initializer '{}'", t.name())));
  for (auto& s : *graph.mutable_sparse_initializer())
    ONNXKIT_TRY(walk_sparse(s, fmt::format("sparse initializer '{}'", s.values().name()), visit));
  for (auto& node : *graph.mutable_node()) ONNXKIT_TRY(walk_node(node, visit));
  return {};
}

}  // namespace

Status for_each_tensor(onnx::ModelProto& model, const TensorVisitor& visit) {
  if (model.has_graph()) ONNXKIT_TRY(walk_graph(*model.mutable_graph(), visit));
  for (auto& function : *model.mutable_functions())
    for (auto& node : *function.mutable_node()) ONNXKIT_TRY(walk_node(node, visit));
  for (auto& training : *model.mutable_training_info()) {
    if (training.has_initialization()) ONNXKIT_TRY(walk_graph(*training.mutable_initialization(), visit));
    if (training.has_algorithm()) ONNXKIT_TRY(walk_graph(*training.mutable_algorithm(), visit));
  }
  return {};
}

}  // namespace onnxkit::io
