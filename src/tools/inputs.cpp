#include "tools/inputs.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <random>

#include "io/tensor_file.h"
#include "runtime/tensor_proto.h"
#include "util/text.h"

namespace onnxkit::tools {
namespace {

namespace fs = std::filesystem;
using runtime::DataType;
using runtime::Tensor;
using runtime::Value;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// numpy has no bfloat16, so a bfloat16 input takes 16-bit integer data
// (uint16 or int16, from .npy, .npz or .pb) as the bit patterns of its
// elements: what ml_dtypes' `a.view(np.uint16)` and torch's
// `t.view(torch.int16).numpy()` give. Anything else is left for the
// session's type check to refuse.
Tensor bfloat16_from_bits(Tensor t, const runtime::ValueInfo& input) {
  const bool declared_bfloat16 =
      input.type.has_tensor_type() && input.type.tensor_type().elem_type() == static_cast<int32_t>(DataType::bfloat16);
  if (!declared_bfloat16 || (t.dtype() != DataType::uint16 && t.dtype() != DataType::int16)) return t;
  Tensor bits(DataType::bfloat16, t.shape());
  if (t.nbytes() > 0) std::memcpy(bits.mutable_raw(), t.raw(), t.nbytes());
  return bits;
}

Result<Value> read_value_file(const std::string& file, const runtime::ValueInfo& input) {
  if (ends_with(file, ".npy")) {
    ONNXKIT_ASSIGN(auto proto, io::read_npy(file));
    ONNXKIT_ASSIGN(Tensor t, runtime::tensor_from_proto(proto));
    return Value(bfloat16_from_bits(std::move(t), input));
  }
  if (ends_with(file, ".pb")) {
    if (input.type.has_sequence_type()) {
      ONNXKIT_ASSIGN(auto proto, io::read_pb<onnx::SequenceProto>(file));
      return runtime::value_from_proto(proto);
    }
    if (input.type.has_optional_type()) {
      ONNXKIT_ASSIGN(auto proto, io::read_pb<onnx::OptionalProto>(file));
      return runtime::value_from_proto(proto);
    }
    ONNXKIT_ASSIGN(auto proto, io::read_pb<onnx::TensorProto>(file));
    ONNXKIT_ASSIGN(Tensor t, runtime::tensor_from_proto(proto));
    return Value(bfloat16_from_bits(std::move(t), input));
  }
  return make_error("{}: unknown tensor file type (expected .npy, .npz or .pb)", file);
}

Result<int64_t> parse_int(const std::string& text, const std::string& flag) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) return make_error("'{}': '{}' is not an integer", flag, text);
  return v;
}

}  // namespace

Result<std::pair<std::string, std::string>> parse_input_flag(const std::string& flag) {
  size_t eq = flag.find('=');
  if (eq == std::string::npos) {
    if (ends_with(flag, ".npz")) return std::pair<std::string, std::string>{"", flag};
    return make_error("--input '{}': expected NAME=FILE (or a .npz holding every input)", flag);
  }
  return std::pair<std::string, std::string>{flag.substr(0, eq), flag.substr(eq + 1)};
}

Result<std::pair<std::string, std::vector<int64_t>>> parse_shape_flag(const std::string& flag) {
  size_t colon = flag.rfind(':');
  if (colon == std::string::npos || colon == 0) return make_error("--shape '{}': expected NAME:D0,D1,...", flag);
  std::vector<int64_t> dims;
  std::string list = flag.substr(colon + 1);
  if (!list.empty()) {
    for (const std::string& part : split(list, ',')) {
      ONNXKIT_ASSIGN(int64_t d, parse_int(part, flag));
      if (d < 0) return make_error("--shape '{}': dims must not be negative", flag);
      dims.push_back(d);
    }
  }
  return std::pair<std::string, std::vector<int64_t>>{flag.substr(0, colon), dims};
}

