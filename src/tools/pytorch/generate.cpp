// The generator's entry point: the table of emitters, and the whole of
// model.py around forward().

#include <fmt/format.h>

#include <cctype>

#include "io/tensor_proto.h"
#include "tools/pytorch/writer.h"
#include "tools/pytorch_convert.h"

namespace onnxkit::tools {

namespace pytorch {

const EmitterTable& emitter_table() {
  static const EmitterTable* table = [] {
    auto* t = new EmitterTable;
    add_elementwise_emitters(*t);
    add_nn_emitters(*t);
    add_tensor_emitters(*t);
    add_reduce_emitters(*t);
    add_control_emitters(*t);
    add_rnn_emitters(*t);
    add_misc_emitters(*t);
    return t;
  }();
  return *table;
}

const std::map<std::string, std::string>& unconvertible_ops() {
  // The ops of opsets 23 to 28 run, but have no emitter yet: the emitters
  // are proven on the backend node data that test_pytorch_nodes.py reads
  // (ONNX 1.12's, opsets up to 17), which has none of them.
  static const std::string newer = "an op of opsets 23 to 28, which the PyTorch converter does not emit yet";
  static const std::map<std::string, std::string> reasons = {
      {"Attention",
       "no emitter yet: its caches, masks, head groups and softcap need a helper in the generated "
       "module, and Debian's torch 1.13 has no scaled_dot_product_attention to lean on"},
      {"StringNormalizer", "torch has no string tensors"},
      {"StringConcat", "torch has no string tensors"},
      {"StringSplit", "torch has no string tensors"},
      {"TfIdfVectorizer", "works on strings and n-gram tables, which torch has no operator for"},
      {"RegexFullMatch", "torch has no string tensors"},
      {"ImageDecoder", "decodes encoded image bytes, which no torch operator does (torchvision.io is outside torch)"},
      {"RMSNormalization", newer},
      {"RotaryEmbedding", newer},
      {"Swish", newer},
      {"SwiGLU", newer},
      {"CumProd", newer},
      {"BitCast", newer},
      {"TensorScatter", newer},
      {"CausalConvWithState", newer},
      {"LinearAttention", newer},
  };
  return reasons;
}

}  // namespace pytorch

namespace {

using pytorch::py_str;

// "resnet18_opset17.onnx" -> "Resnet18Opset17".
std::string class_name_for(const std::string& source) {
  std::string stem = std::filesystem::path(source).stem().string();
  std::string name;
  bool upper = true;
  for (char c : stem) {
    if (!std::isalnum(static_cast<unsigned char>(c))) {
      upper = true;
      continue;
    }
    name += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) name = "Model" + name;
  return name;
}

// The reader of weights.safetensors, with torch alone when the safetensors
// package is missing; and load(), example_inputs(), __main__.
constexpr const char* kLoader = R"(
_SAFETENSORS_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
    "BOOL": torch.bool,
}


def read_safetensors(path):
    """{name: tensor} of a safetensors file: an 8-byte little-endian header
    length, a JSON header, then the tensors' bytes (little-endian)."""
    try:
        from safetensors.torch import load_file
    except ImportError:
        load_file = None
    if load_file is not None:
        return load_file(path)
    with open(path, "rb") as f:
        data = bytearray(f.read())
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + length])
    header.pop("__metadata__", None)
    start = 8 + length
    tensors = {}
    for name, entry in header.items():
        dtype = _SAFETENSORS_DTYPES[entry["dtype"]]
        begin, end = entry["data_offsets"]
        if end == begin:
            tensors[name] = torch.empty(entry["shape"], dtype=dtype)
            continue
        count = (end - begin) // torch.empty((), dtype=dtype).element_size()
        flat = torch.frombuffer(data, dtype=dtype, count=count, offset=start + begin)
        tensors[name] = flat.reshape(entry["shape"])
    return tensors


def load(weights=None):
    """The module in eval mode, with the weights of weights.safetensors beside
    this file (or of the file given)."""
    model = {cls}()
    path = weights or os.path.join(os.path.dirname(os.path.abspath(__file__)), "weights.safetensors")
    model.load_state_dict(read_safetensors(path))
    return model.eval()


def example_inputs():
    """Random inputs of the model's shapes and types."""
    return ({examples})


if __name__ == "__main__":
    torch.manual_seed(0)
    model = load()
    with torch.no_grad():
        outputs = model(*example_inputs())
    for name, y in zip({output_names}, outputs if isinstance(outputs, tuple) else (outputs,)):
        print(name, y.dtype, tuple(y.shape) if torch.is_tensor(y) else len(y))
)";

