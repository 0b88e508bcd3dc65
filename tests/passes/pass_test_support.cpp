#include "passes/pass_test_support.h"

#include <gtest/gtest.h>

#include "analysis/checker.h"
#include "analysis/onnx_inference.h"
#include "runtime/session.h"
#include "support/node_runner.h"
#include "tools/inputs.h"

namespace onnxkit::testing {

std::unique_ptr<ir::Model> clone(const ir::Model& model) {
  auto copy = ir::import_model(ir::export_model(model));
  EXPECT_TRUE(copy.ok()) << (copy.ok() ? "" : copy.error().message());
  return copy.ok() ? std::move(copy).value() : nullptr;
}

size_t run_pass(std::string_view name, ir::Model& model, const passes::PassOptions& options) {
  const passes::Pass* pass = passes::find_pass(name);
  EXPECT_NE(pass, nullptr) << "no pass named " << name;
  if (pass == nullptr) return 0;
  analysis::apply_inferred_types(model);
  passes::PassContext context(model, options);
  return passes::run_on_all_graphs(*pass, model.graph(), context);
}

size_t count_ops(const ir::Graph& graph, std::string_view op_type) {
  size_t count = 0;
  graph.for_each_graph([&](const ir::Graph& g) {
    for (const ir::Node& n : g.nodes()) count += n.op_type() == op_type;
  });
  return count;
}

namespace {

std::shared_ptr<const ir::Model> shared_clone(const ir::Model& model) { return std::shared_ptr<const ir::Model>(clone(model)); }

}  // namespace

void expect_same_outputs(const ir::Model& before, const ir::Model& after, double atol, double rtol) {
  analysis::CheckReport report = analysis::check_model(ir::export_model(after), ".");
  for (const auto& problem : report.problems) ADD_FAILURE() << "checker: " << problem.location << ": " << problem.message;

  auto a = runtime::Session::create(shared_clone(before));
  auto b = runtime::Session::create(shared_clone(after));
  ASSERT_TRUE(a.ok()) << a.error().message();
  ASSERT_TRUE(b.ok()) << b.error().message();
  runtime::NamedValues feeds;
  uint64_t seed = 1;
  for (const runtime::ValueInfo& in : (*a)->inputs()) {
    if (in.has_default) continue;
    std::vector<int64_t> dims;
    for (const auto& d : in.type.tensor_type().shape().dim()) dims.push_back(d.has_dim_value() ? d.dim_value() : 2);
    auto value = tools::random_value(in, &dims, seed++);
    ASSERT_TRUE(value.ok()) << value.error().message();
    runtime::Tensor t = value->tensor();  // shares the buffer, which is ours alone
    if (t.dtype() == runtime::DataType::float32)
      for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<float>()[i] = t.data<float>()[i] * 2 - 1;
    feeds.emplace_back(in.name, runtime::Datum(std::move(t)));
  }
  auto out_a = (*a)->run(feeds);
  auto out_b = (*b)->run(feeds);
  ASSERT_TRUE(out_a.ok()) << out_a.error().message();
  ASSERT_TRUE(out_b.ok()) << out_b.error().message();
  ASSERT_EQ(out_a->size(), out_b->size());
  for (size_t i = 0; i < out_a->size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    expect_tensor_near((*out_b)[i].tensor(), (*out_a)[i].tensor(), atol, rtol);
  }
}

}  // namespace onnxkit::testing
