#include "runtime/kernel.h"

#include <fmt/format.h>

#include <new>
#include <stdexcept>

#include "analysis/arity.h"
#include "runtime/executor.h"
#include "runtime/tensor_proto.h"

namespace onnxkit::runtime {

int64_t KernelInfo::attr_int(std::string_view name, int64_t fallback) const { return node_.attr_int(name, fallback); }

float KernelInfo::attr_float(std::string_view name, float fallback) const { return node_.attr_float(name, fallback); }

std::string KernelInfo::attr_string(std::string_view name, std::string fallback) const {
  return node_.attr_string(name, std::move(fallback));
}

std::vector<int64_t> KernelInfo::attr_ints(std::string_view name, std::vector<int64_t> fallback) const {
  const ir::Attribute* a = node_.attribute(name);
  if (a == nullptr) return fallback;
  return {a->proto.ints().begin(), a->proto.ints().end()};
}

std::vector<float> KernelInfo::attr_floats(std::string_view name, std::vector<float> fallback) const {
  const ir::Attribute* a = node_.attribute(name);
  if (a == nullptr) return fallback;
  return {a->proto.floats().begin(), a->proto.floats().end()};
}

std::vector<std::string> KernelInfo::attr_strings(std::string_view name) const {
  const ir::Attribute* a = node_.attribute(name);
  if (a == nullptr) return {};
  return {a->proto.strings().begin(), a->proto.strings().end()};
}

Result<std::optional<Tensor>> KernelInfo::attr_tensor(std::string_view name) const {
  const ir::Attribute* a = node_.attribute(name);
  if (a == nullptr || !a->proto.has_t()) return std::optional<Tensor>();
  auto t = tensor_from_proto(a->proto.t());
  if (!t.ok()) return t.error().in(fmt::format("attribute '{}'", name));
  return std::optional<Tensor>(std::move(t).value());
}

Result<std::shared_ptr<const GraphPlan>> KernelInfo::subgraph(std::string_view attr) const {
  const ir::Attribute* a = node_.attribute(attr);
  if (a == nullptr || !a->graph) return make_error("graph attribute '{}' is missing", attr);
  auto plan = build_subgraph_(*a->graph);
  if (!plan.ok()) return plan.error().in(fmt::format("attribute '{}'", attr));
  return plan;
}

Result<const Tensor*> KernelContext::tensor(size_t i) const {
  if (!has_input(i)) return make_error("input {} is missing", i);
  if (!inputs_[i]->is_tensor()) return make_error("input {} should be a tensor, got {}", i, inputs_[i]->describe());
  return &inputs_[i]->tensor();
}

Tensor& KernelContext::output(size_t i, DataType type, Shape shape) {
  auto elements = checked_shape_size(shape);
  if (!elements.ok()) throw ShapeError(elements.error().in(fmt::format("output {}", i)).message());
  frame_.control.charge_elements(static_cast<uint64_t>(*elements));
  std::optional<Tensor> placed =
      i == 0 && shared_.part != nullptr ? shared_.part->place(*shared_.buffer, type, shape) : std::nullopt;
  outputs_[i] = Datum(placed ? std::move(*placed) : Tensor(type, std::move(shape)));
  return outputs_[i].tensor();
}

Result<std::vector<Datum>> KernelContext::run_subgraph(const GraphPlan& plan, std::vector<Datum> inputs) const {
  return run_plan(plan, std::move(inputs), &frame_, threads_);
}

namespace {

class FunctionKernel final : public Kernel {
 public:
  explicit FunctionKernel(ComputeFn compute) : compute_(std::move(compute)) {}
  Status compute(KernelContext& ctx) const override { return compute_(ctx); }

