// The walk that reads initializers' raw_data apart from protobuf: it must
// give exactly the message protobuf gives, decline whatever protobuf would
// refuse, and read a large raw_data in one allocation of its size.

#include "io/model_parse.h"

#include <gtest/gtest.h>

#include <fcntl.h>

#include <fstream>
#include <random>

#include "io/fd.h"
#include "io/model_file.h"
#include "support/test_support.h"

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

namespace onnxkit {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::span<const std::byte> as_bytes(const std::string& s) { return std::as_bytes(std::span(s.data(), s.size())); }

void write_bytes(const fs::path& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

std::string varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out.push_back(static_cast<char>(v | 0x80));
  out.push_back(static_cast<char>(v));
  return out;
}

// One length-delimited field, encoded by hand.
std::string field(uint32_t number, const std::string& payload) {
  return varint(uint64_t{number} << 3 | 2) + varint(payload.size()) + payload;
}

// The walk over `bytes` in memory: nullopt where it declines.
std::optional<onnx::ModelProto> walk(const std::string& bytes) {
  io::ForwardReader in(as_bytes(bytes));
  onnx::ModelProto proto;
  auto parsed = io::parse_model_proto(in, proto);
  EXPECT_TRUE(parsed.ok());
  if (!parsed.ok() || !*parsed) return std::nullopt;
  return proto;
}

// protobuf's own verdict, the truth: nullopt where it refuses.
std::optional<onnx::ModelProto> protobuf_parse(const std::string& bytes) {
  onnx::ModelProto proto;
  if (!proto.ParseFromString(bytes)) return std::nullopt;
  return proto;
}

// The walk over the file, through a descriptor in 1 MiB steps.
onnx::ModelProto walk_file(const fs::path& path) {
  io::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  EXPECT_TRUE(fd);
  io::ForwardReader in(fd.get(), fs::file_size(path), path.string());
  onnx::ModelProto proto;
  auto parsed = io::parse_model_proto(in, proto);
  EXPECT_TRUE(parsed.ok() && *parsed) << path;
  return proto;
}

// A model with raw_data in initializers (one empty, one of `big` bytes), in a
// Constant node (which stays protobuf's) and unknown fields at every level.
onnx::ModelProto sample_model(size_t big = 3000) {
  onnx::ModelProto proto = testing::parse_model_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) {
  c = Constant <value = float[4] {1.0, 2.0, 3.0, 4.0}> ()
  s = Add(x, c)
  y = Mul(s, w)
}
)");
  auto* graph = proto.mutable_graph();
  auto* w = graph->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->set_raw_data(std::string("\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x40", 16));
  auto* empty = graph->add_initializer();
  empty->set_name("empty");
  empty->set_data_type(onnx::TensorProto::FLOAT);
  empty->add_dims(0);
  empty->set_raw_data("");
  auto* large = graph->add_initializer();
  large->set_name("large");
  large->set_data_type(onnx::TensorProto::UINT8);
  large->add_dims(static_cast<int64_t>(big));
  std::string data(big, '\0');
  for (size_t i = 0; i < big; ++i) data[i] = static_cast<char>(i * 7 + 3);
  large->set_raw_data(data);
  auto* node_tensor = graph->mutable_node(0)->mutable_attribute(0)->mutable_t();
  node_tensor->clear_float_data();
  node_tensor->set_raw_data(std::string("\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x40", 16));
  proto.mutable_unknown_fields()->AddVarint(1000, 5);
  graph->mutable_unknown_fields()->AddLengthDelimited(1001, "graph extra");
  large->mutable_unknown_fields()->AddFixed32(1002, 7);
  return proto;
}

TEST(ModelParse, GivesTheMessageProtobufGives) {
  std::string bytes = sample_model().SerializeAsString();
  auto walked = walk(bytes);
  ASSERT_TRUE(walked);
  auto truth = protobuf_parse(bytes);
  ASSERT_TRUE(truth);
  EXPECT_EQ(walked->SerializeAsString(), bytes);
  EXPECT_EQ(testing::proto_diff(*truth, *walked), "");
  EXPECT_TRUE(walked->graph().initializer(1).has_raw_data()) << "an empty raw_data is still there";
}

