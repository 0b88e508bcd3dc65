// .npy files of strings: numpy stores them as fixed-width UTF-32LE ('<U'),
// onnxkit's tensors hold UTF-8. The code units are checked against what
// numpy writes for the same text (U+00E9 for "é", U+1F600 for the emoji).
//
// Hostile .npy and .npz files, made here byte by byte: headers that claim
// more than the file holds are refused before anything is allocated.

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "io/tensor_file.h"
#include "support/test_support.h"

namespace onnxkit {
namespace {

uint32_t code_unit(const std::string& bytes, size_t offset) {
  uint32_t v;
  std::memcpy(&v, bytes.data() + offset, 4);
  return v;
}

TEST(TensorFile, StringsTravelAsUtf32InNpy) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::STRING);
  t.add_dims(3);
  for (const char* s : {"h\xC3\xA9llo", "\xF0\x9F\x98\x80", ""}) t.add_string_data(s);
  auto bytes = io::npy_bytes(t);
  ASSERT_TRUE(bytes.ok()) << bytes.error().message();
  EXPECT_NE(bytes->find("'descr': '<U5'"), std::string::npos);  // the widest string has 5 code points
  const size_t data = bytes->size() - 3 * 5 * 4;
  EXPECT_EQ(code_unit(*bytes, data + 4), 0xE9u);      // é
  EXPECT_EQ(code_unit(*bytes, data + 20), 0x1F600u);  // the emoji, first of string 1
  EXPECT_EQ(code_unit(*bytes, data + 24), 0u);        // numpy's NUL padding
  auto back = io::parse_npy(*bytes, "strings.npy");
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_EQ(back->string_data_size(), 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(back->string_data(i), t.string_data(i));
}

TEST(TensorFile, AStrayByteStandsForItself) {
  // Not UTF-8: the byte 0xFF is written as U+00FF and read back as its UTF-8.
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::STRING);
  t.add_dims(1);
  t.add_string_data("a\xFF");
  auto bytes = io::npy_bytes(t);
  ASSERT_TRUE(bytes.ok()) << bytes.error().message();
  EXPECT_EQ(code_unit(*bytes, bytes->size() - 4), 0xFFu);
  auto back = io::parse_npy(*bytes, "stray.npy");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->string_data(0), "a\xC3\xBF");
}

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

// A version 1.0 .npy file: magic, header length, the header as given, data.
std::string npy_file(const std::string& header, const std::string& data) {
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

std::string npy_header(const std::string& descr, const std::string& shape) {
  return "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }\n";
}

std::string parse_error(const std::string& bytes) {
  auto t = io::parse_npy(bytes, "bad.npy");
  EXPECT_FALSE(t.ok()) << "accepted";
  return t.ok() ? "" : t.error().message();
}

TEST(TensorFile, NpyHeadersAsNumpyWritesThem) {
  const std::string two_floats("\x00\x00\x80\x3f\x00\x00\x00\x40", 8);  // 1.0f, 2.0f
  for (const std::string& header :
       {npy_header("<f4", "(2,)"), npy_header("<f4", "(1, 2)"), std::string("{\"descr\":\"<f4\",\"shape\":(2L,)}"),
        std::string("{'descr':'<f4','fortran_order':False,'shape':(2,)}      \n")}) {
    auto t = io::parse_npy(npy_file(header, two_floats), "ok.npy");
    ASSERT_TRUE(t.ok()) << header << ": " << t.error().message();
    EXPECT_EQ(t->data_type(), onnx::TensorProto::FLOAT);
    EXPECT_EQ(t->raw_data(), two_floats);
  }
  auto scalar = io::parse_npy(npy_file(npy_header("<i8", "()"), std::string(8, '\x07')), "scalar.npy");
  ASSERT_TRUE(scalar.ok()) << scalar.error().message();
  EXPECT_EQ(scalar->dims_size(), 0);
  EXPECT_CONTAINS(parse_error(npy_file("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", two_floats)), "Fortran");
  EXPECT_CONTAINS(parse_error(npy_file(npy_header(">f4", "(2,)"), two_floats)), "big-endian");
  EXPECT_CONTAINS(parse_error(npy_file(npy_header(">U1", "(2,)"), two_floats)), "big-endian");
  EXPECT_CONTAINS(parse_error(npy_file("{'descr': [('a', '<f4')], 'shape': (2,)}", two_floats)), "structured");
  EXPECT_CONTAINS(parse_error(npy_file(npy_header("<f4", "(-2,)"), two_floats)), "dim 0");
  EXPECT_CONTAINS(parse_error(npy_file(npy_header("<f4", "(99999999999999999999,)"), two_floats)), "out of range");
  EXPECT_CONTAINS(parse_error(npy_file(npy_header("<f4", "(2,"), two_floats)), "bad.npy: .npy header");
}

TEST(TensorFile, ALongShapeTextIsParsedWithoutRecursion) {
  // 30 KB of "1, " in the shape: std::regex overflowed the stack on it.
  std::string shape = "(";
  for (int i = 0; i < 10000; ++i) shape += "1, ";
  shape += ")";
  std::string header = npy_header("<f4", shape);
  auto bytes = std::string("\x93NUMPY\x02\x00", 8);  // version 2: a 4-byte header length
  const uint32_t length = static_cast<uint32_t>(header.size());
  bytes.append(reinterpret_cast<const char*>(&length), 4);
  bytes += header + std::string(4, '\0');
  auto t = io::parse_npy(bytes, "long.npy");
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->dims_size(), 10000);
}

