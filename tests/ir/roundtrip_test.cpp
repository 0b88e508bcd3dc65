// Import then export must give back the original message, field for field,
// for every model in ONNX's backend test data.

#include <gtest/gtest.h>

#include "io/model_file.h"
#include "ir/model.h"
#include "support/test_support.h"

namespace onnxkit {
namespace {

TEST(RoundTrip, EveryBackendTestModelIsLossless) {
  auto paths = testing::backend_test_models();
  ASSERT_EQ(paths.size(), 1072u) << "libonnx-testdata should hold 1,072 models";
  size_t failures = 0;
  for (const auto& path : paths) {
    auto loaded = io::load_model(path);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message();
    onnx::ModelProto original = loaded->proto;
    auto model = ir::import_model(std::move(loaded->proto), loaded->external_data);
    ASSERT_TRUE(model.ok()) << path << ": " << model.error().message();
    std::string diff = testing::proto_diff(original, ir::export_model(**model));
    if (!diff.empty()) {
      ++failures;
      ADD_FAILURE() << path << " differs after a round trip:\n" << diff.substr(0, 2000);
    }
  }
  EXPECT_EQ(failures, 0u);
}

}  // namespace
}  // namespace onnxkit