TEST(ModelParse, ExportedModelsReadFromFilesComeBackByteForByte) {
  for (const char* name : {"resnet18_opset17.onnx", "bert_encoder_opset17.onnx", "mobilenet_v2_opset13.onnx"}) {
    fs::path path = fs::path(TEST_MODELS_DIR) / name;
    ASSERT_TRUE(fs::exists(path)) << path;
    std::ifstream file(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    onnx::ModelProto walked = walk_file(path);
    EXPECT_GT(walked.graph().initializer_size(), 0) << name;
    EXPECT_EQ(walked.SerializeAsString(), protobuf_parse(bytes)->SerializeAsString()) << name;
  }
}

TEST(ModelParse, MergedGraphsAndRepeatedFieldsFollowProtobuf) {
  // Two graph fields merge into one graph, their initializers in turn; of two
  // raw_data fields in one tensor the last wins, lifted or not.
  std::string tensor = field(8, "t") + varint(2 << 3) + varint(1) + field(9, "first") + field(9, "second!");
  std::string model = sample_model().SerializeAsString() + field(7, field(5, tensor) + field(5, field(8, "u")));
  auto walked = walk(model);
  ASSERT_TRUE(walked);
  auto truth = protobuf_parse(model);
  ASSERT_TRUE(truth);
  EXPECT_EQ(testing::proto_diff(*truth, *walked), "");
  ASSERT_EQ(walked->graph().initializer_size(), 5);
  EXPECT_EQ(walked->graph().initializer(3).raw_data(), "second!");
  EXPECT_FALSE(walked->graph().initializer(4).has_raw_data());
}

TEST(ModelParse, DeclinesWhatItDoesNotWalkAndLoadingStillFollowsProtobuf) {
  TempDir dir;
  std::string valid = sample_model().SerializeAsString();
  std::string group = varint(20 << 3 | 3) + varint(20 << 3 | 4);           // an empty group: valid protobuf
  std::string long_tag = std::string("\xba\x80\x00", 3) + varint(0);       // field 7 in three bytes: valid
  std::string past_end = std::string("\x3a\x05", 2) + field(5, "abcdef");  // a graph shorter than its tensor
  for (const std::string& bytes : {valid + group, valid + long_tag, valid + past_end, valid.substr(0, 40)}) {
    EXPECT_FALSE(walk(bytes));
    write_bytes(dir / "m.onnx", bytes);
    auto loaded = io::load_model(dir / "m.onnx");
    auto truth = protobuf_parse(bytes);
    ASSERT_EQ(loaded.ok(), truth.has_value()) << (loaded.ok() ? "" : loaded.error().message());
    if (truth) EXPECT_EQ(testing::proto_diff(*truth, loaded->proto), "");
    else EXPECT_CONTAINS(loaded.error().message(), "not an ONNX model (the protobuf is truncated, corrupt");
  }
}

TEST(ModelParse, DamagedBytesNeverGetAVerdictProtobufWouldNotGive) {
  std::string valid = sample_model(200).SerializeAsString();
  std::mt19937 rng(23);
  int walked = 0, refused = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string bytes = valid;
    int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      size_t at = rng() % bytes.size();
      switch (rng() % 4) {
        case 0: bytes[at] = static_cast<char>(rng()); break;
        case 1: bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8))); break;
        case 2: bytes.erase(at, 1 + rng() % 8); break;
        default: bytes.resize(at + 1); break;
      }
      if (bytes.empty()) bytes = "x";
    }
    auto ours = walk(bytes);
    auto truth = protobuf_parse(bytes);
    if (ours) {
      ++walked;
      ASSERT_TRUE(truth) << "round " << round << ": accepted what protobuf refuses";
      ASSERT_EQ(ours->SerializeAsString(), truth->SerializeAsString()) << "round " << round;
    }
    if (!truth) ++refused;
  }
  // The damage must both leave models the walk reads and break others.
  EXPECT_GT(walked, 300);
  EXPECT_GT(refused, 300);
}

