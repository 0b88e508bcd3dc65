#include "tools/inputs.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <random>

#include "io/tensor_file.h"
#include "runtime/tensor_proto.h"
#include "tools/edit.h"
#include "util/text.h"

namespace onnxkit::tools {
namespace {

namespace fs = std::filesystem;
using runtime::DataType;
using runtime::Datum;
using runtime::Tensor;

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

int32_t declared_elem_type(const runtime::ValueInfo& input) {
  return input.type.has_tensor_type() ? input.type.tensor_type().elem_type() : 0;
}

// The declared dims of `input` when every one is a number.
std::optional<std::vector<int64_t>> static_dims(const runtime::ValueInfo& input) {
  if (!input.type.has_tensor_type() || !input.type.tensor_type().has_shape()) return std::nullopt;
  std::vector<int64_t> dims;
  for (const auto& d : input.type.tensor_type().shape().dim()) {
    if (!d.has_dim_value()) return std::nullopt;
    dims.push_back(d.dim_value());
  }
  return dims;
}

// A literal typed for `input`; one number fills an input declared with one
// element (an exporter's int64[1] sample rate takes sr=16000).
Result<Datum> read_literal(const std::string& text, const runtime::ValueInfo& input) {
  ONNXKIT_ASSIGN(onnx::TensorProto proto, parse_value_literal(text, declared_elem_type(input)));
  ONNXKIT_ASSIGN(Tensor t, runtime::tensor_from_proto(proto));
  if (auto dims = static_dims(input); t.shape().empty() && dims && !dims->empty()) {
    int64_t elements = 1;
    for (int64_t d : *dims) elements *= d;
    if (elements == 1) {
      Tensor shaped(t.dtype(), runtime::Shape(dims->begin(), dims->end()));
      std::memcpy(shaped.mutable_raw(), t.raw(), t.nbytes());
      t = std::move(shaped);
    }
  }
  return Datum(bfloat16_from_bits(std::move(t), input));
}

Result<Datum> read_value(const std::string& file, const runtime::ValueInfo& input) {
  if (looks_like_value_literal(file)) return read_literal(file, input);
  if (ends_with(file, ".npy")) {
    ONNXKIT_ASSIGN(auto proto, io::read_npy(file));
    ONNXKIT_ASSIGN(Tensor t, runtime::tensor_from_proto(proto));
    return Datum(bfloat16_from_bits(std::move(t), input));
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
    return Datum(bfloat16_from_bits(std::move(t), input));
  }
  return make_error(
      "'{}' is neither a tensor file (.npy, .npz, .pb) nor a literal such as 16000, [1,2] or "
      "int64:[[1,2,3]]",
      file);
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
    return make_error(
        "--input '{}': expected NAME=FILE or NAME=VALUE (16000, int64:[[1,2,3]]), or a .npz holding "
        "every input",
        flag);
  }
  if (eq == 0) return make_error("--input '{}': the input's name is missing before '='", flag);
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

Result<std::pair<std::string, int64_t>> parse_dim_flag(const std::string& flag) {
  const size_t eq = flag.rfind('=');
  if (eq == std::string::npos || eq == 0) return make_error("--dim '{}': expected SYMBOL=N, e.g. batch=8", flag);
  auto value = parse_int(flag.substr(eq + 1), flag);
  if (!value.ok() || *value < 0) return make_error("--dim '{}': N must be a whole number >= 0", flag);
  return std::pair<std::string, int64_t>{flag.substr(0, eq), *value};
}

Result<std::pair<std::string, ValueRange>> parse_range_flag(const std::string& flag) {
  const size_t colon = flag.rfind(':');
  const std::string name = colon == std::string::npos ? "" : flag.substr(0, colon);
  const std::string bounds = colon == std::string::npos ? flag : flag.substr(colon + 1);
  const std::vector<std::string> parts = split(bounds, ',');
  auto bad = [&] {
    return make_error("--val-range '{}': expected NAME:LO,HI (or LO,HI for every input), e.g. ids:0,30521", flag);
  };
  if (parts.size() != 2 || colon == 0) return bad();
  ValueRange range;
  for (size_t i = 0; i < 2; ++i) {
    char* end = nullptr;
    const double v = std::strtod(parts[i].c_str(), &end);
    if (parts[i].empty() || end != parts[i].c_str() + parts[i].size()) return bad();
    if (!std::isfinite(v)) return make_error("--val-range '{}': the bounds must be finite numbers", flag);
    (i == 0 ? range.lo : range.hi) = v;
  }
  if (range.lo > range.hi) return make_error("--val-range '{}': LO is above HI", flag);
  return std::pair<std::string, ValueRange>{name, range};
}

Result<InputOptions> parse_input_flags(const InputFlagTexts& flags) {
  InputOptions options;
  for (const std::string& f : flags.inputs) {
    ONNXKIT_ASSIGN(auto parsed, parse_input_flag(f));
    options.files.push_back(std::move(parsed));
  }
  for (const std::string& s : flags.shapes) {
    ONNXKIT_ASSIGN(auto parsed, parse_shape_flag(s));
    options.shapes.push_back(std::move(parsed));
  }
  for (const std::string& d : flags.dims) {
    ONNXKIT_ASSIGN(auto parsed, parse_dim_flag(d));
    for (const auto& [symbol, value] : options.dims)
      if (symbol == parsed.first && value != parsed.second)
        return make_error("--dim {}: given as both {} and {}", symbol, value, parsed.second);
    options.dims.push_back(std::move(parsed));
  }
  for (const std::string& r : flags.ranges) {
    ONNXKIT_ASSIGN(auto parsed, parse_range_flag(r));
    options.ranges.push_back(std::move(parsed));
  }
  return options;
}

Result<Datum> random_value(const runtime::ValueInfo& input, const std::vector<int64_t>* shape, uint64_t seed, int64_t limit,
                           const ValueRange* range) {
  if (!input.type.has_tensor_type()) return make_error("input '{}' is not a tensor; give it with --input", input.name);
  const auto& tt = input.type.tensor_type();
  runtime::Shape dims;
  if (shape != nullptr) {
    dims.assign(shape->begin(), shape->end());
    if (tt.has_shape() && static_cast<int>(dims.size()) != tt.shape().dim_size())
      return make_error("--shape {}: rank {}, the model declares rank {}", input.name, dims.size(), tt.shape().dim_size());
  } else {
    if (!tt.has_shape())
      return make_error("input '{}' has no declared shape; give it with --shape {}:D0,D1,...", input.name, input.name);
    for (const auto& d : tt.shape().dim()) {
      if (!d.has_dim_value()) {
        if (d.has_dim_param())
          return make_error(
              "input '{}' has symbolic dim '{}'; set it with --dim {}=N (or the whole shape with "
              "--shape {}:D0,D1,...)",
              input.name, d.dim_param(), d.dim_param(), input.name);
        return make_error("input '{}' has an unnamed dim; give its shape with --shape {}:D0,D1,...", input.name, input.name);
      }
      dims.push_back(d.dim_value());
    }
  }
  if (auto n = runtime::checked_shape_size(dims); !n.ok()) return n.error().in(fmt::format("input '{}'", input.name));
  auto type = static_cast<DataType>(tt.elem_type());
  Tensor t(type, dims);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const bool floating = runtime::is_floating(type);
  ValueRange r = range != nullptr ? *range
                 : floating || type == DataType::boolean
                     ? ValueRange{0, 1}
                     : ValueRange{0, static_cast<double>(std::clamp<int64_t>(limit, 1, 10) - 1)};
  if (!floating && (r.lo != std::floor(r.lo) || r.hi != std::floor(r.hi)))
    return make_error("input '{}' is {}: its --val-range needs whole numbers, not {},{}", input.name, runtime::to_string(type),
                      r.lo, r.hi);
  // Integers: lo + floor(u * count) covers lo..hi, each value equally often.
  auto integer = [&](double u) { return std::min(r.hi, r.lo + std::floor(u * (r.hi - r.lo + 1))); };
  Status filled;
  if (type == DataType::boolean) {
    if (r.lo < 0 || r.hi > 1) return make_error("input '{}' is bool: its --val-range is within 0,1", input.name);
    for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<bool>()[i] = integer(unit(rng)) != 0;
  } else if (type == DataType::string) {
    for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<std::string>()[i] = "a";
  } else {
    filled = runtime::dispatch_numeric(type, [&]<class T>() -> Status {
      if constexpr (std::numeric_limits<T>::is_integer) {
        if (r.lo < static_cast<double>(std::numeric_limits<T>::lowest()) ||
            r.hi > static_cast<double>(std::numeric_limits<T>::max()))
          return make_error("--val-range {},{} leaves the range of {}", r.lo, r.hi, runtime::to_string(type));
      }
      T* p = t.mutable_data<T>();
      for (int64_t i = 0; i < t.numel(); ++i) {
        const double u = unit(rng);
        if (floating) p[i] = static_cast<T>(static_cast<float>(r.lo + u * (r.hi - r.lo)));
        else p[i] = static_cast<T>(integer(u));
      }
      return {};
    });
  }
  if (!filled.ok()) return filled.error().in(fmt::format("input '{}'", input.name));
  return Datum(std::move(t));
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

namespace {

// The values of symbolic dims: --dim first, then what the data fed to other
// inputs shows; a symbol given both ways must agree.
class DimBindings {
 public:
  Status bind_flags(const runtime::Session& session, const InputOptions& options) {
    std::vector<std::string> declared;
    for (const runtime::ValueInfo& in : session.inputs())
      if (in.type.has_tensor_type() && in.type.tensor_type().has_shape())
        for (const auto& d : in.type.tensor_type().shape().dim())
          if (d.has_dim_param()) declared.push_back(d.dim_param());
    for (const auto& [symbol, value] : options.dims) {
      if (std::find(declared.begin(), declared.end(), symbol) == declared.end())
        return make_error("--dim {}={}: no input declares a dim '{}'{}{}", symbol, value, symbol, did_you_mean(symbol, declared),
                          declared.empty() ? " (the inputs' dims are all numbers)"
                                           : fmt::format(" (symbolic dims: {})", join(unique(declared), ", ")));
      values_.emplace(symbol, Bound{value, "--dim"});
    }
    return {};
  }

  // Symbols `input`'s data fixes; an error when it contradicts --dim.
  Status bind_data(const runtime::ValueInfo& input, const Datum& value) {
    if (!value.is_tensor() || !input.type.has_tensor_type() || !input.type.tensor_type().has_shape()) return {};
    const auto& dims = input.type.tensor_type().shape().dim();
    const runtime::Shape& shape = value.tensor().shape();
    if (shape.size() != static_cast<size_t>(dims.size())) return {};  // the session reports the rank
    for (int i = 0; i < dims.size(); ++i) {
      if (!dims[i].has_dim_param()) continue;
      const int64_t n = shape[static_cast<size_t>(i)];
      auto [it, added] = values_.emplace(dims[i].dim_param(), Bound{n, fmt::format("input '{}'", input.name)});
      if (!added && it->second.value != n && it->second.source == "--dim")
        return make_error("--dim {}={} contradicts --input {}, whose data has {} at dim {}", it->first, it->second.value,
                          input.name, n, i);
    }
    return {};
  }

  const int64_t* find(const std::string& symbol) const {
    auto it = values_.find(symbol);
    return it == values_.end() ? nullptr : &it->second.value;
  }

 private:
  static std::vector<std::string> unique(std::vector<std::string> names) {
    std::vector<std::string> out;
    for (std::string& n : names)
      if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(std::move(n));
    return out;
  }

  struct Bound {
    int64_t value;
    std::string source;  // "--dim" or the input whose data set it
  };
  std::map<std::string, Bound> values_;
};

// The shape of random input `in`: --shape, else its declared dims with
// symbols bound, else `unbound` (recorded in `taken`). Null with no shape
// to give (random_value then names what is missing).
std::optional<std::vector<int64_t>> random_shape(const runtime::ValueInfo& in, const InputOptions& options,
                                                 const DimBindings& bound,
                                                 std::vector<std::pair<std::string, std::string>>& taken) {
  for (const auto& [name, dims] : options.shapes)
    if (name == in.name) return dims;
  if (!in.type.has_tensor_type() || !in.type.tensor_type().has_shape()) return std::nullopt;
  std::vector<int64_t> dims;
  std::vector<std::pair<std::string, std::string>> unbound;
  for (int i = 0; i < in.type.tensor_type().shape().dim_size(); ++i) {
    const auto& d = in.type.tensor_type().shape().dim(i);
    if (d.has_dim_value()) {
      dims.push_back(d.dim_value());
    } else if (const int64_t* n = d.has_dim_param() ? bound.find(d.dim_param()) : nullptr) {
      dims.push_back(*n);
    } else {
      if (options.unbound_dims <= 0) return std::nullopt;
      dims.push_back(options.unbound_dims);
      unbound.emplace_back(d.has_dim_param() ? d.dim_param() : "", fmt::format("dim {} of input '{}'", i, in.name));
    }
  }
  taken.insert(taken.end(), unbound.begin(), unbound.end());
  return dims;
}

// "symbolic dim 'batch' taken as 1 (--dim batch=N sets it)", once per symbol.
std::vector<std::string> unbound_notes(const std::vector<std::pair<std::string, std::string>>& taken, int64_t value) {
  std::vector<std::string> notes, seen;
  for (const auto& [symbol, where] : taken) {
    if (symbol.empty()) {
      notes.push_back(fmt::format("{} (unnamed) taken as {} (--shape sets it)", where, value));
    } else if (std::find(seen.begin(), seen.end(), symbol) == seen.end()) {
      seen.push_back(symbol);
      notes.push_back(fmt::format("symbolic dim '{}' taken as {} (--dim {}=N sets it)", symbol, value, symbol));
    }
  }
  return notes;
}

}  // namespace

Result<runtime::NamedValues> prepare_inputs(const runtime::Session& session, const InputOptions& options,
                                            std::vector<std::string>* notes) {
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
  for (const auto& [name, range] : options.ranges)
    if (!name.empty() && find(name) == nullptr) return unknown(name, "--val-range");
  DimBindings bound;
  ONNXKIT_TRY(bound.bind_flags(session, options));

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
        feeds.emplace_back(target, Datum(bfloat16_from_bits(std::move(t), *info)));
      }
      continue;
    }
    const runtime::ValueInfo* info = find(name);
    if (info == nullptr) return unknown(name, "--input");
    if (fed(name)) return make_error("--input: '{}' is given twice", name);
    auto value = read_value(file, *info);
    if (!value.ok()) return value.error().in(fmt::format("--input {}", name));
    feeds.emplace_back(name, std::move(value).value());
  }
  for (const auto& [name, value] : feeds) ONNXKIT_TRY(bound.bind_data(*find(name), value));
  for (const auto& [name, dims] : options.shapes)
    for (const auto& [fed_name, value] : feeds)
      if (fed_name == name && value.is_tensor() && value.tensor().shape() != dims)
        return make_error("--shape {}:{} contradicts --input {}, whose data has shape [{}]", name, fmt::join(dims, ","), name,
                          fmt::join(value.tensor().shape(), ","));
  const auto limits = integer_input_limits(session.model().graph());
  std::vector<std::pair<std::string, std::string>> taken;  // (symbol, where) set to unbound_dims
  uint64_t k = 0;
  for (const auto& in : inputs) {
    ++k;
    if (fed(in.name) || in.has_default) continue;
    const bool shaped =
        std::any_of(options.shapes.begin(), options.shapes.end(), [&](const auto& s) { return s.first == in.name; });
    if (!options.random) {
      if (shaped) return make_error("--shape {} is given but no data: add --random or --input {}=FILE", in.name, in.name);
      continue;  // the session reports what is missing
    }
    const std::optional<std::vector<int64_t>> shape = random_shape(in, options, bound, taken);
    int64_t limit = 10;
    for (const auto& [name, rows] : limits)
      if (name == in.name) limit = rows;
    const ValueRange* range = nullptr;
    for (const auto& [name, r] : options.ranges)
      if (name == in.name || (name.empty() && range == nullptr)) range = &r;
    auto v = random_value(in, shape ? &*shape : nullptr, options.seed * 1000003 + k, limit, range);
    if (!v.ok()) return v.error();
    feeds.emplace_back(in.name, std::move(v).value());
  }
  if (notes != nullptr) {
    std::vector<std::string> more = unbound_notes(taken, options.unbound_dims);
    notes->insert(notes->end(), more.begin(), more.end());
  }
  return feeds;
}

}  // namespace onnxkit::tools
