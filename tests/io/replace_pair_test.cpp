// Saving a model with external data replaces the model and its side file so
// that, at every step, the model on disk reads its own data: the old pair or
// the new, never the old model with the new data. Each test loads the model
// at every step of the save (where a kill could stop it) and fails the save
// at every step in turn.

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <set>

#include "io/model_file.h"
#include "io/replace_pair.h"
#include "io/tensor_proto.h"
#include "support/test_support.h"

namespace onnxkit {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// w (16 bytes) goes to the side file, k (8 bytes) stays in the model: a model
// reading another save's data shows a k that does not match its w.
onnx::ModelProto make_model(int64_t k, float w0) {
  return testing::parse_model_text(fmt::format(R"(
<ir_version: 8, opset_import: ["" : 15]>
g (float[4] x) => (float[4] y) <float[4] w = {{{}, {}, {}, {}}}, int64[1] k = {{{}}}> {{
  y = Mul(x, w)
}}
)",
                                               w0, w0 + 1, w0 + 2, w0 + 3, k));
}

const io::SaveOptions kExternal{io::ExternalDataPolicy::all, 16, ""};
const io::SaveOptions kInline{io::ExternalDataPolicy::none, 0, ""};

// "old" (k 7, w from 1), "new" (k 8, w from 5), "absent", or what is wrong.
std::string pair_state(const fs::path& model) {
  if (!fs::exists(model)) return "absent";
  auto loaded = io::load_model(model);
  if (!loaded.ok()) return "does not load: " + loaded.error().message();
  const auto& graph = loaded->proto.graph();
  auto w = io::is_external(graph.initializer(0)) ? loaded->external_data->bytes(graph.initializer(0))
                                                 : Result<std::span<const std::byte>>(make_error("inline"));
  std::string w_bytes;
  if (w.ok()) {
    w_bytes.assign(reinterpret_cast<const char*>(w->data()), w->size());
  } else {
    auto inline_w = io::inline_bytes(graph.initializer(0));
    if (!inline_w.ok()) return "w unreadable: " + inline_w.error().message();
    w_bytes = *inline_w;
  }
  auto k_bytes = io::inline_bytes(graph.initializer(1));
  if (!k_bytes.ok() || k_bytes->size() != 8 || w_bytes.size() != 16) return "malformed";
  int64_t k = 0;
  float w0 = 0;
  std::memcpy(&k, k_bytes->data(), 8);
  std::memcpy(&w0, w_bytes.data(), 4);
  if (k == 7 && w0 == 1) return "old";
  if (k == 8 && w0 == 5) return "new";
  return fmt::format("mixed: the model of k {} reads w from {}", k, w0);
}

std::set<std::string> files_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.insert(entry.path().filename().string());
  return names;
}

// What the folder holds before the save.
enum class Before { nothing, inline_model, external_model };

void prepare(const fs::path& dir, Before before) {
  if (before == Before::nothing) return;
  auto saved = io::save_model(make_model(7, 1), nullptr, dir / "m.onnx", before == Before::external_model ? kExternal : kInline);
  ASSERT_TRUE(saved.ok()) << saved.error().message();
  ASSERT_EQ(pair_state(dir / "m.onnx"), "old");
}

struct Case {
  Before before;
  io::SaveOptions options;  // of the new save
  std::set<std::string> after;
};

const Case kCases[] = {
    {Before::nothing, kExternal, {"m.onnx", "m.onnx.data"}},
    {Before::inline_model, kExternal, {"m.onnx", "m.onnx.data"}},
    // Saving again over a pair: the old model reads m.onnx.data to the end.
    {Before::external_model, kExternal, {"m.onnx", "m.onnx.data"}},
    // The new model is inline: the old side file goes with the old model.
    {Before::external_model, kInline, {"m.onnx"}},
};

std::string describe(const Case& c) {
  const char* before[] = {"no model", "an inline model", "a model with external data"};
  return fmt::format("over {}, saving {}", before[static_cast<int>(c.before)],
                     c.options.external == io::ExternalDataPolicy::none ? "inline" : "with external data");
}

TEST(ReplacePair, EveryStepShowsTheOldPairOrTheNew) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(describe(c));
    TempDir dir;
    prepare(dir.path(), c.before);
    std::vector<std::string> seen;
    io::SaveOptions options = c.options;
    options.after_step = [&](std::string_view step) -> Status {
      seen.push_back(fmt::format("{}: {}", step, pair_state(dir / "m.onnx")));
      return {};
    };
    auto saved = io::save_model(make_model(8, 5), nullptr, dir / "m.onnx", options);
    ASSERT_TRUE(saved.ok()) << saved.error().message();
    ASSERT_FALSE(seen.empty());
    for (const std::string& s : seen) {
      bool whole = s.ends_with(": old") || s.ends_with(": new") || s.ends_with(": absent");
      EXPECT_TRUE(whole) << s;
    }
    EXPECT_EQ(pair_state(dir / "m.onnx"), "new");
    EXPECT_EQ(files_in(dir.path()), c.after) << "the usual name, and no temporary or stale file";
    EXPECT_EQ(saved->external_file, c.after.size() == 2 ? "m.onnx.data" : "");
  }
}