Result<Value> random_value(const runtime::ValueInfo& input, const std::vector<int64_t>* shape, uint64_t seed,
                           int64_t limit) {
  if (!input.type.has_tensor_type())
    return make_error("input '{}' is not a tensor; give it with --input", input.name);
  const auto& tt = input.type.tensor_type();
  runtime::Shape dims;
  if (shape != nullptr) {
    dims.assign(shape->begin(), shape->end());
    if (tt.has_shape() && static_cast<int>(dims.size()) != tt.shape().dim_size())
      return make_error("--shape {}: rank {}, the model declares rank {}", input.name, dims.size(), tt.shape().dim_size());
  } else {
    if (!tt.has_shape()) return make_error("input '{}' has no declared shape; give it with --shape {}:D0,D1,...", input.name, input.name);
    for (const auto& d : tt.shape().dim()) {
      if (!d.has_dim_value())
        return make_error("input '{}' has symbolic dim '{}'; give its shape with --shape {}:D0,D1,...", input.name,
                          d.has_dim_param() ? d.dim_param() : "?", input.name);
      dims.push_back(d.dim_value());
    }
  }
  auto type = static_cast<DataType>(tt.elem_type());
  Tensor t(type, dims);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const int integers = static_cast<int>(std::clamp<int64_t>(limit, 1, 10));
  Status filled;
  if (type == DataType::boolean) {
    for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<bool>()[i] = unit(rng) < 0.5;
  } else if (type == DataType::string) {
    for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<std::string>()[i] = "a";
  } else {
    filled = runtime::dispatch_numeric(type, [&]<class T>() -> Status {
      T* p = t.mutable_data<T>();
      for (int64_t i = 0; i < t.numel(); ++i) {
        double v = unit(rng);
        if (runtime::is_floating(type)) p[i] = static_cast<T>(static_cast<float>(v));
        else p[i] = static_cast<T>(static_cast<int>(v * integers));
      }
      return {};
    });
  }
  if (!filled.ok()) return filled.error().in(fmt::format("input '{}'", input.name));
  return Value(std::move(t));
}

std::vector<std::pair<std::string, int64_t>> integer_input_limits(const ir::Graph& graph) {
  // The rows of the table `use` indexes, or 0 when it is no Gather of a known table.
  auto table_rows = [](const ir::Use& use) -> int64_t {
    const ir::Node& node = *use.node;
    if (!node.is_onnx_op("Gather") || use.index != 1 || node.input(0) == nullptr) return 0;
    const ir::Value* data = node.input(0);
    std::optional<std::vector<int64_t>> dims;
    if (const onnx::TensorProto* t = data->constant_tensor()) dims = std::vector<int64_t>(t->dims().begin(), t->dims().end());
    else dims = data->static_shape();
    if (!dims || dims->empty()) return 0;
    int64_t axis = node.attr_int("axis", 0);
    if (axis < 0) axis += static_cast<int64_t>(dims->size());
    if (axis < 0 || axis >= static_cast<int64_t>(dims->size())) return 0;
    return std::max<int64_t>((*dims)[static_cast<size_t>(axis)], 0);
  };
  std::vector<std::pair<std::string, int64_t>> limits;
  for (const ir::Value* input : graph.inputs()) {
    if (input->is_constant() || !runtime::is_integer(static_cast<DataType>(input->elem_type()))) continue;
    int64_t limit = 0;
    auto consider = [&](const ir::Use& use) {
      if (int64_t rows = table_rows(use); rows > 0) limit = limit == 0 ? rows : std::min(limit, rows);
    };
    for (const ir::Use& use : input->uses()) {
      consider(use);
      if (use.node->is_onnx_op("Cast") && use.node->output(0) != nullptr)
        for (const ir::Use& cast_use : use.node->output(0)->uses()) consider(cast_use);
    }
    if (limit > 0) limits.emplace_back(input->name(), limit);
  }
  return limits;
}

