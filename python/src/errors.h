#pragma once
// onnxkit's Python exceptions, and how the bindings raise them. The message
// is the library's Error: the one line the CLI prints after "onnxkit
// COMMAND: error: ". Raise only while holding the GIL.

#include <pybind11/pybind11.h>

#include <string>
#include <utility>

#include "util/result.h"

namespace onnxkit::python {

enum class ErrorKind {
  error,             // onnxkit.Error: a tool function failed as its command would
  model,             // onnxkit.ModelError: a model could not be loaded or a session built
  run,               // onnxkit.RunError: a run failed (the feeds or a kernel)
  invalid_argument,  // onnxkit.InvalidArgument: the call's own arguments are wrong
};

// Creates the exception classes as attributes of `module`.
void add_errors(pybind11::module_& module);

[[noreturn]] void raise(ErrorKind kind, const std::string& message);

template <class T> T value_or_raise(Result<T> result, ErrorKind kind) {
  if (!result.ok()) raise(kind, result.error().message());
  return std::move(result).value();
}

inline void check_or_raise(const Status& status, ErrorKind kind) {
  if (!status.ok()) raise(kind, status.error().message());
}

// The name of `object`'s Python type ("list", "NoneType"), for messages.
std::string type_name(pybind11::handle object);

}  // namespace onnxkit::python
