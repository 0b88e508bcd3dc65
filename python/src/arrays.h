#pragma once
// numpy arrays <-> the runtime's values. Feeds are read in place when numpy's
// layout is the runtime's (C order, aligned, native byte order, a type ONNX
// has); results are copied into new arrays, so that nothing the caller
// holds can alias the session's memory (an output may be a view of a weight).
// Everything here runs with the GIL held.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <optional>
#include <string>

#include "runtime/datum.h"
#include "runtime/session.h"

namespace onnxkit::python {

// The numpy dtype of an ONNX element type; none for types numpy lacks
// (bfloat16, the float8 formats, int4, uint4) and for strings.
std::optional<pybind11::dtype> numpy_dtype(runtime::DataType type);

// A feed for `declared` (null when the model has no input of that name: the
// session then says so). Sequences take a list or tuple, optionals take None.
// Anything else goes through numpy.asarray, with the declared element type
// when it is not an array yet, as ONNX Runtime does.
runtime::Datum value_from_python(pybind11::handle object, const std::string& name, const runtime::ValueInfo* declared);

// A result as Python: an array, a list of arrays for a sequence, None for an
// empty optional.
pybind11::object value_to_python(const runtime::Datum& value, const std::string& name);

}  // namespace onnxkit::python
