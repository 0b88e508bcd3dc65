#include "errors.h"

#include <array>

namespace onnxkit::python {
namespace py = pybind11;

namespace {

// The classes, owned by the module's attributes for the interpreter's life.
std::array<PyObject*, 4> classes{};

PyObject* make_class(py::module_& module, const char* name, PyObject* bases, const char* doc) {
  std::string qualified = std::string("onnxkit.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  if (cls == nullptr) throw py::error_already_set();
  module.add_object(name, py::handle(cls));  // the module's reference
  return cls;
}

}  // namespace

void add_errors(py::module_& module) {
  PyObject* error = make_class(module, "Error", PyExc_Exception,
                               "Base of onnxkit's exceptions. str(e) is the one line the command line prints after\n"
                               "'onnxkit COMMAND: error: ': it names the file, tensor or node at fault.\n"
                               "Raised as it is by info, check, infer_shapes, edit, simplify and compare.");
  classes[static_cast<int>(ErrorKind::error)] = error;
  classes[static_cast<int>(ErrorKind::model)] =
      make_class(module, "ModelError", error, "The model could not be loaded, or no session could be built from it.");
  classes[static_cast<int>(ErrorKind::run)] =
      make_class(module, "RunError", error,
                 "InferenceSession.run failed: a feed disagrees with the declared input (name, element type,\n"
                 "rank, fixed dims), or a kernel refused the values it was given.");
  py::tuple bases = py::make_tuple(py::handle(error), py::handle(PyExc_ValueError));
  classes[static_cast<int>(ErrorKind::invalid_argument)] =
      make_class(module, "InvalidArgument", bases.ptr(),
                 "The call's own arguments are wrong before the model is involved: an unknown output name,\n"
                 "a feed numpy cannot give as an ONNX type, an option onnxkit does not support. Also a ValueError.");
}

std::string type_name(py::handle object) { return py::str(py::type::handle_of(object).attr("__name__")); }

void raise(ErrorKind kind, const std::string& message) {
  PyErr_SetString(classes[static_cast<int>(kind)], message.c_str());
  throw py::error_already_set();
}

}  // namespace onnxkit::python
