#include "analysis/stats.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <unordered_map>

#include "io/tensor_proto.h"

namespace onnxkit::analysis {
namespace {

using Dims = std::vector<int64_t>;

uint64_t numel(const Dims& dims) {
  return std::accumulate(dims.begin(), dims.end(), uint64_t{1},
                         [](uint64_t a, int64_t d) { return a * static_cast<uint64_t>(d); });
}

uint64_t product(Dims::const_iterator begin, Dims::const_iterator end) {
  return std::accumulate(begin, end, uint64_t{1}, [](uint64_t a, int64_t d) { return a * static_cast<uint64_t>(d); });
}

// A cost model: nullopt when a shape it needs is unknown.
using CostFn = std::function<std::optional<NodeCost>(const ir::Node&, const ShapeLookup&)>;

std::optional<Dims> input_dims(const ir::Node& n, const ShapeLookup& s, size_t i) { return s.dims(n.input(i)); }
std::optional<Dims> output_dims(const ir::Node& n, const ShapeLookup& s, size_t i = 0) {
  return s.dims(n.output(i));
}

// Conv and its integer/quantized forms: weights [M, C/group, k...] at `w`.
CostFn conv_cost(size_t w, std::optional<size_t> bias) {
  return [=](const ir::Node& n, const ShapeLookup& s) -> std::optional<NodeCost> {
    auto weight = input_dims(n, s, w);
    auto y = output_dims(n, s);
    if (!weight || !y || weight->size() < 2) return std::nullopt;
    uint64_t macs = numel(*y) * product(weight->begin() + 1, weight->end());
    uint64_t bias_adds = bias && n.input(*bias) != nullptr ? numel(*y) : 0;
    return NodeCost{macs, 2 * macs + bias_adds};
  };
}

std::optional<NodeCost> conv_transpose_cost(const ir::Node& n, const ShapeLookup& s) {
  // Every input element scatters into C_out/group * prod(kernel) outputs.
  auto x = input_dims(n, s, 0);
  auto weight = input_dims(n, s, 1);
  auto y = output_dims(n, s);
  if (!x || !weight || !y || weight->size() < 2) return std::nullopt;
  uint64_t macs = numel(*x) * product(weight->begin() + 1, weight->end());
  uint64_t bias_adds = n.input(2) != nullptr ? numel(*y) : 0;
  return NodeCost{macs, 2 * macs + bias_adds};
}

std::optional<NodeCost> gemm_cost(const ir::Node& n, const ShapeLookup& s) {
  auto a = input_dims(n, s, 0);
  auto y = output_dims(n, s);
  if (!a || !y || a->size() != 2) return std::nullopt;
  uint64_t k = static_cast<uint64_t>(n.attr_int("transA", 0) != 0 ? (*a)[0] : (*a)[1]);
  uint64_t macs = numel(*y) * k;
  uint64_t bias_adds = n.input(2) != nullptr ? numel(*y) : 0;
  return NodeCost{macs, 2 * macs + bias_adds};
}

// MatMul and its integer/quantized forms, with A at input 0.
std::optional<NodeCost> matmul_cost(const ir::Node& n, const ShapeLookup& s) {
  auto a = input_dims(n, s, 0);
  auto y = output_dims(n, s);
  if (!a || !y || a->empty()) return std::nullopt;
  uint64_t macs = numel(*y) * static_cast<uint64_t>(a->back());
  return NodeCost{macs, 2 * macs};
}

// `per_element` FLOPs for each element of output 0.
CostFn per_output_element(uint64_t per_element) {
  return [=](const ir::Node& n, const ShapeLookup& s) -> std::optional<NodeCost> {
    auto y = output_dims(n, s);
    if (!y) return std::nullopt;
    return NodeCost{0, per_element * numel(*y)};
  };
}

// `per_element` FLOPs for each element of input 0 (normalizations, reductions).
CostFn per_input_element(uint64_t per_element) {
  return [=](const ir::Node& n, const ShapeLookup& s) -> std::optional<NodeCost> {
    auto x = input_dims(n, s, 0);
    if (!x) return std::nullopt;
    return NodeCost{0, per_element * numel(*x)};
  };
}

// Variadic element-wise ops: one FLOP per output element per extra input.
std::optional<NodeCost> variadic_cost(const ir::Node& n, const ShapeLookup& s) {
  auto y = output_dims(n, s);
  if (!y) return std::nullopt;
  size_t operands = std::count_if(n.inputs().begin(), n.inputs().end(), [](auto* v) { return v != nullptr; });
  return NodeCost{0, numel(*y) * (operands > 1 ? operands - 1 : 1)};
}

std::optional<NodeCost> pool_cost(const ir::Node& n, const ShapeLookup& s) {
  auto y = output_dims(n, s);
  if (!y) return std::nullopt;
  auto kernel = n.attr_ints("kernel_shape");
  return NodeCost{0, numel(*y) * product(kernel.begin(), kernel.end())};
}

const std::unordered_map<std::string, CostFn>& cost_models() {
  static const auto* table = [] {
    auto* t = new std::unordered_map<std::string, CostFn>{
        {"Conv", conv_cost(1, 2)},
        {"ConvInteger", conv_cost(1, std::nullopt)},
        {"QLinearConv", conv_cost(3, 8)},
        {"ConvTranspose", conv_transpose_cost},
        {"Gemm", gemm_cost},
        {"MatMul", matmul_cost},
        {"MatMulInteger", matmul_cost},
        {"QLinearMatMul", matmul_cost},
        {"MaxPool", pool_cost},
        {"AveragePool", pool_cost},
        {"LpPool", pool_cost},
        {"GlobalAveragePool", per_input_element(1)},
        {"GlobalMaxPool", per_input_element(1)},
        {"GlobalLpPool", per_input_element(2)},
        // Inference BatchNormalization is a scale and a shift per element.
        {"BatchNormalization", per_input_element(2)},
        // mean (1), variance (3), normalize (2), scale and shift (2).
        {"LayerNormalization", per_input_element(8)},
        {"InstanceNormalization", per_input_element(8)},
        {"GroupNormalization", per_input_element(8)},
        {"LpNormalization", per_input_element(3)},
        {"MeanVarianceNormalization", per_input_element(6)},
        {"LRN", per_input_element(4)},
        // exp, sum, divide.
        {"Softmax", per_input_element(3)},
        {"LogSoftmax", per_input_element(3)},
        {"Hardmax", per_input_element(1)},
        {"Sum", variadic_cost},
        {"Mean", variadic_cost},
        {"Max", variadic_cost},
        {"Min", variadic_cost},
    };
    for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                           "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin", "CumSum"})
      t->emplace(op, per_input_element(1));
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "PRelu", "Where", "Equal", "Greater", "Less",
                           "GreaterOrEqual", "LessOrEqual", "And", "Or", "Xor", "BitShift", "Relu", "LeakyRelu",
                           "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Elu", "Selu", "Celu", "Gelu", "Mish",
                           "Softplus", "Softsign", "ThresholdedRelu", "Exp", "Log", "Sqrt", "Reciprocal", "Abs", "Neg",
                           "Sign", "Floor", "Ceil", "Round", "Clip", "Erf", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan",
                           "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Not", "IsNaN", "IsInf", "Shrink"})
      t->emplace(op, per_output_element(1));
    return t;
  }();
  return *table;
}

}  // namespace

