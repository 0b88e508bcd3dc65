#include "io/model_file.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "io/atomic_file.h"
#include "io/fd.h"
#include "io/mapped_file.h"
#include "io/model_parse.h"
#include "io/replace_pair.h"
#include "io/tensor_proto.h"
#include "io/tensor_walk.h"
#include "util/text.h"

namespace onnxkit::io {
namespace {

namespace fs = std::filesystem;
namespace pb = google::protobuf;

// Checks every tensor's storage, and that external data is where it claims.
Status validate_tensors(onnx::ModelProto& proto, const ExternalDataStore& store) {
  return for_each_tensor(proto, [&](onnx::TensorProto& tensor, const std::string& where) -> Status {
    // Tensor errors name the tensor; an unnamed one needs to say where it is.
    auto located = [&](const Error& e) { return tensor.name().empty() ? e.in(where) : e; };
    Status storage = validate_tensor_storage(tensor);
    if (!storage.ok()) return located(storage.error());
    if (is_external(tensor)) {
      auto bytes = store.bytes(tensor);
      if (!bytes.ok()) return located(bytes.error());
    }
    return {};
  });
}

// Feeds protobuf's serializer straight into the output file.
class AtomicFileStream final : public pb::io::CopyingOutputStream {
 public:
  explicit AtomicFileStream(AtomicFile& file) : file_(file) {}
  bool Write(const void* buffer, int size) override {
    status_ = file_.write(std::string_view(static_cast<const char*>(buffer), static_cast<size_t>(size)));
    return status_.ok();
  }
  const Status& status() const { return status_; }

 private:
  AtomicFile& file_;
  Status status_;
};

// How one tensor is written. Unchanged tensors are serialized as they are;
// the others are written as `meta` (the tensor without its data) followed,
// for data brought inline, by `raw` as the raw_data field.
struct TensorOut {
  std::optional<onnx::TensorProto> meta;
  std::span<const std::byte> raw;  // points into a mapped side file
};

// Collects external tensors into one side file, in the order they come.
class SideFileWriter {
 public:
  SideFileWriter(fs::path path, std::string location) : path_(std::move(path)), location_(std::move(location)) {}

  // Appends the bytes and returns where they went, as external_data entries.
  Result<onnx::TensorProto> append(const onnx::TensorProto& tensor, std::span<const std::byte> bytes) {
    ONNXKIT_ASSIGN(uint64_t offset, start_tensor());
    ONNXKIT_TRY(file_->write(bytes));
    return external_meta(tensor, offset, bytes.size());
  }

  // Copies from another side file without mapping its pages in, or from
  // the mapping where the file cannot be reopened as it was (replaced since).
  Result<onnx::TensorProto> append(const onnx::TensorProto& tensor, const ExternalDataStore& source, const ExternalSlice& slice) {
    ONNXKIT_ASSIGN(uint64_t offset, start_tensor());
    if (Result<UniqueFd> fd = source.reopen(slice); fd.ok()) ONNXKIT_TRY(file_->copy_from(fd->get(), slice.offset, slice.length));
    else ONNXKIT_TRY(file_->write(slice.bytes()));
    return external_meta(tensor, offset, slice.length);
  }

  uint64_t size() const { return file_ ? file_->size() : 0; }
  // The file, uncommitted; empty when no tensor went to it.
  std::optional<AtomicFile> take() { return std::move(file_); }

 private:
  // Opens the file on first use and pads to the next tensor's offset, aligned
  // so that mapped tensors can be read with aligned vector loads.
  Result<uint64_t> start_tensor() {
    if (!file_) {
      ONNXKIT_ASSIGN(AtomicFile f, AtomicFile::create(path_));
      file_.emplace(std::move(f));
    }
    constexpr uint64_t kAlignment = 64;
    static const std::string kPadding(kAlignment, '\0');
    uint64_t offset = (file_->size() + kAlignment - 1) / kAlignment * kAlignment;
    ONNXKIT_TRY(file_->write(std::string_view(kPadding).substr(0, offset - file_->size())));
    return offset;
  }

  onnx::TensorProto external_meta(const onnx::TensorProto& tensor, uint64_t offset, uint64_t length) const {
    onnx::TensorProto meta;
    copy_tensor_metadata(tensor, &meta);
    set_external_location(meta, location_, offset, length);
    return meta;
  }

