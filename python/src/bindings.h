#pragma once
// The parts of the extension module, one function each (module.cpp calls
// them), and what they share.

#include <pybind11/pybind11.h>

#include <cstddef>
#include <memory>
#include <span>

#include "ir/model.h"
#include "util/result.h"

namespace onnxkit::python {

// _onnxkit.Session: runtime::Session with numpy feeds and results (session.cpp).
void add_session(pybind11::module_& module);
// The commands' library functions: info, check, shapes, edit, simplify, compare (tools.cpp).
void add_tools(pybind11::module_& module);

// A model given as a path (str) or as the bytes of a model file; external
// data of bytes is looked up from the current folder. Parses without the GIL.
Result<std::unique_ptr<ir::Model>> load_model(pybind11::handle model);

// The buffer of a Python bytes object (valid while the object lives; bytes
// are immutable, so it may be read without the GIL).
std::span<const std::byte> bytes_of(pybind11::handle bytes);

}  // namespace onnxkit::python