 private:
  ComputeFn compute_;
};

}  // namespace

KernelFactory make_kernel(std::function<Result<ComputeFn>(const KernelInfo&)> build) {
  return [build = std::move(build)](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    ONNXKIT_ASSIGN(ComputeFn compute, build(info));
    return std::unique_ptr<Kernel>(std::make_unique<FunctionKernel>(std::move(compute)));
  };
}

KernelFactory make_kernel(ComputeFn compute) {
  return [compute = std::move(compute)](const KernelInfo&) -> Result<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(std::make_unique<FunctionKernel>(compute));
  };
}

Result<std::unique_ptr<Kernel>> build_kernel(const KernelFactory& create, const KernelInfo& info) {
  auto kernel = create(info);
  if (!kernel.ok()) return kernel.error().in(info.node().describe());
  return kernel;
}

Status run_kernel(const Kernel& kernel, KernelContext& ctx, const ir::Node& node) {
  Status status;
  try {
    status = kernel.compute(ctx);
  } catch (const std::bad_alloc&) {
    status = make_error("out of memory");
  } catch (const std::length_error&) {
    status = make_error("the output is too large to allocate");
  } catch (const std::exception& e) {  // BudgetExceeded, or from a library a kernel calls
    status = make_error("{}", e.what());
  }
  if (!status.ok()) return status.error().in(node.describe());
  return status;
}

void KernelRegistry::add(std::string domain, std::string op_type, int64_t since, int64_t until, KernelFactory create,
                         OpTraits traits) {
  defs_.push_back({std::move(domain), std::move(op_type), since, until, std::move(create), traits});
}

const KernelDef* KernelRegistry::find(std::string_view domain, std::string_view op_type, int64_t opset) const {
  domain = ir::canonical_domain(domain);
  for (const KernelDef& d : defs_)
    if (d.op_type == op_type && d.domain == domain && d.since <= opset && opset <= d.until) return &d;
  return nullptr;
}

Result<const KernelDef*> KernelRegistry::find(const ir::Node& node, int64_t opset) const {
  if (const KernelDef* def = find(node.domain(), node.op_type(), opset)) return def;
  const std::string_view domain = node.canonical_domain();
  if (knows(domain, node.op_type()))
    return make_error("{}: {} at opset {} is not supported (other versions are)", node.describe(), node.op_type(), opset);
  return make_error("{}: unsupported operator {}{}{} (opset {})", node.describe(), domain, domain.empty() ? "" : ":",
                    node.op_type(), opset);
}

bool KernelRegistry::knows(std::string_view domain, std::string_view op_type) const {
  domain = ir::canonical_domain(domain);
  for (const KernelDef& d : defs_)
    if (d.op_type == op_type && d.domain == domain) return true;
  return false;
}

Status check_node_arity(const ir::Node& node, int64_t opset) {
  std::vector<bool> inputs, outputs;
  for (const ir::Value* v : node.inputs()) inputs.push_back(v != nullptr);
  for (const ir::Value* v : node.outputs()) outputs.push_back(v != nullptr);
  std::string problem = analysis::arity_problem(node.domain(), node.op_type(), opset, inputs, outputs);
  if (!problem.empty()) return make_error("{}: {}", node.describe(), problem);
  return {};
}

OpTraits KernelRegistry::traits(std::string_view domain, std::string_view op_type) const {
  domain = ir::canonical_domain(domain);
  for (const KernelDef& d : defs_)
    if (d.op_type == op_type && d.domain == domain) return d.traits;
  return {};
}

void register_each(KernelRegistry& registry, std::initializer_list<RegisterFn> functions) {
  for (RegisterFn add : functions) add(registry);
}

const KernelRegistry& KernelRegistry::builtin() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    register_each(r, {register_elementwise_kernels, register_math_kernels, register_nn_kernels, register_tensor_kernels,
                      register_indexing_kernels, register_reduce_kernels, register_control_kernels, register_sequence_kernels,
                      register_detection_kernels, register_rnn_kernels, register_quantization_kernels, register_signal_kernels,
                      register_text_kernels, register_random_kernels, register_ml_kernels, register_image_kernels});
    return r;
  }();
  return registry;
}

}  // namespace onnxkit::runtime