  fs::path path_;
  std::string location_;
  std::optional<AtomicFile> file_;
};

// Where a tensor goes under the policy.
Result<bool> goes_external(const onnx::TensorProto& t, const SaveOptions& options) {
  switch (options.external) {
    case ExternalDataPolicy::keep: return is_external(t);
    case ExternalDataPolicy::all: {
      ONNXKIT_ASSIGN(uint64_t count, element_count(t));
      return has_fixed_size(t.data_type()) && !t.has_segment() && data_byte_size(t.data_type(), count) >= options.threshold;
    }
    case ExternalDataPolicy::none: break;
  }
  return false;
}

// Decides where a tensor's data goes and writes it to the side file if there.
Result<TensorOut> place_tensor(const onnx::TensorProto& t, const ExternalDataStore* source, SideFileWriter& side,
                               const SaveOptions& options) {
  ONNXKIT_ASSIGN(bool to_external, goes_external(t, options));
  TensorOut out;
  if (is_external(t)) {
    if (source == nullptr) return make_error("{}: data is external but the model's folder is unknown", describe_tensor(t));
    ONNXKIT_ASSIGN(ExternalSlice slice, source->slice(t));
    if (to_external) {
      ONNXKIT_ASSIGN(out.meta, side.append(t, *source, slice));
    } else {
      out.meta.emplace();
      copy_tensor_metadata(t, &*out.meta);
      out.meta->clear_external_data();
      out.meta->clear_data_location();
      out.raw = slice.bytes();
    }
  } else if (to_external) {
    if (t.has_raw_data()) {
      ONNXKIT_ASSIGN(out.meta, side.append(t, std::as_bytes(std::span(t.raw_data().data(), t.raw_data().size()))));
    } else {
      ONNXKIT_ASSIGN(std::string converted, inline_bytes(t));
      ONNXKIT_ASSIGN(out.meta, side.append(t, std::as_bytes(std::span(converted.data(), converted.size()))));
    }
  }
  return out;
}

// Field numbers of onnx.proto, for the parts written by hand.
constexpr int kModelGraphField = 7;
constexpr int kGraphInitializerField = 5;
constexpr int kTensorRawDataField = 9;

uint64_t length_delimited_size(uint64_t payload) {
  return 1 + pb::io::CodedOutputStream::VarintSize64(payload) + payload;  // one-byte tags only
}

uint64_t serialized_size(const onnx::TensorProto& original, const TensorOut& out) {
  if (!out.meta) return original.ByteSizeLong();
  uint64_t size = out.meta->ByteSizeLong();
  if (!out.raw.empty()) size += length_delimited_size(out.raw.size());
  return size;
}

void write_length_delimited_tag(pb::io::CodedOutputStream& coded, int field, uint64_t size) {
  coded.WriteTag(pb::internal::WireFormatLite::MakeTag(field, pb::internal::WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
  coded.WriteVarint64(size);
}

// Points every external tensor about to be written at the side file's name,
// `location`: all of them live in the one side file save_model writes.
Status point_external_tensors_at(onnx::ModelProto& proto, std::vector<TensorOut>& placed, const std::string& location) {
  auto point = [&](onnx::TensorProto& t) -> Status {
    if (!is_external(t)) return {};
    for (auto& entry : *t.mutable_external_data())
      if (entry.key() == "location") entry.set_value(location);
    return {};
  };
  for (TensorOut& out : placed)
    if (out.meta) ONNXKIT_TRY(point(*out.meta));
  return for_each_tensor(proto, [&](onnx::TensorProto& t, const std::string&) { return point(t); });
}

// Writes `proto` (whose graph holds no initializers) to a new uncommitted
// AtomicFile for `path`, with `initializers` placed as `placed` says. The
// graph is written by hand around its initializers, which are serialized
// straight from where they live.
Result<AtomicFile> write_model_file(const fs::path& path, onnx::ModelProto& proto,
                                    const std::vector<const onnx::TensorProto*>& initializers,
                                    const std::vector<TensorOut>& placed) {
  // The graph is lent out of `proto` while the rest is serialized.
  struct GraphLoan {
    onnx::ModelProto& model;
    std::unique_ptr<onnx::GraphProto> graph;
    ~GraphLoan() { model.set_allocated_graph(graph.release()); }
  } loan{proto, std::unique_ptr<onnx::GraphProto>(proto.release_graph())};
  const onnx::GraphProto& graph = loan.graph ? *loan.graph : onnx::GraphProto::default_instance();

  uint64_t graph_size = graph.ByteSizeLong();
  std::vector<uint64_t> tensor_sizes;
  for (size_t i = 0; i < initializers.size(); ++i) {
    tensor_sizes.push_back(serialized_size(*initializers[i], placed[i]));
    graph_size += length_delimited_size(tensor_sizes.back());
  }
  uint64_t model_size = proto.ByteSizeLong() + length_delimited_size(graph_size);
  if (model_size > kProtobufLimit)
    return make_error("{}: the model would be {} in one protobuf, over the 2 GiB limit; save with external data", path.string(),
                      human_bytes(model_size));

  ONNXKIT_ASSIGN(AtomicFile file, AtomicFile::create(path));
  {
    AtomicFileStream sink(file);
    pb::io::CopyingOutputStreamAdaptor adaptor(&sink, 1 << 20);
    {
      pb::io::CodedOutputStream coded(&adaptor);
      proto.SerializeWithCachedSizes(&coded);
      write_length_delimited_tag(coded, kModelGraphField, graph_size);
      graph.SerializeWithCachedSizes(&coded);
      for (size_t i = 0; i < initializers.size(); ++i) {
        write_length_delimited_tag(coded, kGraphInitializerField, tensor_sizes[i]);
        const TensorOut& out = placed[i];
        if (!out.meta) {
          initializers[i]->SerializeWithCachedSizes(&coded);
          continue;
        }
        out.meta->SerializeWithCachedSizes(&coded);
        if (!out.raw.empty()) {
          write_length_delimited_tag(coded, kTensorRawDataField, out.raw.size());
          coded.WriteRaw(out.raw.data(), static_cast<int>(out.raw.size()));
        }
      }
    }
    if (!adaptor.Flush() || !sink.status().ok())
      return sink.status().ok() ? make_error("{}: write failed", path.string()) : sink.status().error();
  }
  return file;
}

}  // namespace

namespace {

Status check_size(uint64_t size, const std::string& name) {
  if (size == 0) return make_error("{}: empty file, not an ONNX model", name);
  if (size > kProtobufLimit)
    return make_error("{}: {} is over protobuf's 2 GiB limit for one message; large weights must be external data", name,
                      human_bytes(size));
  return {};
}

// protobuf alone: the judge of input the walk of io/model_parse.h declines.
Status parse_protobuf(pb::io::ZeroCopyInputStream& stream, onnx::ModelProto& proto, const std::string& name) {
  pb::io::CodedInputStream input(&stream);
  input.SetTotalBytesLimit(static_cast<int>(kProtobufLimit));
  if (!proto.ParseFromCodedStream(&input) || !input.ConsumedEntireMessage())
    return make_error("{}: not an ONNX model (the protobuf is truncated, corrupt or nested too deeply)", name);
  return {};
}

// Parses with the initializers' raw_data read apart, or, where that declines,
// with protobuf alone from the start of the input, which `restart` gives.
Result<onnx::ModelProto> parse_input(ForwardReader& in, const std::function<Status(onnx::ModelProto&)>& restart) {
  onnx::ModelProto proto;
  ONNXKIT_ASSIGN(bool parsed, parse_model_proto(in, proto));
  if (!parsed) {
    proto.Clear();
    ONNXKIT_TRY(restart(proto));
  }
  return proto;
}

Result<LoadedModel> finish_loading(onnx::ModelProto proto, uint64_t size, const fs::path& base_dir, const std::string& name) {
  if (!proto.has_graph()) return make_error("{}: not an ONNX model (it has no graph)", name);
  LoadedModel loaded;
  loaded.proto = std::move(proto);
  auto store = std::make_shared<ExternalDataStore>(base_dir);
  Status valid = validate_tensors(loaded.proto, *store);
  if (!valid.ok()) return valid.error().in(name);
  loaded.external_data = std::move(store);
  loaded.file_size = size;
  return loaded;
}

}  // namespace

Result<LoadedModel> parse_model(std::span<const std::byte> bytes, const fs::path& base_dir, const std::string& name) {
  ONNXKIT_TRY(check_size(bytes.size(), name));
  ForwardReader in(bytes);
  ONNXKIT_ASSIGN(onnx::ModelProto proto, parse_input(in, [&](onnx::ModelProto& p) {
                   pb::io::ArrayInputStream stream(bytes.data(), static_cast<int>(bytes.size()));
                   return parse_protobuf(stream, p, name);
                 }));
  return finish_loading(std::move(proto), bytes.size(), base_dir, name);
}

Result<LoadedModel> load_model(const fs::path& path) {
  // Read, not mapped: the weights are copied into the message anyway, and a
  // mapping would hold a second copy of the file in memory while they are.
  UniqueFd fd(::open(path.c_str(), kReadFlags));
  if (!fd) return make_error("{}: {}", path.string(), std::strerror(errno));
  ONNXKIT_ASSIGN(uint64_t size, regular_file_size(fd, path));
  ONNXKIT_TRY(check_size(size, path.string()));
  ForwardReader in(fd.get(), size, path.string());
  ONNXKIT_ASSIGN(onnx::ModelProto proto, parse_input(in, [&](onnx::ModelProto& p) -> Status {
                   if (::lseek(fd.get(), 0, SEEK_SET) != 0) return make_error("{}: {}", path.string(), std::strerror(errno));
                   pb::io::FileInputStream stream(fd.get(), 1 << 20);
                   return parse_protobuf(stream, p, path.string());
                 }));
  fs::path dir = path.parent_path();
  ONNXKIT_ASSIGN(LoadedModel loaded, finish_loading(std::move(proto), size, dir.empty() ? fs::path(".") : dir, path.string()));
  loaded.path = path;
  return loaded;
}

Result<SaveSummary> save_model(onnx::ModelProto proto, const ExternalDataStore* source, const fs::path& path,
                               const SaveOptions& options) {
  // The main graph's initializers take the no-copy path.
  google::protobuf::RepeatedPtrField<onnx::TensorProto> initializers;
  initializers.Swap(proto.mutable_graph()->mutable_initializer());
  std::vector<const onnx::TensorProto*> list;
  list.reserve(initializers.size());
  for (const auto& t : initializers) list.push_back(&t);
  return save_model(std::move(proto), list, source, path, options);
}

Result<SaveSummary> save_model(onnx::ModelProto proto, const std::vector<const onnx::TensorProto*>& initializers,
                               const ExternalDataStore* source, const fs::path& path, const SaveOptions& options) {
  std::string data_file = options.data_file.empty() ? conventional_data_name(path) : options.data_file;
  if (fs::path(data_file).has_parent_path() || data_file == "." || data_file == "..")
    return make_error("external data file name '{}' must be a plain file name", data_file);
  if (data_file == path.filename().string())
    return make_error("{}: the external data file must have a name other than the model's", path.string());
  // Refused before any work: a FIFO, a device or a link as the output.
  ONNXKIT_TRY(check_replaceable(path));
  SideFileWriter side(path.parent_path() / data_file, data_file);

  // Tensors inside the proto (sub-graphs, attributes, functions) are small
  // and owned: rewrite them in place.
  Status nested = for_each_tensor(proto, [&](onnx::TensorProto& t, const std::string& where) -> Status {
    auto out = place_tensor(t, source, side, options);
    if (!out.ok()) return out.error().in(where);
    if (out->meta) {
      t = std::move(*out->meta);
      if (!out->raw.empty()) t.set_raw_data(out->raw.data(), out->raw.size());
    }
    return {};
  });
  if (!nested.ok()) return nested.error().in(path.string());

  std::vector<TensorOut> placed;
  placed.reserve(initializers.size());
  for (const onnx::TensorProto* t : initializers) {
    auto out = place_tensor(*t, source, side, options);
    if (!out.ok()) return out.error().in(path.string());
    placed.push_back(std::move(*out));
  }

  SaveSummary summary{0, side.size(), ""};
  PairReplacement replacement{path, data_file, side.take(), {}, options.after_step};
  replacement.write_model = [&](const std::string& location) -> Result<AtomicFile> {
    if (!location.empty()) ONNXKIT_TRY(point_external_tensors_at(proto, placed, location));
    ONNXKIT_ASSIGN(AtomicFile file, write_model_file(path, proto, initializers, placed));
    summary.model_bytes = file.size();
    return file;
  };
  ONNXKIT_ASSIGN(summary.external_file, replace_model_and_data(std::move(replacement)));
  return summary;
}

}  // namespace onnxkit::io
