// The categorical ops of ai.onnx.ml: OneHotEncoder, LabelEncoder,
// CategoryMapper, DictVectorizer and CastMap.

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "runtime/kernels/ml/ml.h"

namespace onnxkit::runtime::ml {
namespace {

// Finds keys of any element type: strings as they are, integers as int64,
// floats by their double's bits (every NaN one key, -0 the same as 0).
class KeyIndex {
 public:
  KeyIndex() = default;
  explicit KeyIndex(const Tensor& keys) : type_(keys.dtype()) {
    for (int64_t i = 0; i < keys.numel(); ++i) {
      if (type_ == DataType::string) strings_.try_emplace(keys.data<std::string>()[i], i);
      else numbers_.try_emplace(number_key(keys, i), i);
    }
  }
  DataType type() const { return type_; }
  // The position of element i of `t` (of the keys' type) among the keys, or -1.
  int64_t find(const Tensor& t, int64_t i) const {
    if (type_ == DataType::string) {
      auto it = strings_.find(t.data<std::string>()[i]);
      return it == strings_.end() ? -1 : it->second;
    }
    auto it = numbers_.find(number_key(t, i));
    return it == numbers_.end() ? -1 : it->second;
  }

 private:
  static uint64_t number_key(const Tensor& t, int64_t i) {
    switch (t.dtype()) {
      case DataType::float32:
      case DataType::float64: {
        double d = t.dtype() == DataType::float32 ? t.data<float>()[i] : t.data<double>()[i];
        if (std::isnan(d)) d = std::numeric_limits<double>::quiet_NaN();
        if (d == 0) d = 0;
        return std::bit_cast<uint64_t>(d);
      }
      case DataType::int32: return static_cast<uint64_t>(static_cast<int64_t>(t.data<int32_t>()[i]));
      case DataType::int16: return static_cast<uint64_t>(static_cast<int64_t>(t.data<int16_t>()[i]));
      default: return static_cast<uint64_t>(t.data<int64_t>()[i]);
    }
  }
  DataType type_ = DataType::undefined;
  std::unordered_map<std::string, int64_t> strings_;
  std::unordered_map<uint64_t, int64_t> numbers_;
};

template <class T> Tensor list_tensor(const std::vector<T>& v) { return Tensor::from<T>({static_cast<int64_t>(v.size())}, v); }

// --- OneHotEncoder ----------------------------------------------------------------

Result<ComputeFn> build_one_hot(const KernelInfo& info) {
  std::vector<int64_t> ints = info.attr_ints("cats_int64s");
  std::vector<std::string> strings = info.attr_strings("cats_strings");
  if (ints.empty() == strings.empty()) return make_error("exactly one of cats_int64s and cats_strings must be given");
  const bool zeros = info.attr_int("zeros", 1) != 0;
  const int64_t k = static_cast<int64_t>(ints.empty() ? strings.size() : ints.size());
  auto index = std::make_shared<KeyIndex>(ints.empty() ? list_tensor(strings) : list_tensor(ints));
  return ComputeFn([index, zeros, k](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    const bool strings_in = x->dtype() == DataType::string;
    if (strings_in != (index->type() == DataType::string))
      return make_error("input X is {} but the categories are {}", to_string(x->dtype()), to_string(index->type()));
    // Numbers are matched as the int64 they truncate to.
    Tensor as_int;
    if (!strings_in && x->dtype() != DataType::int64) {
      ONNXKIT_ASSIGN(std::vector<double> v, features_as_doubles(*x));
      std::vector<int64_t> i64(v.size());
      for (size_t i = 0; i < v.size(); ++i) i64[i] = static_cast<int64_t>(v[i]);
      as_int = Tensor::from<int64_t>(x->shape(), i64);
    }
    const Tensor& in = as_int.defined() ? as_int : *x;
    Shape out = x->shape();
    out.push_back(k);
    float* y = ctx.output(0, DataType::float32, out).mutable_data<float>();
    std::fill(y, y + x->numel() * k, 0.0f);
    for (int64_t i = 0; i < x->numel(); ++i) {
      const int64_t at = index->find(in, i);
      if (at >= 0) y[i * k + at] = 1.0f;
      else if (!zeros) return make_error("element {} of input X is no known category (and zeros is 0)", i);
    }
    return {};
  });
}

// --- LabelEncoder -----------------------------------------------------------------

struct Encoder {
  KeyIndex keys;
  Tensor values;
  Tensor fallback;  // one element
};

// keys_* / values_* as a tensor: the *_tensor attribute (opset 4) or a list.
Result<Tensor> encoder_list(const KernelInfo& info, const std::string& what) {
  ONNXKIT_ASSIGN(std::optional<Tensor> t, info.attr_tensor(what + "_tensor"));
  if (t) return t->reshaped({t->numel()});
  if (info.has_attr(what + "_strings")) return list_tensor(info.attr_strings(what + "_strings"));
  if (info.has_attr(what + "_int64s")) return list_tensor(info.attr_ints(what + "_int64s"));
  if (info.has_attr(what + "_floats")) return list_tensor(info.attr_floats(what + "_floats"));
  return make_error("none of {0}_strings, {0}_int64s, {0}_floats, {0}_tensor is given", what);
}

Result<ComputeFn> build_label_encoder(const KernelInfo& info) {
  auto e = std::make_shared<Encoder>();
  Tensor keys;
  if (info.opset() == 1) {
    // Strings to their index in classes_strings, or back.
    std::vector<std::string> classes = info.attr_strings("classes_strings");
    std::vector<int64_t> positions(classes.size());
    std::iota(positions.begin(), positions.end(), 0);
    keys = list_tensor(classes);
    e->values = list_tensor(positions);
    e->fallback = Tensor::from<int64_t>({}, {info.attr_int("default_int64", -1)});
    e->keys = KeyIndex(keys);
    auto reverse = std::make_shared<Encoder>();
    reverse->keys = KeyIndex(e->values);
    reverse->values = keys;
    reverse->fallback = Tensor::from<std::string>({}, {info.attr_string("default_string", "_Unused")});
    return ComputeFn([e, reverse](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
      const Encoder& use = x->dtype() == DataType::string ? *e : *reverse;
      if (x->dtype() != DataType::string && x->dtype() != DataType::int64)
        return make_error("input X is {}; string or int64 expected", to_string(x->dtype()));
      Tensor& y = ctx.output(0, use.values.dtype(), x->shape());
      for (int64_t i = 0; i < x->numel(); ++i) {
        const int64_t at = use.keys.find(*x, i);
        if (at >= 0) copy_elements(use.values, at, y, i, 1);
        else copy_elements(use.fallback, 0, y, i, 1);
      }
      return {};
    });
  }
  ONNXKIT_ASSIGN(keys, encoder_list(info, "keys"));
  ONNXKIT_ASSIGN(e->values, encoder_list(info, "values"));
  if (keys.numel() != e->values.numel()) return make_error("{} keys for {} values", keys.numel(), e->values.numel());
  ONNXKIT_ASSIGN(std::optional<Tensor> fallback, info.attr_tensor("default_tensor"));
  if (fallback) {
    if (fallback->numel() != 1 || fallback->dtype() != e->values.dtype())
      return make_error("default_tensor must be one {} value", to_string(e->values.dtype()));
    e->fallback = fallback->reshaped({});
  } else if (e->values.dtype() == DataType::string) {
    e->fallback = Tensor::from<std::string>({}, {info.attr_string("default_string", "_Unused")});
  } else if (e->values.dtype() == DataType::int64) {
    e->fallback = Tensor::from<int64_t>({}, {info.attr_int("default_int64", -1)});
  } else if (e->values.dtype() == DataType::float32) {
    e->fallback = Tensor::from<float>({}, {info.attr_float("default_float", -0.0f)});
  } else if (e->values.dtype() == DataType::float64) {
    e->fallback = Tensor::from<double>({}, {static_cast<double>(info.attr_float("default_float", -0.0f))});
  } else {
    e->fallback = Tensor(e->values.dtype(), {});
    std::memset(e->fallback.mutable_raw(), 0, element_size(e->values.dtype()));
  }
  e->keys = KeyIndex(keys);
  return ComputeFn([e](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    if (x->dtype() != e->keys.type())
      return make_error("input X is {} but the keys are {}", to_string(x->dtype()), to_string(e->keys.type()));
    Tensor& y = ctx.output(0, e->values.dtype(), x->shape());
    for (int64_t i = 0; i < x->numel(); ++i) {
      const int64_t at = e->keys.find(*x, i);
      if (at >= 0) copy_elements(e->values, at, y, i, 1);
      else copy_elements(e->fallback, 0, y, i, 1);
    }
    return {};
  });
}

// --- CategoryMapper ---------------------------------------------------------------

Result<ComputeFn> build_category_mapper(const KernelInfo& info) {
  std::vector<int64_t> ints = info.attr_ints("cats_int64s");
  std::vector<std::string> strings = info.attr_strings("cats_strings");
  if (ints.size() != strings.size())
    return make_error("cats_int64s has {} entries, cats_strings {}", ints.size(), strings.size());
  auto to_int = std::make_shared<Encoder>(Encoder{KeyIndex(list_tensor(strings)), list_tensor(ints),
                                                  Tensor::from<int64_t>({}, {info.attr_int("default_int64", -1)})});
  auto to_string_ =
      std::make_shared<Encoder>(Encoder{KeyIndex(list_tensor(ints)), list_tensor(strings),
                                        Tensor::from<std::string>({}, {info.attr_string("default_string", "_Unused")})});
  return ComputeFn([to_int, to_string_](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
    if (x->dtype() != DataType::string && x->dtype() != DataType::int64)
      return make_error("input X is {}; string or int64 expected", to_string(x->dtype()));
    const Encoder& use = x->dtype() == DataType::string ? *to_int : *to_string_;
    Tensor& y = ctx.output(0, use.values.dtype(), x->shape());
    for (int64_t i = 0; i < x->numel(); ++i) {
      const int64_t at = use.keys.find(*x, i);
      copy_elements(at >= 0 ? use.values : use.fallback, at >= 0 ? at : 0, y, i, 1);
    }
    return {};
  });
}

// --- DictVectorizer ---------------------------------------------------------------

Result<ComputeFn> build_dict_vectorizer(const KernelInfo& info) {
  std::vector<int64_t> ints = info.attr_ints("int64_vocabulary");
  std::vector<std::string> strings = info.attr_strings("string_vocabulary");
  if (ints.empty() == strings.empty()) return make_error("exactly one of int64_vocabulary and string_vocabulary must be given");
  const int64_t k = static_cast<int64_t>(ints.empty() ? strings.size() : ints.size());
  auto vocabulary = std::make_shared<KeyIndex>(ints.empty() ? list_tensor(strings) : list_tensor(ints));
  return ComputeFn([vocabulary, k](KernelContext& ctx) -> Status {
    if (!ctx.has_input(0) || !ctx.input_value(0).is_map()) return make_error("input X must be a map");
    const Map& m = ctx.input_value(0).map();
    if ((m.keys.dtype() == DataType::string) != (vocabulary->type() == DataType::string))
      return make_error("the map's keys are {} but the vocabulary is {}", to_string(m.keys.dtype()),
                        to_string(vocabulary->type()));
    Tensor& y = ctx.output(0, m.values.dtype(), {1, k});
    if (m.values.dtype() == DataType::string) {
      std::fill_n(y.mutable_data<std::string>(), k, std::string());
    } else {
      std::memset(y.mutable_raw(), 0, y.nbytes());
    }
    for (int64_t i = 0; i < m.keys.numel(); ++i) {
      const int64_t at = vocabulary->find(m.keys, i);
      if (at >= 0) copy_elements(m.values, i, y, at, 1);
    }
    return {};
  });
}

// --- CastMap ----------------------------------------------------------------------

Result<ComputeFn> build_cast_map(const KernelInfo& info) {
  const std::string cast_to = info.attr_string("cast_to", "TO_FLOAT");
  const std::string form = info.attr_string("map_form", "DENSE");
  const int64_t max_map = info.attr_int("max_map", 1);
  DataType out;
  if (cast_to == "TO_FLOAT") out = DataType::float32;
  else if (cast_to == "TO_STRING") out = DataType::string;
  else if (cast_to == "TO_INT64") out = DataType::int64;
  else return make_error("cast_to '{}' is not one of TO_FLOAT, TO_STRING, TO_INT64", cast_to);
  if (form != "DENSE" && form != "SPARSE") return make_error("map_form '{}' is not one of DENSE, SPARSE", form);
  if (form == "SPARSE" && (max_map < 1 || max_map > kMaxAttributeValue)) return make_error("max_map is {}", max_map);
  return ComputeFn([out, form, max_map](KernelContext& ctx) -> Status {
    if (!ctx.has_input(0) || !ctx.input_value(0).is_map()) return make_error("input X must be a map");
    const Map& m = ctx.input_value(0).map();
    if (m.keys.dtype() != DataType::int64) return make_error("the map's keys must be int64, not {}", to_string(m.keys.dtype()));
    const bool strings_in = m.values.dtype() == DataType::string;
    if (!strings_in && m.values.dtype() != DataType::float32)
      return make_error("the map's values must be string or float, not {}", to_string(m.values.dtype()));
    // Keys in increasing order, as the map is ordered.
    std::vector<int64_t> order(static_cast<size_t>(m.keys.numel()));
    std::iota(order.begin(), order.end(), 0);
    const int64_t* keys = m.keys.data<int64_t>();
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return keys[a] < keys[b]; });
    const bool dense = form == "DENSE";
    const int64_t width = dense ? static_cast<int64_t>(order.size()) : max_map;
    Tensor& y = ctx.output(0, out, {1, width});
    auto as_double = [&](int64_t i) {
      return strings_in ? std::strtod(m.values.data<std::string>()[i].c_str(), nullptr) : double(m.values.data<float>()[i]);
    };
    auto put = [&](int64_t slot, int64_t i) {
      if (out == DataType::string)
        // Six decimals, as std::to_string (and ONNX Runtime) writes a float.
        y.mutable_data<std::string>()[slot] =
            strings_in ? m.values.data<std::string>()[i] : fmt::format("{:f}", static_cast<double>(m.values.data<float>()[i]));
      else if (out == DataType::float32) y.mutable_data<float>()[slot] = static_cast<float>(as_double(i));
      else y.mutable_data<int64_t>()[slot] = static_cast<int64_t>(as_double(i));
    };
    if (!dense) {
      for (int64_t j = 0; j < width; ++j) {
        // ONNX Runtime writes "0.f" here, a C++ literal gone into a string.
        if (out == DataType::string) y.mutable_data<std::string>()[j] = "0";
        else if (out == DataType::float32) y.mutable_data<float>()[j] = 0;
        else y.mutable_data<int64_t>()[j] = 0;
      }
    }
    for (size_t j = 0; j < order.size(); ++j) {
      const int64_t i = order[j];
      if (dense) put(static_cast<int64_t>(j), i);
      else if (keys[i] >= 0 && keys[i] < width) put(keys[i], i);
    }
    return {};
  });
}

}  // namespace

void register_encoders(KernelRegistry& r) {
  const std::string d(kDomain);
  r.add(d, "OneHotEncoder", 1, kLatestOpset, make_kernel(build_one_hot));
  r.add(d, "LabelEncoder", 1, kLatestOpset, make_kernel(build_label_encoder));
  r.add(d, "CategoryMapper", 1, kLatestOpset, make_kernel(build_category_mapper));
  r.add(d, "DictVectorizer", 1, kLatestOpset, make_kernel(build_dict_vectorizer));
  r.add(d, "CastMap", 1, kLatestOpset, make_kernel(build_cast_map));
}

}  // namespace onnxkit::runtime::ml
