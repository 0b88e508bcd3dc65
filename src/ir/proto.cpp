// Import from and export to ONNX protobuf. The contract is losslessness:
// export(import(m)) equals m field for field.

#include <fmt/format.h>

#include "io/tensor_proto.h"
#include "ir/model.h"

namespace onnxkit::ir {

class ProtoImporter {
 public:
  static Status import_graph(onnx::GraphProto& proto, Graph& graph);
  static Result<Attribute*> import_attribute(Node& node, onnx::AttributeProto& proto);

 private:
  // The value named `name` visible from `graph`, or a new one without a
  // producer (an undefined name: kept so the model round-trips as it was).
  static Value* resolve(Graph& graph, const std::string& name) {
    if (Value* v = graph.lookup(name)) return v;
    return graph.create_value(name);
  }
  // Takes the declaration's type and doc if the value has none yet.
  static void take_info(Value& value, onnx::ValueInfoProto& info) {
    if (value.info_.ByteSizeLong() == 0) value.info_.Swap(&info);
  }
};

Status ProtoImporter::import_graph(onnx::GraphProto& proto, Graph& graph) {
  graph.header_.Swap(&proto);
  onnx::GraphProto& h = graph.header_;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  google::protobuf::RepeatedPtrField<onnx::TensorProto> initializers;
  google::protobuf::RepeatedPtrField<onnx::SparseTensorProto> sparse;
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> inputs, outputs, value_info;
  nodes.Swap(h.mutable_node());
  initializers.Swap(h.mutable_initializer());
  sparse.Swap(h.mutable_sparse_initializer());
  inputs.Swap(h.mutable_input());
  outputs.Swap(h.mutable_output());
  value_info.Swap(h.mutable_value_info());
  std::string where = h.name().empty() ? std::string("graph") : fmt::format("graph '{}'", h.name());

  for (auto& info : inputs) {
    Value* v = graph.find_value(info.name());
    if (v == nullptr) v = graph.create_value(info.name());
    take_info(*v, info);
    graph.inputs_.push_back(v);
  }
  for (auto& tensor : initializers) {
    Value* v = graph.find_value(tensor.name());
    if (v == nullptr) v = graph.create_value(tensor.name());
    if (v->is_constant()) return make_error("{}: initializer '{}' is defined twice", where, tensor.name());
    v->initializer_ = std::make_unique<onnx::TensorProto>();
    v->initializer_->Swap(&tensor);
    graph.initializers_.push_back(v);
  }
  for (auto& tensor : sparse) {
    const std::string& name = tensor.values().name();
    Value* v = graph.find_value(name);
    if (v == nullptr) v = graph.create_value(name);
    if (v->is_constant()) return make_error("{}: initializer '{}' is defined twice", where, name);
    v->sparse_initializer_ = std::make_unique<onnx::SparseTensorProto>();
    v->sparse_initializer_->Swap(&tensor);
    graph.sparse_initializers_.push_back(v);
  }

  // Define every node's outputs first, so inputs resolve whatever the order.
  std::vector<std::pair<Node*, onnx::NodeProto*>> imported;
  for (auto& np : nodes) {
    onnx::NodeProto header;
    header.Swap(&np);
    np.mutable_input()->Swap(header.mutable_input());
    np.mutable_attribute()->Swap(header.mutable_attribute());
    auto it = graph.nodes_.emplace(graph.nodes_.end(), Node::Key{}, &graph, std::move(header));
    Node* node = &*it;
    node->position_ = it;
    for (const std::string& name : node->header_.output()) {
      Value* v = nullptr;
      if (!name.empty()) {
        v = graph.find_value(name);
        if (v != nullptr && (v->producer_ != nullptr || v->is_graph_input() || v->is_constant()))
          return make_error("{}: value '{}' is defined twice (again by {})", where, name, node->describe());
        if (v == nullptr) v = graph.create_value(name);
        v->producer_ = node;
        v->producer_output_ = node->outputs_.size();
      }
      node->outputs_.push_back(v);
    }
    node->header_.clear_output();
    imported.emplace_back(node, &np);
  }

  for (auto& info : value_info) {
    Value* v = resolve(graph, info.name());
    take_info(*v, info);
    graph.value_info_.push_back(v);
  }
  for (int i = 0; i < outputs.size(); ++i) {
    auto& info = outputs[i];
    if (info.name().empty()) return make_error("{}: output #{} has no name", where, i);
    Value* v = resolve(graph, info.name());
    take_info(*v, info);
    graph.outputs_.push_back(v);
    ++v->output_refs_;
  }

  for (auto& [node, np] : imported) {
    for (int i = 0; i < np->input_size(); ++i)
      node->set_input(static_cast<size_t>(i), np->input(i).empty() ? nullptr : resolve(graph, np->input(i)));
    for (auto& ap : *np->mutable_attribute()) {
      Attribute attr;
      if (ap.has_g()) {
        attr.graph = std::make_unique<Graph>(graph.model_, node);
        ONNXKIT_TRY(import_graph(*ap.mutable_g(), *attr.graph));
        ap.clear_g();
      }
      for (auto& gp : *ap.mutable_graphs()) {
        attr.graphs.push_back(std::make_unique<Graph>(graph.model_, node));
        ONNXKIT_TRY(import_graph(gp, *attr.graphs.back()));
      }
      ap.clear_graphs();
      attr.proto.Swap(&ap);
      node->attributes_.push_back(std::move(attr));
    }
  }
  return {};
}

Result<Attribute*> ProtoImporter::import_attribute(Node& node, onnx::AttributeProto& proto) {
  std::unique_ptr<Graph> graph;
  std::vector<std::unique_ptr<Graph>> graphs;
  if (proto.has_g()) {
    graph = std::make_unique<Graph>(node.graph_->model_, &node);
    ONNXKIT_TRY(import_graph(*proto.mutable_g(), *graph));
  }
  for (auto& gp : *proto.mutable_graphs()) {
    graphs.push_back(std::make_unique<Graph>(node.graph_->model_, &node));
    ONNXKIT_TRY(import_graph(gp, *graphs.back()));
  }
  proto.clear_g();
  proto.clear_graphs();
  Attribute& attr = node.set_attribute(std::move(proto));  // drops the old sub-graphs
  attr.graph = std::move(graph);
  attr.graphs = std::move(graphs);
  return &attr;
}

Result<Attribute*> import_attribute(Node& node, onnx::AttributeProto attribute) {
  return ProtoImporter::import_attribute(node, attribute);
}

Result<std::unique_ptr<Model>> import_model(onnx::ModelProto proto, std::shared_ptr<const io::ExternalDataStore> external_data) {
  auto model = std::make_unique<Model>();
  onnx::GraphProto graph;
  graph.Swap(proto.mutable_graph());
  proto.clear_graph();
  model->mutable_header().Swap(&proto);
  model->set_external_data(std::move(external_data));
  ONNXKIT_TRY(ProtoImporter::import_graph(graph, model->graph()));
  return model;
}

namespace {

uint64_t inline_data_bytes(const onnx::TensorProto& t) {
  return t.raw_data().size() + 4ull * (t.float_data_size() + t.int32_data_size()) +
         8ull * (t.int64_data_size() + t.double_data_size() + t.uint64_data_size());
}

void export_tensor(const onnx::TensorProto& tensor, onnx::TensorProto* out, const ExportOptions& options) {
  if (inline_data_bytes(tensor) <= options.max_inline_data_bytes) *out = tensor;
  else io::copy_tensor_metadata(tensor, out);
}

void export_value_info(const Value& value, onnx::ValueInfoProto* out) {
  *out = value.info();
  out->set_name(value.name());
}

}  // namespace

onnx::GraphProto export_graph(const Graph& graph, const ExportOptions& options) {
  onnx::GraphProto proto = graph.header();
  for (const Node& node : graph.nodes()) {
    onnx::NodeProto* np = proto.add_node();
    *np = node.header();
    for (const Value* v : node.inputs()) np->add_input(v != nullptr ? v->name() : std::string());
    for (const Value* v : node.outputs()) np->add_output(v != nullptr ? v->name() : std::string());
    for (const Attribute& attr : node.attributes()) {
      onnx::AttributeProto* ap = np->add_attribute();
      *ap = attr.proto;
      if (attr.graph) *ap->mutable_g() = export_graph(*attr.graph, options);
      for (const auto& g : attr.graphs) *ap->add_graphs() = export_graph(*g, options);
    }
  }
  for (const Value* v : graph.initializers()) {
    if (options.without_main_initializers && graph.parent_node() == nullptr) break;
    onnx::TensorProto* t = proto.add_initializer();
    export_tensor(*v->initializer(), t, options);
    t->set_name(v->name());
  }
  for (const Value* v : graph.sparse_initializers()) {
    onnx::SparseTensorProto* s = proto.add_sparse_initializer();
    *s = *v->sparse_initializer();
    s->mutable_values()->set_name(v->name());
  }
  for (const Value* v : graph.inputs()) export_value_info(*v, proto.add_input());
  for (const Value* v : graph.outputs()) export_value_info(*v, proto.add_output());
  for (const Value* v : graph.value_info()) export_value_info(*v, proto.add_value_info());
  return proto;
}

onnx::ModelProto export_model(const Model& model, const ExportOptions& options) {
  onnx::ModelProto proto = model.header();
  *proto.mutable_graph() = export_graph(model.graph(), options);
  return proto;
}

}  // namespace onnxkit::ir
