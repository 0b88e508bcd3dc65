#include "support/node_runner.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ir/model.h"
#include "runtime/tensor_proto.h"

namespace onnxkit::testing {

using runtime::DataType;
using runtime::Tensor;

Result<NodeSession> make_node_session(const NodeSpec& spec) {
  auto model = std::make_shared<ir::Model>();
  model->mutable_header().set_ir_version(8);
  model->set_opset(spec.domain, spec.opset);
  if (!spec.domain.empty()) model->set_opset("", 17);
  ir::Graph& g = model->graph();
  std::vector<ir::Value*> inputs;
  runtime::NamedValues feeds;
  for (const NodeInput& in : spec.inputs) {
    if (in.name.empty()) {
      inputs.push_back(nullptr);
      continue;
    }
    if (in.constant) {
      inputs.push_back(g.add_initializer(in.name, runtime::tensor_to_proto(in.value)));
      continue;
    }
    onnx::TypeProto type;
    type.mutable_tensor_type()->set_elem_type(static_cast<int32_t>(in.value.dtype()));
    for (int64_t d : in.value.shape()) type.mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
    inputs.push_back(g.add_input(in.name, type));
    feeds.emplace_back(inputs.back()->name(), in.value);
  }
  std::vector<std::string> outputs;
  for (size_t i = 0; i < spec.num_outputs; ++i) outputs.push_back("out" + std::to_string(i));
  ir::Node* node = g.add_node(spec.op_type, inputs, outputs, spec.domain);
  node->set_name("under_test");
  for (const auto& a : spec.attributes) ONNXKIT_TRY(ir::import_attribute(*node, a));  // graph attributes too
  for (ir::Value* v : node->outputs()) g.add_output(v);
  runtime::SessionOptions options;
  options.threads = spec.threads;
  options.profile = spec.profile;
  ONNXKIT_ASSIGN(auto session, runtime::Session::create(model, options));
  return NodeSession{std::move(session), std::move(feeds)};
}

Result<std::vector<runtime::Datum>> try_run_node(const NodeSpec& spec) {
  ONNXKIT_ASSIGN(NodeSession node, make_node_session(spec));
  return node.session->run(node.feeds);
}

std::vector<runtime::Datum> run_node(const NodeSpec& spec) {
  auto out = try_run_node(spec);
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message());
  return out.ok() ? std::move(out).value() : std::vector<runtime::Datum>(spec.num_outputs);
}

onnx::AttributeProto attr(const std::string& name, int64_t value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(value);
  return a;
}

onnx::AttributeProto attr(const std::string& name, int value) { return attr(name, static_cast<int64_t>(value)); }

onnx::AttributeProto attr(const std::string& name, float value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(value);
  return a;
}

onnx::AttributeProto attr(const std::string& name, const std::string& value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::STRING);
  a.set_s(value);
  return a;
}

onnx::AttributeProto attr(const std::string& name, const char* value) { return attr(name, std::string(value)); }

onnx::AttributeProto attr(const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a.add_ints(v);
  return a;
}

onnx::AttributeProto attr(const std::string& name, const std::vector<float>& values) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOATS);
  for (float v : values) a.add_floats(v);
  return a;
}

onnx::AttributeProto attr(const std::string& name, const std::vector<std::string>& values) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::STRINGS);
  for (const std::string& v : values) a.add_strings(v);
  return a;
}

onnx::AttributeProto attr(const std::string& name, const Tensor& value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::TENSOR);
  *a.mutable_t() = runtime::tensor_to_proto(value);
  return a;
}

Tensor float8_tensor(DataType type, runtime::Shape shape, const std::vector<uint8_t>& codes) {
  Tensor t(type, std::move(shape));
  EXPECT_EQ(static_cast<size_t>(t.numel()), codes.size());
  std::memcpy(t.mutable_raw(), codes.data(), std::min(codes.size(), t.nbytes()));
  return t;
}

Tensor int4_tensor(DataType type, runtime::Shape shape, const std::vector<int>& values) {
  Tensor t(type, std::move(shape));
  EXPECT_EQ(static_cast<size_t>(t.numel()), values.size());
  auto fill = [&]<class T>() {
    for (size_t i = 0; i < values.size() && i < static_cast<size_t>(t.numel()); ++i) t.mutable_data<T>()[i] = T(values[i]);
  };
  switch (type) {
    case DataType::int4: fill.template operator()<runtime::Int4>(); break;
    case DataType::int2: fill.template operator()<runtime::Int2>(); break;
    case DataType::uint2: fill.template operator()<runtime::UInt2>(); break;
    default: fill.template operator()<runtime::UInt4>(); break;
  }
  return t;
}

void expect_tensor_near(const Tensor& actual, const Tensor& expected, double atol, double rtol) {
  ASSERT_EQ(actual.dtype(), expected.dtype()) << to_string(actual.dtype()) << " vs " << to_string(expected.dtype());
  ASSERT_EQ(actual.shape(), expected.shape())
      << runtime::shape_to_string(actual.shape()) << " vs " << runtime::shape_to_string(expected.shape());
  if (expected.dtype() == DataType::string) {
    for (int64_t i = 0; i < expected.numel(); ++i)
      EXPECT_EQ(actual.data<std::string>()[i], expected.data<std::string>()[i]) << "element " << i;
    return;
  }
  if (expected.dtype() == DataType::boolean) {
    for (int64_t i = 0; i < expected.numel(); ++i) EXPECT_EQ(actual.data<bool>()[i], expected.data<bool>()[i]) << "element " << i;
    return;
  }
  if (runtime::is_low_precision(expected.dtype())) {
    // One byte per element: the encodings must match (NaN and -0 included).
    const auto* a = static_cast<const uint8_t*>(actual.raw());
    const auto* e = static_cast<const uint8_t*>(expected.raw());
    for (int64_t i = 0; i < expected.numel(); ++i)
      EXPECT_EQ(fmt::format("{:#04x}", a[i]), fmt::format("{:#04x}", e[i])) << "element " << i;
    return;
  }
  Status s = runtime::dispatch_numeric(expected.dtype(), [&]<class T>() -> Status {
    for (int64_t i = 0; i < expected.numel(); ++i) {
      double a = static_cast<double>(actual.data<T>()[i]), e = static_cast<double>(expected.data<T>()[i]);
      if (std::isnan(e)) {
        EXPECT_TRUE(std::isnan(a)) << "element " << i << ": " << a << ", expected NaN";
      } else if (runtime::is_floating(expected.dtype()) && a != e) {
        EXPECT_LE(std::abs(a - e), atol + rtol * std::abs(e)) << "element " << i << ": " << a << ", expected " << e;
      } else {
        EXPECT_EQ(a, e) << "element " << i;
      }
    }
    return {};
  });
  EXPECT_TRUE(s.ok());
}

std::vector<std::string> step_kinds(const runtime::Session& session) {
  std::vector<std::string> kinds;
  for (const auto& p : session.profile()) kinds.push_back(p.op_type);
  return kinds;
}

}  // namespace onnxkit::testing
