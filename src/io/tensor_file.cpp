#include "io/tensor_file.h"

#include <zip.h>

#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>

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
    {"f4", TensorProto::FLOAT},     {"f8", TensorProto::DOUBLE},      {"f2", TensorProto::FLOAT16}, {"i1", TensorProto::INT8},
    {"i2", TensorProto::INT16},     {"i4", TensorProto::INT32},       {"i8", TensorProto::INT64},   {"u1", TensorProto::UINT8},
    {"u2", TensorProto::UINT16},    {"u4", TensorProto::UINT32},      {"u8", TensorProto::UINT64},  {"b1", TensorProto::BOOL},
    {"c8", TensorProto::COMPLEX64}, {"c16", TensorProto::COMPLEX128},
};

std::string_view as_chars(std::span<const std::byte> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
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

// What a .npy header says: numpy writes a Python dict literal such as
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// Parses that dict by hand, in one pass over bounded text: the header is
// untrusted, and std::regex recursed once per character of a long shape.
// Keys and values are the few numpy writes; anything else is an error.
class NpyHeaderParser {
 public:
  explicit NpyHeaderParser(std::string_view text) : text_(text) {}

  Result<NpyHeader> parse() {
    NpyHeader header;
    bool has_descr = false, has_shape = false;
    ONNXKIT_TRY(expect('{'));
    while (!accept('}')) {
      ONNXKIT_ASSIGN(std::string key, quoted());
      ONNXKIT_TRY(expect(':'));
      if (key == "descr") {
        skip_space();
        if (pos_ < text_.size() && text_[pos_] == '[')
          return make_error("structured arrays (a list as 'descr') are not supported");
        ONNXKIT_ASSIGN(header.descr, quoted());
        has_descr = true;
      } else if (key == "fortran_order") {
        ONNXKIT_ASSIGN(header.fortran_order, boolean());
      } else if (key == "shape") {
        ONNXKIT_ASSIGN(header.shape, tuple());
        has_shape = true;
      } else {
        return make_error("unexpected key '{}'", key);
      }
      if (!accept(',')) {
        ONNXKIT_TRY(expect('}'));
        break;
      }
    }
    if (!has_descr) return make_error("no 'descr'");
    if (!has_shape) return make_error("no 'shape'");
    return header;
  }

 private:
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t')) ++pos_;
  }
  bool accept(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  Status expect(char c) {
    if (accept(c)) return {};
    return make_error("expected '{}' at position {}", c, pos_);
  }
  Result<std::string> quoted() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      return make_error("expected a quoted string at position {}", pos_);
    const char quote = text_[pos_++];
    const size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) return make_error("unterminated string at position {}", pos_ - 1);
    std::string s(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }
  Result<bool> boolean() {
    skip_space();
    for (auto [word, value] : {std::pair{std::string_view("True"), true}, std::pair{std::string_view("False"), false}})
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    return make_error("expected True or False at position {}", pos_);
  }
  // "()", "(3,)", "(2, 3)"; Python 2's numpy wrote long integers as "3L".
  Result<std::vector<int64_t>> tuple() {
    ONNXKIT_TRY(expect('('));
    std::vector<int64_t> dims;
    while (!accept(')')) {
      skip_space();
      int64_t d = 0;
      auto [ptr, ec] = std::from_chars(text_.data() + pos_, text_.data() + text_.size(), d);
      if (ec == std::errc::result_out_of_range) return make_error("dim {} is out of range", dims.size());
      if (ec != std::errc() || d < 0) return make_error("dim {} is not a non-negative integer", dims.size());
      pos_ = static_cast<size_t>(ptr - text_.data());
      if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;
      dims.push_back(d);
      if (!accept(',')) {
        ONNXKIT_TRY(expect(')'));
        break;
      }
    }
    return dims;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

// An element type as numpy spells it: byte order, kind, width ("<f4", "|u1", "<U5").
struct NpyDescr {
  char kind;
  uint64_t width;  // bytes, or characters for 'U' and 'S'
};

Result<NpyDescr> parse_descr(std::string_view text, const std::string& name) {
  std::string_view rest = text;
  char order = '|';
  if (!rest.empty() && std::string_view("<>|=").find(rest.front()) != std::string_view::npos) {
    order = rest.front();
    rest.remove_prefix(1);
  }
  NpyDescr descr{};
  if (rest.size() < 2 || !std::isalpha(static_cast<unsigned char>(rest.front())))
    return make_error("{}: .npy element type '{}' is not supported (object or structured arrays are not)", name, text);
  descr.kind = rest.front();
  rest.remove_prefix(1);
  auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), descr.width);
  if (ec != std::errc() || ptr != rest.data() + rest.size())
    return make_error("{}: .npy element type '{}' is not supported", name, text);
  if (order == '>' && (descr.kind == 'U' || (descr.kind != 'S' && descr.width != 1)))
    return make_error("{}: big-endian .npy data is not supported", name);
  return descr;
}

