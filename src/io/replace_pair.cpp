#include "io/replace_pair.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/wire_format_lite.h>
#include <onnx/onnx_pb.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "io/fd.h"

namespace onnxkit::io {
namespace {

namespace fs = std::filesystem;
namespace pb = google::protobuf;
using pb::internal::WireFormatLite;

// Protobuf's own nesting limit when it parses: any model that loads is
// scanned whole.
constexpr int kMaxNesting = 100;

// Adds to `found` the external data locations in one serialized message of
// type `type`. Descends into every field that holds a message (tensors sit
// in initializers, attributes, sub-graphs, functions and training info) and
// skips the others, tensor bytes included, without reading them in.
bool scan_message(pb::io::CodedInputStream& in, const pb::Descriptor* type, int depth, std::set<std::string>& found) {
  if (depth > kMaxNesting) return false;
  while (uint32_t tag = in.ReadTag()) {
    const pb::FieldDescriptor* field = type->FindFieldByNumber(WireFormatLite::GetTagFieldNumber(tag));
    if (field == nullptr || field->type() != pb::FieldDescriptor::TYPE_MESSAGE ||
        WireFormatLite::GetTagWireType(tag) != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      if (!WireFormatLite::SkipField(&in, tag)) return false;
      continue;
    }
    uint32_t length = 0;
    if (!in.ReadVarint32(&length) || length > INT_MAX) return false;
    auto limit = in.PushLimit(static_cast<int>(length));
    if (type == onnx::TensorProto::descriptor() && field->number() == onnx::TensorProto::kExternalDataFieldNumber) {
      onnx::StringStringEntryProto entry;
      if (!entry.ParseFromCodedStream(&in)) return false;
      if (entry.key() == "location") found.insert(entry.value());
    } else if (!scan_message(in, field->message_type(), depth + 1, found)) {
      return false;
    }
    if (in.BytesUntilLimit() != 0) return false;
    in.PopLimit(limit);
  }
  return in.ConsumedEntireMessage();
}

// Whether a side file the old model referenced is OUT's own, to be removed
// once the new model no longer reads it.
bool owned_by_model(const std::string& location, const PairReplacement& r) {
  if (location.find('/') != std::string::npos || location == "." || location == "..") return false;
  for (const std::string& name : {r.data_name, conventional_data_name(r.model)})
    if (location == name || location.starts_with(temporary_name_prefix(name))) return true;
  return false;
}

// Gives the file `from` the second name `to`, which nothing reads at this
// point (the old model's D, once OUT reads the temporary): a hard link costs
// nothing; where the file system has none, a copy.
Status link_or_copy(const fs::path& from, const fs::path& to) {
  if (::unlink(to.c_str()) != 0 && errno != ENOENT)
    return make_error("{}: cannot remove the old side file: {}", to.string(), std::strerror(errno));
  if (::link(from.c_str(), to.c_str()) == 0) return {};
  if (errno != EPERM && errno != EOPNOTSUPP && errno != EMLINK)
    return make_error("{}: cannot link the new side file here: {}", to.string(), std::strerror(errno));
  UniqueFd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in) return make_error("{}: {}", from.string(), std::strerror(errno));
  ONNXKIT_ASSIGN(uint64_t size, regular_file_size(in, from));
  ONNXKIT_ASSIGN(AtomicFile copy, AtomicFile::create(to));
  ONNXKIT_TRY(copy.copy_from(in.get(), 0, size));
  return copy.commit();
}

}  // namespace

std::string conventional_data_name(const fs::path& model) { return model.filename().string() + ".data"; }

std::optional<std::set<std::string>> referenced_locations(const fs::path& path) {
  UniqueFd fd(::open(path.c_str(), kReadFlags));
  if (!fd) return errno == ENOENT ? std::optional(std::set<std::string>()) : std::nullopt;
  if (!regular_file_size(fd, path).ok()) return std::nullopt;
  pb::io::FileInputStream stream(fd.get());
  pb::io::CodedInputStream in(&stream);
  std::set<std::string> found;
  if (!scan_message(in, onnx::ModelProto::descriptor(), 0, found)) return std::nullopt;
  return found;
}

Result<std::string> replace_model_and_data(PairReplacement r) {
  const fs::path dir = r.model.parent_path();
  // Unknown (OUT unreadable as a model) counts as referencing everything.
  const std::optional<std::set<std::string>> old_refs = referenced_locations(r.model);
  auto step = [&](std::string_view name) { return r.after_step ? r.after_step(name) : Status(); };
  // The new pair is in place when this runs: a file it fails to remove is
  // only left over, not an error.
  auto remove_stale = [&](const std::string& kept) {
    if (!old_refs) return;
    for (const std::string& location : *old_refs)
      if (location != kept && owned_by_model(location, r)) ::unlink((dir / location).c_str());
  };

  if (!r.data) {
    ONNXKIT_ASSIGN(AtomicFile model, r.write_model(""));
    ONNXKIT_TRY(model.commit());
    ONNXKIT_TRY(step("model renamed"));
    remove_stale("");
    return std::string();
  }
  AtomicFile& data = *r.data;

  if (old_refs && !old_refs->contains(r.data_name)) {
    // Written before anything is renamed: a model that fails to write
    // leaves D as it was.
    ONNXKIT_ASSIGN(AtomicFile model, r.write_model(r.data_name));
    ONNXKIT_TRY(data.commit());
    ONNXKIT_TRY(step("data renamed"));
    ONNXKIT_TRY(model.commit());
    ONNXKIT_TRY(step("model renamed"));
    remove_stale(r.data_name);
    return r.data_name;
  }

  // The old model reads D: the new pair goes in under the temporary name.
  ONNXKIT_TRY(data.close());
  const std::string interim = data.temporary().filename().string();
  {
    ONNXKIT_ASSIGN(AtomicFile model, r.write_model(interim));
    ONNXKIT_TRY(model.commit());
  }
  data.keep();  // OUT reads it now
  Status renamed = [&]() -> Status {
    ONNXKIT_TRY(step("model renamed, data under its temporary name"));
    ONNXKIT_TRY(link_or_copy(dir / interim, dir / r.data_name));
    ONNXKIT_TRY(step("data linked"));
    ONNXKIT_ASSIGN(AtomicFile model, r.write_model(r.data_name));
    return model.commit();
  }();
  if (!renamed.ok())
    return make_error("{}: saved, but its side file is still under the temporary name '{}': {}", r.model.string(), interim,
                      renamed.error().message());
  ::unlink((dir / interim).c_str());  // made here a moment ago; should this fail, a stray temporary is all
  ONNXKIT_TRY(step("model renamed again"));
  remove_stale(r.data_name);
  return r.data_name;
}

}  // namespace onnxkit::io
