// libFuzzer target for the readers of untrusted inputs besides models: the
// tensor files `run --input` reads (.npy, .npz, .pb as a tensor, sequence or
// optional), each made a runtime value as a run would, and the tensor
// literals of `edit` (int64:[[1,2],[3,4]]). The first byte picks the reader.
//
// Build and run: see the README's fuzzing line; seeds in fuzz/seeds/tensor_file.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "io/tensor_file.h"
#include "runtime/tensor_proto.h"
#include "tools/edit.h"

namespace {

using namespace onnxkit;

void as_runtime_tensor(const onnx::TensorProto& proto) { (void)runtime::tensor_from_proto(proto); }

template <class Message> void parse_pb(std::string_view bytes) {
  Message message;
  if (!message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return;
  if constexpr (std::is_same_v<Message, onnx::TensorProto>) as_runtime_tensor(message);
  else (void)runtime::value_from_proto(message);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 6) {
    case 0:
      if (auto t = io::parse_npy(bytes, "fuzz.npy"); t.ok()) as_runtime_tensor(*t);
      break;
    case 1:
      if (auto arrays = io::parse_npz(bytes, "fuzz.npz"); arrays.ok())
        for (const auto& [name, t] : *arrays) as_runtime_tensor(t);
      break;
    case 2: parse_pb<onnx::TensorProto>(bytes); break;
    case 3: parse_pb<onnx::SequenceProto>(bytes); break;
    case 4: parse_pb<onnx::OptionalProto>(bytes); break;
    case 5:
      if (tools::looks_like_tensor_literal(bytes)) (void)tools::parse_tensor_literal(bytes);
      break;
  }
  return 0;
}