struct ZipDiscard {
  void operator()(zip_t* z) const { zip_discard(z); }
};
using ZipArchive = std::unique_ptr<zip_t, ZipDiscard>;
struct ZipClose {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};
using ZipEntry = std::unique_ptr<zip_file_t, ZipClose>;

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
  if (header_len > bytes.size() - header_start) return make_error("{}: truncated .npy header", name);
  auto parsed = NpyHeaderParser(bytes.substr(header_start, header_len)).parse();
  if (!parsed.ok()) return parsed.error().in(name + ": .npy header");
  const NpyHeader& header = *parsed;
  if (header.fortran_order)
    return make_error("{}: Fortran-order .npy arrays are not supported (save with np.ascontiguousarray)", name);
  ONNXKIT_ASSIGN(NpyDescr descr, parse_descr(header.descr, name));

  TensorProto tensor;
  tensor.set_name(name);
  for (int64_t d : header.shape) tensor.add_dims(d);
  ONNXKIT_ASSIGN(const uint64_t count, element_count(tensor));
  std::string_view data = bytes.substr(header_start + header_len);
  // Every size is checked against the bytes present before anything is
  // allocated: the header's shape is the file's claim, not a fact.
  auto check_fits = [&](uint64_t element_bytes) -> Status {
    if (element_bytes != 0 && count > data.size() / element_bytes)
      return make_error("{}: .npy data has {} bytes, its shape needs {} elements of {} bytes ('{}')", name, data.size(), count,
                        element_bytes, header.descr);
    return {};
  };
  if (descr.kind == 'U' || descr.kind == 'S') {
    // numpy never writes a zero width ('<U0' arrays are saved as '<U1'):
    // with one, any count of strings would fit in no bytes at all.
    const uint64_t unit = descr.kind == 'U' ? 4 : 1;
    if (descr.width == 0 || descr.width > data.size() / unit)
      return make_error("{}: .npy string width {} does not fit its {} data bytes", name, descr.width, data.size());
    const uint64_t element_bytes = descr.width * unit;
    ONNXKIT_TRY(check_fits(element_bytes));
    tensor.set_data_type(TensorProto::STRING);
    for (uint64_t i = 0; i < count; ++i) {
      const char* p = data.data() + i * element_bytes;
      if (descr.kind == 'U') {
        tensor.add_string_data(utf32_to_utf8(p, descr.width));
      } else {
        std::string_view s(p, descr.width);
        tensor.add_string_data(std::string(s.substr(0, s.find('\0'))));
      }
    }
    return tensor;
  }
  const std::string code = descr.kind + std::to_string(descr.width);
  for (const NpyType& t : kNpyTypes) {
    if (code != t.descr) continue;
    tensor.set_data_type(t.onnx);
    ONNXKIT_TRY(check_fits(data_byte_size(t.onnx, 1)));
    tensor.set_raw_data(data.data(), data_byte_size(t.onnx, count));
    return tensor;
  }
  return make_error("{}: .npy element type '{}' is not supported", name, header.descr);
}

Result<TensorProto> read_npy(const fs::path& path) {
  ONNXKIT_ASSIGN(auto mapped, MappedFile::open(path));
  return parse_npy(as_chars(mapped->bytes()), path.string());
}

