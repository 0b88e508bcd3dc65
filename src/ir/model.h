#pragma once
// A whole model: the header fields of ModelProto (ir_version, opset_import,
// producer, metadata, functions, training_info...) and the main graph in IR
// form, plus access to external data mapped from side files.

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <memory>
#include <string_view>

#include "io/external_data.h"
#include "io/model_file.h"
#include "ir/graph.h"
#include "util/result.h"

namespace onnxkit::ir {

class Model {
 public:
  Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // Every ModelProto field but `graph`.
  const onnx::ModelProto& header() const { return header_; }
  onnx::ModelProto& mutable_header() { return header_; }

  Graph& graph() { return *graph_; }
  const Graph& graph() const { return *graph_; }

  // The imported version of an operator set; "" and "ai.onnx" are the same
  // domain. 0 when the domain is not imported.
  int64_t opset(std::string_view domain = "") const;
  void set_opset(std::string_view domain, int64_t version);

  // Resolves tensors with external data (null when the model has none and
  // was not loaded from a file).
  const io::ExternalDataStore* external_data() const { return external_data_.get(); }
  // The same store, shared: for a new Model built from this one's tensors.
  const std::shared_ptr<const io::ExternalDataStore>& shared_external_data() const { return external_data_; }
  void set_external_data(std::shared_ptr<const io::ExternalDataStore> store) { external_data_ = std::move(store); }

  // The file it was loaded from, and that file's size (0 when not loaded).
  const std::filesystem::path& path() const { return path_; }
  uint64_t file_size() const { return file_size_; }
  void set_source(std::filesystem::path path, uint64_t file_size) {
    path_ = std::move(path);
    file_size_ = file_size;
  }

 private:
  onnx::ModelProto header_;
  std::unique_ptr<Graph> graph_;
  std::shared_ptr<const io::ExternalDataStore> external_data_;
  std::filesystem::path path_;
  uint64_t file_size_ = 0;
};

// Builds the IR from a ModelProto, taking its tensors without copying them.
// Fails on what the IR cannot represent: a name defined twice in one graph.
Result<std::unique_ptr<Model>> import_model(onnx::ModelProto proto,
                                            std::shared_ptr<const io::ExternalDataStore> external_data = nullptr);

// Node::set_attribute for any attribute: graph-valued ones (g, graphs) are
// imported into the IR as sub-graphs of `node`, whose nodes may read values
// visible from the node's graph.
Result<Attribute*> import_attribute(Node& node, onnx::AttributeProto attribute);

struct ExportOptions {
  // Leave out the data of inline tensors larger than this many bytes (dims
  // and type stay): a cheap copy for analyses that never read weights.
  uint64_t max_inline_data_bytes = UINT64_MAX;
  // Leave the main graph's initializers out entirely (for save_model, which
  // writes them from the IR without copying).
  bool without_main_initializers = false;
};

// Writes the IR back as a ModelProto; import then export gives back the
// original message field for field.
onnx::ModelProto export_model(const Model& model, const ExportOptions& options = {});
onnx::GraphProto export_graph(const Graph& graph, const ExportOptions& options = {});

// io::load_model + import_model.
Result<std::unique_ptr<Model>> load_model(const std::filesystem::path& path);
// export_model + io::save_model.
Result<io::SaveSummary> save_model(const Model& model, const std::filesystem::path& path, const io::SaveOptions& options = {});

}  // namespace onnxkit::ir
