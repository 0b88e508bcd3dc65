#include "runtime/evaluate.h"

#include "runtime/executor.h"

namespace onnxkit::runtime {

Result<std::vector<Datum>> evaluate_node(const ir::Node& node, const ir::Model& model, const std::vector<Datum>& inputs,
                                         const RunLimits& limits, const KernelRegistry& registry) {
  if (!node.subgraphs().empty()) return make_error("{}: nodes with sub-graphs are not evaluated alone", node.describe());
  const int64_t opset = model.opset(node.domain());
  ONNXKIT_ASSIGN(const KernelDef* def, registry.find(node, opset));
  ONNXKIT_TRY(check_node_arity(node, opset));

  std::vector<const Tensor*> constants;
  std::vector<const Datum*> args;
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    const Datum* v = i < inputs.size() && !inputs[i].empty() ? &inputs[i] : nullptr;
    args.push_back(v);
    constants.push_back(v != nullptr && v->is_tensor() ? &v->tensor() : nullptr);
  }
  SessionOptions options;
  options.threads = 1;
  auto no_subgraphs = [&](const ir::Graph&) -> Result<std::shared_ptr<const GraphPlan>> {
    return make_error("{}: sub-graphs are not evaluated alone", node.describe());
  };
  KernelInfo info(node, opset, std::move(constants), options, registry, no_subgraphs);
  ONNXKIT_ASSIGN(std::unique_ptr<Kernel> kernel, build_kernel(def->create, info));

  static const GraphPlan empty_plan;
  Frame frame{empty_plan, {}, {}, RunControl(limits)};
  std::vector<bool> wanted;
  for (const ir::Value* v : node.outputs()) wanted.push_back(v != nullptr);
  std::vector<Datum> results(node.outputs().size());
  KernelContext ctx(std::move(args), results, wanted, frame, 1);
  ONNXKIT_TRY(run_kernel(*kernel, ctx, node));
  return results;
}

}  // namespace onnxkit::runtime
