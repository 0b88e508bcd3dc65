// Random inputs: integers stay below the tables they index, symbolic dims
// take the value asked for. Files: a bfloat16 input reads 16-bit integers as
// its bits.

#include <gtest/gtest.h>

#include <fstream>

#include "io/tensor_file.h"
#include "support/test_support.h"
#include "tools/inputs.h"

namespace onnxkit {
namespace {

// ids index a table of 2 rows directly; small_ids, through a Cast, one of 3.
constexpr const char* kModel = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  g (int64[1, 200] ids, int32[batch, 100] small_ids, int64[1, 10] free) => (float[1, 200, 4] a, float[batch, 100, 4] b, int64[1, 10] c) {
    two_rows = Constant <value = float[2, 4] {1, 2, 3, 4, 5, 6, 7, 8}> ()
    three_rows = Constant <value = float[3, 4] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}> ()
    a = Gather (two_rows, ids)
    cast = Cast <to = 7> (small_ids)
    b = Gather (three_rows, cast)
    c = Identity (free)
  }
)";

TEST(RandomInputs, IntegersStayBelowTheTablesTheyIndex) {
  std::shared_ptr<const ir::Model> model(testing::model_from_text(kModel));
  auto limits = tools::integer_input_limits(model->graph());
  EXPECT_EQ(limits, (std::vector<std::pair<std::string, int64_t>>{{"ids", 2}, {"small_ids", 3}}));

  auto session = runtime::Session::create(model);
  ASSERT_TRUE(session.ok()) << session.error().message();
  tools::InputOptions options;
  options.random = true;
  std::vector<std::string> notes = tools::default_symbolic_dims(**session, options, 5);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "input 'small_ids': symbolic dim 'batch' taken as 5 (set with --shape small_ids:...)");
  auto feeds = tools::prepare_inputs(**session, options);
  ASSERT_TRUE(feeds.ok()) << feeds.error().message();
  ASSERT_EQ(feeds->size(), 3u);
  const auto& ids = (*feeds)[0].second.tensor();
  const auto& small = (*feeds)[1].second.tensor();
  const auto& free = (*feeds)[2].second.tensor();
  EXPECT_EQ(small.shape(), (runtime::Shape{5, 100}));
  bool saw_top = false;
  for (int64_t v : ids.values<int64_t>()) {
    EXPECT_TRUE(v == 0 || v == 1) << v;
    saw_top = saw_top || v == 1;
  }
  EXPECT_TRUE(saw_top);
  for (int32_t v : small.values<int32_t>()) EXPECT_TRUE(v >= 0 && v < 3) << v;
  int64_t largest = 0;
  for (int64_t v : free.values<int64_t>()) largest = std::max(largest, v);
  EXPECT_GE(largest, 3);  // no table: the usual [0, 10)
  EXPECT_TRUE((*session)->run(*feeds).ok());
}

TEST(FileInputs, ABfloat16InputReads16BitIntegersAsItsBits) {
  // numpy has no bfloat16: uint16 (or int16) data is taken as the bit
  // patterns, whatever the file. 0x3f80 = 1.0, 0xc000 = -2, 0x3fc0 = 1.5
  // (sign, 8 exponent bits, 7 mantissa bits: float32's top half).
  std::shared_ptr<const ir::Model> model(testing::model_from_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (bfloat16[3] x) => (float[3] y) {
      y = Cast <to = 1> (x)
    }
  )"));
  auto session = runtime::Session::create(model);
  ASSERT_TRUE(session.ok()) << session.error().message();
  testing::TempDir dir;
  auto proto = [](onnx::TensorProto::DataType type, const std::string& bytes) {
    onnx::TensorProto t;
    t.set_data_type(type);
    t.add_dims(3);
    t.set_raw_data(bytes);
    return t;
  };
  const std::string bits("\x80\x3f\x00\xc0\xc0\x3f", 6);  // little-endian
  ASSERT_TRUE(io::write_npy(dir / "u16.npy", proto(onnx::TensorProto::UINT16, bits)).ok());
  ASSERT_TRUE(io::write_npy(dir / "i16.npy", proto(onnx::TensorProto::INT16, bits)).ok());
  {
    std::ofstream pb(dir / "u16.pb", std::ios::binary);
    pb << proto(onnx::TensorProto::UINT16, bits).SerializeAsString();
  }
  for (const char* file : {"u16.npy", "i16.npy", "u16.pb"}) {
    SCOPED_TRACE(file);
    tools::InputOptions options;
    options.files = {{"x", (dir / file).string()}};
    auto feeds = tools::prepare_inputs(**session, options);
    ASSERT_TRUE(feeds.ok()) << feeds.error().message();
    ASSERT_EQ((*feeds)[0].second.tensor().dtype(), runtime::DataType::bfloat16);
    auto out = (*session)->run(*feeds);
    ASSERT_TRUE(out.ok()) << out.error().message();
    const auto y = (*out)[0].tensor().values<float>();
    EXPECT_EQ(std::vector<float>(y.begin(), y.end()), (std::vector<float>{1.0f, -2.0f, 1.5f}));
  }
  // Other types are not reinterpreted: float32 data is refused by the
  // session's type check, naming the input.
  const std::string floats("\x00\x00\x80\x3f\x00\x00\x00\xc0\x00\x00\xc0\x3f", 12);
  ASSERT_TRUE(io::write_npy(dir / "f32.npy", proto(onnx::TensorProto::FLOAT, floats)).ok());
  tools::InputOptions options;
  options.files = {{"x", (dir / "f32.npy").string()}};
  auto feeds = tools::prepare_inputs(**session, options);
  ASSERT_TRUE(feeds.ok()) << feeds.error().message();
  auto out = (*session)->run(*feeds);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message().find("input 'x': wrong element type"), std::string::npos) << out.error().message();
}

}  // namespace
}  // namespace onnxkit
