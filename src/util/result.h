#pragma once
// Errors as values at library boundaries. An Error is one line that names what
// is at fault (file, tensor, node) and what is wrong; only the CLI's main turns
// it into an exit code.

#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace onnxkit {

class Error {
 public:
  explicit Error(std::string message) : message_(std::move(message)) {}

  const std::string& message() const { return message_; }

  // Returns the same error with `where` in front: "where: message".
  Error in(std::string_view where) const { return Error(fmt::format("{}: {}", where, message_)); }

 private:
  std::string message_;
};

template <class... Args> Error make_error(fmt::format_string<Args...> format, Args&&... args) {
  return Error(fmt::format(format, std::forward<Args>(args)...));
}

template <class T> class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : state_(std::move(error)) {}  // NOLINT

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { return std::get<1>(state_); }

 private:
  std::variant<T, Error> state_;
};

template <> class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)) {}  // NOLINT

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return *error_; }

 private:
  std::optional<Error> error_;
};

using Status = Result<void>;

}  // namespace onnxkit

#define ONNXKIT_CONCAT_INNER(a, b) a##b
#define ONNXKIT_CONCAT(a, b) ONNXKIT_CONCAT_INNER(a, b)

// Returns the error of a failed Status/Result from the enclosing function.
#define ONNXKIT_TRY(expr)                                            \
  do {                                                               \
    auto&& onnxkit_try_result = (expr);                              \
    if (!onnxkit_try_result.ok()) return onnxkit_try_result.error(); \
  } while (0)

// `ONNXKIT_ASSIGN(auto x, f())`: declares x from a successful Result, or
// returns its error from the enclosing function. It expands to several
// statements: under an `if`, use braces.
#define ONNXKIT_ASSIGN(lhs, expr) ONNXKIT_ASSIGN_IMPL(ONNXKIT_CONCAT(onnxkit_result_, __LINE__), lhs, expr)
#define ONNXKIT_ASSIGN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                        \
  if (!tmp.ok()) return tmp.error();        \
  lhs = std::move(tmp).value()
