#pragma once
// Helpers shared by the unit tests.

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ir/model.h"
#include "runtime/tensor.h"

namespace onnxkit::testing {

// Parses a model in ONNX's textual syntax; fails the test on a syntax error.
onnx::ModelProto parse_model_text(const std::string& text);

// parse_model_text, then import into the IR.
std::unique_ptr<ir::Model> model_from_text(const std::string& text);

// The op types of the graph's nodes, in order.
std::vector<std::string> op_types(const ir::Graph& graph);
// The declared dims of tensor `name` of the main graph as text ("N,3,?"):
// numbers, symbols, "?" for unknown; "none" without a shape.
std::string declared_dims(const ir::Model& model, const std::string& name);

// A float32 tensor of `shape` whose values are uniform in [-1, 1), drawn in
// order from std::mt19937(seed): the same values on every run.
runtime::Tensor random_tensor(runtime::Shape shape, unsigned seed);

// A float32 [N, C, H, W] in the blocked layout (runtime/kernels/nn/blocked.h):
// [N, ceil(C/B), H, W, B], B = channel_block(), zeros in the padded channels.
runtime::Tensor to_blocked(const runtime::Tensor& x);

// Every model.onnx under ONNX's backend test data, sorted.
std::vector<std::filesystem::path> backend_test_models();

// A fresh empty folder under the system temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Field-by-field comparison; returns "" when equal, else the differences.
std::string proto_diff(const google::protobuf::Message& expected, const google::protobuf::Message& actual);

}  // namespace onnxkit::testing
