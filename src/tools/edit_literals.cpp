#include "tools/edit_literals.h"

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

// A nested list of numbers as its shape and its elements, row-major.
class NestedList {
 public:
  explicit NestedList(std::string_view text) : text_(text) {}

  Status parse(runtime::Shape& shape, std::vector<std::string>& items) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == '[') {
      ONNXKIT_TRY(parse_level(0, shape, items));
    } else {
      size_t start = pos_;
      while (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != ']') ++pos_;
      items.emplace_back(literals::trim(text_.substr(start, pos_ - start)));
      if (items.back().empty()) return make_error("no value");
    }
    skip_space();
    if (pos_ != text_.size()) return make_error("unexpected '{}' at position {}", text_.substr(pos_), pos_);
    return {};
  }

 private:
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  // Parses "[...]" at depth `depth`; the first list at each depth fixes its length.
  Status parse_level(size_t depth, runtime::Shape& shape, std::vector<std::string>& items) {
    ++pos_;  // '['
    int64_t count = 0;
    if (shape.size() == depth) shape.resize(depth + 1, -1);  // its length, once the first list at this depth ends
    skip_space();
    bool nested = pos_ < text_.size() && text_[pos_] == '[';
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
    } else {
      while (true) {
        skip_space();
        if (nested) {
          if (pos_ >= text_.size() || text_[pos_] != '[') return make_error("ragged nesting at position {}", pos_);
          ONNXKIT_TRY(parse_level(depth + 1, shape, items));
        } else {
          size_t start = pos_;
          while (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != ']' && text_[pos_] != '[') ++pos_;
          std::string item(literals::trim(text_.substr(start, pos_ - start)));
          if (item.empty()) return make_error("empty element at position {}", start);
          items.push_back(std::move(item));
        }
        ++count;
        skip_space();
        if (pos_ >= text_.size()) return make_error("missing ']'");
        if (text_[pos_] == ']') {
          ++pos_;
          break;
        }
        if (text_[pos_] != ',') return make_error("expected ',' or ']' at position {}", pos_);
        ++pos_;
      }
    }
    if (shape[depth] < 0) {
      shape[depth] = count;
    } else if (shape[depth] != count) {
      return make_error("rows of different lengths ({} and {})", shape[depth], count);
    }
    if (!nested && shape.size() > depth + 1) return make_error("ragged nesting");
    return {};
  }

  std::string_view text_;
  size_t pos_ = 0;
};

template <class T>
Status convert_items(const std::vector<std::string>& items, runtime::Tensor& tensor) {
  T* out = tensor.mutable_data<T>();
  for (size_t i = 0; i < items.size(); ++i) {
    if constexpr (std::is_same_v<T, bool>) {
      const std::string& s = items[i];
      if (s == "true" || s == "True" || s == "1") out[i] = true;
      else if (s == "false" || s == "False" || s == "0") out[i] = false;
      else return make_error("'{}' is not a bool (true, false, 1, 0)", s);
    } else if constexpr (std::is_integral_v<T>) {
      ONNXKIT_ASSIGN(int64_t v, literals::parse_int(items[i]));
      if constexpr (std::is_unsigned_v<T>) {
        if (v < 0) return make_error("{} is negative, for an unsigned type", v);
        if (static_cast<uint64_t>(v) > std::numeric_limits<T>::max())
          return make_error("{} does not fit the element type", v);
      } else {
        if (v < static_cast<int64_t>(std::numeric_limits<T>::min()) || v > static_cast<int64_t>(std::numeric_limits<T>::max()))
          return make_error("{} does not fit the element type", v);
      }
      out[i] = static_cast<T>(v);
    } else {
      ONNXKIT_ASSIGN(double v, literals::parse_float(items[i]));
      out[i] = T(static_cast<float>(v));
      if constexpr (std::is_same_v<T, double>) out[i] = v;
    }
  }
  return {};
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
    return make_error("'{}' is not a tensor literal: expected TYPE:[values], e.g. float:[1,1,2,2] or int64:[-1,4096] "
                      "(types: float, float16, bfloat16, double, int8, int16, int32, int64, uint8, uint16, uint32, "
                      "uint64, bool)", text);
  runtime::Shape shape;
  std::vector<std::string> items;
  Status parsed = NestedList(text.substr(colon + 1)).parse(shape, items);
  if (!parsed.ok()) return parsed.error().in(fmt::format("tensor literal '{}'", text));
  runtime::Tensor tensor(*type, shape);
  Status converted = *type == DataType::boolean
                         ? convert_items<bool>(items, tensor)
                         : runtime::dispatch_numeric(*type, [&]<class T>() { return convert_items<T>(items, tensor); });
  if (!converted.ok()) return converted.error().in(fmt::format("tensor literal '{}'", text));
  return runtime::tensor_to_proto(tensor);
}

}  // namespace onnxkit::tools
