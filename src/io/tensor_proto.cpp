#include "io/tensor_proto.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>

namespace onnxkit::io {
namespace {

using onnx::TensorProto;

struct TypeInfo {
  int32_t code;
  const char* name;       // numpy-style
  const char* onnx_name;  // TensorProto.DataType enum name
  uint32_t bits;          // per element in raw_data; 0 = variable (string)
};

// Codes beyond BFLOAT16 postdate the Debian ONNX headers, so they are spelled
// as numbers here; the names follow onnx.proto.
constexpr std::array<TypeInfo, 26> kTypes = {{
    {TensorProto::FLOAT, "float32", "FLOAT", 32},
    {TensorProto::UINT8, "uint8", "UINT8", 8},
    {TensorProto::INT8, "int8", "INT8", 8},
    {TensorProto::UINT16, "uint16", "UINT16", 16},
    {TensorProto::INT16, "int16", "INT16", 16},
    {TensorProto::INT32, "int32", "INT32", 32},
    {TensorProto::INT64, "int64", "INT64", 64},
    {TensorProto::STRING, "string", "STRING", 0},
    {TensorProto::BOOL, "bool", "BOOL", 8},
    {TensorProto::FLOAT16, "float16", "FLOAT16", 16},
    {TensorProto::DOUBLE, "float64", "DOUBLE", 64},
    {TensorProto::UINT32, "uint32", "UINT32", 32},
    {TensorProto::UINT64, "uint64", "UINT64", 64},
    {TensorProto::COMPLEX64, "complex64", "COMPLEX64", 64},
    {TensorProto::COMPLEX128, "complex128", "COMPLEX128", 128},
    {TensorProto::BFLOAT16, "bfloat16", "BFLOAT16", 16},
    {17, "float8e4m3fn", "FLOAT8E4M3FN", 8},
    {18, "float8e4m3fnuz", "FLOAT8E4M3FNUZ", 8},
    {19, "float8e5m2", "FLOAT8E5M2", 8},
    {20, "float8e5m2fnuz", "FLOAT8E5M2FNUZ", 8},
    {21, "uint4", "UINT4", 4},
    {22, "int4", "INT4", 4},
    {23, "float4e2m1", "FLOAT4E2M1", 4},
    {24, "float8e8m0", "FLOAT8E8M0", 8},
    {25, "uint2", "UINT2", 2},
    {26, "int2", "INT2", 2},
}};

const TypeInfo* find_type(int32_t code) {
  for (const auto& t : kTypes)
    if (t.code == code) return &t;
  return nullptr;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// How many entries the typed field holding `data_type` must have for n elements.
uint64_t typed_entry_count(int32_t data_type, uint64_t n) {
  switch (data_type) {
    case TensorProto::COMPLEX64:
    case TensorProto::COMPLEX128: return 2 * n;
    case 21:
    case 22:
    case 23: return (n + 1) / 2;
    case 25:
    case 26: return (n + 3) / 4;
    default: return n;
  }
}

// Number of entries in whichever typed field the tensor uses, and whether any
// typed field is set at all.
uint64_t typed_entries(const TensorProto& t) {
  return static_cast<uint64_t>(t.float_data_size()) + t.int32_data_size() + t.string_data_size() + t.int64_data_size() +
         t.double_data_size() + t.uint64_data_size();
}

template <class Dst, class Field> void append_as(std::string& out, const Field& field) {
  size_t offset = out.size();
  out.resize(offset + sizeof(Dst) * static_cast<size_t>(field.size()));
  char* p = out.data() + offset;
  for (auto v : field) {
    Dst d = static_cast<Dst>(v);
    std::memcpy(p, &d, sizeof(Dst));  // hosts are little-endian, as raw_data is
    p += sizeof(Dst);
  }
}

}  // namespace

std::string data_type_name(int32_t data_type) {
  if (const TypeInfo* t = find_type(data_type)) return t->name;
  return "type" + std::to_string(data_type);
}

std::string type_text(const onnx::TypeProto& type) {
  if (!type.has_tensor_type()) return "a non-tensor value";
  const auto& t = type.tensor_type();
  std::string text = data_type_name(t.elem_type());
  if (!t.has_shape()) return text;
  text += '[';
  for (int i = 0; i < t.shape().dim_size(); ++i) {
    const auto& d = t.shape().dim(i);
    if (i > 0) text += ',';
    text += d.has_dim_value() ? std::to_string(d.dim_value()) : d.has_dim_param() ? d.dim_param() : "?";
  }
  return text + ']';
}

int32_t data_type_from_name(std::string_view name) {
  for (const auto& t : kTypes)
    if (iequals(name, t.name) || iequals(name, t.onnx_name)) return t.code;
  if (iequals(name, "float")) return TensorProto::FLOAT;
  if (iequals(name, "double")) return TensorProto::DOUBLE;
  if (iequals(name, "half")) return TensorProto::FLOAT16;
  return 0;
}

bool has_fixed_size(int32_t data_type) {
  const TypeInfo* t = find_type(data_type);
  return t != nullptr && t->bits != 0;
}

uint64_t data_byte_size(int32_t data_type, uint64_t count) {
  const TypeInfo* t = find_type(data_type);
  if (t == nullptr || t->bits == 0) return 0;
  if (t->bits < 8) return (count * t->bits + 7) / 8;
  return count * (t->bits / 8);
}

Result<uint64_t> element_count(const TensorProto& tensor) {
  // Byte sizes must fit in int64 too; 16 bytes is the widest element.
  constexpr uint64_t kLimit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / 16;
  uint64_t count = 1;
  for (int i = 0; i < tensor.dims_size(); ++i) {
    int64_t d = tensor.dims(i);
    if (d < 0) return make_error("{}: dim {} is negative ({})", describe_tensor(tensor), i, d);
    if (d != 0 && count > kLimit / static_cast<uint64_t>(d))
      return make_error("{}: the product of its dims overflows", describe_tensor(tensor));
    count *= static_cast<uint64_t>(d);
  }
  return count;
}

bool is_external(const TensorProto& tensor) {
  return tensor.has_data_location() && tensor.data_location() == TensorProto::EXTERNAL;
}

Status validate_tensor_storage(const TensorProto& tensor) {
  ONNXKIT_ASSIGN(uint64_t count, element_count(tensor));
  if (is_external(tensor) || tensor.has_segment()) return {};
  int32_t type = tensor.data_type();
  uint64_t typed = typed_entries(tensor);
  if (tensor.has_raw_data()) {
    if (type == TensorProto::STRING) return make_error("{}: string tensors cannot use raw_data", describe_tensor(tensor));
    if (typed != 0) return make_error("{}: has both raw_data and a typed data field", describe_tensor(tensor));
    if (has_fixed_size(type) && tensor.raw_data().size() != data_byte_size(type, count))
      return make_error("{}: raw_data holds {} bytes but {} elements of {} need {}", describe_tensor(tensor),
                        tensor.raw_data().size(), count, data_type_name(type), data_byte_size(type, count));
    return {};
  }
  if (typed != 0 && typed != typed_entry_count(type, count))
    return make_error("{}: holds {} values but its dims give {} elements", describe_tensor(tensor), typed, count);
  return {};
}

Result<std::string> inline_bytes(const TensorProto& t) {
  if (is_external(t)) return make_error("{}: data is external", describe_tensor(t));
  if (t.data_type() == TensorProto::STRING) return make_error("{}: string tensors have no raw byte layout", describe_tensor(t));
  if (t.has_raw_data()) return t.raw_data();
  std::string out;
  switch (t.data_type()) {
    case TensorProto::FLOAT:
    case TensorProto::COMPLEX64: append_as<float>(out, t.float_data()); break;
    case TensorProto::DOUBLE:
    case TensorProto::COMPLEX128: append_as<double>(out, t.double_data()); break;
    case TensorProto::INT64: append_as<int64_t>(out, t.int64_data()); break;
    case TensorProto::UINT64: append_as<uint64_t>(out, t.uint64_data()); break;
    case TensorProto::UINT32: append_as<uint32_t>(out, t.uint64_data()); break;
    case TensorProto::INT32: append_as<int32_t>(out, t.int32_data()); break;
    case TensorProto::INT16:
    case TensorProto::UINT16:
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16: append_as<uint16_t>(out, t.int32_data()); break;
    default:
      if (!has_fixed_size(t.data_type())) return make_error("{}: unknown data type {}", describe_tensor(t), t.data_type());
      append_as<uint8_t>(out, t.int32_data());  // 8-bit and packed 4-bit types
      break;
  }
  return out;
}

void copy_tensor_metadata(const TensorProto& from, TensorProto* to) {
  *to->mutable_dims() = from.dims();
  to->set_data_type(from.data_type());
  if (from.has_segment()) *to->mutable_segment() = from.segment();
  if (from.has_name()) to->set_name(from.name());
  if (from.has_doc_string()) to->set_doc_string(from.doc_string());
  if (from.has_data_location()) to->set_data_location(from.data_location());
  *to->mutable_external_data() = from.external_data();
  to->mutable_unknown_fields()->MergeFrom(from.unknown_fields());
}

std::string describe_tensor(const TensorProto& tensor) {
  if (tensor.name().empty()) return "tensor (unnamed)";
  return "tensor '" + tensor.name() + "'";
}

}  // namespace onnxkit::io
