#include "io/model_parse.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace onnxkit::io {

namespace {

constexpr uint64_t kBufferSize = uint64_t{1} << 20;

}  // namespace

ForwardReader::ForwardReader(std::span<const std::byte> bytes)
    : next_(reinterpret_cast<const char*>(bytes.data())), end_(next_ + bytes.size()), size_(bytes.size()) {}

ForwardReader::ForwardReader(int fd, uint64_t size, std::string name)
    : fd_(fd), name_(std::move(name)), buffer_(new char[kBufferSize]), size_(size) {}

bool ForwardReader::refill() {
  uint64_t want = std::min(kBufferSize, size_ - position_);
  if (fd_ < 0 || want == 0 || !status_.ok()) return false;
  for (;;) {
    ssize_t n = ::read(fd_, buffer_.get(), want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) status_ = make_error("{}: {}", name_, std::strerror(errno));
    if (n <= 0) return false;  // 0: the file is shorter than it was
    next_ = buffer_.get();
    end_ = next_ + n;
    return true;
  }
}

bool ForwardReader::read(char* out, uint64_t n) {
  if (n > size_ - position_) return false;
  while (n > 0) {
    if (next_ == end_ && fd_ >= 0 && n >= kBufferSize) {
      // Past the buffer: the bytes go to their destination in one pass.
      ssize_t got = ::read(fd_, out, std::min<uint64_t>(n, 1u << 30));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) status_ = make_error("{}: {}", name_, std::strerror(errno));
      if (got <= 0) return false;
      out += got;
      n -= static_cast<uint64_t>(got);
      position_ += static_cast<uint64_t>(got);
      continue;
    }
    if (next_ == end_ && !refill()) return false;
    uint64_t take = std::min<uint64_t>(n, static_cast<uint64_t>(end_ - next_));
    std::memcpy(out, next_, take);
    next_ += take;
    out += take;
    n -= take;
    position_ += take;
  }
  return true;
}

namespace {

// Field numbers of onnx.proto on the path to the weights.
constexpr uint32_t kModelGraphField = 7;
constexpr uint32_t kGraphInitializerField = 5;
constexpr uint32_t kTensorRawDataField = 9;

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

// A varint as it was read: its value and its bytes.
struct Varint {
  uint64_t value = 0;
  char bytes[10];
  int size = 0;
  std::string_view text() const { return {bytes, static_cast<size_t>(size)}; }
  // As protobuf writes it: the fewest bytes, and short enough that protobuf
  // reads it the same as a tag or a length.
  bool is_minimal() const { return size <= 5 && (size == 1 || bytes[size - 1] != 0); }
};

void append_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>(value | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

// Walks the path to the initializers' raw_data, copying the rest as it is.
class Walker {
 public:
  explicit Walker(ForwardReader& in) : in_(in) {}

  // The model's bytes with every initializer's raw_data cut out; false where
  // the walk declines.
  bool model(std::string& out) {
    return message(in_.size(), out, kModelGraphField,
                   [&](const Varint& tag, uint64_t end, std::string& o) { return nested(tag, end, o, &Walker::graph); });
  }

  // raw_data by initializer, in the order protobuf appends the initializers
  // (several graph fields merge into one, their initializers in turn).
  std::vector<std::pair<size_t, std::string>> take_lifted() { return std::move(lifted_); }

 private:
  bool graph(uint64_t end, std::string& out) {
    return message(end, out, kGraphInitializerField, [&](const Varint& tag, uint64_t field_end, std::string& o) {
      return nested(tag, field_end, o, &Walker::tensor);
    });
  }

  bool tensor(uint64_t end, std::string& out) {
    size_t index = initializers_++;
    std::optional<std::string> raw;  // the last raw_data wins, as in protobuf
    bool ok = message(end, out, kTensorRawDataField, [&](const Varint&, uint64_t field_end, std::string&) {
      raw.emplace(field_end - in_.position(), '\0');  // the one allocation, of exactly its size
      return in_.read(raw->data(), raw->size());
    });
    if (ok && raw) lifted_.emplace_back(index, std::move(*raw));
    return ok;
  }

  // A message field on the path: walked by `walk` and written back with the
  // length of what it wrote.
  bool nested(const Varint& tag, uint64_t end, std::string& out, bool (Walker::*walk)(uint64_t, std::string&)) {
    std::string payload;
    if (!(this->*walk)(end, payload)) return false;
    out.append(tag.text());
    append_varint(out, payload.size());
    out.append(payload);
    return true;
  }

  // Reads fields to `end`, copying them to `out` except the length-delimited
  // `path_field`, which goes to `on_path(tag, its end, out)`.
  template <class OnPath> bool message(uint64_t end, std::string& out, uint32_t path_field, OnPath on_path) {
    while (in_.position() < end) {
      Varint tag;
      if (!varint(end, tag) || !tag.is_minimal() || tag.value > UINT32_MAX || (tag.value >> 3) == 0) return false;
      auto type = static_cast<uint32_t>(tag.value & 7);
      if (type != kLengthDelimited) {
        out.append(tag.text());
        if (!copy_scalar(type, end, out)) return false;
        continue;
      }
      Varint length;
      if (!varint(end, length) || !length.is_minimal() || length.value > end - in_.position()) return false;
      uint64_t field_end = in_.position() + length.value;
      if ((tag.value >> 3) == path_field) {
        if (!on_path(tag, field_end, out)) return false;
      } else {
        out.append(tag.text());
        out.append(length.text());
        if (!copy(length.value, out)) return false;
      }
    }
    return true;
  }

  bool copy(uint64_t n, std::string& out) {
    size_t at = out.size();
    out.resize(at + n);
    return in_.read(out.data() + at, n);
  }

  bool copy_scalar(uint32_t type, uint64_t end, std::string& out) {
    switch (type) {
      case kVarint: {
        Varint v;
        if (!varint(end, v)) return false;
        out.append(v.text());
        return true;
      }
      case kFixed64: return 8 <= end - in_.position() && copy(8, out);
      case kFixed32: return 4 <= end - in_.position() && copy(4, out);
      default: return false;  // groups, and the wire types that do not exist
    }
  }

  bool varint(uint64_t end, Varint& v) {
    for (int shift = 0; v.size < 10; shift += 7) {
      uint8_t byte = 0;
      if (in_.position() >= end || !in_.next_byte(byte)) return false;
      v.bytes[v.size++] = static_cast<char>(byte);
      v.value |= uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }

  ForwardReader& in_;
  size_t initializers_ = 0;
  std::vector<std::pair<size_t, std::string>> lifted_;
};

}  // namespace

Result<bool> parse_model_proto(ForwardReader& in, onnx::ModelProto& proto) {
  std::vector<std::pair<size_t, std::string>> lifted;
  {
    std::string rest;
    Walker walker(in);
    bool walked = walker.model(rest);
    if (!in.status().ok()) return in.status().error();
    if (!walked || rest.size() > INT32_MAX || !proto.ParseFromArray(rest.data(), static_cast<int>(rest.size()))) return false;
    lifted = walker.take_lifted();
  }
  if (lifted.empty()) return true;  // and a model without a graph keeps none
  auto& initializers = *proto.mutable_graph()->mutable_initializer();
  for (auto& [index, bytes] : lifted) {
    if (index >= static_cast<size_t>(initializers.size())) return false;
    initializers[static_cast<int>(index)].set_raw_data(std::move(bytes));
  }
  return true;
}

}  // namespace onnxkit::io
