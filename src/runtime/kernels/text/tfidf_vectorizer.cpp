// TfIdfVectorizer (opset 9): counts the pool's n-grams in each row of X and
// weights the counts.
//
// The pool lists its 1-grams, then its 2-grams, ...: ngram_counts[i] is where
// the (i+1)-grams start. Pool n-gram j is counted at output coordinate
// ngram_indexes[j]; only lengths in [min_gram_length, max_gram_length] are
// looked for.
//
// Skips: an n-gram with skip k takes items k + 1 apart, [x[s], x[s+k+1], ...].
// Every skip from 0 to max_skip_count counts on its own, except for 1-grams,
// which skipping cannot change and so count once.
//
// Weights: as in ONNX's reference implementation and ONNX Runtime (and as
// sklearn-onnx writes them), weights[c] scales output coordinate c. That is
// the spec's "weight of the i-th n-gram" whenever ngram_indexes is the
// identity, as converters emit it.
//
// Pool items (int64 or string) get dense ids and X's tokens are read as those
// ids, so one n-gram table of ids serves both kinds of pool; a token that is
// not in the pool can complete no n-gram.

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <span>
#include <unordered_map>

#include "runtime/kernels/text/text.h"

namespace onnxkit::runtime::text {
namespace {

enum class Weighting { tf, idf, tfidf };

constexpr int64_t kNotInPool = -1;

// Output coordinates stop here: a row of 2^31 floats is beyond any real
// vocabulary, and the bound keeps the output's size from overflowing.
constexpr int64_t kMaxCoordinate = std::numeric_limits<int32_t>::max();

struct TfIdfVectorizer {
  Weighting weighting = Weighting::tf;
  int64_t min_gram_length = 1;
  int64_t max_gram_length = 1;  // at most the longest n-gram the pool can hold
  int64_t max_skip_count = 0;
  bool string_pool = false;
  std::unordered_map<int64_t, int64_t> int_ids;         // pool_int64s item -> id
  std::unordered_map<std::string, int64_t> string_ids;  // pool_strings item -> id
  std::map<std::vector<int64_t>, int64_t> coordinates;  // n-gram of ids -> output coordinate
  std::vector<float> weights;                           // by output coordinate; empty: all 1
  int64_t output_size = 0;