std::vector<std::string> default_symbolic_dims(const runtime::Session& session, InputOptions& options, int64_t value) {
  std::vector<std::string> notes;
  for (const runtime::ValueInfo& in : session.inputs()) {
    if (in.has_default || !in.type.has_tensor_type() || !in.type.tensor_type().has_shape()) continue;
    if (std::any_of(options.shapes.begin(), options.shapes.end(), [&](const auto& s) { return s.first == in.name; })) continue;
    if (std::any_of(options.files.begin(), options.files.end(), [&](const auto& f) { return f.first == in.name; })) continue;
    std::vector<int64_t> dims;
    std::vector<std::string> symbols;
    for (const auto& d : in.type.tensor_type().shape().dim()) {
      dims.push_back(d.has_dim_value() ? d.dim_value() : value);
      if (!d.has_dim_value()) symbols.push_back(d.has_dim_param() ? "'" + d.dim_param() + "'" : "?");
    }
    if (symbols.empty()) continue;
    options.shapes.emplace_back(in.name, dims);
    notes.push_back(fmt::format("input '{}': symbolic dim{} {} taken as {} (set with --shape {}:...)", in.name,
                                symbols.size() == 1 ? "" : "s", join(symbols, ", "), value, in.name));
  }
  return notes;
}

Result<runtime::NamedValues> prepare_inputs(const runtime::Session& session, const InputOptions& options) {
  const auto& inputs = session.inputs();
  auto find = [&](const std::string& name) -> const runtime::ValueInfo* {
    for (const auto& in : inputs)
      if (in.name == name) return &in;
    return nullptr;
  };
  auto unknown = [&](const std::string& name, const std::string& flag) {
    std::vector<std::string> names;
    for (const auto& in : inputs) names.push_back(in.name);
    return make_error("{}: '{}' is not an input of the model{} (inputs: {})", flag, name, did_you_mean(name, names),
                      join(names, ", "));
  };
  for (const auto& [name, dims] : options.shapes)
    if (find(name) == nullptr) return unknown(name, "--shape");

  runtime::NamedValues feeds;
  auto fed = [&](const std::string& name) {
    for (const auto& f : feeds)
      if (f.first == name) return true;
    return false;
  };
  for (const auto& [name, file] : options.files) {
    if (ends_with(file, ".npz")) {
      ONNXKIT_ASSIGN(auto arrays, io::read_npz(file));
      for (auto& [array, proto] : arrays) {
        // NAME=FILE.npz picks one array (the one named NAME, or the only one).
        if (!name.empty() && array != name && arrays.size() > 1) continue;
        std::string target = name.empty() ? array : name;
        const runtime::ValueInfo* info = find(target);
        if (info == nullptr) return unknown(target, file);
        ONNXKIT_ASSIGN(Tensor t, runtime::tensor_from_proto(proto));
        feeds.emplace_back(target, Value(bfloat16_from_bits(std::move(t), *info)));
      }
      continue;
    }
    const runtime::ValueInfo* info = find(name);
    if (info == nullptr) return unknown(name, "--input");
    if (fed(name)) return make_error("--input: '{}' is given twice", name);
    auto value = read_value_file(file, *info);
    if (!value.ok()) return value.error().in(fmt::format("input '{}'", name));
    feeds.emplace_back(name, std::move(value).value());
  }
  for (const auto& [name, dims] : options.shapes)
    for (const auto& [fed_name, value] : feeds)
      if (fed_name == name && value.is_tensor() && value.tensor().shape() != dims)
        return make_error("--shape {}:{} contradicts --input {}, whose data has shape [{}]", name, fmt::join(dims, ","),
                          name, fmt::join(value.tensor().shape(), ","));
  const auto limits = integer_input_limits(session.model().graph());
  uint64_t k = 0;
  for (const auto& in : inputs) {
    ++k;
    if (fed(in.name) || in.has_default) continue;
    const std::vector<int64_t>* shape = nullptr;
    for (const auto& s : options.shapes)
      if (s.first == in.name) shape = &s.second;
    if (!options.random) {
      if (shape != nullptr) return make_error("--shape {} is given but no data: add --random or --input {}=FILE", in.name, in.name);
      continue;  // the session reports what is missing
    }
    int64_t limit = 10;
    for (const auto& [name, rows] : limits)
      if (name == in.name) limit = rows;
    ONNXKIT_ASSIGN(Value v, random_value(in, shape, options.seed * 1000003 + k, limit));
    feeds.emplace_back(in.name, std::move(v));
  }
  return feeds;
}

}  // namespace onnxkit::tools
