// onnxkit._onnxkit: the extension module under the onnxkit package. It binds
// the library as the CLI uses it (runtime::Session, the tools/ functions);
// the package's Python files give it the shapes ONNX Runtime's and
// onnx-simplifier's users know.

#include <pybind11/pybind11.h>

#include "bindings.h"
#include "errors.h"

PYBIND11_MODULE(_onnxkit, module) {
  module.doc() = "onnxkit's C++ library as the onnxkit package uses it (private: import onnxkit instead)";
  onnxkit::python::add_errors(module);
  onnxkit::python::add_session(module);
  onnxkit::python::add_tools(module);
}