std::string example_input(const pytorch::Writer::Inputs& in, const PytorchSourceOptions& options) {
  std::vector<std::string> dims = in.dims;
  for (const auto& [name, given] : options.shapes)
    if (name == in.name) {
      dims.clear();
      for (int64_t d : given) dims.push_back(std::to_string(d));
    }
  for (std::string& d : dims)
    if (d.empty() || !std::isdigit(static_cast<unsigned char>(d[0]))) d = "1";
  std::string shape = pytorch::py_tuple(dims);
  std::string dtype = pytorch::torch_dtype(in.dtype);
  std::string tensor;
  if (pytorch::is_float_type(in.dtype)) tensor = fmt::format("torch.rand({}, dtype={})", shape, dtype);
  else if (in.dtype == onnx::TensorProto::BOOL) tensor = fmt::format("torch.rand({}) < 0.5", shape);
  // Integers in [0, 10): valid as indices and token ids into any table of 10 or more.
  else tensor = fmt::format("torch.randint(0, 10, {}, dtype={})", shape, dtype);
  return in.sequence ? "[" + tensor + "]" : tensor;
}

std::string signature_line(const std::string& name, int32_t dtype, const std::vector<std::string>& dims) {
  return fmt::format("    {:<16} {}[{}]\n", name, io::data_type_name(dtype), fmt::join(dims, ", "));
}

}  // namespace

Result<PytorchSource> generate_pytorch_source(const ir::Graph& graph, const PytorchSourceOptions& options) {
  if (graph.model() == nullptr || graph.parent_node() != nullptr) return make_error("the generator takes a model's main graph");
  const ir::Model& model = *graph.model();
  pytorch::Writer w(model);
  PytorchSource result;
  result.class_name = options.class_name.empty() ? class_name_for(options.source_name) : options.class_name;
  ONNXKIT_ASSIGN(auto inputs, w.bind_graph_inputs());
  ONNXKIT_TRY(w.emit_nodes(graph));
  ONNXKIT_ASSIGN(std::string ret, w.return_statement());

  std::string doc =
      fmt::format("{}: PyTorch source generated by onnxkit from {} (opset {}{}).\n\n", result.class_name,
                  options.source_name.empty() ? "an ONNX model" : options.source_name, w.opset(),
                  model.header().producer_name().empty()
                      ? ""
                      : fmt::format(", made by {} {}", model.header().producer_name(), model.header().producer_version()));
  doc +=
      "Needs only torch. load() returns the module in eval mode with the weights of\n"
      "weights.safetensors beside this file; forward() takes the ONNX graph's inputs\n"
      "in order and returns its outputs (a tuple when there are several):\n";
  for (const auto& in : inputs) doc += signature_line(in.name, in.dtype, in.dims);
  doc += "returns\n";
  std::vector<std::string> output_names;
  for (const ir::Value* v : graph.outputs()) {
    std::vector<std::string> dims;
    if (v->has_type() && v->type().has_tensor_type() && v->type().tensor_type().has_shape())
      for (const auto& d : v->type().tensor_type().shape().dim())
        dims.push_back(d.has_dim_value() ? std::to_string(d.dim_value()) : d.has_dim_param() ? d.dim_param() : "?");
    doc += signature_line(v->name(), v->elem_type(), dims);
    output_names.push_back(py_str(v->name()));
  }
  if (w.frozen_inputs() > 0)
    doc += fmt::format("\n{} initializers that the ONNX graph also lists as inputs are held as weights.\n", w.frozen_inputs());

  // Names come from the model: nothing in them may end the docstring.
  std::string safe_doc;
  for (char c : doc) safe_doc += c == '\\' ? std::string("\\\\") : c == '"' ? std::string("\\\"") : std::string(1, c);
  std::string text = "\"\"\"" + safe_doc + "\"\"\"\n";
  text += "import json\nimport math\nimport os\n\nimport torch\nfrom torch import nn\nfrom torch.nn import functional as F\n\n\n";
  text += fmt::format("class {}(nn.Module):\n    def __init__(self):\n        super().__init__()\n", result.class_name);
  for (const std::string& line : w.init_lines()) text += "        " + line + "\n";
  std::vector<std::string> params;
  for (const auto& in : inputs) params.push_back(in.local);
  text += fmt::format("\n    def forward(self{}{}):\n", params.empty() ? "" : ", ", fmt::join(params, ", "));
  for (const std::string& line : w.forward_lines()) text += line + "\n";
  text += "        " + ret + "\n";
  for (const std::string& name : w.helpers_used()) {
    auto it = pytorch::python_helpers().find(name);
    text += "\n\n" + std::string(it->second.code);
  }
  std::vector<std::string> examples;
  for (const auto& in : inputs) examples.push_back(example_input(in, options));
  std::string loader = kLoader;
  auto replace = [&](std::string_view key, const std::string& value) {
    size_t at = loader.find(key);
    if (at != std::string::npos) loader.replace(at, key.size(), value);
  };
  replace("{cls}", result.class_name);
  replace("{examples}", examples.empty() ? "" : fmt::format("{},", fmt::join(examples, ", ")));
  replace("{output_names}", pytorch::py_list(output_names));
  text += "\n" + loader;

  result.model_py = std::move(text);
  for (const pytorch::StoredTensor& t : w.stored_tensors()) result.tensors.push_back({t.key, t.data});
  result.modules = w.module_count();
  result.frozen_inputs = w.frozen_inputs();
  result.random = w.random();
  return result;
}

}  // namespace onnxkit::tools
