#pragma once
// Tensor files: numpy's .npy and .npz, and ONNX's .pb (a serialized
// TensorProto, SequenceProto or OptionalProto, as the backend test data uses).

#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/result.h"

namespace onnxkit::io {

// A .npy file as a TensorProto with raw_data (or string_data for unicode
// arrays). Fortran order, object arrays and big-endian data are refused, and
// so is a shape that needs more data than the file has.
Result<onnx::TensorProto> read_npy(const std::filesystem::path& path);
Result<onnx::TensorProto> parse_npy(std::string_view bytes, const std::string& name);

// Every array of a .npz (stored or deflated), with its name (without ".npy").
// Sizes the zip headers declare are checked against the data present (and
// deflate's greatest ratio, 1032:1) before anything is allocated.
Result<std::vector<std::pair<std::string, onnx::TensorProto>>> read_npz(const std::filesystem::path& path);
Result<std::vector<std::pair<std::string, onnx::TensorProto>>> parse_npz(std::string_view bytes, const std::string& name);

// Writes arrays as an uncompressed .npz (numpy.savez), atomically; names are
// the arrays' keys. Each array must fit the classic zip's 4 GiB.
Status write_npz(const std::filesystem::path& path, const std::vector<std::pair<std::string, onnx::TensorProto>>& arrays);

// Writes a tensor with fixed-size elements as .npy, atomically.
Status write_npy(const std::filesystem::path& path, const onnx::TensorProto& tensor);
// The .npy bytes of a tensor.
Result<std::string> npy_bytes(const onnx::TensorProto& tensor);

// A .pb file parsed as `Message` (TensorProto, SequenceProto, OptionalProto).
template <class Message> Result<Message> read_pb(const std::filesystem::path& path);

// Writes any protobuf message atomically.
Status write_pb(const std::filesystem::path& path, const google::protobuf::Message& message);

}  // namespace onnxkit::io
