#include "passes/fold.h"

#include <fmt/format.h>

#include <algorithm>

#include "runtime/evaluate.h"
#include "runtime/tensor_proto.h"

namespace onnxkit::passes {

namespace {

bool never_folded(const ir::Node& node) {
  // Dropout is folded only as the identity it is at inference, by eliminate-dropout.
  const runtime::OpTraits traits = runtime::KernelRegistry::builtin().traits(node.domain(), node.op_type());
  return !node.in_onnx_domain() || traits.random || traits.quantization || !node.subgraphs().empty();
}

// Shape and Size of a tensor whose dims are all known: computed from the
// type alone, without the data (which may not be constant at all).
std::optional<runtime::Tensor> shape_from_type(const ir::Node& node) {
  const ir::Value* x = node.input(0);
  if (x == nullptr) return std::nullopt;
  auto dims = x->static_shape();
  if (!dims || std::any_of(dims->begin(), dims->end(), [](int64_t d) { return d < 0; })) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(dims->size());
  if (node.op_type() == "Size") {
    auto size = runtime::checked_shape_size(*dims);  // declared dims may multiply past int64
    if (!size.ok()) return std::nullopt;
    return runtime::Tensor::from<int64_t>({}, {*size});
  }
  auto clamp_axis = [rank](int64_t axis) { return std::clamp(axis < 0 ? axis + rank : axis, int64_t{0}, rank); };
  int64_t start = clamp_axis(node.attr_int("start", 0));
  int64_t end = clamp_axis(node.attr_int("end", rank));
  std::vector<int64_t> part;
  for (int64_t i = start; i < end; ++i) part.push_back((*dims)[i]);
  return runtime::Tensor::from<int64_t>({static_cast<int64_t>(part.size())}, part);
}

uint64_t byte_size(const runtime::Tensor& t) { return static_cast<uint64_t>(t.numel()) * runtime::element_size(t.dtype()); }

// Replaces `value` by an initializer holding `data` under the same name.
void make_constant(ir::Graph& graph, ir::Value* value, const runtime::Tensor& data) {
  std::string name = value->name();
  onnx::TypeProto declared = value->type();
  // Frees the name: the old value dies with its producer.
  (void)graph.rename_value(value, graph.unique_name(name + "_folded"));
  ir::Value* constant = graph.add_initializer(name, runtime::tensor_to_proto(data));
  if (declared.has_tensor_type()) *constant->mutable_info().mutable_type() = declared;
  graph.replace_all_uses(value, constant);
  for (size_t i = 0; i < graph.outputs().size(); ++i)
    if (graph.outputs()[i] == value) graph.set_output(i, constant);
}

size_t fold_graph(ir::Graph& graph, PassContext& context) {
  const FoldOptions& options = context.options().folding;
  auto order = graph.topological_order();
  if (!order.ok()) {
    context.warn(fmt::format("graph '{}' not folded: {}", graph.name(), order.error().message()));
    return 0;
  }
  size_t folded = 0;
  for (ir::Node* node : *order) {
    if (context.excluded(*node) || never_folded(*node)) continue;
    std::vector<runtime::Datum> outputs;
    if ((node->op_type() == "Shape" || node->op_type() == "Size") && node->outputs().size() == 1) {
      auto shape = shape_from_type(*node);
      if (!shape) continue;
      outputs.emplace_back(std::move(*shape));
    } else {
      if (node->inputs().empty() && node->op_type() != "Constant") continue;
      // All inputs constant before any is read: a Gather's table, read first, may be most of the model.
      if (!std::all_of(node->inputs().begin(), node->inputs().end(),
                       [](const ir::Value* in) { return in == nullptr || PassContext::has_constant(in); }))
        continue;
      std::vector<runtime::Datum> inputs;
      uint64_t input_bytes = 0, input_elements = 0;
      bool all_known = true;
      for (const ir::Value* in : node->inputs()) {
        if (in == nullptr) {
          inputs.emplace_back();
          continue;
        }
        auto data = context.constant(in);
        if (!data) {
          all_known = false;
          break;
        }
        input_bytes += byte_size(*data);
        input_elements += static_cast<uint64_t>(data->numel());
        inputs.emplace_back(std::move(*data));
      }
      if (!all_known) continue;
      runtime::RunLimits budget;
      budget.max_elements = options.work_limit + input_elements;
      auto evaluated = runtime::evaluate_node(*node, context.model(), inputs, budget);
      if (!evaluated.ok()) {
        context.warn(fmt::format("not folded: {}", evaluated.error().message()));
        continue;
      }
      bool fits = true;
      for (const runtime::Datum& v : *evaluated) {
        if (v.empty()) continue;
        if (!v.is_tensor()) fits = false;  // sequences and optionals cannot be initializers
        else if (node->op_type() != "Constant" && byte_size(v.tensor()) > options.size_limit &&
                 byte_size(v.tensor()) > input_bytes)
          fits = false;
      }
      if (!fits) continue;
      outputs = std::move(evaluated).value();
    }
    for (size_t i = 0; i < node->outputs().size(); ++i) {
      ir::Value* out = node->output(i);
      if (out != nullptr && i < outputs.size() && !outputs[i].empty()) make_constant(graph, out, outputs[i].tensor());
    }
    context.note(fmt::format("folded {}", node->describe()));
    graph.remove_node(node);
    ++folded;
  }
  return folded;
}

class FoldConstants final : public Pass {
 public:
  std::string_view name() const override { return kFoldConstants; }
  std::string_view summary() const override { return "evaluate nodes whose inputs are all known (after the passes)"; }
  size_t run(ir::Graph& graph, PassContext& context) const override { return fold_graph(graph, context); }
};

}  // namespace

std::unique_ptr<Pass> make_fold_constants() { return std::make_unique<FoldConstants>(); }

}  // namespace onnxkit::passes
