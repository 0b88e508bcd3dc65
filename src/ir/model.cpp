#include "ir/model.h"

namespace onnxkit::ir {
namespace {

bool same_domain(std::string_view a, std::string_view b) { return canonical_domain(a) == canonical_domain(b); }

}  // namespace

Model::Model() : graph_(std::make_unique<Graph>(this, nullptr)) {}

int64_t Model::opset(std::string_view domain) const {
  for (const auto& op : header_.opset_import())
    if (same_domain(op.domain(), domain)) return op.version();
  return 0;
}

void Model::set_opset(std::string_view domain, int64_t version) {
  for (auto& op : *header_.mutable_opset_import()) {
    if (same_domain(op.domain(), domain)) {
      op.set_version(version);
      return;
    }
  }
  auto* op = header_.add_opset_import();
  op->set_domain(std::string(domain));
  op->set_version(version);
}

Result<std::unique_ptr<Model>> load_model(const std::filesystem::path& path) {
  ONNXKIT_ASSIGN(io::LoadedModel loaded, io::load_model(path));
  auto model = import_model(std::move(loaded.proto), loaded.external_data);
  if (!model.ok()) return model.error().in(path.string());
  model.value()->set_source(path, loaded.file_size);
  return model;
}

Result<io::SaveSummary> save_model(const Model& model, const std::filesystem::path& path, const io::SaveOptions& options) {
  ExportOptions skeleton;
  skeleton.without_main_initializers = true;
  std::vector<const onnx::TensorProto*> initializers;
  for (const Value* v : model.graph().initializers()) initializers.push_back(v->initializer());
  return io::save_model(export_model(model, skeleton), initializers, model.external_data(), path, options);
}

}  // namespace onnxkit::ir