Result<std::vector<std::pair<std::string, TensorProto>>> read_npz(const fs::path& path) {
  // Mapped, not opened by libzip: a FIFO or a device is refused at once.
  ONNXKIT_ASSIGN(auto mapped, MappedFile::open(path));
  return parse_npz(as_chars(mapped->bytes()), path.string());
}

Result<std::vector<std::pair<std::string, TensorProto>>> parse_npz(std::string_view bytes, const std::string& name) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* source = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  ZipArchive archive(source != nullptr ? zip_open_from_source(source, ZIP_RDONLY | ZIP_CHECKCONS, &error) : nullptr);
  if (!archive) {
    if (source != nullptr) zip_source_free(source);
    std::string why = zip_error_strerror(&error);
    zip_error_fini(&error);
    return make_error("{}: not a readable .npz (zip) file: {}", name, why);
  }
  zip_error_fini(&error);

  const zip_int64_t entries = zip_get_num_entries(archive.get(), 0);
  // Deflate cannot compress more than 1032:1, so an entry that declares more
  // is lying about its size; refused before anything is allocated. Entries
  // may share compressed bytes, so their total is bounded by the file too.
  constexpr uint64_t kMaxRatio = 1032;
  const uint64_t total_limit = std::max<uint64_t>(bytes.size(), 1) * kMaxRatio;
  uint64_t total = 0;
  std::vector<std::pair<std::string, TensorProto>> arrays;
  for (zip_int64_t i = 0; i < entries; ++i) {
    const auto index = static_cast<zip_uint64_t>(i);
    zip_stat_t st;
    if (zip_stat_index(archive.get(), index, 0, &st) != 0 || !(st.valid & ZIP_STAT_NAME) || !(st.valid & ZIP_STAT_SIZE) ||
        !(st.valid & ZIP_STAT_COMP_SIZE) || !(st.valid & ZIP_STAT_COMP_METHOD))
      return make_error("{}: corrupt .npz directory at entry {}: {}", name, i, zip_strerror(archive.get()));
    const std::string entry = st.name;
    if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE)
      return make_error("{}: entry '{}' is encrypted", name, entry);
    if (st.comp_method != ZIP_CM_STORE && st.comp_method != ZIP_CM_DEFLATE)
      return make_error("{}: entry '{}' uses zip method {}, only stored and deflate are supported", name, entry, st.comp_method);
    const uint64_t limit = st.comp_method == ZIP_CM_STORE ? st.comp_size : st.comp_size * kMaxRatio;
    if (st.comp_size > bytes.size() || st.size > limit || st.size > total_limit - total)
      return make_error("{}: entry '{}' declares {} bytes from {} compressed, more than deflate can give", name, entry, st.size,
                        st.comp_size);
    total += st.size;
    ZipEntry file(zip_fopen_index(archive.get(), index, 0));
    if (!file) return make_error("{}: cannot read entry '{}': {}", name, entry, zip_strerror(archive.get()));
    std::string npy(st.size, '\0');
    uint64_t got = 0;
    while (got < st.size) {
      const zip_int64_t n = zip_fread(file.get(), npy.data() + got, st.size - got);
      if (n <= 0) break;
      got += static_cast<uint64_t>(n);
    }
    // One read more reaches the end, where libzip checks the CRC.
    char extra;
    if (got != st.size || zip_fread(file.get(), &extra, 1) != 0)
      return make_error("{}: corrupt compressed entry '{}': {}", name, entry, zip_file_strerror(file.get()));
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
      if (!decoded[i].empty())  // memcpy from an empty vector's null data() is undefined, even for 0 bytes
        std::memcpy(data.data() + i * width * 4, decoded[i].data(), decoded[i].size() * 4);
  } else {
    for (const NpyType& t : kNpyTypes) {
      if (t.onnx != tensor.data_type()) continue;
      bool single_byte = std::string_view(t.descr).size() == 2 && t.descr[1] == '1';
      descr = (single_byte ? "|" : "<") + std::string(t.descr);
    }
    if (descr.empty())
      return make_error("{}: {} has no .npy equivalent (use --format pb)", describe_tensor(tensor),
                        data_type_name(tensor.data_type()));
    ONNXKIT_ASSIGN(data, inline_bytes(tensor));
  }
  std::string shape = "(";
  for (int i = 0; i < tensor.dims_size(); ++i)
    shape += std::to_string(tensor.dims(i)) + (tensor.dims_size() == 1 ? "," : i + 1 < tensor.dims_size() ? ", " : "");
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

