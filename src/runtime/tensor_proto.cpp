#include "runtime/tensor_proto.h"

#include <cstring>
#include <string_view>

#include "io/tensor_proto.h"

namespace onnxkit::runtime {
namespace {

template <class Dst, class Field> void decode_field(const Field& field, Tensor& out) {
  Dst* dst = out.mutable_data<Dst>();
  int64_t i = 0;
  for (auto v : field) {
    if (i >= out.numel()) break;
    if constexpr (std::is_same_v<Dst, Float16> || std::is_same_v<Dst, BFloat16> || is_small_float_v<Dst>) {
      dst[i].bits = static_cast<decltype(dst[i].bits)>(v);  // int32_data holds the bits
    } else {
      dst[i] = static_cast<Dst>(v);
    }
    ++i;
  }
}

// The sub-byte types (int4, uint4, float4e2m1 and int2, uint2) take a byte
// per element in memory but are packed in a TensorProto (raw_data, external
// data and int32_data entries alike), two or four per byte, the first
// element in the lowest bits.
bool is_packed_in_proto(DataType type) { return bit_width(type) > 0 && bit_width(type) < 8; }

void unpack_sub_byte(std::string_view packed, Tensor& out) {
  const int bits = bit_width(out.dtype()), per_byte = 8 / bits;
  const unsigned mask = (1u << bits) - 1;
  const bool sign_extend = out.dtype() == DataType::int4 || out.dtype() == DataType::int2;
  auto* dst = static_cast<uint8_t*>(out.mutable_raw());
  for (int64_t i = 0; i < out.numel(); ++i) {
    unsigned code = (static_cast<uint8_t>(packed[static_cast<size_t>(i / per_byte)]) >> (i % per_byte * bits)) & mask;
    if (sign_extend && (code & (1u << (bits - 1))) != 0) code |= ~mask;  // integers are kept sign-extended
    dst[i] = static_cast<uint8_t>(code);
  }
}

std::string pack_sub_byte(const Tensor& t) {
  const int bits = bit_width(t.dtype()), per_byte = 8 / bits;
  const unsigned mask = (1u << bits) - 1;
  std::string packed(static_cast<size_t>((t.numel() + per_byte - 1) / per_byte), '\0');
  const auto* src = static_cast<const uint8_t*>(t.raw());
  for (int64_t i = 0; i < t.numel(); ++i)
    packed[static_cast<size_t>(i / per_byte)] |= static_cast<char>((src[i] & mask) << (i % per_byte * bits));
  return packed;
}

// Data held in a file next to the model, `bytes` long as stored.
Result<Tensor> from_external(const onnx::TensorProto& proto, DataType type, Shape shape, uint64_t bytes,
                             const io::ExternalDataStore* external) {
  if (external == nullptr) return make_error("{}: data is external but no model folder is known", io::describe_tensor(proto));
  ONNXKIT_ASSIGN(io::ExternalSlice slice, external->slice(proto));
  if (slice.length != bytes)
    return make_error("{}: external data has {} bytes, expected {}", io::describe_tensor(proto), slice.length, bytes);
  if (is_packed_in_proto(type)) {
    Tensor t(type, std::move(shape));
    unpack_sub_byte({reinterpret_cast<const char*>(slice.bytes().data()), slice.length}, t);
    return t;
  }
  return Tensor::view(type, std::move(shape), slice.bytes().data(), slice.file);
}

// Data in raw_data, `bytes` long; viewed in place when `owner` keeps the proto alive.
Result<Tensor> from_raw_data(const onnx::TensorProto& proto, DataType type, Shape shape, uint64_t bytes,
                             std::shared_ptr<const void> owner) {
  if (proto.raw_data().size() != bytes)
    return make_error("{}: raw_data has {} bytes, expected {}", io::describe_tensor(proto), proto.raw_data().size(), bytes);
  if (owner != nullptr && !is_packed_in_proto(type))
    return Tensor::view(type, std::move(shape), proto.raw_data().data(), std::move(owner));
  Tensor t(type, std::move(shape));
  if (is_packed_in_proto(type)) unpack_sub_byte(proto.raw_data(), t);
  else if (bytes > 0) std::memcpy(t.mutable_raw(), proto.raw_data().data(), bytes);
  return t;
}

// How many values the typed fields hold for `type` (the packed 4- and 2-bit
// types excepted: their int32_data are bytes).
uint64_t typed_entries(const onnx::TensorProto& proto, DataType type) {
  switch (type) {
    case DataType::float32: return proto.float_data_size();
    case DataType::float64: return proto.double_data_size();
    case DataType::int64: return proto.int64_data_size();
    case DataType::uint64:
    case DataType::uint32: return proto.uint64_data_size();
    case DataType::int32:
    case DataType::int16:
    case DataType::uint16:
    case DataType::int8:
    case DataType::uint8:
    case DataType::boolean:
    case DataType::float16:
    case DataType::bfloat16:
    case DataType::float8e4m3fn:
    case DataType::float8e4m3fnuz:
    case DataType::float8e5m2:
    case DataType::float8e5m2fnuz:
    case DataType::float8e8m0: return proto.int32_data_size();
    case DataType::string: return proto.string_data_size();
    case DataType::complex64: return proto.float_data_size() / 2;
    case DataType::complex128: return proto.double_data_size() / 2;
    default: return 0;
  }
}

// Data in the typed fields (float_data, int32_data...): `count` values, `bytes` as stored.
// The fields are counted before the tensor is allocated: a few bytes of
// dims can ask for gigabytes that the fields do not hold.
Result<Tensor> from_typed_fields(const onnx::TensorProto& proto, DataType type, Shape shape, uint64_t count, uint64_t bytes) {
  std::string packed;
  if (is_packed_in_proto(type)) {
    ONNXKIT_ASSIGN(packed, io::inline_bytes(proto));  // a packed byte per int32_data entry
    if (packed.size() != bytes)
      return make_error("{}: holds {} packed bytes but its dims give {} elements ({} bytes)", io::describe_tensor(proto),
                        packed.size(), count, bytes);
  } else if (const uint64_t entries = typed_entries(proto, type); entries != count) {
    return make_error("{}: holds {} values but its dims give {}", io::describe_tensor(proto), entries, count);
  }
  Tensor t(type, std::move(shape));
  switch (type) {
    case DataType::float32: decode_field<float>(proto.float_data(), t); break;
    case DataType::float64: decode_field<double>(proto.double_data(), t); break;
    case DataType::int64: decode_field<int64_t>(proto.int64_data(), t); break;
    case DataType::uint64: decode_field<uint64_t>(proto.uint64_data(), t); break;
    case DataType::uint32: decode_field<uint32_t>(proto.uint64_data(), t); break;
    case DataType::int32: decode_field<int32_t>(proto.int32_data(), t); break;
    case DataType::int16: decode_field<int16_t>(proto.int32_data(), t); break;
    case DataType::uint16: decode_field<uint16_t>(proto.int32_data(), t); break;
    case DataType::int8: decode_field<int8_t>(proto.int32_data(), t); break;
    case DataType::uint8: decode_field<uint8_t>(proto.int32_data(), t); break;
    case DataType::boolean: decode_field<bool>(proto.int32_data(), t); break;
    case DataType::float16: decode_field<Float16>(proto.int32_data(), t); break;
    case DataType::bfloat16: decode_field<BFloat16>(proto.int32_data(), t); break;
    case DataType::float8e4m3fn: decode_field<Float8E4M3FN>(proto.int32_data(), t); break;
    case DataType::float8e4m3fnuz: decode_field<Float8E4M3FNUZ>(proto.int32_data(), t); break;
    case DataType::float8e5m2: decode_field<Float8E5M2>(proto.int32_data(), t); break;
    case DataType::float8e5m2fnuz: decode_field<Float8E5M2FNUZ>(proto.int32_data(), t); break;
    case DataType::float8e8m0: decode_field<Float8E8M0>(proto.int32_data(), t); break;
    case DataType::int4:
    case DataType::uint4:
    case DataType::float4e2m1:
    case DataType::int2:
    case DataType::uint2: unpack_sub_byte(packed, t); break;
    case DataType::string: {
      std::string* dst = t.mutable_data<std::string>();
      for (int i = 0; i < proto.string_data_size() && i < t.numel(); ++i) dst[i] = proto.string_data(i);
      break;
    }
    case DataType::complex64: {
      auto* dst = reinterpret_cast<float*>(t.mutable_raw());
      for (int i = 0; i < proto.float_data_size() && i < 2 * t.numel(); ++i) dst[i] = proto.float_data(i);
      break;
    }
    case DataType::complex128: {
      auto* dst = reinterpret_cast<double*>(t.mutable_raw());
      for (int i = 0; i < proto.double_data_size() && i < 2 * t.numel(); ++i) dst[i] = proto.double_data(i);
      break;
    }
    default: break;
  }
  return t;
}

}  // namespace

Result<Tensor> tensor_from_proto(const onnx::TensorProto& proto, const io::ExternalDataStore* external,
                                 std::shared_ptr<const void> owner) {
  auto type = static_cast<DataType>(proto.data_type());
  if (element_size(type) == 0)
    return make_error("{}: element type {} is not supported by the runtime", io::describe_tensor(proto),
                      io::data_type_name(proto.data_type()));
  if (proto.has_segment()) return make_error("{}: segmented tensors are not supported", io::describe_tensor(proto));
  ONNXKIT_ASSIGN(uint64_t count, io::element_count(proto));
  Shape shape(proto.dims().begin(), proto.dims().end());
  // The runtime's limit, stricter than the file format's (element_count).
  if (auto n = checked_shape_size(shape); !n.ok()) return n.error().in(io::describe_tensor(proto));
  const uint64_t bytes = io::data_byte_size(proto.data_type(), count);  // as stored, 4-bit types packed
  if (io::is_external(proto)) return from_external(proto, type, std::move(shape), bytes, external);
  if (proto.has_raw_data() && type != DataType::string)
    return from_raw_data(proto, type, std::move(shape), bytes, std::move(owner));
  return from_typed_fields(proto, type, std::move(shape), count, bytes);
}

onnx::TensorProto tensor_to_proto(const Tensor& tensor, const std::string& name) {
  onnx::TensorProto proto;
  if (!name.empty()) proto.set_name(name);
  proto.set_data_type(static_cast<int32_t>(tensor.dtype()));
  for (int64_t d : tensor.shape()) proto.add_dims(d);
  if (tensor.dtype() == DataType::string) {
    for (const std::string& s : tensor.values<std::string>()) proto.add_string_data(s);
  } else if (is_packed_in_proto(tensor.dtype())) {
    proto.set_raw_data(pack_sub_byte(tensor));
  } else {
    proto.set_raw_data(tensor.raw(), tensor.nbytes());
  }
  return proto;
}

Result<Datum> value_from_proto(const onnx::SequenceProto& proto) {
  Sequence seq;
  seq.elem_type = DataType::undefined;
  if (proto.elem_type() != onnx::SequenceProto::TENSOR && proto.elem_type() != onnx::SequenceProto::UNDEFINED)
    return make_error("sequence '{}': only sequences of tensors are supported", proto.name());
  for (const auto& t : proto.tensor_values()) {
    ONNXKIT_ASSIGN(Tensor tensor, tensor_from_proto(t));
    seq.elem_type = tensor.dtype();
    seq.items.push_back(std::move(tensor));
  }
  return Datum(std::move(seq));
}

Result<Datum> value_from_proto(const onnx::OptionalProto& proto) {
  Optional opt;
  switch (proto.elem_type()) {
    case onnx::OptionalProto::TENSOR: {
      ONNXKIT_ASSIGN(Tensor t, tensor_from_proto(proto.tensor_value()));
      opt.elem_type = t.dtype();
      opt.value = std::make_shared<Datum>(std::move(t));
      break;
    }
    case onnx::OptionalProto::SEQUENCE: {
      ONNXKIT_ASSIGN(Datum v, value_from_proto(proto.sequence_value()));
      opt.is_sequence = true;
      opt.elem_type = v.sequence().elem_type;
      opt.value = std::make_shared<Datum>(std::move(v));
      break;
    }
    case onnx::OptionalProto::UNDEFINED: break;  // an empty optional
    default: return make_error("optional '{}': only optional tensors and sequences are supported", proto.name());
  }
  return Datum(std::move(opt));
}

onnx::SequenceProto sequence_to_proto(const Sequence& sequence, const std::string& name) {
  onnx::SequenceProto proto;
  if (!name.empty()) proto.set_name(name);
  if (sequence.of_maps) {
    proto.set_elem_type(onnx::SequenceProto::MAP);
    for (const Map& m : sequence.maps) *proto.add_map_values() = map_to_proto(m);
    return proto;
  }
  proto.set_elem_type(onnx::SequenceProto::TENSOR);
  for (const Tensor& t : sequence.items) *proto.add_tensor_values() = tensor_to_proto(t);
  return proto;
}

onnx::MapProto map_to_proto(const Map& map, const std::string& name) {
  onnx::MapProto proto;
  if (!name.empty()) proto.set_name(name);
  proto.set_key_type(static_cast<int32_t>(map.keys.dtype()));
  const int64_t n = map.keys.numel();
  if (map.keys.dtype() == DataType::string) {
    for (const std::string& k : map.keys.values<std::string>()) proto.add_string_keys(k);
  } else {
    for (int64_t k : map.keys.values<int64_t>()) proto.add_keys(k);
  }
  onnx::SequenceProto* values = proto.mutable_values();
  values->set_elem_type(onnx::SequenceProto::TENSOR);
  const size_t width = element_size(map.values.dtype());
  for (int64_t i = 0; i < n; ++i) {
    Tensor one(map.values.dtype(), Shape{});
    if (map.values.dtype() == DataType::string) one.mutable_data<std::string>()[0] = map.values.data<std::string>()[i];
    else std::memcpy(one.mutable_raw(), static_cast<const char*>(map.values.raw()) + i * width, width);
    *values->add_tensor_values() = tensor_to_proto(one);
  }
  return proto;
}

onnx::OptionalProto optional_to_proto(const Optional& optional, const std::string& name) {
  onnx::OptionalProto proto;
  if (!name.empty()) proto.set_name(name);
  if (!optional.value) return proto;
  if (optional.value->is_tensor()) {
    proto.set_elem_type(onnx::OptionalProto::TENSOR);
    *proto.mutable_tensor_value() = tensor_to_proto(optional.value->tensor());
  } else if (optional.value->is_sequence()) {
    proto.set_elem_type(onnx::OptionalProto::SEQUENCE);
    *proto.mutable_sequence_value() = sequence_to_proto(optional.value->sequence());
  }
  return proto;
}

}  // namespace onnxkit::runtime
