// _onnxkit.Session: runtime::Session for Python. The Python class
// onnxkit.InferenceSession (onnxkit/_session.py) wraps it in ONNX Runtime's
// shape.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "analysis/onnx_inference.h"
#include "arrays.h"
#include "bindings.h"
#include "errors.h"
#include "io/tensor_proto.h"
#include "ir/model.h"
#include "runtime/session.h"
#include "util/text.h"

namespace onnxkit::python {
namespace py = pybind11;

std::span<const std::byte> bytes_of(py::handle bytes) {
  char* data = nullptr;
  py::ssize_t size = 0;
  if (PyBytes_AsStringAndSize(bytes.ptr(), &data, &size) != 0) throw py::error_already_set();
  return {reinterpret_cast<const std::byte*>(data), static_cast<size_t>(size)};
}

Result<std::unique_ptr<ir::Model>> load_model(py::handle model) {
  if (py::isinstance<py::bytes>(model)) {
    std::span<const std::byte> bytes = bytes_of(model);
    py::gil_scoped_release release;
    const std::string name = "<bytes>";
    ONNXKIT_ASSIGN(io::LoadedModel loaded, io::parse_model(bytes, ".", name));
    auto imported = ir::import_model(std::move(loaded.proto), loaded.external_data);
    if (!imported.ok()) return imported.error().in(name);
    return imported;
  }
  std::string path = model.cast<std::string>();
  py::gil_scoped_release release;
  return ir::load_model(path);
}

namespace {

// ONNX Runtime's names of element types: the TensorProto enum's, in lower case.
std::string ort_element_name(int32_t code) {
  static const char* const names[] = {"undefined", "float",  "uint8",     "int8",       "uint16",  "int16",
                                      "int32",     "int64",  "string",    "bool",       "float16", "double",
                                      "uint32",    "uint64", "complex64", "complex128", "bfloat16"};
  if (code >= 0 && code < static_cast<int32_t>(std::size(names))) return names[code];
  return io::data_type_name(code);  // float8e4m3fn, uint4...: already ORT's spelling
}

// "tensor(float)", "seq(tensor(int64))", "map(string,tensor(float))"...
std::string ort_type(const onnx::TypeProto& type) {
  switch (type.value_case()) {
    case onnx::TypeProto::kTensorType: return fmt::format("tensor({})", ort_element_name(type.tensor_type().elem_type()));
    case onnx::TypeProto::kSequenceType: return fmt::format("seq({})", ort_type(type.sequence_type().elem_type()));
    case onnx::TypeProto::kOptionalType: return fmt::format("optional({})", ort_type(type.optional_type().elem_type()));
    case onnx::TypeProto::kMapType:
      return fmt::format("map({},{})", ort_element_name(type.map_type().key_type()), ort_type(type.map_type().value_type()));
    case onnx::TypeProto::kSparseTensorType:
      return fmt::format("sparse_tensor({})", ort_element_name(type.sparse_tensor_type().elem_type()));
    default: return "";
  }
}

// As ONNX Runtime gives it: a number, a symbol, or None per dim; [] when the
// model declares no shape (or the value is no tensor).
py::list ort_shape(const onnx::TypeProto& type) {
  py::list shape;
  if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return shape;
  for (const auto& d : type.tensor_type().shape().dim()) {
    if (d.has_dim_value()) shape.append(d.dim_value());
    else if (d.has_dim_param()) shape.append(d.dim_param());
    else shape.append(py::none());
  }
  return shape;
}

py::list describe(const std::vector<runtime::ValueInfo>& values) {
  py::list out;
  for (const runtime::ValueInfo& v : values)
    out.append(py::make_tuple(v.name, ort_type(v.type), ort_shape(v.type), v.has_default));
  return out;
}

class SessionHandle {
 public:
  // `optimize` false: every node as the model has it (no fusion, plain layouts).
  SessionHandle(py::handle model, int threads, bool optimize) {
    model_ = value_or_raise(load_model(model), ErrorKind::model);
    runtime::SessionOptions options;
    options.threads = threads;
    options.fuse = optimize;
    options.blocked_layout = optimize;
    auto session = [&] {
      py::gil_scoped_release release;
      return runtime::Session::create(model_, options);
    }();
    session_ = value_or_raise(std::move(session), ErrorKind::model);
  }

