// Random inputs: integers stay below the tables they index, symbolic dims
// take the value asked for. Files: a bfloat16 input reads 16-bit integers as
// its bits.

#include <gtest/gtest.h>

#include <fstream>
#include <set>

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
  options.unbound_dims = 5;
  std::vector<std::string> notes;
  auto feeds = tools::prepare_inputs(**session, options, &notes);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "symbolic dim 'batch' taken as 5 (--dim batch=N sets it)");
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

// --val-range: integers cover LO..HI inclusive (both ends drawn), floats
// stay in [LO, HI); a range names its input or every input; bad ones are refused.
TEST(RandomInputs, ValueRangesBoundEveryElement) {
  std::shared_ptr<const ir::Model> model(testing::model_from_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (int64[1000] ids, float[1000] x, uint8[10] u) => (int64[1000] a, float[1000] b, uint8[10] c) {
      a = Identity (ids)
      b = Identity (x)
      c = Identity (u)
    }
  )"));
  auto session = runtime::Session::create(model);
  ASSERT_TRUE(session.ok()) << session.error().message();
  tools::InputOptions options;
  options.random = true;
  ASSERT_TRUE(tools::parse_input_flags({.ranges = {"ids:-3,4", "-2.5,-2"}}).ok());
  options.ranges = tools::parse_input_flags({.ranges = {"ids:-3,4", "-2.5,-2"}})->ranges;
  options.ranges.push_back({"u", {250, 255}});
  auto feeds = tools::prepare_inputs(**session, options);
  ASSERT_TRUE(feeds.ok()) << feeds.error().message();
  std::set<int64_t> ids;
  for (int64_t v : (*feeds)[0].second.tensor().values<int64_t>()) ids.insert(v);
  EXPECT_EQ(ids, (std::set<int64_t>{-3, -2, -1, 0, 1, 2, 3, 4}));
  for (float v : (*feeds)[1].second.tensor().values<float>()) EXPECT_TRUE(v >= -2.5f && v < -2.0f) << v;
  for (uint8_t v : (*feeds)[2].second.tensor().values<uint8_t>()) EXPECT_GE(v, 250);

  options.ranges = {{"u", {0, 256}}};
  auto wide = tools::prepare_inputs(**session, options);
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.error().message().find("leaves the range of uint8"), std::string::npos) << wide.error().message();
  options.ranges = {{"ids", {0.5, 3}}};
  EXPECT_FALSE(tools::prepare_inputs(**session, options).ok());
  options.ranges = {{"idz", {0, 3}}};
  auto unknown = tools::prepare_inputs(**session, options);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("did you mean 'ids'"), std::string::npos) << unknown.error().message();
  for (const char* bad : {"ids:3,1", "ids:1", "ids:a,b", "ids:0,inf", ":0,1"})
    EXPECT_FALSE(tools::parse_range_flag(bad).ok()) << bad;
}

// --dim binds a symbol in every input; data fed to one input binds its
// symbols for the others; a literal number fills a one-element input.
TEST(RandomInputs, DimsBindEveryInputAndLiteralsAreTyped) {
  std::shared_ptr<const ir::Model> model(testing::model_from_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[batch, samples] audio, float[batch, 4] state, int64[1] sr) => (float[batch, samples] y, int64[1] r) {
      y = Identity (audio)
      r = Identity (sr)
    }
  )"));
  auto session = runtime::Session::create(model);
  ASSERT_TRUE(session.ok()) << session.error().message();
  tools::InputOptions options;
  options.random = true;
  options.files = {{"sr", "16000"}};
  options.dims = {{"batch", 3}, {"samples", 7}};
  auto feeds = tools::prepare_inputs(**session, options);
  ASSERT_TRUE(feeds.ok()) << feeds.error().message();
  ASSERT_EQ(feeds->size(), 3u);
  EXPECT_EQ((*feeds)[0].first, "sr");
  EXPECT_EQ((*feeds)[0].second.tensor().dtype(), runtime::DataType::int64);
  EXPECT_EQ((*feeds)[0].second.tensor().shape(), (runtime::Shape{1}));
  EXPECT_EQ((*feeds)[0].second.tensor().values<int64_t>()[0], 16000);
  EXPECT_EQ((*feeds)[1].second.tensor().shape(), (runtime::Shape{3, 7}));
  EXPECT_EQ((*feeds)[2].second.tensor().shape(), (runtime::Shape{3, 4}));

  // Data for audio fixes batch for state; nothing is left to note.
  options.dims = {};
  options.unbound_dims = 1;
  options.files = {{"sr", "int64:[8000]"}, {"audio", "float:[[1,2],[3,4]]"}};
  std::vector<std::string> notes;
  feeds = tools::prepare_inputs(**session, options, &notes);
  ASSERT_TRUE(feeds.ok()) << feeds.error().message();
  EXPECT_EQ((*feeds)[2].second.tensor().shape(), (runtime::Shape{2, 4}));
  EXPECT_TRUE(notes.empty());

  options.dims = {{"batch", 5}};
  auto contradicted = tools::prepare_inputs(**session, options);
  ASSERT_FALSE(contradicted.ok());
  EXPECT_NE(contradicted.error().message().find("--dim batch=5 contradicts --input audio"), std::string::npos)
      << contradicted.error().message();
  options.dims = {{"bacth", 5}};
  auto misspelled = tools::prepare_inputs(**session, options);
  ASSERT_FALSE(misspelled.ok());
  EXPECT_NE(misspelled.error().message().find("did you mean 'batch'"), std::string::npos) << misspelled.error().message();

  // Unbound without a default: the error names --dim.
  tools::InputOptions bare;
  bare.random = true;
  auto unbound = tools::prepare_inputs(**session, bare);
  ASSERT_FALSE(unbound.ok());
  EXPECT_NE(unbound.error().message().find("--dim batch=N"), std::string::npos) << unbound.error().message();
  EXPECT_FALSE(tools::parse_dim_flag("batch").ok());
  EXPECT_FALSE(tools::parse_dim_flag("batch=-1").ok());
  EXPECT_FALSE(tools::parse_input_flags({.dims = {"batch=1", "batch=2"}}).ok());
}

}  // namespace
}  // namespace onnxkit
