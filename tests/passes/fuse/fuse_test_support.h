#pragma once
// Small helpers shared by the fusion pass tests.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "ir/model.h"
#include "passes/pass_test_support.h"
#include "runtime/session.h"
#include "runtime/tensor_proto.h"
#include "support/node_runner.h"  // expect_tensor_near

namespace onnxkit::testing {

// The float data of the initializer that input `index` of `node` reads.
inline std::vector<float> input_floats(const ir::Node& node, size_t index) {
  const ir::Value* v = node.input(index);
  if (v == nullptr || v->initializer() == nullptr) {
    ADD_FAILURE() << "input " << index << " of " << node.describe() << " is not an initializer";
    return {};
  }
  auto t = runtime::tensor_from_proto(*v->initializer());
  EXPECT_TRUE(t.ok());
  if (!t.ok()) return {};
  return std::vector<float>(t->data<float>(), t->data<float>() + t->numel());
}

// The first node of `op_type` in `graph` (not its sub-graphs), or null.
inline const ir::Node* first_node(const ir::Graph& graph, std::string_view op_type) {
  for (const ir::Node& n : graph.nodes())
    if (n.op_type() == op_type) return &n;
  return nullptr;
}

// Output 0 of `model` run on one float input named `name`.
inline runtime::Tensor run_on(const ir::Model& model, const std::string& name, runtime::Tensor input) {
  auto session = runtime::Session::create(std::shared_ptr<const ir::Model>(clone(model)));
  EXPECT_TRUE(session.ok()) << (session.ok() ? "" : session.error().message());
  if (!session.ok()) return {};
  runtime::NamedValues feeds;
  feeds.emplace_back(name, runtime::Datum(std::move(input)));
  auto out = (*session)->run(feeds);
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message());
  if (!out.ok()) return {};
  return (*out)[0].tensor();
}

// Options that keep the named nodes as they are.
inline passes::PassOptions excluding(std::initializer_list<const char*> names) {
  passes::PassOptions options;
  for (const char* n : names) options.excluded_nodes.insert(n);
  return options;
}

}  // namespace onnxkit::testing
