// StringConcat and StringSplit (opset 20). Both work on bytes: delimiters and
// whitespace are matched byte by byte, which is exact for UTF-8 text since no
// character's encoding contains another's.

#include <limits>
#include <string_view>

#include "runtime/broadcast.h"
#include "runtime/kernels/text/text.h"

namespace onnxkit::runtime::text {
namespace {

Status concat(KernelContext& ctx) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  ONNXKIT_ASSIGN(const Tensor* y, ctx.tensor(1));
  if (x->dtype() != DataType::string || y->dtype() != DataType::string)
    return make_error("X and Y must be string tensors, got {} and {}", to_string(x->dtype()), to_string(y->dtype()));
  ONNXKIT_ASSIGN(Shape shape, broadcast_shapes({&x->shape(), &y->shape()}));
  Tensor& z = ctx.output(0, DataType::string, shape);
  const std::string* px = x->data<std::string>();
  const std::string* py = y->data<std::string>();
  std::string* pz = z.mutable_data<std::string>();
  for_each_broadcast_run<2>(
      shape, {&x->shape(), &y->shape()},
      [&](int64_t out, const std::array<int64_t, 2>& offsets, const std::array<int64_t, 2>& steps, int64_t length) {
        for (int64_t i = 0; i < length; ++i) pz[out + i] = px[offsets[0] + i * steps[0]] + py[offsets[1] + i * steps[1]];
      });
  return {};
}

// The bytes C's isspace calls whitespace. Python's str.split also counts a
// few control and non-ASCII spaces; those stay part of the words here.
bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// Like Python's s.split(delimiter, maxsplit): every delimiter splits, so
// adjacent ones delimit empty strings, and "" gives one empty part.
std::vector<std::string_view> split_on(std::string_view s, std::string_view delimiter, int64_t maxsplit) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (int64_t splits = 0; splits < maxsplit; ++splits) {
    const size_t at = s.find(delimiter, start);
    if (at == std::string_view::npos) break;
    parts.push_back(s.substr(start, at - start));
    start = at + delimiter.size();
  }
  parts.push_back(s.substr(start));
  return parts;
}

// Like Python's s.split(None, maxsplit): runs of whitespace split, leading
// whitespace is dropped and no part is empty; the rest left after maxsplit
// splits keeps its trailing whitespace.
std::vector<std::string_view> split_on_whitespace(std::string_view s, int64_t maxsplit) {
  std::vector<std::string_view> parts;
  size_t i = 0;
  auto skip_spaces = [&] {
    while (i < s.size() && is_space(s[i])) ++i;
  };
  for (skip_spaces(); i < s.size(); skip_spaces()) {
    if (static_cast<int64_t>(parts.size()) == maxsplit) {
      parts.push_back(s.substr(i));
      break;
    }
    const size_t start = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    parts.push_back(s.substr(start, i - start));
  }
  return parts;
}

Result<ComputeFn> build_split(const KernelInfo& info) {
  const std::string delimiter = info.attr_string("delimiter", "");
  // Absent means no limit; so does a negative value, as in Python.
  int64_t maxsplit = info.attr_int("maxsplit", -1);
  if (maxsplit < 0) maxsplit = std::numeric_limits<int64_t>::max();
  return ComputeFn([=](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    if (x->dtype() != DataType::string) return make_error("X must be a string tensor, got {}", to_string(x->dtype()));
    std::vector<std::vector<std::string_view>> parts;
    parts.reserve(static_cast<size_t>(x->numel()));
    int64_t widest = 0;
    for (const std::string& s : x->values<std::string>()) {
      parts.push_back(delimiter.empty() ? split_on_whitespace(s, maxsplit) : split_on(s, delimiter, maxsplit));
      widest = std::max(widest, static_cast<int64_t>(parts.back().size()));
    }
    Shape y_shape = x->shape();
    y_shape.push_back(widest);
    // Rows shorter than the widest keep the empty strings they start with.
    std::string* y = ctx.output(0, DataType::string, y_shape).mutable_data<std::string>();
    for (size_t i = 0; i < parts.size(); ++i)
      for (size_t k = 0; k < parts[i].size(); ++k) y[static_cast<int64_t>(i) * widest + static_cast<int64_t>(k)] = parts[i][k];
    if (ctx.wants_output(1)) {
      int64_t* counts = ctx.output(1, DataType::int64, x->shape()).mutable_data<int64_t>();
      for (size_t i = 0; i < parts.size(); ++i) counts[i] = static_cast<int64_t>(parts[i].size());
    }
    return {};
  });
}

}  // namespace

void register_concat_split(KernelRegistry& registry) {
  registry.add("", "StringConcat", 20, kLatestOpset, make_kernel(concat));
  registry.add("", "StringSplit", 20, kLatestOpset, make_kernel(build_split));
}

}  // namespace onnxkit::runtime::text
