#include "tools/edit_literals.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <type_traits>

#include "io/tensor_proto.h"
#include "runtime/tensor.h"
#include "runtime/tensor_proto.h"
#include "tools/edit.h"
#include "util/text.h"

namespace onnxkit::tools {

namespace literals {

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

Result<int64_t> parse_int(std::string_view text) {
  std::string s(trim(text));
  if (s.empty()) return make_error("'{}' is not an integer", text);
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (end != s.c_str() + s.size()) return make_error("'{}' is not an integer", text);
  if (errno == ERANGE) return make_error("'{}' is out of the range of a 64-bit integer", text);
  return static_cast<int64_t>(v);
}

Result<double> parse_float(std::string_view text) {
  std::string s(trim(text));
  if (s.empty()) return make_error("'{}' is not a number", text);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return make_error("'{}' is not a number", text);
  return v;
}

bool is_int(std::string_view text) { return parse_int(text).ok(); }
bool is_float(std::string_view text) { return parse_float(text).ok(); }

bool is_bracketed(std::string_view text) {
  text = trim(text);
  return text.size() >= 2 && text.front() == '[' && text.back() == ']';
}

std::string unquote(std::string_view text) {
  if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') && text.back() == text.front())
    return std::string(text.substr(1, text.size() - 2));
  return std::string(text);
}

std::vector<std::string> parse_list(std::string_view text) {
  text = trim(text);
  if (is_bracketed(text)) text = text.substr(1, text.size() - 2);
  std::vector<std::string> items;
  if (trim(text).empty()) return items;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    items.push_back(unquote(trim(text.substr(start, comma == std::string_view::npos ? comma : comma - start))));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return items;
}

}  // namespace literals

namespace {

using runtime::DataType;

// The element type a literal's prefix names (io's type names: float,
// float16, int64, bool, ...), when a literal can hold it.
std::optional<DataType> literal_type(std::string_view prefix) {
  const auto type = static_cast<DataType>(io::data_type_from_name(literals::trim(prefix)));
  if (type == DataType::boolean || runtime::is_floating(type) || runtime::is_integer(type)) return type;
  return std::nullopt;
}

// One element of a literal, as the JSON parser saw it.
struct Item {
  enum class Kind { integer, unsigned_integer, real, boolean, word } kind;
  int64_t integer = 0;
  uint64_t unsigned_integer = 0;
  double real = 0;
  bool boolean = false;
  std::string word;  // nan, inf, True...: the bare words JSON lacks
  std::string text() const {
    switch (kind) {
      case Kind::integer: return std::to_string(integer);
      case Kind::unsigned_integer: return std::to_string(unsigned_integer);
      case Kind::real: return fmt::format("{}", real);
      case Kind::boolean: return boolean ? "true" : "false";
      case Kind::word: return word;
    }
    return "";
  }
};

// JSON has no nan or inf, nor Python's True and False, which literals may
// hold: bare words (letters and digits after a letter, with an optional
// '-' in front) other than JSON's own true, false and null are quoted for
// the JSON parser, which hands them on as strings. A letter inside a number
// (1e-5) starts no word.
std::string quote_words(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  auto is_alpha = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; };
  auto is_alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  for (size_t i = 0; i < text.size();) {
    const bool boundary =
        i == 0 || !(is_alnum(text[i - 1]) || std::string_view(".+-\"_").find(text[i - 1]) != std::string_view::npos);
    const size_t letters = text[i] == '-' && i + 1 < text.size() ? i + 1 : i;
    if (!boundary || !is_alpha(text[letters])) {
      out += text[i++];
      continue;
    }
    size_t end = letters;
    while (end < text.size() && is_alnum(text[end])) ++end;
    const std::string_view word = text.substr(i, end - i);
    const bool json = word == "true" || word == "false" || word == "null";
    if (!json) out += '"';
    out += word;
    if (!json) out += '"';
    i = end;
  }
  return out;
}

// Receives a literal from nlohmann's SAX parser (which keeps its own stack,
// so no nesting recurses here): nested arrays give the shape, the first at
// each depth fixing its length, and scalars are the elements, row-major.
class LiteralReader {
 public:
  // Deeper than any tensor rank a model uses; bounds the bookkeeping.
  static constexpr size_t kMaxRank = 64;

