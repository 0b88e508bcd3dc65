#include "io/tensor_file.h"

#include <zlib.h>

#include <cstring>
#include <fstream>
#include <regex>

#include "io/atomic_file.h"
#include "io/mapped_file.h"
#include "io/tensor_proto.h"
#include "util/text.h"

namespace onnxkit::io {
namespace {

namespace fs = std::filesystem;
using onnx::TensorProto;

constexpr char kNpyMagic[] = "\x93NUMPY";

struct NpyType {
  const char* descr;  // without the byte-order character
  int32_t onnx;
};

constexpr NpyType kNpyTypes[] = {
    {"f4", TensorProto::FLOAT},  {"f8", TensorProto::DOUBLE}, {"f2", TensorProto::FLOAT16},
    {"i1", TensorProto::INT8},   {"i2", TensorProto::INT16},  {"i4", TensorProto::INT32},
    {"i8", TensorProto::INT64},  {"u1", TensorProto::UINT8},  {"u2", TensorProto::UINT16},
    {"u4", TensorProto::UINT32}, {"u8", TensorProto::UINT64}, {"b1", TensorProto::BOOL},
    {"c8", TensorProto::COMPLEX64}, {"c16", TensorProto::COMPLEX128},
};

Result<std::string> read_whole_file(const fs::path& path) {
  ONNXKIT_ASSIGN(auto mapped, MappedFile::open(path));
  auto bytes = mapped->bytes();
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

uint32_t read_u32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint16_t read_u16(const char* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
uint64_t read_u64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// UTF-32LE code points (numpy's '<U') to UTF-8 and back.
std::string utf32_to_utf8(const char* p, size_t chars) {
  std::string out;
  for (size_t i = 0; i < chars; ++i) {
    const uint32_t c = read_u32(p + 4 * i);
    if (c == 0) break;  // numpy pads with NULs
    append_utf8(c <= 0x10FFFF ? c : 0xFFFD, out);
  }
  return out;
}

std::vector<uint32_t> utf8_to_utf32(const std::string& s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    char32_t c = 0;
    const size_t length = decode_utf8(s, i, c);
    out.push_back(length > 0 ? c : static_cast<unsigned char>(s[i]));  // a stray byte stands for itself
    i += length > 0 ? length : 1;
  }
  return out;
}

}  // namespace

Result<TensorProto> parse_npy(std::string_view bytes, const std::string& name) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != std::string_view(kNpyMagic, 6))
    return make_error("{}: not a .npy file (no NUMPY magic)", name);
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len, header_start;
  if (major == 1) {
    header_len = read_u16(bytes.data() + 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return make_error("{}: truncated .npy header", name);
    header_len = read_u32(bytes.data() + 8);
    header_start = 12;
  } else {
    return make_error("{}: unsupported .npy version {}", name, major);
  }
  if (header_start + header_len > bytes.size()) return make_error("{}: truncated .npy header", name);
  std::string header(bytes.substr(header_start, header_len));
  std::smatch m;
  static const std::regex descr_re(R"('descr'\s*:\s*'([<>|=])([a-zA-Z])(\d+)')");
  static const std::regex fortran_re(R"('fortran_order'\s*:\s*(True|False))");
  static const std::regex shape_re(R"('shape'\s*:\s*\(([^)]*)\))");
  if (!std::regex_search(header, m, descr_re)) return make_error("{}: .npy header has no plain 'descr' (object or structured arrays are not supported)", name);
  std::string order = m[1], kind = m[2], width = m[3];
  if (order == ">" && width != "1") return make_error("{}: big-endian .npy data is not supported", name);
  if (std::regex_search(header, m, fortran_re) && m[1] == "True")
    return make_error("{}: Fortran-order .npy arrays are not supported (save with np.ascontiguousarray)", name);
  if (!std::regex_search(header, m, shape_re)) return make_error("{}: .npy header has no shape", name);
  TensorProto tensor;
  tensor.set_name(name);
  std::string dims = m[1];
  uint64_t count = 1;
  for (size_t pos = 0; pos < dims.size();) {
    size_t comma = dims.find(',', pos);
    std::string part = dims.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? dims.size() : comma + 1;
    if (part.find_first_not_of(" ") == std::string::npos) continue;
    int64_t d = std::stoll(part);
    tensor.add_dims(d);
    count *= static_cast<uint64_t>(d);
  }
  std::string_view data = bytes.substr(header_start + header_len);
  if (kind == "U") {
    size_t chars = std::stoul(width);
    if (data.size() < count * chars * 4) return make_error("{}: .npy data is shorter than its shape", name);
    tensor.set_data_type(TensorProto::STRING);
    for (uint64_t i = 0; i < count; ++i) tensor.add_string_data(utf32_to_utf8(data.data() + i * chars * 4, chars));
    return tensor;
  }
  if (kind == "S") {
    size_t w = std::stoul(width);
    if (data.size() < count * w) return make_error("{}: .npy data is shorter than its shape", name);
    tensor.set_data_type(TensorProto::STRING);
    for (uint64_t i = 0; i < count; ++i) {
      std::string s(data.substr(i * w, w));
      tensor.add_string_data(s.substr(0, s.find('\0')));
    }
    return tensor;
  }
  std::string code = kind + width;
  for (const NpyType& t : kNpyTypes) {
    if (code != t.descr) continue;
    tensor.set_data_type(t.onnx);
    uint64_t need = data_byte_size(t.onnx, count);
    if (data.size() < need) return make_error("{}: .npy data has {} bytes, its shape needs {}", name, data.size(), need);
    tensor.set_raw_data(data.data(), need);
    return tensor;
  }
  return make_error("{}: .npy element type '{}' is not supported", name, code);
}

Result<TensorProto> read_npy(const fs::path& path) {
  ONNXKIT_ASSIGN(std::string bytes, read_whole_file(path));
  return parse_npy(bytes, path.string());
}

Result<std::vector<std::pair<std::string, TensorProto>>> read_npz(const fs::path& path) {
  ONNXKIT_ASSIGN(std::string zip, read_whole_file(path));
  const std::string name = path.string();
  // The end-of-central-directory record: 22 bytes plus a comment of at most 64 KiB.
  size_t eocd = std::string::npos;
  if (zip.size() >= 22) {
    const size_t earliest = zip.size() > 22 + 65535 ? zip.size() - 22 - 65535 : 0;
    for (size_t i = zip.size() - 22;; --i) {
      if (zip.compare(i, 4, "PK\x05\x06") == 0) {
        eocd = i;
        break;
      }
      if (i == earliest) break;
    }
  }
  if (eocd == std::string::npos) return make_error("{}: not a .npz (zip) file", name);
  uint64_t entries = read_u16(zip.data() + eocd + 10);
  uint64_t directory = read_u32(zip.data() + eocd + 16);
  if (directory == 0xffffffffu || entries == 0xffffu) {
    // Zip64: the locator precedes the classic record.
    if (eocd < 20 || zip.compare(eocd - 20, 4, "PK\x06\x07") != 0) return make_error("{}: corrupt zip64 .npz", name);
    uint64_t record = read_u64(zip.data() + eocd - 20 + 8);
    if (record + 56 > zip.size() || zip.compare(record, 4, "PK\x06\x06") != 0) return make_error("{}: corrupt zip64 .npz", name);
    entries = read_u64(zip.data() + record + 32);
    directory = read_u64(zip.data() + record + 48);
  }
  std::vector<std::pair<std::string, TensorProto>> arrays;
  size_t p = directory;
  for (uint64_t e = 0; e < entries; ++e) {
    if (p + 46 > zip.size() || zip.compare(p, 4, "PK\x01\x02") != 0) return make_error("{}: corrupt .npz directory", name);
    uint16_t method = read_u16(zip.data() + p + 10);
    uint64_t compressed = read_u32(zip.data() + p + 20), size = read_u32(zip.data() + p + 24);
    uint16_t name_len = read_u16(zip.data() + p + 28), extra_len = read_u16(zip.data() + p + 30),
             comment_len = read_u16(zip.data() + p + 32);
    uint64_t local = read_u32(zip.data() + p + 42);
    std::string entry(zip.substr(p + 46, name_len));
    // Zip64 sizes and offset live in extra field 0x0001, in this order.
    for (size_t x = p + 46 + name_len; x + 4 <= p + 46 + name_len + extra_len;) {
      uint16_t id = read_u16(zip.data() + x), len = read_u16(zip.data() + x + 2);
      if (id == 1) {
        size_t q = x + 4;
        if (size == 0xffffffffu) size = read_u64(zip.data() + q), q += 8;
        if (compressed == 0xffffffffu) compressed = read_u64(zip.data() + q), q += 8;
        if (local == 0xffffffffu) local = read_u64(zip.data() + q);
      }
      x += 4 + len;
    }
    p += 46 + name_len + extra_len + comment_len;
    if (local + 30 > zip.size()) return make_error("{}: corrupt .npz entry '{}'", name, entry);
    size_t data = local + 30 + read_u16(zip.data() + local + 26) + read_u16(zip.data() + local + 28);
    if (data + compressed > zip.size()) return make_error("{}: truncated .npz entry '{}'", name, entry);
    std::string npy;
    if (method == 0) {
      npy = zip.substr(data, compressed);
    } else if (method == 8) {
      npy.resize(size);
      z_stream z{};
      z.next_in = reinterpret_cast<Bytef*>(zip.data() + data);
      z.avail_in = static_cast<uInt>(compressed);
      z.next_out = reinterpret_cast<Bytef*>(npy.data());
      z.avail_out = static_cast<uInt>(size);
      if (inflateInit2(&z, -MAX_WBITS) != Z_OK) return make_error("{}: cannot inflate '{}'", name, entry);
      int rc = inflate(&z, Z_FINISH);
      inflateEnd(&z);
      if (rc != Z_STREAM_END) return make_error("{}: corrupt compressed entry '{}'", name, entry);
    } else {
      return make_error("{}: entry '{}' uses zip method {}, only stored and deflate are supported", name, entry, method);
    }
    std::string array = entry.size() > 4 && entry.ends_with(".npy") ? entry.substr(0, entry.size() - 4) : entry;
    ONNXKIT_ASSIGN(TensorProto t, parse_npy(npy, name + ":" + array));
    t.set_name(array);
    arrays.emplace_back(array, std::move(t));
  }
  return arrays;
}

Result<std::string> npy_bytes(const TensorProto& tensor) {
  std::string descr;
  std::string data;
  ONNXKIT_ASSIGN(uint64_t count, element_count(tensor));
  if (tensor.data_type() == TensorProto::STRING) {
    size_t width = 1;
    std::vector<std::vector<uint32_t>> decoded;
    for (const auto& s : tensor.string_data()) {
      decoded.push_back(utf8_to_utf32(s));
      width = std::max(width, decoded.back().size());
    }
    descr = "<U" + std::to_string(width);
    data.assign(count * width * 4, '\0');
    for (size_t i = 0; i < decoded.size() && i < count; ++i)
      std::memcpy(data.data() + i * width * 4, decoded[i].data(), decoded[i].size() * 4);
  } else {
    for (const NpyType& t : kNpyTypes) {
      if (t.onnx != tensor.data_type()) continue;
      bool single_byte = std::string_view(t.descr).size() == 2 && t.descr[1] == '1';
      descr = (single_byte ? "|" : "<") + std::string(t.descr);
    }
    if (descr.empty())
      return make_error("{}: {} has no .npy equivalent (use --format pb)", describe_tensor(tensor), data_type_name(tensor.data_type()));
    ONNXKIT_ASSIGN(data, inline_bytes(tensor));
  }
  std::string shape = "(";
  for (int i = 0; i < tensor.dims_size(); ++i) shape += std::to_string(tensor.dims(i)) + (tensor.dims_size() == 1 ? "," : i + 1 < tensor.dims_size() ? ", " : "");
  shape += ")";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so that the data starts on a 64-byte boundary, header ending in '\n'.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out(kNpyMagic, 6);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out += data;
  return out;
}

Status write_npy(const fs::path& path, const TensorProto& tensor) {
  ONNXKIT_ASSIGN(std::string bytes, npy_bytes(tensor));
  return write_file_atomically(path, bytes);
}

template <class Message>
Result<Message> read_pb(const fs::path& path) {
  ONNXKIT_ASSIGN(std::string bytes, read_whole_file(path));
  Message message;
  if (!message.ParseFromString(bytes))
    return make_error("{}: not a valid {} (truncated or corrupt protobuf)", path.string(), Message::descriptor()->name());
  return message;
}

template Result<onnx::TensorProto> read_pb<onnx::TensorProto>(const fs::path&);
template Result<onnx::SequenceProto> read_pb<onnx::SequenceProto>(const fs::path&);
template Result<onnx::OptionalProto> read_pb<onnx::OptionalProto>(const fs::path&);

Status write_pb(const fs::path& path, const google::protobuf::Message& message) {
  std::string bytes;
  if (!message.SerializeToString(&bytes)) return make_error("{}: cannot serialize the message", path.string());
  return write_file_atomically(path, bytes);
}

}  // namespace onnxkit::io
