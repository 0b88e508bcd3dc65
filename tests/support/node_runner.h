#pragma once
// Runs one node through a real Session, for kernel tests with hand-computed
// expectations (ops and cases the ONNX backend data does not cover).
//
//   auto out = run_node({.op_type = "Relu", .inputs = {{"x", Tensor::from<float>({3}, {-1, 0, 2})}}});
//   expect_tensor_near(out[0].tensor(), Tensor::from<float>({3}, {0, 0, 2}));

#include <onnx/onnx_pb.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/session.h"
#include "runtime/tensor.h"

namespace onnxkit::testing {

struct NodeInput {
  std::string name;  // "" for an omitted optional input
  runtime::Tensor value;
  bool constant = false;  // an initializer (seen by the kernel at build time)
};

struct NodeSpec {
  std::string op_type;
  std::string domain;
  int64_t opset = 17;
  std::vector<NodeInput> inputs;
  std::vector<onnx::AttributeProto> attributes;  // graph-valued ones become sub-graphs of the node
  size_t num_outputs = 1;
  int threads = 1;
  bool profile = false;  // for step_kinds
};

// A session holding just the node, and the feeds of its non-constant inputs
// (for kernels whose runs differ: random ops, state).
struct NodeSession {
  std::unique_ptr<runtime::Session> session;
  runtime::NamedValues feeds;
};
Result<NodeSession> make_node_session(const NodeSpec& spec);

// The node's outputs, or the session's error (build or run).
Result<std::vector<runtime::Datum>> try_run_node(const NodeSpec& spec);
// Same, failing the test on an error.
std::vector<runtime::Datum> run_node(const NodeSpec& spec);

onnx::AttributeProto attr(const std::string& name, int64_t value);
onnx::AttributeProto attr(const std::string& name, int value);
onnx::AttributeProto attr(const std::string& name, float value);
onnx::AttributeProto attr(const std::string& name, const char* value);
onnx::AttributeProto attr(const std::string& name, const std::string& value);
onnx::AttributeProto attr(const std::string& name, const std::vector<int64_t>& values);
onnx::AttributeProto attr(const std::string& name, const std::vector<float>& values);
onnx::AttributeProto attr(const std::string& name, const std::vector<std::string>& values);
onnx::AttributeProto attr(const std::string& name, const runtime::Tensor& value);

// The op type, or fused kind, of each step a profiling session ran.
std::vector<std::string> step_kinds(const runtime::Session& session);

// Low-precision tensors for tests: float8 and float4 ones from their
// encodings (one per byte, float4's in the low 4 bits), int4, uint4, int2
// and uint2 ones from their values.
runtime::Tensor float8_tensor(runtime::DataType type, runtime::Shape shape, const std::vector<uint8_t>& codes);
runtime::Tensor int4_tensor(runtime::DataType type, runtime::Shape shape, const std::vector<int>& values);

// Same type and shape, and every element within atol + rtol * |expected|
// (exact for integers, bools and strings; NaN equals NaN; float8, int4 and
// uint4 compare their encodings).
void expect_tensor_near(const runtime::Tensor& actual, const runtime::Tensor& expected, double atol = 1e-5, double rtol = 1e-5);

}  // namespace onnxkit::testing