  Result<std::vector<int64_t>> token_ids(const Tensor& x) const;
  void count_row(std::span<const int64_t> row, std::vector<int64_t>& counts) const;
  void weigh(const std::vector<int64_t>& counts, float* out) const;
};

template <class Item> std::vector<int64_t> assign_ids(const std::vector<Item>& pool, std::unordered_map<Item, int64_t>& ids) {
  std::vector<int64_t> out;
  out.reserve(pool.size());
  for (const Item& item : pool) out.push_back(ids.emplace(item, static_cast<int64_t>(ids.size())).first->second);
  return out;
}

Result<TfIdfVectorizer> parse(const KernelInfo& info) {
  for (const char* name : {"mode", "min_gram_length", "max_gram_length", "max_skip_count", "ngram_counts", "ngram_indexes"})
    if (!info.has_attr(name)) return make_error("attribute '{}' is required", name);
  TfIdfVectorizer v;
  const std::string mode = info.attr_string("mode", "");
  if (mode == "TF") {
    v.weighting = Weighting::tf;
  } else if (mode == "IDF") {
    v.weighting = Weighting::idf;
  } else if (mode == "TFIDF") {
    v.weighting = Weighting::tfidf;
  } else {
    return make_error("mode must be TF, IDF or TFIDF, got '{}'", mode);
  }
  v.min_gram_length = info.attr_int("min_gram_length", 1);
  v.max_gram_length = info.attr_int("max_gram_length", 1);
  v.max_skip_count = info.attr_int("max_skip_count", 0);
  if (v.min_gram_length < 1 || v.max_gram_length < v.min_gram_length)
    return make_error("gram lengths must satisfy 1 <= min_gram_length <= max_gram_length, got {} and {}", v.min_gram_length,
                      v.max_gram_length);
  if (v.max_skip_count < 0) return make_error("max_skip_count must be non-negative, got {}", v.max_skip_count);

  if (info.has_attr("pool_strings") == info.has_attr("pool_int64s"))
    return make_error("exactly one of pool_strings and pool_int64s must be given");
  v.string_pool = info.has_attr("pool_strings");
  const std::vector<int64_t> item_ids = v.string_pool ? assign_ids(info.attr_strings("pool_strings"), v.string_ids)
                                                      : assign_ids(info.attr_ints("pool_int64s"), v.int_ids);
  const auto pool_size = static_cast<int64_t>(item_ids.size());

  const std::vector<int64_t> ngram_counts = info.attr_ints("ngram_counts");
  v.max_gram_length = std::min(v.max_gram_length, static_cast<int64_t>(ngram_counts.size()));
  std::map<std::vector<int64_t>, int64_t> pool_ngram;  // n-gram of ids -> its index in the pool
  int64_t ngrams = 0;
  for (size_t i = 0; i < ngram_counts.size(); ++i) {
    const auto length = static_cast<int64_t>(i) + 1;
    const int64_t begin = ngram_counts[i];
    const int64_t end = i + 1 < ngram_counts.size() ? ngram_counts[i + 1] : pool_size;
    if (begin < 0 || end < begin || end > pool_size)
      return make_error("ngram_counts [{}] must be increasing starts within the pool of {} items", fmt::join(ngram_counts, ", "),
                        pool_size);
    if ((end - begin) % length != 0)
      return make_error("pool items [{}, {}) hold the {}-grams but are not a whole number of them", begin, end, length);
    for (int64_t at = begin; at < end; at += length, ++ngrams) {
      if (length < v.min_gram_length || length > v.max_gram_length) continue;  // never looked for
      std::vector<int64_t> key(item_ids.begin() + at, item_ids.begin() + at + length);
      if (!pool_ngram.emplace(std::move(key), ngrams).second)
        return make_error("the pool holds the {}-gram starting at item {} a second time", length, at);
    }
  }

  const std::vector<int64_t> ngram_indexes = info.attr_ints("ngram_indexes");
  if (static_cast<int64_t>(ngram_indexes.size()) != ngrams)
    return make_error("ngram_indexes has {} entries but the pool holds {} n-grams", ngram_indexes.size(), ngrams);
  if (ngram_indexes.empty()) return make_error("ngram_indexes must not be empty");
  for (int64_t c : ngram_indexes)
    if (c < 0 || c > kMaxCoordinate) return make_error("ngram_indexes must be in [0, {}], got {}", kMaxCoordinate, c);
  v.output_size = *std::max_element(ngram_indexes.begin(), ngram_indexes.end()) + 1;
  for (auto& [key, j] : pool_ngram) j = ngram_indexes[static_cast<size_t>(j)];
  v.coordinates = std::move(pool_ngram);

  v.weights = info.attr_floats("weights");
  if (!v.weights.empty() && v.weights.size() != ngram_indexes.size())
    return make_error("weights has {} entries but ngram_indexes has {}", v.weights.size(), ngram_indexes.size());
  if (!v.weights.empty() && static_cast<int64_t>(v.weights.size()) < v.output_size)
    return make_error("weights has {} entries but scales output coordinates up to max(ngram_indexes) = {}", v.weights.size(),
                      v.output_size - 1);
  return v;
}

Result<std::vector<int64_t>> TfIdfVectorizer::token_ids(const Tensor& x) const {
  std::vector<int64_t> ids;
  ids.reserve(static_cast<size_t>(x.numel()));
  auto lookup = [&ids](const auto& map, const auto& token) {
    auto hit = map.find(token);
    ids.push_back(hit == map.end() ? kNotInPool : hit->second);
  };
  if (string_pool) {
    if (x.dtype() != DataType::string)
      return make_error("X must be a string tensor with pool_strings, got {}", to_string(x.dtype()));
    for (const std::string& token : x.values<std::string>()) lookup(string_ids, token);
  } else {
    if (x.dtype() != DataType::int32 && x.dtype() != DataType::int64)
      return make_error("X must be an int32 or int64 tensor with pool_int64s, got {}", to_string(x.dtype()));
    ONNXKIT_ASSIGN(std::vector<int64_t> tokens, read_int64s(x));
    for (int64_t token : tokens) lookup(int_ids, token);
  }
  return ids;
}

void TfIdfVectorizer::count_row(std::span<const int64_t> row, std::vector<int64_t>& counts) const {
  std::fill(counts.begin(), counts.end(), 0);
  const auto size = static_cast<int64_t>(row.size());
  std::vector<int64_t> key;
  for (int64_t length = min_gram_length; length <= max_gram_length; ++length) {
    // Gaps wider than the row allows find nothing; bounding them also keeps
    // (length - 1) * gap from overflowing for a huge max_skip_count.
    const int64_t widest_gap = length == 1 ? 1 : (size - 1) / (length - 1);
    const int64_t max_gap = max_skip_count < widest_gap ? max_skip_count + 1 : widest_gap;
    for (int64_t gap = 1; gap <= max_gap; ++gap) {
      for (int64_t start = 0; start + (length - 1) * gap < size; ++start) {
        key.clear();
        for (int64_t k = 0; k < length; ++k) key.push_back(row[static_cast<size_t>(start + k * gap)]);
        if (auto hit = coordinates.find(key); hit != coordinates.end()) ++counts[static_cast<size_t>(hit->second)];
      }
    }
  }
}

void TfIdfVectorizer::weigh(const std::vector<int64_t>& counts, float* out) const {
  for (size_t c = 0; c < counts.size(); ++c) {
    const float weight = weights.empty() ? 1.0f : weights[c];
    const auto count = static_cast<float>(counts[c]);
    switch (weighting) {
      case Weighting::tf: out[c] = count; break;
      case Weighting::idf: out[c] = counts[c] > 0 ? weight : 0.0f; break;
      case Weighting::tfidf: out[c] = count * weight; break;
    }
  }
}

Result<ComputeFn> build_tfidf_vectorizer(const KernelInfo& info) {
  ONNXKIT_ASSIGN(TfIdfVectorizer v, parse(info));
  return ComputeFn([v = std::move(v)](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    if (x->rank() != 1 && x->rank() != 2) return make_error("X must be [C] or [N, C], got {}", shape_to_string(x->shape()));
    ONNXKIT_ASSIGN(std::vector<int64_t> ids, v.token_ids(*x));
    const bool batched = x->rank() == 2;
    const int64_t rows = batched ? x->dim(0) : 1;
    const int64_t columns = x->dim(x->rank() - 1);
    Tensor& y = ctx.output(0, DataType::float32, batched ? Shape{rows, v.output_size} : Shape{v.output_size});
    std::vector<int64_t> counts(static_cast<size_t>(v.output_size));
    for (int64_t r = 0; r < rows; ++r) {
      v.count_row(std::span<const int64_t>(ids).subspan(static_cast<size_t>(r * columns), static_cast<size_t>(columns)), counts);
      v.weigh(counts, y.mutable_data<float>() + r * v.output_size);
    }
    return {};
  });
}

}  // namespace

void register_tfidf_vectorizer(KernelRegistry& registry) {
  registry.add("", "TfIdfVectorizer", 9, kLatestOpset, make_kernel(build_tfidf_vectorizer));
}

}  // namespace onnxkit::runtime::text
