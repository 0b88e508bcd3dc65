// Polygraphy's saved arrays and our .npz writer. The base64 strings below are
// what Python's base64 module gives for np.save of the arrays named beside
// them; RFC 4648's own examples check the decoder.

#include <gtest/gtest.h>

#include <fstream>

#include "io/polygraphy_json.h"
#include "io/tensor_file.h"
#include "support/test_support.h"

namespace onnxkit {
namespace {

// np.array([[1.5, -2.0]], np.float32)
constexpr const char* kFloats =
    "k05VTVBZAQB2AHsnZGVzY3InOiAnPGY0JywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDEsIDIpLCB9ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoAAMA/AAAAwA==";
// np.array([7, 8, 9], np.int64)
constexpr const char* kInts =
    "k05VTVBZAQB2AHsnZGVzY3InOiAnPGk4JywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDMsKSwgfSAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoHAAAAAAAAAAgAAAAAAAAACQAAAAAAAAA=";

void write(const std::filesystem::path& path, const std::string& text) { std::ofstream(path) << text; }

std::vector<float> floats(const onnx::TensorProto& t) {
  std::vector<float> out(t.raw_data().size() / 4);
  std::memcpy(out.data(), t.raw_data().data(), t.raw_data().size());
  return out;
}

TEST(PolygraphyJson, Base64AsRfc4648) {
  EXPECT_EQ(io::decode_base64("TWFu"), "Man");
  EXPECT_EQ(io::decode_base64("TWE="), "Ma");
  EXPECT_EQ(io::decode_base64("TQ=="), "M");
  EXPECT_EQ(io::decode_base64(""), "");
  EXPECT_FALSE(io::decode_base64("TW!u").has_value());
  EXPECT_FALSE(io::decode_base64("T").has_value());
}

TEST(PolygraphyJson, RunResultsTakeTheFirstRunnerPerIteration) {
  testing::TempDir dir;
  // Two runners, the first with two iterations; LazyArray-wrapped (newer) and bare (older) arrays.
  const std::string lazy_floats = std::string(R"({"values": {"array": ")") + kFloats +
                                  R"(", "polygraphy_class": "ndarray"}, "polygraphy_class": "LazyArray"})";
  const std::string bare_ints = std::string(R"({"array": ")") + kInts + R"(", "polygraphy_class": "ndarray"})";
  const std::string text =
      R"({"lst": [["onnxrt-runner-N0", [
      {"outputs": {"y": )" +
      lazy_floats + R"(, "idx": )" + bare_ints +
      R"(}, "runtime": 0.1, "runner_name": "onnxrt-runner-N0", "polygraphy_class": "IterationResult"},
      {"outputs": {"y": )" +
      lazy_floats + R"(}, "runtime": 0.1, "runner_name": "onnxrt-runner-N0", "polygraphy_class": "IterationResult"}]],
    ["trt-runner-N0", [{"outputs": {"z": )" +
      bare_ints + R"(}, "runtime": 0.2, "runner_name": "trt-runner-N0", "polygraphy_class": "IterationResult"}]]],
    "polygraphy_class": "RunResults"})";
  write(dir / "outputs.json", text);
  auto arrays = io::read_polygraphy_json(dir / "outputs.json");
  ASSERT_TRUE(arrays.ok()) << arrays.error().message();
  EXPECT_EQ(arrays->runners, (std::vector<std::string>{"onnxrt-runner-N0", "trt-runner-N0"}));
  ASSERT_EQ(arrays->iterations.size(), 2u);
  ASSERT_EQ(arrays->iterations[0].size(), 2u);
  EXPECT_EQ(arrays->iterations[0][0].first, "y");
  EXPECT_EQ(arrays->iterations[0][0].second.data_type(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(floats(arrays->iterations[0][0].second), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(arrays->iterations[0][1].first, "idx");
  EXPECT_EQ(arrays->iterations[0][1].second.data_type(), onnx::TensorProto::INT64);
  ASSERT_EQ(arrays->iterations[1].size(), 1u);  // the second runner's "z" is not taken
}

TEST(PolygraphyJson, SavedInputsAreAListOfFeeds) {
  testing::TempDir dir;
  write(dir / "inputs.json", std::string(R"([{"x": {"array": ")") + kFloats + R"(", "polygraphy_class": "ndarray"}},
                                               {"x": {"array": ")" +
                                 kFloats + R"(", "polygraphy_class": "ndarray"}}])");
  auto arrays = io::read_polygraphy_json(dir / "inputs.json");
  ASSERT_TRUE(arrays.ok()) << arrays.error().message();
  ASSERT_EQ(arrays->iterations.size(), 2u);
  EXPECT_EQ(arrays->iterations[1][0].first, "x");
}

TEST(PolygraphyJson, BadFilesAreOneLineErrors) {
  testing::TempDir dir;
  write(dir / "broken.json", R"({"lst": [["r", [{"outputs": )");
  auto broken = io::read_polygraphy_json(dir / "broken.json");
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.error().message().find("broken.json: not valid JSON at byte"), std::string::npos) << broken.error().message();
  write(dir / "empty.json", R"({"a": 1})");
  auto empty = io::read_polygraphy_json(dir / "empty.json");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message().find("no arrays found"), std::string::npos);
  write(dir / "notnpy.json", R"({"y": {"array": "TWFu"}})");
  auto notnpy = io::read_polygraphy_json(dir / "notnpy.json");
  ASSERT_FALSE(notnpy.ok());
  EXPECT_NE(notnpy.error().message().find("notnpy.json:y: not a .npy file"), std::string::npos) << notnpy.error().message();
}

TEST(Npz, WrittenArraysReadBack) {
  testing::TempDir dir;
  auto a = io::parse_npy(*io::decode_base64(kFloats), "a");
  auto b = io::parse_npy(*io::decode_base64(kInts), "b");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(io::write_npz(dir / "x.npz", {{"first", *a}, {"second/with:chars", *b}}).ok());
  auto back = io::read_npz(dir / "x.npz");
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].first, "first");
  EXPECT_EQ(floats((*back)[0].second), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ((*back)[1].first, "second/with:chars");
  EXPECT_EQ((*back)[1].second.raw_data(), b->raw_data());
}

}  // namespace
}  // namespace onnxkit