TEST(TensorFile, NpySizesThatWrapOrExceedTheFileAreRefused) {
  // Four strings of 2^62 characters: 4 * 2^62 * 4 bytes wraps to 0, which
  // passed the size check and then read far past the buffer.
  EXPECT_CONTAINS(parse_error(npy_file(npy_header("<U4611686018427387904", "(4,)"), std::string(16, 'a'))), "does not fit");
  // 2^40 one-byte strings in a 90-byte file.
  EXPECT_CONTAINS(parse_error(npy_file(npy_header("|S1", "(1099511627776,)"), "abc")), "needs 1099511627776 elements");
  // Zero-width strings fit any count in no bytes: 2^40 empty strings.
  EXPECT_CONTAINS(parse_error(npy_file(npy_header("|S0", "(1099511627776,)"), "")), "width 0");
  EXPECT_CONTAINS(parse_error(npy_file(npy_header("<f8", "(1099511627776, 1099511627776)"), "")), "overflows");
  EXPECT_CONTAINS(parse_error(npy_file(npy_header("<f8", "(3,)"), std::string(16, '\0'))), "16 bytes");
}

// A zip archive written by hand (no zip library on the writing side), so
// that each entry's header can say what a test needs.
struct ZipEntry {
  std::string name;
  uint16_t method;           // 0 stored, 8 deflate
  std::string payload;       // as stored in the archive
  std::string uncompressed;  // for the CRC
  uint64_t declared_size;    // the uncompressed size the headers claim
};