  py::list inputs() const { return describe(session_->inputs()); }
  // As ONNX Runtime describes them: the declared types as shape inference
  // refines them (a symbolic dim it resolves becomes its number), the types
  // `onnxkit info` prints.
  py::list outputs() const {
    analysis::InferenceResult inferred = [&] {
      py::gil_scoped_release release;
      return analysis::infer_types_with_onnx(*model_);
    }();
    std::vector<runtime::ValueInfo> outputs = session_->outputs();
    for (runtime::ValueInfo& v : outputs) {
      auto it = inferred.types.find(v.name);
      if (it != inferred.types.end() && it->second.has_tensor_type() && it->second.tensor_type().has_shape()) v.type = it->second;
    }
    return describe(outputs);
  }
  int threads() const { return session_->threads(); }

  py::dict metadata() const {
    const onnx::ModelProto& h = model_->header();
    py::dict custom;
    for (const auto& p : h.metadata_props()) custom[py::str(p.key())] = p.value();
    py::dict out;
    out["producer_name"] = h.producer_name();
    out["producer_version"] = h.producer_version();
    out["graph_name"] = model_->graph().name();
    out["graph_description"] = model_->graph().header().doc_string();
    out["domain"] = h.domain();
    out["description"] = h.doc_string();
    out["version"] = h.model_version();
    out["ir_version"] = h.ir_version();
    out["custom_metadata_map"] = custom;
    return out;
  }

  // Outputs by name (None or empty: all, in the model's order), feeds by
  // input name. The GIL is released while the model runs.
  py::list run(py::handle output_names, const py::dict& feeds) const {
    const std::vector<runtime::ValueInfo>& outputs = session_->outputs();
    std::vector<size_t> picked;
    if (!output_names.is_none()) {
      for (py::handle item : output_names) picked.push_back(output_index(item));
    }
    if (picked.empty())
      for (size_t i = 0; i < outputs.size(); ++i) picked.push_back(i);

    runtime::NamedValues named;
    named.reserve(feeds.size());
    for (auto [key, value] : feeds) {
      if (!py::isinstance<py::str>(key))
        raise(ErrorKind::invalid_argument, fmt::format("input_feed is keyed by input name (a str), not by {}", type_name(key)));
      std::string name = key.cast<std::string>();
      named.emplace_back(name, value_from_python(value, name, find_input(name)));
    }
    auto results = [&] {
      py::gil_scoped_release release;
      return session_->run(named);
    }();
    if (!results.ok()) raise(ErrorKind::run, results.error().message());
    py::list out;
    for (size_t i : picked) out.append(value_to_python((*results)[i], outputs[i].name));
    return out;
  }

 private:
  const runtime::ValueInfo* find_input(const std::string& name) const {
    for (const runtime::ValueInfo& v : session_->inputs())
      if (v.name == name) return &v;
    return nullptr;
  }

  size_t output_index(py::handle item) const {
    const std::vector<runtime::ValueInfo>& outputs = session_->outputs();
    if (!py::isinstance<py::str>(item))
      raise(ErrorKind::invalid_argument, fmt::format("output_names holds names (str), not a {}", type_name(item)));
    std::string name = item.cast<std::string>();
    std::vector<std::string> names;
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i].name == name) return i;
      names.push_back(outputs[i].name);
    }
    raise(ErrorKind::invalid_argument,
          fmt::format("'{}' is not an output of the model{} (outputs: {})", name, did_you_mean(name, names), join(names, ", ")));
  }

  std::shared_ptr<const ir::Model> model_;
  std::unique_ptr<runtime::Session> session_;
};

}  // namespace

void add_session(py::module_& module) {
  py::class_<SessionHandle>(module, "Session", "runtime::Session over a model path (str) or its bytes")
      .def(py::init<py::handle, int, bool>(), py::arg("model"), py::arg("threads") = 0, py::arg("optimize") = true)
      .def("inputs", &SessionHandle::inputs, "[(name, ORT type, ORT shape, has_default)] of the graph's inputs")
      .def("outputs", &SessionHandle::outputs, "[(name, ORT type, ORT shape, False)] of the graph's outputs")
      .def("metadata", &SessionHandle::metadata, "the model's header fields, as ORT's ModelMetadata holds them")
      .def_property_readonly("threads", &SessionHandle::threads, "threads per run")
      .def("run", &SessionHandle::run, py::arg("output_names"), py::arg("feeds"),
           "runs the model on feeds {name: value}; returns the named outputs (None: all)");
}

}  // namespace onnxkit::python
