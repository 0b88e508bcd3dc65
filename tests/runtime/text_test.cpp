// Text kernels on what the backend data leaves out: TfIdfVectorizer's string
// pools, IDF and TFIDF weights and skips on repeated tokens; StringNormalizer's
// UTF-8 case changes; StringConcat and StringSplit (opset 20, absent from the
// data), and the errors of each.
//
// Values marked "ReferenceEvaluator" come from onnx 1.23's
// onnx.reference.ReferenceEvaluator run on the same node and inputs; the rest
// are worked out by hand in the comments.

#include <gtest/gtest.h>
#include <locale.h>

#include <limits>

#include "support/node_runner.h"

namespace onnxkit {
namespace {

using runtime::DataType;
using runtime::Tensor;
using testing::attr;
using testing::expect_tensor_near;
using testing::run_node;
using testing::try_run_node;

Tensor strings(runtime::Shape shape, const std::vector<std::string>& values) {
  return Tensor::from<std::string>(std::move(shape), values);
}

void expect_error(const Result<std::vector<runtime::Datum>>& out, const std::string& fragment) {
  ASSERT_FALSE(out.ok()) << "expected an error";
  EXPECT_NE(out.error().message().find(fragment), std::string::npos) << out.error().message();
}

// --- TfIdfVectorizer ---------------------------------------------------------------

// Pool: 1-grams 17, 12; 2-grams (94, 12), (17, 28), (94, 17); output i is n-gram i.
std::vector<onnx::AttributeProto> int_pool(const std::string& mode, int64_t max_skip_count) {
  return {attr("mode", mode),
          attr("min_gram_length", int64_t{1}),
          attr("max_gram_length", int64_t{2}),
          attr("max_skip_count", max_skip_count),
          attr("ngram_counts", std::vector<int64_t>{0, 2}),
          attr("ngram_indexes", std::vector<int64_t>{0, 1, 2, 3, 4}),
          attr("pool_int64s", std::vector<int64_t>{17, 12, 94, 12, 17, 28, 94, 17})};
}

TEST(TfIdfVectorizer, SkipsWidenTheGapBetweenItems) {
  const Tensor x = Tensor::from<int64_t>({5}, {94, 17, 36, 12, 28});
  // Skip 0 sees the 2-gram (94, 17) only; skip 2 also sees (94, 12) and
  // (17, 28), three apart. ReferenceEvaluator agrees.
  auto adjacent = run_node({.op_type = "TfIdfVectorizer", .opset = 9, .inputs = {{"x", x}}, .attributes = int_pool("TF", 0)});
  expect_tensor_near(adjacent[0].tensor(), Tensor::from<float>({5}, {1, 1, 0, 0, 1}));
  auto skipping = run_node({.op_type = "TfIdfVectorizer", .opset = 9, .inputs = {{"x", x}}, .attributes = int_pool("TF", 2)});
  expect_tensor_near(skipping[0].tensor(), Tensor::from<float>({5}, {1, 1, 1, 1, 1}));
  // int32 tokens match the int64 pool the same way.
  auto narrow = run_node({.op_type = "TfIdfVectorizer",
                          .opset = 9,
                          .inputs = {{"x", Tensor::from<int32_t>({5}, {94, 17, 36, 12, 28})}},
                          .attributes = int_pool("TF", 0)});
  expect_tensor_near(narrow[0].tensor(), Tensor::from<float>({5}, {1, 1, 0, 0, 1}));
}

TEST(TfIdfVectorizer, EachSkipCountsOnItsOwnButUnigramsOnce) {
  // Pool: 1-gram (1) and 2-gram (1, 1), with skips 0 and 1. In [1, 1, 1] the
  // 2-gram occurs twice adjacent and once with a gap: 3; the 1-gram 3 times.
  // Without 1-grams, the row [1, 2, 1] has (1, 1) only with the gap.
  // ReferenceEvaluator agrees.
  auto attributes = [](int64_t min_gram_length) {
    return std::vector<onnx::AttributeProto>{attr("mode", "TF"),
                                             attr("min_gram_length", min_gram_length),
                                             attr("max_gram_length", int64_t{2}),
                                             attr("max_skip_count", int64_t{1}),
                                             attr("ngram_counts", std::vector<int64_t>{0, 1}),
                                             attr("ngram_indexes", std::vector<int64_t>{0, 1}),
                                             attr("pool_int64s", std::vector<int64_t>{1, 1, 1})};
  };
  auto both = run_node({.op_type = "TfIdfVectorizer",
                        .opset = 9,
                        .inputs = {{"x", Tensor::from<int64_t>({3}, {1, 1, 1})}},
                        .attributes = attributes(1)});
  expect_tensor_near(both[0].tensor(), Tensor::from<float>({2}, {3, 3}));
  auto bigrams = run_node({.op_type = "TfIdfVectorizer",
                           .opset = 9,
                           .inputs = {{"x", Tensor::from<int64_t>({2, 3}, {1, 1, 1, 1, 2, 1})}},
                           .attributes = attributes(2)});
  expect_tensor_near(bigrams[0].tensor(), Tensor::from<float>({2, 2}, {0, 3, 0, 1}));
}

TEST(TfIdfVectorizer, HugeSkipsAndGramLengthsStayBounded) {
  // Gaps past the row and lengths past the pool find nothing more than skip 2 did.
  auto attributes = int_pool("TF", std::numeric_limits<int64_t>::max());
  attributes[2] = attr("max_gram_length", std::numeric_limits<int64_t>::max());
  auto out = run_node({.op_type = "TfIdfVectorizer",
                       .opset = 9,
                       .inputs = {{"x", Tensor::from<int64_t>({5}, {94, 17, 36, 12, 28})}},
                       .attributes = attributes});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({5}, {1, 1, 1, 1, 1}));
}

// Pool: 1-grams a, b, c and the 2-gram (a, b), sent to coordinates 3, 2, 1, 0.
std::vector<onnx::AttributeProto> string_pool(const std::string& mode, bool weighted) {
  std::vector<onnx::AttributeProto> a = {attr("mode", mode),
                                         attr("min_gram_length", int64_t{1}),
                                         attr("max_gram_length", int64_t{2}),
                                         attr("max_skip_count", int64_t{0}),
                                         attr("ngram_counts", std::vector<int64_t>{0, 3}),
                                         attr("ngram_indexes", std::vector<int64_t>{3, 2, 1, 0}),
                                         attr("pool_strings", std::vector<std::string>{"a", "b", "c", "a", "b"})};
  if (weighted) a.push_back(attr("weights", std::vector<float>{0.5f, 1, 2, 4}));
  return a;
}

TEST(TfIdfVectorizer, StringPoolInEveryModeOnABatch) {
  const Tensor x = strings({2, 4}, {"a", "b", "a", "c", "c", "c", "b", "b"});
  auto run = [&](const std::string& mode, bool weighted) {
    auto out =
        run_node({.op_type = "TfIdfVectorizer", .opset = 9, .inputs = {{"x", x}}, .attributes = string_pool(mode, weighted)});
    return out[0].tensor();
  };
  // Counts by coordinate [(a,b), c, b, a]: row 0 [1, 1, 1, 2], row 1 [0, 2, 2, 0].
  // Weights scale output coordinates. ReferenceEvaluator agrees on all three.
  expect_tensor_near(run("TF", true), Tensor::from<float>({2, 4}, {1, 1, 1, 2, 0, 2, 2, 0}));
  expect_tensor_near(run("IDF", true), Tensor::from<float>({2, 4}, {0.5f, 1, 2, 4, 0, 1, 2, 0}));
  expect_tensor_near(run("TFIDF", true), Tensor::from<float>({2, 4}, {0.5f, 1, 2, 8, 0, 2, 4, 0}));
  // Without weights IDF marks presence and TFIDF is TF (by hand; the
  // ReferenceEvaluator fails on absent weights).
  expect_tensor_near(run("IDF", false), Tensor::from<float>({2, 4}, {1, 1, 1, 1, 0, 1, 1, 0}));
  expect_tensor_near(run("TFIDF", false), Tensor::from<float>({2, 4}, {1, 1, 1, 2, 0, 2, 2, 0}));
}

TEST(TfIdfVectorizer, EmptyRowsGiveZeros) {
  auto out = run_node(
      {.op_type = "TfIdfVectorizer", .opset = 9, .inputs = {{"x", strings({2, 0}, {})}}, .attributes = string_pool("TF", false)});
  expect_tensor_near(out[0].tensor(), Tensor::from<float>({2, 4}, {0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(TfIdfVectorizer, RefusesInconsistentAttributesAndInputs) {
  auto run = [](std::vector<onnx::AttributeProto> attributes, Tensor x) {
    return try_run_node(
        {.op_type = "TfIdfVectorizer", .opset = 9, .inputs = {{"x", std::move(x)}}, .attributes = std::move(attributes)});
  };
  const Tensor ints = Tensor::from<int64_t>({2}, {17, 12});
  auto both_pools = int_pool("TF", 0);
  both_pools.push_back(attr("pool_strings", std::vector<std::string>{"a"}));
  expect_error(run(both_pools, ints), "exactly one of pool_strings and pool_int64s");
  auto counts_past_pool = int_pool("TF", 0);
  counts_past_pool[4] = attr("ngram_counts", std::vector<int64_t>{0, 9});
  expect_error(run(counts_past_pool, ints), "ngram_counts [0, 9]");
  auto odd_bigrams = int_pool("TF", 0);
  odd_bigrams[4] = attr("ngram_counts", std::vector<int64_t>{0, 3});
  expect_error(run(odd_bigrams, ints), "not a whole number of them");
  auto short_indexes = int_pool("TF", 0);
  short_indexes[5] = attr("ngram_indexes", std::vector<int64_t>{0, 1});
  expect_error(run(short_indexes, ints), "ngram_indexes has 2 entries but the pool holds 5 n-grams");
  expect_error(run(int_pool("BM25", 0), ints), "mode must be TF, IDF or TFIDF");
  expect_error(run(int_pool("TF", 0), strings({1}, {"17"})), "int32 or int64 tensor with pool_int64s");
  expect_error(run(string_pool("TF", false), ints), "string tensor with pool_strings");
  expect_error(run(int_pool("TF", 0), Tensor::from<int64_t>({1, 1, 2}, {17, 12})), "[C] or [N, C]");
}

// --- StringNormalizer --------------------------------------------------------------

Result<std::vector<runtime::Datum>> normalize(const Tensor& x, std::vector<onnx::AttributeProto> attributes) {
  return try_run_node({.op_type = "StringNormalizer", .opset = 10, .inputs = {{"x", x}}, .attributes = std::move(attributes)});
}

TEST(StringNormalizer, StopWordsMatchInAnyCaseUnlessCaseSensitive) {
  const Tensor x = strings({4}, {"Monday", "TUESDAY", "monday", "Wed"});
  auto insensitive = normalize(x, {attr("case_change_action", "LOWER"), attr("stopwords", std::vector<std::string>{"MONDAY"})});
  ASSERT_TRUE(insensitive.ok()) << insensitive.error().message();
  expect_tensor_near((*insensitive)[0].tensor(), strings({2}, {"tuesday", "wed"}));
  auto sensitive = normalize(x, {attr("case_change_action", "UPPER"), attr("is_case_sensitive", int64_t{1}),
                                 attr("stopwords", std::vector<std::string>{"monday"})});
  ASSERT_TRUE(sensitive.ok()) << sensitive.error().message();
  expect_tensor_near((*sensitive)[0].tensor(), strings({3}, {"MONDAY", "TUESDAY", "WED"}));
  auto unchanged = normalize(x, {attr("locale", "en_US")});
  ASSERT_TRUE(unchanged.ok()) << unchanged.error().message();
  expect_tensor_near((*unchanged)[0].tensor(), x);
}

TEST(StringNormalizer, AllStopWordsLeaveOneEmptyString) {
  auto flat = normalize(strings({2}, {"a", "A"}), {attr("stopwords", std::vector<std::string>{"a"})});
  ASSERT_TRUE(flat.ok()) << flat.error().message();
  expect_tensor_near((*flat)[0].tensor(), strings({1}, {""}));
  auto row = normalize(strings({1, 2}, {"a", "A"}), {attr("stopwords", std::vector<std::string>{"a"})});
  ASSERT_TRUE(row.ok()) << row.error().message();
  expect_tensor_near((*row)[0].tensor(), strings({1, 1}, {""}));
}

TEST(StringNormalizer, ChangesTheCaseOfUtf8Letters) {
  if (locale_t l = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr)); l == static_cast<locale_t>(nullptr)) {
    GTEST_SKIP() << "C.UTF-8 is not installed: only ASCII changes case";
  } else {
    freelocale(l);
  }
  // ß has no one-letter upper case and stays; the lone byte 0xFF is not UTF-8
  // and is copied.
  const Tensor x = strings({3}, {"Straße", "ÉCOLE Σ", "a\xFF"});
  auto lower = normalize(x, {attr("case_change_action", "LOWER")});
  ASSERT_TRUE(lower.ok()) << lower.error().message();
  expect_tensor_near((*lower)[0].tensor(), strings({3}, {"straße", "école σ", "a\xFF"}));
  auto upper = normalize(x, {attr("case_change_action", "UPPER")});
  ASSERT_TRUE(upper.ok()) << upper.error().message();
  expect_tensor_near((*upper)[0].tensor(), strings({3}, {"STRAßE", "ÉCOLE Σ", "A\xFF"}));
}

TEST(StringNormalizer, RefusesOtherShapesTypesAndSettings) {
  expect_error(normalize(strings({2, 2}, {"a", "b", "c", "d"}), {}), "[C] or [1, C]");
  expect_error(normalize(Tensor::from<int64_t>({2}, {1, 2}), {}), "string tensor");
  expect_error(normalize(strings({1}, {"a"}), {attr("case_change_action", "TITLE")}), "LOWER, UPPER or NONE");
  expect_error(normalize(strings({1}, {"a"}), {attr("locale", "tr_TR")}), "locale 'tr_TR' is not supported");
}

// --- StringConcat ------------------------------------------------------------------

TEST(StringConcat, BroadcastsLikeNumpy) {
  // ReferenceEvaluator: [[x1, x2, x], [yy1, yy2, yy]].
  auto out = run_node({.op_type = "StringConcat",
                       .opset = 20,
                       .inputs = {{"x", strings({2, 1}, {"x", "yy"})}, {"y", strings({3}, {"1", "2", ""})}}});
  expect_tensor_near(out[0].tensor(), strings({2, 3}, {"x1", "x2", "x", "yy1", "yy2", "yy"}));
  auto scalar =
      run_node({.op_type = "StringConcat", .opset = 20, .inputs = {{"x", strings({2}, {"a", "b"})}, {"y", strings({}, {"!"})}}});
  expect_tensor_near(scalar[0].tensor(), strings({2}, {"a!", "b!"}));
}

TEST(StringConcat, RefusesNonStringsAndMismatchedShapes) {
  expect_error(try_run_node({.op_type = "StringConcat",
                             .opset = 20,
                             .inputs = {{"x", strings({1}, {"a"})}, {"y", Tensor::from<int64_t>({1}, {1})}}}),
               "must be string tensors");
  expect_error(try_run_node({.op_type = "StringConcat",
                             .opset = 20,
                             .inputs = {{"x", strings({2}, {"a", "b"})}, {"y", strings({3}, {"1", "2", "3"})}}}),
               "cannot broadcast");
}

// --- StringSplit -------------------------------------------------------------------

std::vector<runtime::Datum> split(const Tensor& x, std::vector<onnx::AttributeProto> attributes) {
  return run_node(
      {.op_type = "StringSplit", .opset = 20, .inputs = {{"x", x}}, .attributes = std::move(attributes), .num_outputs = 2});
}

TEST(StringSplit, DelimiterKeepsEmptyParts) {
  // ReferenceEvaluator: [[a, b, "", c], ["", "", "", ""]] and [4, 1].
  auto out = split(strings({2}, {"a,b,,c", ""}), {attr("delimiter", ",")});
  expect_tensor_near(out[0].tensor(), strings({2, 4}, {"a", "b", "", "c", "", "", "", ""}));
  expect_tensor_near(out[1].tensor(), Tensor::from<int64_t>({2}, {4, 1}));
}

TEST(StringSplit, WhitespaceRunsSplitAndVanish) {
  // ReferenceEvaluator: [[hello, world], [x, ""], ["", ""]] and [2, 1, 0].
  auto out = split(strings({3}, {"  hello \t world ", "x", "   "}), {});
  expect_tensor_near(out[0].tensor(), strings({3, 2}, {"hello", "world", "x", "", "", ""}));
  expect_tensor_near(out[1].tensor(), Tensor::from<int64_t>({3}, {2, 1, 0}));
  // No parts anywhere: the new last dim is 0.
  auto blank = split(strings({2}, {"", " \n"}), {attr("delimiter", "")});
  expect_tensor_near(blank[0].tensor(), strings({2, 0}, {}));
  expect_tensor_near(blank[1].tensor(), Tensor::from<int64_t>({2}, {0, 0}));
}

TEST(StringSplit, MaxsplitKeepsTheRestWhole) {
  // ReferenceEvaluator: [[[a, b--c]], [["", ""]]] with [[2], [2]], and
  // [[a, "b  c "], [d, ""]] with [2, 1].
  auto dashes = split(strings({2, 1}, {"a--b--c", "--"}), {attr("delimiter", "--"), attr("maxsplit", int64_t{1})});
  expect_tensor_near(dashes[0].tensor(), strings({2, 1, 2}, {"a", "b--c", "", ""}));
  expect_tensor_near(dashes[1].tensor(), Tensor::from<int64_t>({2, 1}, {2, 2}));
  auto spaces = split(strings({2}, {" a b  c ", "d"}), {attr("maxsplit", int64_t{1})});
  expect_tensor_near(spaces[0].tensor(), strings({2, 2}, {"a", "b  c ", "d", ""}));
  expect_tensor_near(spaces[1].tensor(), Tensor::from<int64_t>({2}, {2, 1}));
}

TEST(StringSplit, RefusesNonStrings) {
  expect_error(
      try_run_node({.op_type = "StringSplit", .opset = 20, .inputs = {{"x", Tensor::from<float>({1}, {1})}}, .num_outputs = 2}),
      "X must be a string tensor");
}

// RegexFullMatch (opset 20): the whole string must match; a bad pattern is
// refused when the session is built; a pattern that makes backtracking
// engines take exponential time runs in linear time under RE2.
TEST(Text, RegexFullMatchWholeStringsOnly) {
  auto x = Tensor::from<std::string>({4}, {"aab", "aabx", "b", ""});
  auto out = run_node({.op_type = "RegexFullMatch", .opset = 20, .inputs = {{"x", x}}, .attributes = {attr("pattern", "a+b")}});
  expect_tensor_near(out[0].tensor(), Tensor::from<bool>({4}, {true, false, false, false}));
  auto bad =
      try_run_node({.op_type = "RegexFullMatch", .opset = 20, .inputs = {{"x", x}}, .attributes = {attr("pattern", "(a")}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("not a valid RE2 pattern"), std::string::npos) << bad.error().message();
  auto long_a = Tensor::from<std::string>({1}, {std::string(100000, 'a')});
  out =
      run_node({.op_type = "RegexFullMatch", .opset = 20, .inputs = {{"x", long_a}}, .attributes = {attr("pattern", "(a*)*b")}});
  expect_tensor_near(out[0].tensor(), Tensor::from<bool>({1}, {false}));
}

}  // namespace
}  // namespace onnxkit
