// Random inputs: integers stay below the tables they index, symbolic dims
// take the value asked for.

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace onnxkit