uint32_t crc32_of(const std::string& bytes) {
  uint32_t crc = 0xffffffffu;
  for (unsigned char c : bytes) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

template <class T> void put(std::string& out, T v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }

std::string zip_of(const std::vector<ZipEntry>& entries) {
  std::string out, directory;
  for (const ZipEntry& e : entries) {
    const auto offset = static_cast<uint32_t>(out.size());
    const uint32_t crc = crc32_of(e.uncompressed);
    const auto size = static_cast<uint32_t>(e.declared_size), packed = static_cast<uint32_t>(e.payload.size());
    const auto name_length = static_cast<uint16_t>(e.name.size());
    put<uint32_t>(out, 0x04034b50);
    for (uint16_t v : {uint16_t{20}, uint16_t{0}, e.method, uint16_t{0}, uint16_t{0}}) put(out, v);
    for (uint32_t v : {crc, packed, size}) put(out, v);
    put(out, name_length);
    put<uint16_t>(out, 0);
    out += e.name + e.payload;
    put<uint32_t>(directory, 0x02014b50);
    for (uint16_t v : {uint16_t{20}, uint16_t{20}, uint16_t{0}, e.method, uint16_t{0}, uint16_t{0}}) put(directory, v);
    for (uint32_t v : {crc, packed, size}) put(directory, v);
    for (uint16_t v : {name_length, uint16_t{0}, uint16_t{0}, uint16_t{0}, uint16_t{0}}) put(directory, v);
    for (uint32_t v : {uint32_t{0}, offset}) put(directory, v);
    directory += e.name;
  }
  const auto directory_offset = static_cast<uint32_t>(out.size());
  out += directory;
  put<uint32_t>(out, 0x06054b50);
  const auto count = static_cast<uint16_t>(entries.size());
  for (uint16_t v : {uint16_t{0}, uint16_t{0}, count, count}) put(out, v);
  for (uint32_t v : {static_cast<uint32_t>(directory.size()), directory_offset}) put(out, v);
  put<uint16_t>(out, 0);
  return out;
}

// `bytes` as one final stored block of a raw deflate stream.
std::string deflate_stored(const std::string& bytes) {
  std::string out(1, '\x01');
  put(out, static_cast<uint16_t>(bytes.size()));
  put(out, static_cast<uint16_t>(~bytes.size()));
  return out + bytes;
}

Result<std::vector<std::pair<std::string, onnx::TensorProto>>> read_zip(const testing::TempDir& dir, const std::string& zip) {
  std::ofstream(dir / "t.npz", std::ios::binary) << zip;
  return io::read_npz(dir / "t.npz");
}

TEST(TensorFile, NpzEntriesStoredAndDeflated) {
  testing::TempDir dir;
  const std::string a = npy_file(npy_header("<i8", "(1,)"), std::string("\x05\0\0\0\0\0\0\0", 8));
  const std::string b = npy_file(npy_header("|u1", "(3,)"), "xyz");
  auto arrays = read_zip(dir, zip_of({{"a.npy", 0, a, a, a.size()}, {"b.npy", 8, deflate_stored(b), b, b.size()}}));
  ASSERT_TRUE(arrays.ok()) << arrays.error().message();
  ASSERT_EQ(arrays->size(), 2u);
  EXPECT_EQ((*arrays)[0].first, "a");
  EXPECT_EQ((*arrays)[0].second.raw_data(), std::string("\x05\0\0\0\0\0\0\0", 8));
  EXPECT_EQ((*arrays)[1].first, "b");
  EXPECT_EQ((*arrays)[1].second.raw_data(), "xyz");
}

TEST(TensorFile, NpzSizesTheDataCannotHaveAreRefusedBeforeAllocating) {
  testing::TempDir dir;
  const std::string b = npy_file(npy_header("|u1", "(3,)"), "xyz");
  // A few bytes of deflate declaring 4 GiB: the old reader allocated and
  // zeroed all of it before finding out.
  auto bomb = read_zip(dir, zip_of({{"b.npy", 8, deflate_stored(b), b, 4294967294u}}));
  ASSERT_FALSE(bomb.ok());
  EXPECT_CONTAINS(bomb.error().message(), "entry 'b.npy' declares 4294967294 bytes");
  EXPECT_CONTAINS(bomb.error().message(), "t.npz");
  // A stored entry is as long as it is.
  auto stored = read_zip(dir, zip_of({{"b.npy", 0, b, b, b.size() + 1}}));
  ASSERT_FALSE(stored.ok());
  // Declaring less than the stream holds is caught by the read, not trusted.
  auto short_claim = read_zip(dir, zip_of({{"b.npy", 8, deflate_stored(b), b, b.size() - 1}}));
  ASSERT_FALSE(short_claim.ok());
  EXPECT_CONTAINS(short_claim.error().message(), "b.npy");
  auto garbage = read_zip(dir, "PK\x05\x06 not really a zip");
  ASSERT_FALSE(garbage.ok());
  EXPECT_CONTAINS(garbage.error().message(), "not a readable .npz");
}

}  // namespace
}  // namespace onnxkit
