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
constexpr uint32_t kGraphNodeField = 1;
constexpr uint32_t kGraphInitializerField = 5;
constexpr uint32_t kTensorRawDataField = 9;
constexpr uint32_t kNodeAttributeField = 5;

// An attribute of at least this many bytes is parsed apart (LiftedAttribute).
constexpr uint64_t kLiftAttributeBytes = uint64_t{1} << 20;

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

// An attribute cut out of the main graph's node `node` (the `position`th of
// its attributes): its bytes, and the values of each list they hold.
struct LiftedAttribute {
  size_t node = 0, position = 0;
  std::string bytes;
  int64_t floats = 0, ints = 0, strings = 0;
};

// How many values of each list an AttributeProto's bytes hold, or nullopt
// when they hold a field other than its name, scalars and lists (a tensor,
// a graph: fields whose parse apart might differ from protobuf's, such as
// in its nesting limit) or do not parse on the plain wire format.
struct ListCounts {
  int64_t floats = 0, ints = 0, strings = 0;
};
std::optional<ListCounts> count_lists(std::string_view bytes) {
  ListCounts counts;
  size_t at = 0;
  auto varint = [&](uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 64 && at < bytes.size(); shift += 7) {
      const auto byte = static_cast<uint8_t>(bytes[at++]);
      value |= uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  };
  // AttributeProto's fields: name 1, f 2, i 3, s 4, floats 7, ints 8,
  // strings 9, doc_string 13, type 20, ref_attr_name 21.
  while (at < bytes.size()) {
    // Millions of list entries, one field each: theirs first, by their tag byte.
    const auto first = static_cast<uint8_t>(bytes[at]);
    if (first == (8 << 3 | kVarint)) {
      for (++at; at < bytes.size() && (bytes[at] & 0x80) != 0;) ++at;
      if (at++ >= bytes.size()) return std::nullopt;
      ++counts.ints;
      continue;
    }
    if (first == (7 << 3 | kFixed32) && bytes.size() - at >= 5) {
      at += 5;
      ++counts.floats;
      continue;
    }
    if (first == (9 << 3 | kLengthDelimited) && bytes.size() - at >= 2 && (bytes[at + 1] & 0x80) == 0) {
      const size_t length = static_cast<uint8_t>(bytes[at + 1]);
      if (length > bytes.size() - at - 2) return std::nullopt;
      at += 2 + length;
      ++counts.strings;
      continue;
    }
    uint64_t tag = 0, value = 0;
    if (!varint(tag)) return std::nullopt;
    const uint64_t field = tag >> 3, type = tag & 7;
    if (type == kVarint) {
      if ((field != 3 && field != 8 && field != 20) || !varint(value)) return std::nullopt;
      counts.ints += field == 8;
    } else if (type == kFixed32) {
      if ((field != 2 && field != 7) || bytes.size() - at < 4) return std::nullopt;
      at += 4;
      counts.floats += field == 7;
    } else if (type == kLengthDelimited) {
      if (!varint(value) || value > bytes.size() - at) return std::nullopt;
      const std::string_view payload = bytes.substr(at, value);
      at += value;
      if (field == 7) {  // packed floats
        if (value % 4 != 0) return std::nullopt;
        counts.floats += static_cast<int64_t>(value / 4);
      } else if (field == 8) {  // packed ints: one byte without the continuation bit ends each
        counts.ints += std::count_if(payload.begin(), payload.end(), [](char c) { return (c & 0x80) == 0; });
      } else if (field == 9) {
        ++counts.strings;
      } else if (field != 1 && field != 4 && field != 13 && field != 21) {
        return std::nullopt;
      }
    } else {
      return std::nullopt;
    }
  }
  return counts;
}

// Walks the path to the initializers' raw_data, copying the rest as it is.
class Walker {
 public:
  explicit Walker(ForwardReader& in) : in_(in) {}

  // The model's bytes with every initializer's raw_data cut out; false where
  // the walk declines.
  bool model(std::string& out) {
    return message(
        in_.size(), out, [](uint32_t field) { return field == kModelGraphField; },
        [&](const Varint& tag, const Varint&, uint64_t end, std::string& o) { return nested(tag, end, o, &Walker::graph); });
  }

