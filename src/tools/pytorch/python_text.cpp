// Python literals and names, and the small rearrangements of weights the
// emitters share.

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "tools/pytorch/emitter.h"

namespace onnxkit::tools::pytorch {

using runtime::DataType;

std::string torch_dtype(int32_t data_type) {
  switch (static_cast<DataType>(data_type)) {
    case DataType::float32: return "torch.float32";
    case DataType::float64: return "torch.float64";
    case DataType::float16: return "torch.float16";
    case DataType::bfloat16: return "torch.bfloat16";
    case DataType::int8: return "torch.int8";
    case DataType::int16: return "torch.int16";
    case DataType::int32: return "torch.int32";
    case DataType::int64: return "torch.int64";
    case DataType::uint8: return "torch.uint8";
    case DataType::boolean: return "torch.bool";
    case DataType::complex64: return "torch.complex64";
    case DataType::complex128: return "torch.complex128";
    default: return "";
  }
}

bool is_float_type(int32_t data_type) { return runtime::is_floating(static_cast<DataType>(data_type)); }

std::string py_float(double v) {
  if (std::isnan(v)) return "math.nan";
  if (std::isinf(v)) return v > 0 ? "math.inf" : "-math.inf";
  // The shortest text that reads back as the same float32 when the value is
  // one (most constants are), else as the same double.
  float f = static_cast<float>(v);
  std::string text = static_cast<double>(f) == v ? fmt::format("{}", f) : fmt::format("{}", v);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string py_int(int64_t v) { return std::to_string(v); }
std::string py_bool(bool v) { return v ? "True" : "False"; }

std::string py_list(const std::vector<std::string>& items) { return "[" + fmt::format("{}", fmt::join(items, ", ")) + "]"; }

std::string py_tuple(const std::vector<std::string>& items) {
  if (items.size() == 1) return "(" + items[0] + ",)";
  return "(" + fmt::format("{}", fmt::join(items, ", ")) + ")";
}

static std::vector<std::string> int_texts(const std::vector<int64_t>& values) {
  std::vector<std::string> items;
  for (int64_t v : values) items.push_back(py_int(v));
  return items;
}

std::string py_list(const std::vector<int64_t>& values) { return py_list(int_texts(values)); }
std::string py_tuple(const std::vector<int64_t>& values) { return py_tuple(int_texts(values)); }

std::string py_str(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string parenthesized(const std::string& text) {
  // One term has no space outside brackets: "x", "-1", "x.shape[0]", "f(a)[0]".
  int depth = 0;
  for (char c : text) {
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') --depth;
    if (c == ' ' && depth == 0) return "(" + text + ")";
  }
  return text;
}

std::vector<std::string> py_elements(const runtime::Tensor& t) {
  std::vector<std::string> items;
  if (t.dtype() == DataType::boolean) {
    for (bool b : t.values<bool>()) items.push_back(py_bool(b));
    return items;
  }
  const bool floating = runtime::is_floating(t.dtype());
  Status st = runtime::dispatch_numeric(t.dtype(), [&]<class T>() -> Status {
    for (const T& v : t.values<T>())
      items.push_back(floating ? py_float(static_cast<double>(v)) : fmt::format("{}", static_cast<int64_t>(v)));
    return {};
  });
  if (!st.ok()) items.clear();
  return items;
}

std::optional<int64_t> non_negative_axis(int64_t axis, std::optional<int64_t> rank) {
  if (axis >= 0) return axis;
  if (!rank) return std::nullopt;
  return axis + *rank;
}

std::vector<int64_t> torch_pad_order(const std::vector<int64_t>& begins, const std::vector<int64_t>& ends) {
  std::vector<int64_t> pads;
  size_t n = begins.size();
  size_t used = 0;  // dims, counted from the last, that F.pad must name
  for (size_t k = 0; k < n; ++k)
    if (begins[n - 1 - k] != 0 || ends[n - 1 - k] != 0) used = k + 1;
  for (size_t k = 0; k < used; ++k) {
    pads.push_back(begins[n - 1 - k]);
    pads.push_back(ends[n - 1 - k]);
  }
  return pads;
}

runtime::Tensor transpose_2d(const runtime::Tensor& t) {
  const int64_t rows = t.dim(0), cols = t.dim(1);
  const size_t size = runtime::element_size(t.dtype());
  runtime::Tensor out(t.dtype(), {cols, rows});
  const auto* src = static_cast<const char*>(t.raw());
  auto* dst = static_cast<char*>(out.mutable_raw());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) std::memcpy(dst + (c * rows + r) * size, src + (r * cols + c) * size, size);
  return out;
}

runtime::Tensor reorder_blocks(const runtime::Tensor& t, const std::vector<int>& order) {
  runtime::Tensor out(t.dtype(), t.shape());
  const size_t block = t.nbytes() / order.size();
  const auto* src = static_cast<const char*>(t.raw());
  auto* dst = static_cast<char*>(out.mutable_raw());
  for (size_t k = 0; k < order.size(); ++k) std::memcpy(dst + k * block, src + static_cast<size_t>(order[k]) * block, block);
  return out;
}

}  // namespace onnxkit::tools::pytorch
