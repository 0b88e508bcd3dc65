#include "arrays.h"

#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <vector>

#include "errors.h"
#include "io/tensor_proto.h"

namespace onnxkit::python {
namespace py = pybind11;
using runtime::DataType;
using runtime::Datum;
using runtime::Tensor;

namespace {

const py::module_& numpy() {
  // Never destroyed: a static py::object would be released after the interpreter is gone.
  static const py::module_* module = new py::module_(py::module_::import("numpy"));
  return *module;
}

// The ONNX element type of a numpy dtype, by kind and size: numpy has several
// names for one layout (long and longlong on Linux are both int64).
std::optional<DataType> onnx_type(const py::dtype& dtype) {
  const auto size = dtype.itemsize();
  switch (dtype.kind()) {
    case 'f':
      if (size == 2) return DataType::float16;
      if (size == 4) return DataType::float32;
      if (size == 8) return DataType::float64;
      return std::nullopt;
    case 'i':
      if (size == 1) return DataType::int8;
      if (size == 2) return DataType::int16;
      if (size == 4) return DataType::int32;
      if (size == 8) return DataType::int64;
      return std::nullopt;
    case 'u':
      if (size == 1) return DataType::uint8;
      if (size == 2) return DataType::uint16;
      if (size == 4) return DataType::uint32;
      if (size == 8) return DataType::uint64;
      return std::nullopt;
    case 'b': return DataType::boolean;
    case 'c':
      if (size == 8) return DataType::complex64;
      if (size == 16) return DataType::complex128;
      return std::nullopt;
    case 'U':
    case 'S':
    case 'O': return DataType::string;
    default: return std::nullopt;
  }
}

runtime::Shape shape_of(const py::array& array) {
  runtime::Shape shape(static_cast<size_t>(array.ndim()));
  for (size_t i = 0; i < shape.size(); ++i) shape[i] = array.shape(static_cast<py::ssize_t>(i));
  return shape;
}

// Strings are copied: numpy holds them as fixed-width UCS4, bytes or objects.
Tensor strings_from(const py::array& array, const std::string& name) {
  Tensor t(DataType::string, shape_of(array));
  py::list items = array.attr("ravel")().attr("tolist")();
  std::string* out = t.mutable_data<std::string>();
  for (size_t i = 0; i < items.size(); ++i) {
    py::handle item = items[i];
    if (!py::isinstance<py::str>(item) && !py::isinstance<py::bytes>(item))
      raise(ErrorKind::invalid_argument, fmt::format("input '{}': element {} is a {}, not a string", name, i, type_name(item)));
    out[i] = item.cast<std::string>();
  }
  return t;
}

Tensor tensor_from(py::handle object, const std::string& name, const runtime::ValueInfo* declared) {
  if (object.is_none())
    raise(ErrorKind::invalid_argument, fmt::format("input '{}': None is an empty optional, and the input is no optional", name));
  py::array array;
  if (py::isinstance<py::array>(object)) {
    array = py::reinterpret_borrow<py::array>(object);
  } else {
    py::object dtype = py::none();
    if (declared != nullptr && declared->type.has_tensor_type())
      if (auto d = numpy_dtype(static_cast<DataType>(declared->type.tensor_type().elem_type()))) dtype = *d;
    array = numpy().attr("asarray")(object, dtype);
  }
  py::dtype dtype = array.dtype();
  std::optional<DataType> type = onnx_type(dtype);
  if (!type)
    raise(ErrorKind::invalid_argument,
          fmt::format("input '{}': numpy dtype {} has no ONNX element type", name, std::string(py::str(dtype))));
  if (*type == DataType::string) return strings_from(array, name);

  constexpr int kAligned = py::detail::npy_api::NPY_ARRAY_ALIGNED_;
  bool in_place =
      (array.flags() & py::array::c_style) != 0 && (array.flags() & kAligned) != 0 && dtype.attr("isnative").cast<bool>();
  if (!in_place) array = numpy().attr("ascontiguousarray")(array, dtype.attr("newbyteorder")("="));
  // The tensor views numpy's buffer and holds a reference to the array; the
  // last copy of the tensor may go on a thread without the GIL.
  PyObject* held = array.inc_ref().ptr();
  std::shared_ptr<const void> owner(held, [](const void* p) {
    py::gil_scoped_acquire gil;
    Py_DECREF(static_cast<PyObject*>(const_cast<void*>(p)));
  });
  return Tensor::view(*type, shape_of(array), array.data(), std::move(owner));
}

// The element type of a sequence or optional type, as the runtime keeps it.
DataType element_type(const onnx::TypeProto& type) {
  if (type.has_tensor_type()) return static_cast<DataType>(type.tensor_type().elem_type());
  if (type.has_sequence_type()) return element_type(type.sequence_type().elem_type());
  if (type.has_optional_type()) return element_type(type.optional_type().elem_type());
  return DataType::undefined;
}

py::object tensor_to_python(const Tensor& t, const std::string& name) {
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  if (t.dtype() == DataType::string) {
    py::list items;
    for (const std::string& s : t.values<std::string>()) {
      // Bytes that are not UTF-8 come back as surrogates, so nothing is lost.
      PyObject* text = PyUnicode_DecodeUTF8(s.data(), static_cast<py::ssize_t>(s.size()), "surrogateescape");
      if (text == nullptr) throw py::error_already_set();
      items.append(py::reinterpret_steal<py::object>(text));
    }
    py::tuple dims(shape.size());  // a tuple: pybind11 converts no std::vector without stl.h
    for (size_t i = 0; i < shape.size(); ++i) dims[i] = py::int_(shape[i]);
    return numpy().attr("array")(items, py::arg("dtype") = py::dtype("O")).attr("reshape")(dims);
  }
  std::optional<py::dtype> dtype = numpy_dtype(t.dtype());
  if (!dtype)
    raise(ErrorKind::run, fmt::format("output '{}' is {}, which numpy has no type for", name, runtime::to_string(t.dtype())));
  py::array out(*dtype, shape);
  if (t.nbytes() > 0) std::memcpy(out.mutable_data(), t.raw(), t.nbytes());
  return out;
}

// A dict as ONNX Runtime returns maps: keys and values as Python scalars.
py::object map_to_python(const runtime::Map& m, const std::string& name) {
  py::list keys = tensor_to_python(m.keys, name).attr("tolist")();
  py::list values = tensor_to_python(m.values, name).attr("tolist")();
  py::dict out;
  for (size_t i = 0; i < keys.size(); ++i) out[keys[i]] = values[i];
  return out;
}

// A dict given for a map input: its keys and values become two 1-D tensors
// of the declared key and value types.
runtime::Map map_from_python(py::handle object, const std::string& name, const onnx::TypeProto& type) {
  if (!py::isinstance<py::dict>(object))
    raise(ErrorKind::invalid_argument, fmt::format("input '{}' is a map: give a dict, not a {}", name, type_name(object)));
  py::dict dict = py::reinterpret_borrow<py::dict>(object);
  py::list keys, values;
  for (auto item : dict) {
    keys.append(item.first);
    values.append(item.second);
  }
  auto as_array = [&](const py::list& items, DataType elem) {
    std::optional<py::dtype> dtype = numpy_dtype(elem);
    if (elem == DataType::string) return numpy().attr("array")(items, py::arg("dtype") = py::dtype("O"));
    if (!dtype) raise(ErrorKind::invalid_argument, fmt::format("input '{}': a map of this type cannot be given", name));
    return numpy().attr("array")(items, py::arg("dtype") = *dtype);
  };
  runtime::Map m;
  m.keys = tensor_from(as_array(keys, static_cast<DataType>(type.map_type().key_type())), name, nullptr).clone();
  m.values = tensor_from(as_array(values, element_type(type.map_type().value_type())), name, nullptr).clone();
  return m;
}

}  // namespace

std::optional<py::dtype> numpy_dtype(DataType type) {
  switch (type) {
    case DataType::float32:
    case DataType::float64:
    case DataType::float16:
    case DataType::int8:
    case DataType::int16:
    case DataType::int32:
    case DataType::int64:
    case DataType::uint8:
    case DataType::uint16:
    case DataType::uint32:
    case DataType::uint64:
    case DataType::boolean:
    case DataType::complex64:
    case DataType::complex128: return py::dtype(io::data_type_name(static_cast<int32_t>(type)));  // numpy's own names
    default: return std::nullopt;
  }
}

Datum value_from_python(py::handle object, const std::string& name, const runtime::ValueInfo* declared) {
  if (declared != nullptr && declared->type.has_optional_type()) {
    const onnx::TypeProto& inner = declared->type.optional_type().elem_type();
    runtime::Optional optional{nullptr, inner.has_sequence_type(), element_type(inner)};
    if (!object.is_none()) {
      runtime::ValueInfo inner_info{declared->name, inner};
      optional.value = std::make_shared<const Datum>(value_from_python(object, name, &inner_info));
    }
    return Datum(std::move(optional));
  }
  if (declared != nullptr && declared->type.has_map_type()) return Datum(map_from_python(object, name, declared->type));
  if (declared != nullptr && declared->type.has_sequence_type()) {
    if (!py::isinstance<py::list>(object) && !py::isinstance<py::tuple>(object))
      raise(ErrorKind::invalid_argument,
            fmt::format("input '{}' is a sequence: give a list of arrays, not a {}", name, type_name(object)));
    runtime::ValueInfo item_info{declared->name, declared->type.sequence_type().elem_type()};
    runtime::Sequence sequence{element_type(declared->type), {}};
    for (py::handle item : object) sequence.items.push_back(tensor_from(item, name, &item_info));
    if (sequence.elem_type == DataType::undefined && !sequence.items.empty()) sequence.elem_type = sequence.items[0].dtype();
    return Datum(std::move(sequence));
  }
  return Datum(tensor_from(object, name, declared));
}

py::object value_to_python(const Datum& value, const std::string& name) {
  if (value.is_tensor()) return tensor_to_python(value.tensor(), name);
  if (value.is_map()) return map_to_python(value.map(), name);
  if (value.is_sequence() && value.sequence().of_maps) {
    py::list items;
    for (const runtime::Map& m : value.sequence().maps) items.append(map_to_python(m, name));
    return items;
  }
  if (value.is_sequence()) {
    py::list items;
    for (const Tensor& t : value.sequence().items) items.append(tensor_to_python(t, name));
    return items;
  }
  if (value.is_optional()) {
    const auto& held = value.optional().value;
    return held ? value_to_python(*held, name) : py::none();
  }
  return py::none();
}

}  // namespace onnxkit::python