// A model whose last node has attributes over the 1 MB from which they are
// parsed apart: lists of strings, ints (also packed, as protobuf also
// reads them) and floats, among small attributes and a large tensor (left
// to protobuf) and one whose lists come before its tensor; the node comes
// in a second graph field, merged into the first. Returns the model and
// where that node's bytes start.
std::pair<std::string, size_t> model_with_large_attributes() {
  onnx::NodeProto node;
  node.set_op_type("TreeEnsembleRegressor");
  node.add_input("x");
  node.add_output("t");
  auto attribute = [&](const char* name, onnx::AttributeProto::AttributeType type) {
    onnx::AttributeProto* a = node.add_attribute();
    a->set_name(name);
    a->set_type(type);
    return a;
  };
  attribute("n_targets", onnx::AttributeProto::INT)->set_i(1);
  onnx::AttributeProto* modes = attribute("nodes_modes", onnx::AttributeProto::STRINGS);
  for (int i = 0; i < 200'000; ++i) modes->add_strings(i % 3 ? "BRANCH_LEQ" : "LEAF");
  onnx::AttributeProto* ids = attribute("nodes_nodeids", onnx::AttributeProto::INTS);
  for (int i = 0; i < 300'000; ++i) ids->add_ints(i);
  onnx::AttributeProto* values = attribute("nodes_values", onnx::AttributeProto::FLOATS);
  for (int i = 0; i < 300'000; ++i) values->add_floats(static_cast<float>(i) * 0.5f);
  onnx::TensorProto* tensor = attribute("table", onnx::AttributeProto::TENSOR)->mutable_t();
  tensor->set_data_type(onnx::TensorProto::FLOAT);
  for (int i = 0; i < 300'000; ++i) tensor->add_float_data(static_cast<float>(i));
  attribute("post_transform", onnx::AttributeProto::STRING)->set_s("NONE");
  std::string packed;
  for (int i = 0; i < 400'000; ++i) packed += varint(uint64_t(i) * 3);
  // Lists before a tensor, out of protobuf's order: left to protobuf.
  onnx::TensorProto small;
  small.set_data_type(onnx::TensorProto::FLOAT);
  small.add_float_data(1.5f);
  std::string mixed = field(1, "mixed") + field(8, packed) + field(5, small.SerializeAsString());
  std::string node_bytes =
      node.SerializeAsString() + field(5, field(1, "packed") + field(8, packed) + varint(20 << 3) + varint(7)) + field(5, mixed);
  std::string head = sample_model().SerializeAsString();
  return {head + field(7, field(1, node_bytes)), head.size()};
}

TEST(ModelParse, LargeAttributesComeBackInPlaceWithListsOfTheirSize) {
  auto [bytes, node_at] = model_with_large_attributes();
  auto walked = walk(bytes);
  ASSERT_TRUE(walked);
  auto truth = protobuf_parse(bytes);
  ASSERT_TRUE(truth);
  EXPECT_EQ(testing::proto_diff(*truth, *walked), "");
  const onnx::NodeProto& node = walked->graph().node(walked->graph().node_size() - 1);
  ASSERT_EQ(node.attribute_size(), 8);
  EXPECT_EQ(node.attribute(1).strings_size(), 200'000);
  // Reserved at their sizes: protobuf's own parse doubles its way past them.
  EXPECT_EQ(node.attribute(2).ints().Capacity(), 300'000);
  EXPECT_EQ(node.attribute(3).floats().Capacity(), 300'000);
  EXPECT_EQ(node.attribute(6).ints().Capacity(), 400'000);
  EXPECT_EQ(node.attribute(6).ints(399'999), 399'999 * 3);
  EXPECT_EQ(node.attribute(4).t().float_data_size(), 300'000);
  EXPECT_EQ(node.attribute(7).t().float_data(0), 1.5f);

  // Damage inside the large attributes gets protobuf's verdict too.
  std::mt19937 rng(29);
  int walked_count = 0, refused = 0;
  for (int round = 0; round < 60; ++round) {
    std::string damaged = bytes;
    const size_t at = node_at + rng() % (damaged.size() - node_at);
    switch (rng() % 3) {
      case 0: damaged[at] = static_cast<char>(rng()); break;
      case 1: damaged[at] = static_cast<char>(damaged[at] ^ (1 << (rng() % 8))); break;
      default: damaged.erase(at, 1 + rng() % 8); break;
    }
    auto ours = walk(damaged);
    auto protobuf = protobuf_parse(damaged);
    if (ours) {
      ++walked_count;
      ASSERT_TRUE(protobuf) << "round " << round << ": accepted what protobuf refuses";
      ASSERT_EQ(ours->SerializeAsString(), protobuf->SerializeAsString()) << "round " << round;
    }
    if (!protobuf) ++refused;
  }
  EXPECT_GT(walked_count, 10);
  EXPECT_GT(refused, 10);
}

TEST(ModelParse, LargeRawDataTakesOneAllocationOfItsSize) {
  // Over protobuf's 50 MB reservation, where its own parse of a file grows
  // the string by doubling (and leaves it at 100 MB of capacity).
  constexpr size_t kBig = 52'000'000;
  TempDir dir;
  write_bytes(dir / "big.onnx", sample_model(kBig).SerializeAsString());
  auto loaded = io::load_model(dir / "big.onnx");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  const std::string& raw = loaded->proto.graph().initializer(2).raw_data();
  ASSERT_EQ(raw.size(), kBig);
  EXPECT_EQ(raw.capacity(), kBig);
  EXPECT_EQ(raw[kBig - 1], static_cast<char>((kBig - 1) * 7 + 3));
}

}  // namespace
}  // namespace onnxkit