  // raw_data by initializer, in the order protobuf appends the initializers
  // (several graph fields merge into one, their initializers in turn).
  std::vector<std::pair<size_t, std::string>> take_lifted() { return std::move(lifted_); }
  // The large attributes of the main graph's nodes, in order.
  std::vector<LiftedAttribute> take_lifted_attributes() { return std::move(attributes_); }

 private:
  bool graph(uint64_t end, std::string& out) {
    return message(
        end, out, [](uint32_t field) { return field == kGraphInitializerField || field == kGraphNodeField; },
        [&](const Varint& tag, const Varint& length, uint64_t field_end, std::string& o) {
          if ((tag.value >> 3) == kGraphInitializerField) return nested(tag, field_end, o, &Walker::tensor);
          ++nodes_;
          if (length.value < kLiftAttributeBytes) return copy_field(tag, length, o);
          return nested(tag, field_end, o, &Walker::node);
        });
  }

  bool node(uint64_t end, std::string& out) {
    const size_t index = nodes_ - 1;
    size_t attributes = 0;
    return message(
        end, out, [](uint32_t field) { return field == kNodeAttributeField; },
        [&](const Varint& tag, const Varint& length, uint64_t field_end, std::string& o) {
          const size_t position = attributes++;
          if (length.value < kLiftAttributeBytes) return copy_field(tag, length, o);
          return attribute(tag, length, field_end, LiftedAttribute{index, position, {}, 0, 0, 0}, o);
        });
  }

  // A large attribute: lifted when its first field past the name and
  // scalars is a list. protobuf writes fields in number order, a tensor or
  // a graph before the lists: such an attribute (a large Constant's) goes
  // to `out` as it is read, never held apart.
  bool attribute(const Varint& tag, const Varint& length, uint64_t end, LiftedAttribute lifted, std::string& out) {
    std::string& head = lifted.bytes;  // the fields read so far
    while (in_.position() < end) {
      Varint field;
      if (!varint(end, field) || !field.is_minimal() || field.value > UINT32_MAX) return false;
      const uint64_t number = field.value >> 3;
      const auto type = static_cast<uint32_t>(field.value & 7);
      if (number == 7 || number == 8 || number == 9) {  // floats, ints, strings: the rest is read apart
        head.append(field.text());
        const size_t at = head.size();
        head.resize(at + (end - in_.position()));
        if (!in_.read(head.data() + at, head.size() - at)) return false;
        break;
      }
      if (type != kLengthDelimited) {
        head.append(field.text());
        if (!copy_scalar(type, end, head)) return false;
        continue;
      }
      Varint size;
      if (!varint(end, size) || !size.is_minimal() || size.value > end - in_.position()) return false;
      const bool text = number == 1 || number == 4 || number == 13 || number == 21;  // name, s, doc_string, ref_attr_name
      std::string& to = text ? head : out;
      if (!text) {
        out.append(tag.text());
        out.append(length.text());
        out.append(head);
      }
      to.append(field.text());
      to.append(size.text());
      if (!text) return copy(end - in_.position(), out);
      if (!copy(size.value, head)) return false;
    }
    std::optional<ListCounts> counts = count_lists(head);
    if (!counts) {  // left to protobuf
      out.append(tag.text());
      out.append(length.text());
      out.append(head);
      return true;
    }
    lifted.floats = counts->floats;
    lifted.ints = counts->ints;
    lifted.strings = counts->strings;
    attributes_.push_back(std::move(lifted));
    return true;
  }

  bool tensor(uint64_t end, std::string& out) {
    size_t index = initializers_++;
    std::optional<std::string> raw;  // the last raw_data wins, as in protobuf
    bool ok = message(
        end, out, [](uint32_t field) { return field == kTensorRawDataField; },
        [&](const Varint&, const Varint&, uint64_t field_end, std::string&) {
          raw.emplace(field_end - in_.position(), '\0');  // the one allocation, of exactly its size
          return in_.read(raw->data(), raw->size());
        });
    if (ok && raw) lifted_.emplace_back(index, std::move(*raw));
    return ok;
  }