TEST(ReplacePair, AFailureAtAnyStepLeavesAWholePairAndNoTemporary) {
  for (const Case& c : kCases) {
    for (int fail_at = 1;; ++fail_at) {
      SCOPED_TRACE(describe(c) + fmt::format(", failing at step {}", fail_at));
      TempDir dir;
      prepare(dir.path(), c.before);
      int steps = 0;
      std::string failed_step;
      io::SaveOptions options = c.options;
      options.after_step = [&](std::string_view step) -> Status {
        if (++steps != fail_at) return {};
        failed_step = step;
        return make_error("injected failure");
      };
      auto saved = io::save_model(make_model(8, 5), nullptr, dir / "m.onnx", options);
      if (saved.ok()) {
        EXPECT_GT(fail_at, 1) << "the save has steps";
        break;  // fewer steps than fail_at: every one has failed once
      }
      SCOPED_TRACE(failed_step);
      EXPECT_NE(saved.error().message().find("injected failure"), std::string::npos) << saved.error().message();
      std::string state = pair_state(dir / "m.onnx");
      EXPECT_TRUE(state == "old" || state == "new" || (state == "absent" && c.before == Before::nothing)) << state;
      // A temporary may remain only where the model reads it.
      auto refs = io::referenced_locations(dir / "m.onnx");
      ASSERT_TRUE(refs.has_value());
      for (const std::string& name : files_in(dir.path()))
        EXPECT_TRUE(!name.starts_with(".") || refs->contains(name)) << name << " is left over";
      // The next save removes a temporary this one left in use. (A side file
      // that only a stop after the last rename kept from removal stays.)
      auto again = io::save_model(make_model(8, 5), nullptr, dir / "m.onnx", c.options);
      ASSERT_TRUE(again.ok()) << again.error().message();
      EXPECT_EQ(pair_state(dir / "m.onnx"), "new");
      for (const std::string& name : files_in(dir.path())) EXPECT_FALSE(name.starts_with(".")) << name;
    }
  }
}

TEST(ReplacePair, SideFilesOfOtherNamesAreKept) {
  // A side file named otherwise may be another model's too: only the
  // model's own ("m.onnx.data", the --external-file name, their temporaries)
  // are removed when the new model stops reading them.
  TempDir dir;
  io::SaveOptions shared = kExternal;
  shared.data_file = "shared.bin";
  ASSERT_TRUE(io::save_model(make_model(7, 1), nullptr, dir / "m.onnx", shared).ok());
  auto saved = io::save_model(make_model(8, 5), nullptr, dir / "m.onnx", kExternal);
  ASSERT_TRUE(saved.ok()) << saved.error().message();
  EXPECT_EQ(files_in(dir.path()), (std::set<std::string>{"m.onnx", "m.onnx.data", "shared.bin"}));
}

TEST(ReplacePair, ReferencedLocationsReadsEveryPlaceATensorCanBe) {
  TempDir dir;
  onnx::ModelProto proto = make_model(7, 1);
  // An external tensor in a node attribute inside a sub-graph, besides w.
  onnx::TensorProto* w = proto.mutable_graph()->mutable_initializer(0);
  io::set_external_location(*w, "a.bin", 0, 16);
  w->clear_float_data();
  onnx::NodeProto* node = proto.mutable_graph()->add_node();
  node->set_op_type("If");
  onnx::AttributeProto* branch = node->add_attribute();
  branch->set_name("then_branch");
  onnx::AttributeProto* value = branch->mutable_g()->add_node()->add_attribute();
  value->set_name("value");
  io::set_external_location(*value->mutable_t(), "b.bin", 0, 4);
  std::ofstream(dir / "m.onnx", std::ios::binary) << proto.SerializeAsString();
  auto refs = io::referenced_locations(dir / "m.onnx");
  ASSERT_TRUE(refs.has_value());
  EXPECT_EQ(*refs, (std::set<std::string>{"a.bin", "b.bin"}));
  EXPECT_EQ(io::referenced_locations(dir / "absent.onnx"), std::set<std::string>());
  std::ofstream(dir / "junk.onnx", std::ios::binary) << std::string("\x0a\xff\xff\xff\xff\x0f", 6);
  EXPECT_FALSE(io::referenced_locations(dir / "junk.onnx").has_value());
}

TEST(ReplacePair, ModelAndSideFileNeedDifferentNames) {
  TempDir dir;
  io::SaveOptions same = kExternal;
  same.data_file = "m.onnx";
  auto saved = io::save_model(make_model(7, 1), nullptr, dir / "m.onnx", same);
  ASSERT_FALSE(saved.ok());
  EXPECT_TRUE(files_in(dir.path()).empty());
}

}  // namespace
}  // namespace onnxkit
