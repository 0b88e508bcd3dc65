// .npy files of strings: numpy stores them as fixed-width UTF-32LE ('<U'),
// onnxkit's tensors hold UTF-8. The code units are checked against what
// numpy writes for the same text (U+00E9 for "é", U+1F600 for the emoji).

#include <gtest/gtest.h>

#include <cstring>

#include "io/tensor_file.h"

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
  EXPECT_EQ(code_unit(*bytes, data + 4), 0xE9u);       // é
  EXPECT_EQ(code_unit(*bytes, data + 20), 0x1F600u);   // the emoji, first of string 1
  EXPECT_EQ(code_unit(*bytes, data + 24), 0u);         // numpy's NUL padding
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

}  // namespace
}  // namespace onnxkit