Status write_npz(const fs::path& path, const std::vector<std::pair<std::string, TensorProto>>& arrays) {
  // Built in memory by libzip (as the reader is), stored entries as
  // numpy.savez writes them, dated 1980-01-01 so the bytes do not depend
  // on the clock; then written through an AtomicFile.
  std::vector<std::string> npys;
  npys.reserve(arrays.size());
  for (const auto& [array, tensor] : arrays) {
    ONNXKIT_ASSIGN(std::string npy, npy_bytes(tensor));
    npys.push_back(std::move(npy));
  }
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* buffer = zip_source_buffer_create(nullptr, 0, 0, &error);
  auto failed = [&](const std::string& why) {
    zip_error_fini(&error);
    return make_error("{}: cannot build the .npz: {}", path.string(), why);
  };
  if (buffer == nullptr) return failed(zip_error_strerror(&error));
  zip_source_keep(buffer);  // the archive's bytes outlive zip_close
  struct SourceFree {
    void operator()(zip_source_t* s) const { zip_source_free(s); }
  };
  std::unique_ptr<zip_source_t, SourceFree> bytes(buffer);
  ZipArchive archive(zip_open_from_source(buffer, ZIP_TRUNCATE, &error));
  if (!archive) {
    zip_source_free(buffer);  // the reference zip_open_from_source did not take
    return failed(zip_error_strerror(&error));
  }
  for (size_t i = 0; i < arrays.size(); ++i) {
    const std::string entry = arrays[i].first + ".npy";
    zip_source_t* source = zip_source_buffer(archive.get(), npys[i].data(), npys[i].size(), 0);
    zip_int64_t index = source != nullptr ? zip_file_add(archive.get(), entry.c_str(), source, ZIP_FL_ENC_UTF_8) : -1;
    if (index < 0) {
      if (source != nullptr) zip_source_free(source);
      return failed(fmt::format("entry '{}': {}", entry, zip_strerror(archive.get())));
    }
    const auto at = static_cast<zip_uint64_t>(index);
    if (zip_set_file_compression(archive.get(), at, ZIP_CM_STORE, 0) != 0 ||
        zip_file_set_mtime(archive.get(), at, 315532800, 0) != 0)
      return failed(fmt::format("entry '{}': {}", entry, zip_strerror(archive.get())));
  }
  if (zip_close(archive.get()) != 0) return failed(zip_strerror(archive.get()));
  archive.release();  // closed: nothing left to discard
  std::string out;
  if (zip_source_open(buffer) != 0 || zip_source_seek(buffer, 0, SEEK_END) != 0)
    return failed(zip_error_strerror(zip_source_error(buffer)));
  const zip_int64_t size = zip_source_tell(buffer);
  if (size < 0 || zip_source_seek(buffer, 0, SEEK_SET) != 0) return failed(zip_error_strerror(zip_source_error(buffer)));
  out.resize(static_cast<size_t>(size));
  const zip_int64_t got = zip_source_read(buffer, out.data(), out.size());
  zip_source_close(buffer);
  if (got != size) return failed(zip_error_strerror(zip_source_error(buffer)));
  zip_error_fini(&error);
  ONNXKIT_ASSIGN(AtomicFile file, AtomicFile::create(path));
  ONNXKIT_TRY(file.write(out));
  return file.commit();
}

Status write_npy(const fs::path& path, const TensorProto& tensor) {
  ONNXKIT_ASSIGN(std::string bytes, npy_bytes(tensor));
  return write_file_atomically(path, bytes);
}

template <class Message> Result<Message> read_pb(const fs::path& path) {
  ONNXKIT_ASSIGN(auto mapped, MappedFile::open(path));
  if (mapped->size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    return make_error("{}: over protobuf's 2 GiB limit for one message", path.string());
  Message message;
  if (!message.ParseFromArray(mapped->bytes().data(), static_cast<int>(mapped->size())))
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
