#pragma once
// Facts about ONNX TensorProto storage: element types, sizes, and the bytes
// behind a tensor whatever field holds them (raw_data, typed fields).

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "util/result.h"

namespace onnxkit::io {

// numpy-style name of an ONNX element type ("float32", "int64", "bool"...),
// or "type<N>" for a code this build does not know.
std::string data_type_name(int32_t data_type);

// "float32[1,3,?,batch]" for a tensor type (dims unknown: "?"; no shape: no
// brackets), "a non-tensor value" for the others.
std::string type_text(const onnx::TypeProto& type);

// The ONNX element type for a numpy-style or ONNX-style name ("float32",
// "float", "FLOAT", "int64"...); 0 when unknown.
int32_t data_type_from_name(std::string_view name);

// Bytes taken by `count` elements of `data_type` in raw_data layout (the
// 4-bit types pack two to a byte, the 2-bit ones four); 0 for strings and
// unknown types.
uint64_t data_byte_size(int32_t data_type, uint64_t count);

// True for element types that have a fixed size in raw_data.
bool has_fixed_size(int32_t data_type);

// The product of the dims, or an error if a dim is negative or the product
// (or its byte size) overflows.
Result<uint64_t> element_count(const onnx::TensorProto& tensor);

bool is_external(const onnx::TensorProto& tensor);

// Checks that inline data agrees with dims and type. External data is checked
// by the ExternalDataStore, segments are taken as they are.
Status validate_tensor_storage(const onnx::TensorProto& tensor);

// The tensor's elements in raw_data layout (little-endian), converted from
// whichever typed field holds them. Not for strings or external tensors.
Result<std::string> inline_bytes(const onnx::TensorProto& tensor);

// Copies every field but the data (raw_data, typed fields) and the external
// data entries: what a tensor is, without what it holds.
void copy_tensor_metadata(const onnx::TensorProto& from, onnx::TensorProto* to);

// "tensor 'w'", or "tensor (unnamed)" for an attribute tensor without a name.
std::string describe_tensor(const onnx::TensorProto& tensor);

}  // namespace onnxkit::io