std::optional<Dims> ShapeLookup::dims(const ir::Value* value) const {
  if (value == nullptr) return std::nullopt;
  auto known = [](const onnx::TypeProto& type) -> std::optional<Dims> {
    if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return std::nullopt;
    Dims dims;
    for (const auto& d : type.tensor_type().shape().dim()) {
      if (!d.has_dim_value() || d.dim_value() < 0) return std::nullopt;
      dims.push_back(d.dim_value());
    }
    return dims;
  };
  if (auto it = inferred_.find(value->name()); it != inferred_.end())
    if (auto d = known(it->second)) return d;
  if (auto d = known(value->type())) return d;
  if (const auto* t = value->initializer()) return Dims(t->dims().begin(), t->dims().end());
  return std::nullopt;
}


std::optional<NodeCost> node_cost(const ir::Node& node, const ShapeLookup& shapes) {
  if (!node.in_onnx_domain()) return NodeCost{};
  auto it = cost_models().find(node.op_type());
  if (it == cost_models().end()) return NodeCost{};
  return it->second(node, shapes);
}

ModelStats compute_stats(const ir::Model& model, const TypeMap& types) {
  ModelStats stats;
  const ir::Graph& graph = model.graph();
  std::map<std::pair<std::string, std::string>, size_t> histogram;
  graph.for_each_graph([&](const ir::Graph& g) {
    for (const ir::Node& n : g.nodes()) {
      ++stats.total_node_count;
      ++histogram[{n.domain(), n.op_type()}];
    }
  });
  for (const auto& [key, count] : histogram) stats.operators.push_back({key.first, key.second, count});
  std::stable_sort(stats.operators.begin(), stats.operators.end(),
                   [](const OpCount& a, const OpCount& b) { return a.count > b.count; });

  for (const ir::Value* v : graph.initializers()) {
    const onnx::TensorProto& t = *v->initializer();
    auto count = io::element_count(t);
    if (!count.ok()) continue;  // validated at load; kept defensive for hand-built models
    ++stats.initializer_count;
    stats.parameter_count += *count;
    if (t.data_type() == onnx::TensorProto::STRING) {
      for (const auto& s : t.string_data()) stats.parameter_bytes += s.size();
    } else {
      stats.parameter_bytes += io::data_byte_size(t.data_type(), *count);
    }
  }

  ShapeLookup shapes(types);
  for (const ir::Node& n : graph.nodes()) {
    ++stats.node_count;
    auto cost = node_cost(n, shapes);
    if (cost) {
      stats.total_macs += cost->macs;
      stats.total_flops += cost->flops;
    } else {
      ++stats.nodes_without_shapes;
    }
    stats.node_costs.push_back(cost);
  }
  return stats;
}

}  // namespace onnxkit::analysis