  runtime::Shape shape;
  std::vector<Item> items;
  std::string error;

  // After a successful parse: every scalar sits at the innermost depth.
  Status finish() const {
    if (!error.empty()) return make_error("{}", error);
    if (!items.empty() && (min_scalar_depth_ != shape.size() || max_scalar_depth_ != shape.size()))
      return make_error("ragged nesting");
    return {};
  }

  bool null() { return fail("null is not a value"); }
  bool boolean(bool v) { return scalar({.kind = Item::Kind::boolean, .boolean = v}); }
  bool number_integer(int64_t v) { return scalar({.kind = Item::Kind::integer, .integer = v}); }
  bool number_unsigned(uint64_t v) { return scalar({.kind = Item::Kind::unsigned_integer, .unsigned_integer = v}); }
  bool number_float(double v, const std::string&) { return scalar({.kind = Item::Kind::real, .real = v}); }
  bool string(std::string& v) { return scalar({.kind = Item::Kind::word, .word = v}); }
  bool binary(nlohmann::json::binary_t&) { return fail("binary data is not a value"); }
  bool start_object(size_t) { return fail("objects are not values"); }
  bool key(std::string&) { return false; }
  bool end_object() { return false; }
  bool start_array(size_t) {
    if (open_.size() == kMaxRank) return fail(fmt::format("nested deeper than {} levels", kMaxRank));
    if (!open_.empty()) ++open_.back();
    if (shape.size() == open_.size()) shape.push_back(-1);  // its length, once the first list at this depth ends
    open_.push_back(0);
    return true;
  }
  bool end_array() {
    const size_t depth = open_.size() - 1;
    const int64_t count = open_.back();
    open_.pop_back();
    if (shape[depth] < 0) shape[depth] = count;
    else if (shape[depth] != count) return fail(fmt::format("rows of different lengths ({} and {})", shape[depth], count));
    return true;
  }
  bool parse_error(size_t position, const std::string& last_token, const nlohmann::json::exception&) {
    if (error.empty()) error = fmt::format("unexpected '{}' at position {}", last_token, position);
    return false;
  }

 private:
  bool scalar(Item item) {
    if (!open_.empty()) ++open_.back();
    min_scalar_depth_ = std::min(min_scalar_depth_, open_.size());
    max_scalar_depth_ = std::max(max_scalar_depth_, open_.size());
    items.push_back(std::move(item));
    return true;
  }
  bool fail(std::string message) {
    if (error.empty()) error = std::move(message);
    return false;
  }