  // A message field on the path: walked by `walk` straight into `out` after
  // room for its length, which is written when known. The length takes all
  // kLengthBytes, padded with continuation bytes (a varint protobuf reads
  // the same), so the payload, a whole graph of a large forest, is never
  // moved or copied again.
  bool nested(const Varint& tag, uint64_t end, std::string& out, bool (Walker::*walk)(uint64_t, std::string&)) {
    out.append(tag.text());
    const size_t at = out.size();
    out.append(kLengthBytes, '\0');
    if (!(this->*walk)(end, out)) return false;
    uint64_t length = out.size() - at - kLengthBytes;
    if (length > INT32_MAX) return false;
    for (size_t i = 0; i < kLengthBytes; ++i, length >>= 7)
      out[at + i] = static_cast<char>((length & 0x7f) | (i + 1 < kLengthBytes ? 0x80 : 0));
    return true;
  }
  // Enough for any length protobuf parses (under 2 GiB); its reader takes
  // a length of up to 5 bytes.
  static constexpr size_t kLengthBytes = 5;

  // Reads fields to `end`, copying them to `out` except the length-delimited
  // ones `is_path` names, which go to `on_path(tag, length, their end, out)`.
  template <class IsPath, class OnPath> bool message(uint64_t end, std::string& out, IsPath is_path, OnPath on_path) {
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
      if (is_path(static_cast<uint32_t>(tag.value >> 3))) {
        if (!on_path(tag, length, field_end, out)) return false;
      } else {
        if (!copy_field(tag, length, out)) return false;
      }
    }
    return true;
  }

  bool copy_field(const Varint& tag, const Varint& length, std::string& out) {
    out.append(tag.text());
    out.append(length.text());
    return copy(length.value, out);
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
  size_t nodes_ = 0;
  std::vector<std::pair<size_t, std::string>> lifted_;
  std::vector<LiftedAttribute> attributes_;
};

// Parses each lifted attribute into its node, at its place among the
// node's attributes, its lists reserved at their exact sizes first.
bool restore_attributes(std::vector<LiftedAttribute>& lifted, onnx::GraphProto& graph) {
  for (LiftedAttribute& a : lifted) {
    if (a.node >= static_cast<size_t>(graph.node_size())) return false;
    onnx::NodeProto& node = *graph.mutable_node(static_cast<int>(a.node));
    onnx::AttributeProto& attribute = *node.add_attribute();
    attribute.mutable_floats()->Reserve(static_cast<int>(a.floats));
    attribute.mutable_ints()->Reserve(static_cast<int>(a.ints));
    attribute.mutable_strings()->Reserve(static_cast<int>(a.strings));
    if (a.bytes.size() > INT32_MAX || !attribute.MergeFromString(a.bytes)) return false;
    std::string().swap(a.bytes);
    if (a.position >= static_cast<size_t>(node.attribute_size())) return false;
    for (int i = node.attribute_size() - 1; i > static_cast<int>(a.position); --i)
      node.mutable_attribute()->SwapElements(i, i - 1);
  }
  return true;
}

}  // namespace

Result<bool> parse_model_proto(ForwardReader& in, onnx::ModelProto& proto) {
  std::vector<std::pair<size_t, std::string>> lifted;
  std::vector<LiftedAttribute> attributes;
  {
    std::string rest;
    // The walk cuts bytes out and adds at most 4 a nested message: one
    // allocation of the input's size (over INT32_MAX it declines) holds
    // all but the rarest outputs, which grow once.
    rest.reserve(std::min<uint64_t>(in.size(), INT32_MAX));
    Walker walker(in);
    bool walked = walker.model(rest);
    if (!in.status().ok()) return in.status().error();
    if (!walked || rest.size() > INT32_MAX || !proto.ParseFromArray(rest.data(), static_cast<int>(rest.size()))) return false;
    lifted = walker.take_lifted();
    attributes = walker.take_lifted_attributes();
  }
  if (!attributes.empty() && !restore_attributes(attributes, *proto.mutable_graph())) return false;
  if (lifted.empty()) return true;  // and a model without a graph keeps none
  auto& initializers = *proto.mutable_graph()->mutable_initializer();
  for (auto& [index, bytes] : lifted) {
    if (index >= static_cast<size_t>(initializers.size())) return false;
    initializers[static_cast<int>(index)].set_raw_data(std::move(bytes));
  }
  return true;
}

}  // namespace onnxkit::io
