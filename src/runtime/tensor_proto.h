#pragma once
// Between ONNX's protobuf values (TensorProto, SequenceProto, OptionalProto)
// and the runtime's.

#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>

#include <memory>
#include <string>

#include "io/external_data.h"
#include "runtime/datum.h"
#include "util/result.h"

namespace onnxkit::runtime {

// A tensor holding a TensorProto's data. raw_data and external data are
// viewed in place, kept alive by `owner` (for raw_data: whatever owns the
// proto) or by the mapped file; typed fields are decoded into a new buffer.
Result<Tensor> tensor_from_proto(const onnx::TensorProto& proto, const io::ExternalDataStore* external = nullptr,
                                 std::shared_ptr<const void> owner = nullptr);

// A TensorProto with raw_data (typed string_data for strings).
onnx::TensorProto tensor_to_proto(const Tensor& tensor, const std::string& name = "");

Result<Datum> value_from_proto(const onnx::SequenceProto& proto);
Result<Datum> value_from_proto(const onnx::OptionalProto& proto);
// A sequence of maps becomes a SequenceProto of MapProtos.
onnx::SequenceProto sequence_to_proto(const Sequence& sequence, const std::string& name = "");
// Each value a 0-D tensor, as onnx.numpy_helper.from_dict writes them.
onnx::MapProto map_to_proto(const Map& map, const std::string& name = "");
onnx::OptionalProto optional_to_proto(const Optional& optional, const std::string& name = "");

}  // namespace onnxkit::runtime