  std::vector<int64_t> open_;  // elements so far in each open array
  size_t min_scalar_depth_ = std::numeric_limits<size_t>::max();
  size_t max_scalar_depth_ = 0;
};

template <class T> Result<T> to_integer(const Item& item) {
  using Limits = std::numeric_limits<T>;
  switch (item.kind) {
    case Item::Kind::integer:
      if constexpr (std::is_unsigned_v<T>) {
        if (item.integer < 0) return make_error("{} is negative, for an unsigned type", item.integer);
        if (static_cast<uint64_t>(item.integer) > Limits::max())
          return make_error("{} does not fit the element type", item.integer);
      } else if (item.integer < static_cast<int64_t>(Limits::min()) || item.integer > static_cast<int64_t>(Limits::max())) {
        return make_error("{} does not fit the element type", item.integer);
      }
      return static_cast<T>(item.integer);
    case Item::Kind::unsigned_integer:
      if (item.unsigned_integer > static_cast<uint64_t>(Limits::max()))
        return make_error("{} does not fit the element type", item.unsigned_integer);
      return static_cast<T>(item.unsigned_integer);
    default: return make_error("'{}' is not an integer", item.text());
  }
}

template <class T> Status convert_items(const std::vector<Item>& items, runtime::Tensor& tensor) {
  T* out = tensor.mutable_data<T>();
  for (size_t i = 0; i < items.size(); ++i) {
    const Item& item = items[i];
    if constexpr (std::is_same_v<T, bool>) {
      if (item.kind == Item::Kind::boolean) out[i] = item.boolean;
      else if (item.kind == Item::Kind::unsigned_integer && item.unsigned_integer <= 1) out[i] = item.unsigned_integer == 1;
      else if (item.kind == Item::Kind::word && (item.word == "True" || item.word == "False")) out[i] = item.word == "True";
      else return make_error("'{}' is not a bool (true, false, 1, 0)", item.text());
    } else if constexpr (std::is_integral_v<T>) {
      ONNXKIT_ASSIGN(out[i], to_integer<T>(item));
    } else {
      double v = 0;
      switch (item.kind) {
        case Item::Kind::integer: v = static_cast<double>(item.integer); break;
        case Item::Kind::unsigned_integer: v = static_cast<double>(item.unsigned_integer); break;
        case Item::Kind::real: v = item.real; break;
        case Item::Kind::word: {  // nan, inf, -inf
          ONNXKIT_ASSIGN(v, literals::parse_float(item.word));
          break;
        }
        case Item::Kind::boolean: return make_error("'{}' is not a number", item.text());
      }
      if constexpr (std::is_same_v<T, double>) out[i] = v;
      else out[i] = T(static_cast<float>(v));
    }
  }
  return {};
}

// The literal as errors quote it: its start, when it is long.
std::string quoted_literal(std::string_view text) {
  constexpr size_t kShown = 60;
  return text.size() <= kShown ? fmt::format("tensor literal '{}'", text)
                               : fmt::format("tensor literal '{}...' ({} characters)", text.substr(0, kShown), text.size());
}

}  // namespace

bool looks_like_tensor_literal(std::string_view text) {
  size_t colon = text.find(':');
  return colon != std::string_view::npos && literal_type(text.substr(0, colon)).has_value();
}

Result<onnx::TensorProto> parse_tensor_literal(std::string_view text) {
  size_t colon = text.find(':');
  const std::optional<DataType> type = colon == std::string_view::npos ? std::nullopt : literal_type(text.substr(0, colon));
  if (!type)
    return make_error(
        "'{}' is not a tensor literal: expected TYPE:[values], e.g. float:[1,1,2,2] or int64:[-1,4096] "
        "(types: float, float16, bfloat16, double, int8, int16, int32, int64, uint8, uint16, uint32, "
        "uint64, bool)",
        text);
  LiteralReader reader;
  if (!nlohmann::json::sax_parse(quote_words(text.substr(colon + 1)), &reader) && reader.error.empty())
    reader.error = "not a number or a [list]";
  Status parsed = reader.finish();
  if (!parsed.ok()) return parsed.error().in(quoted_literal(text));
  runtime::Tensor tensor(*type, reader.shape);
  Status converted = *type == DataType::boolean
                         ? convert_items<bool>(reader.items, tensor)
                         : runtime::dispatch_numeric(*type, [&]<class T>() { return convert_items<T>(reader.items, tensor); });
  if (!converted.ok()) return converted.error().in(quoted_literal(text));
  return runtime::tensor_to_proto(tensor);
}

bool looks_like_value_literal(std::string_view text) {
  return looks_like_tensor_literal(text) || literals::is_bracketed(text) || literals::is_float(text);
}

Result<onnx::TensorProto> parse_value_literal(std::string_view text, int32_t elem_type) {
  if (looks_like_tensor_literal(text)) return parse_tensor_literal(text);
  if (elem_type == 0) return make_error("'{}': the input declares no element type: give one, e.g. int64:{}", text, text);
  return parse_tensor_literal(fmt::format("{}:{}", io::data_type_name(elem_type), literals::trim(text)));
}

}  // namespace onnxkit::tools
