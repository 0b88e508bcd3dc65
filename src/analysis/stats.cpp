#include "analysis/stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "io/tensor_proto.h"
#include "util/text.h"

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
std::optional<Dims> output_dims(const ir::Node& n, const ShapeLookup& s, size_t i = 0) { return s.dims(n.output(i)); }

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

// LSTM, GRU and RNN: W [directions, gates*H, I] and R [directions, gates*H, H].
// Per direction, time step and batch row: the two gate products (gates*H*(I+H)
// MACs), 2 FLOPs per gate unit for the two biases, and `per_hidden` FLOPs per
// hidden unit for the activations and the state update. Every sequence is
// taken at full length (sequence_lens only shortens them).
CostFn recurrent_cost(uint64_t per_hidden, std::optional<size_t> peepholes) {
  return [=](const ir::Node& n, const ShapeLookup& s) -> std::optional<NodeCost> {
    auto x = input_dims(n, s, 0);
    auto w = input_dims(n, s, 1);
    auto r = input_dims(n, s, 2);
    if (!x || !w || !r || x->size() != 3 || w->size() != 3 || r->size() != 3) return std::nullopt;
    const bool batch_first = n.attr_int("layout", 0) != 0;
    const auto seq = static_cast<uint64_t>(batch_first ? (*x)[1] : (*x)[0]);
    const auto batch = static_cast<uint64_t>(batch_first ? (*x)[0] : (*x)[1]);
    const auto gate_units = static_cast<uint64_t>((*w)[1]);
    const auto inputs = static_cast<uint64_t>((*w)[2]);
    const auto hidden = static_cast<uint64_t>((*r)[2]);
    const uint64_t steps = static_cast<uint64_t>((*w)[0]) * seq * batch;
    uint64_t macs = steps * gate_units * (inputs + hidden);
    if (peepholes && n.input(*peepholes) != nullptr) macs += steps * 3 * hidden;  // i, f, o see the cell
    const uint64_t bias_adds = n.input(3) != nullptr ? steps * 2 * gate_units : 0;
    return NodeCost{macs, 2 * macs + bias_adds + steps * per_hidden * hidden};
  };
}

// Einsum: one MAC per point of the iteration space (the product of every
// index's size) per operand beyond the first; a single operand costs one
// FLOP per point when it sums some index away, nothing when it only
// rearranges.
std::optional<NodeCost> einsum_cost(const ir::Node& n, const ShapeLookup& s) {
  std::string equation = n.attr_string("equation", "");
  equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
  const size_t arrow = equation.find("->");
  const std::vector<std::string> terms = split(equation.substr(0, arrow), ',');
  if (terms.size() != n.inputs().size() || terms.empty()) return std::nullopt;
  std::map<char, uint64_t> sizes;
  std::map<char, int> uses;
  Dims ellipsis;  // broadcast dims, right-aligned
  for (size_t i = 0; i < terms.size(); ++i) {
    auto dims = input_dims(n, s, i);
    if (!dims) return std::nullopt;
    const std::string& term = terms[i];
    // At most one ellipsis, and no other dots.
    const size_t dot_count = static_cast<size_t>(std::count(term.begin(), term.end(), '.'));
    const bool dots = dot_count == 3 && term.find("...") != std::string::npos;
    if (dot_count != 0 && !dots) return std::nullopt;
    const size_t letters = term.size() - (dots ? 3 : 0);
    if (dims->size() < letters || (!dots && dims->size() != letters)) return std::nullopt;
    const size_t broadcast = dims->size() - letters;
    size_t axis = 0;
    for (size_t k = 0; k < term.size();) {
      if (term.compare(k, 3, "...") == 0) {
        if (broadcast > ellipsis.size()) ellipsis.insert(ellipsis.begin(), broadcast - ellipsis.size(), 1);
        for (size_t e = 0; e < broadcast; ++e) {
          int64_t& slot = ellipsis[ellipsis.size() - broadcast + e];
          slot = std::max(slot, (*dims)[axis + e]);
        }
        axis += broadcast;
        k += 3;
        continue;
      }
      uint64_t& size = sizes[term[k]];
      size = std::max(size, static_cast<uint64_t>((*dims)[axis]));
      ++uses[term[k]];
      ++axis;
      ++k;
    }
  }
  uint64_t points = numel(ellipsis);
  for (const auto& [label, size] : sizes) points *= size;
  if (terms.size() > 1) return NodeCost{(terms.size() - 1) * points, 2 * (terms.size() - 1) * points};
  // Implicit output: the labels used once.
  bool sums = false;
  for (const auto& [label, count] : uses)
    sums |= arrow == std::string::npos ? count > 1 : equation.find(label, arrow) == std::string::npos;
  return NodeCost{0, sums ? points : 0};
}

// Taps per output element of an interpolation over `axes` axes: 2 per axis
// for linear, 4 for cubic; nearest reads one element and does no arithmetic.
uint64_t interpolation_taps(const std::string& mode, size_t axes) {
  if (mode.find("linear") != std::string::npos) return uint64_t{1} << axes;
  if (mode == "cubic") return uint64_t{1} << (2 * axes);
  return 0;
}

// Resize and Upsample: a multiply and an add per tap per output element,
// over the axes whose size changes.
std::optional<NodeCost> resize_cost(const ir::Node& n, const ShapeLookup& s) {
  const std::string mode = n.attr_string("mode", "nearest");
  if (interpolation_taps(mode, 1) == 0) return NodeCost{};
  auto x = input_dims(n, s, 0);
  auto y = output_dims(n, s);
  if (!x || !y || x->size() != y->size()) return std::nullopt;
  size_t axes = 0;
  for (size_t i = 0; i < x->size(); ++i) axes += (*x)[i] != (*y)[i];
  return NodeCost{0, numel(*y) * 2 * interpolation_taps(mode, axes)};
}

// GridSample: a multiply and an add per tap per output element, over the
// spatial axes.
std::optional<NodeCost> grid_sample_cost(const ir::Node& n, const ShapeLookup& s) {
  const std::string mode = n.attr_string("mode", "linear");
  if (interpolation_taps(mode, 1) == 0) return NodeCost{};
  auto y = output_dims(n, s);
  if (!y || y->size() < 3) return std::nullopt;
  return NodeCost{0, numel(*y) * 2 * interpolation_taps(mode, y->size() - 2)};
}

// RoiAlign: per output element, sampling_ratio^2 bilinear samples of 4 taps
// each (a multiply and an add per tap). An adaptive ratio (0) depends on the
// boxes: one sample per bin is counted, the least it can be.
std::optional<NodeCost> roi_align_cost(const ir::Node& n, const ShapeLookup& s) {
  auto y = output_dims(n, s);
  if (!y) return std::nullopt;
  const auto ratio = static_cast<uint64_t>(std::max<int64_t>(n.attr_int("sampling_ratio", 0), 1));
  return NodeCost{0, numel(*y) * ratio * ratio * 8};
}

// Attention (opset 23): Q [B, Hq, S, E] and K, V [B, Hkv, L, E|Ev], or the
// same as 3D [B, S, H*E] with q_num_heads/kv_num_heads; past_key adds its
// length to L. Q.K^T and P.V are B*Hq*S*L*(E+Ev) MACs; each score is scaled,
// masked when a mask is given, softcapped (3) when asked, and soft-maxed (3).
std::optional<NodeCost> attention_cost(const ir::Node& n, const ShapeLookup& s) {
  auto q = input_dims(n, s, 0);
  auto k = input_dims(n, s, 1);
  auto v = input_dims(n, s, 2);
  if (!q || !k || !v) return std::nullopt;
  uint64_t batch = 0, q_heads = 0, q_seq = 0, head = 0, kv_seq = 0, v_head = 0;
  if (q->size() == 4 && k->size() == 4 && v->size() == 4) {
    batch = (*q)[0], q_heads = (*q)[1], q_seq = (*q)[2], head = (*q)[3], kv_seq = (*k)[2], v_head = (*v)[3];
  } else if (q->size() == 3 && k->size() == 3 && v->size() == 3) {
    q_heads = n.attr_int("q_num_heads", 0);
    const auto kv_heads = static_cast<uint64_t>(n.attr_int("kv_num_heads", 0));
    if (q_heads == 0 || kv_heads == 0) return std::nullopt;
    batch = (*q)[0], q_seq = (*q)[1], head = (*q)[2] / q_heads, kv_seq = (*k)[1], v_head = (*v)[2] / kv_heads;
  } else {
    return std::nullopt;
  }
  if (n.input(4) != nullptr) {
    auto past = input_dims(n, s, 4);
    if (!past || past->size() != 4) return std::nullopt;
    kv_seq += (*past)[2];
  }
  const uint64_t scores = batch * q_heads * q_seq * kv_seq;
  const uint64_t macs = scores * (head + v_head);
  uint64_t per_score = 1 + 3;
  if (n.input(3) != nullptr) per_score += 1;
  if (n.attr_float("softcap", 0.0f) > 0.0f) per_score += 3;
  return NodeCost{macs, 2 * macs + scores * per_score};
}

// ScatterElements and ScatterND: with a reduction, one FLOP per update.
std::optional<NodeCost> scatter_cost(const ir::Node& n, const ShapeLookup& s) {
  if (n.attr_string("reduction", "none") == "none") return NodeCost{};
  auto updates = input_dims(n, s, 2);
  if (!updates) return std::nullopt;
  return NodeCost{0, numel(*updates)};
}

const std::unordered_map<std::string, CostFn>& cost_models() {
  static const auto* table = [] {
    auto* t = new std::unordered_map<std::string, CostFn>{
        {"Conv", conv_cost(1, 2)},
        {"ConvInteger", conv_cost(1, std::nullopt)},
        {"QLinearConv", conv_cost(3, 8)},
        {"ConvTranspose", conv_transpose_cost},
        // DeformConv: the convolution; its bilinear sampling is not counted.
        {"DeformConv", conv_cost(1, 3)},  // X, W, offset, B, mask
        {"Gemm", gemm_cost},
        {"Einsum", einsum_cost},
        // LSTM: 3 sigmoid and 2 tanh, c = f*c + i*g (3), h = o*tanh(c) (1).
        {"LSTM", recurrent_cost(9, 7)},
        // GRU: 2 sigmoid and 1 tanh, r applied (1), h = (1-z)*h~ + z*h (4).
        {"GRU", recurrent_cost(8, std::nullopt)},
        {"RNN", recurrent_cost(1, std::nullopt)},
        {"Attention", attention_cost},
        // FlexAttention's 4-D form is Attention's; its modifier sub-graphs are not counted.
        {"FlexAttention", attention_cost},
        {"Resize", resize_cost},
        {"Upsample", resize_cost},
        {"GridSample", grid_sample_cost},
        {"RoiAlign", roi_align_cost},
        {"ScatterElements", scatter_cost},
        {"ScatterND", scatter_cost},
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
        // square, mean (2), reciprocal root (1), normalize (1), scale (1).
        {"RMSNormalization", per_input_element(5)},
        // x*cos + rotate(x)*sin.
        {"RotaryEmbedding", per_input_element(3)},
        // A scale and a zero point per element; the dynamic form also finds
        // the range (2) and rounds.
        {"QuantizeLinear", per_input_element(2)},
        {"DequantizeLinear", per_input_element(2)},
        {"DynamicQuantizeLinear", per_input_element(5)},
        // A comparison per element.
        {"TopK", per_input_element(1)},
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
    for (const char* op : {"Add",
                           "Sub",
                           "Mul",
                           "Div",
                           "Pow",
                           "Mod",
                           "PRelu",
                           "Where",
                           "Equal",
                           "Greater",
                           "Less",
                           "GreaterOrEqual",
                           "LessOrEqual",
                           "And",
                           "Or",
                           "Xor",
                           "BitShift",
                           "Relu",
                           "LeakyRelu",
                           "Sigmoid",
                           "HardSigmoid",
                           "HardSwish",
                           "Tanh",
                           "Elu",
                           "Selu",
                           "Celu",
                           "Gelu",
                           "Mish",
                           "Softplus",
                           "Softsign",
                           "ThresholdedRelu",
                           "Exp",
                           "Log",
                           "Sqrt",
                           "Reciprocal",
                           "Abs",
                           "Neg",
                           "Sign",
                           "Floor",
                           "Ceil",
                           "Round",
                           "Clip",
                           "Erf",
                           "Sin",
                           "Cos",
                           "Tan",
                           "Asin",
                           "Acos",
                           "Atan",
                           "Sinh",
                           "Cosh",
                           "Asinh",
                           "Acosh",
                           "Atanh",
                           "Not",
                           "IsNaN",
                           "IsInf",
                           "Shrink",
                           "Swish",
                           "BitwiseAnd",
                           "BitwiseOr",
                           "BitwiseXor",
                           "BitwiseNot"})
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

bool has_cost_model(const ir::Node& node) {
  // ONNX ops that compute but whose cost is not modelled: their work depends
  // on the data (NonMaxSuppression) or is rarely met at inference.
  static const std::unordered_map<std::string, bool> unmodelled = {{"NonMaxSuppression", true},
                                                                   {"DFT", true},
                                                                   {"STFT", true},
                                                                   {"Det", true},
                                                                   {"MaxRoiPool", true},
                                                                   {"SoftmaxCrossEntropyLoss", true},
                                                                   {"NegativeLogLikelihoodLoss", true}};
  return node.in_onnx_domain() && !unmodelled.count(node.op_type());
}

namespace {

// An int64, int32 or bool scalar the value always holds (a Loop's trip
// count, an If's condition).
std::optional<int64_t> constant_scalar(const ir::Value* value) {
  const onnx::TensorProto* t = value != nullptr ? value->constant_tensor() : nullptr;
  if (t == nullptr) return std::nullopt;
  auto count = io::element_count(*t);
  auto bytes = io::inline_bytes(*t);
  if (!count.ok() || *count != 1 || !bytes.ok()) return std::nullopt;
  auto read = [&]<class T>(T) -> std::optional<int64_t> {
    if (bytes->size() != sizeof(T)) return std::nullopt;
    T v;
    std::memcpy(&v, bytes->data(), sizeof(T));
    return static_cast<int64_t>(v);
  };
  switch (t->data_type()) {
    case onnx::TensorProto::INT64: return read(int64_t{});
    case onnx::TensorProto::INT32: return read(int32_t{});
    case onnx::TensorProto::BOOL: return read(uint8_t{});
    default: return std::nullopt;
  }
}

std::string node_label(const ir::Node& n) {
  return n.name().empty() ? n.op_type() : fmt::format("{} '{}'", n.op_type(), n.name());
}

// Adds up costs, sub-graphs included, and what could not be counted.
class CostCounter {
 public:
  CostCounter(const ShapeLookup& shapes, ModelStats& stats) : shapes_(shapes), stats_(stats) {}

  // The graph's total; `per_node` (when given) gets each node's cost.
  NodeCost graph(const ir::Graph& g, std::vector<std::optional<NodeCost>>* per_node = nullptr) {
    NodeCost total;
    for (const ir::Node& n : g.nodes()) {
      std::optional<NodeCost> cost = node(n);
      if (cost) {
        total.macs += cost->macs;
        total.flops += cost->flops;
      }
      if (per_node != nullptr) per_node->push_back(cost);
    }
    return total;
  }

 private:
  std::optional<NodeCost> node(const ir::Node& n) {
    if (!has_cost_model(n)) {
      ++stats_.nodes_without_cost_model;
      ++stats_.ops_without_cost_model[n.in_onnx_domain() ? n.op_type() : n.domain() + ":" + n.op_type()];
      return NodeCost{};
    }
    if (!n.subgraphs().empty()) return control_flow(n);
    std::optional<NodeCost> cost = node_cost(n, shapes_);
    if (!cost) {
      ++stats_.nodes_without_shapes;
      ++stats_.ops_without_shapes[n.op_type()];
    }
    return cost;
  }

  // A body's cost and what it leaves uncounted, kept apart until the caller
  // knows whether the body counts (an If's other branch does not).
  struct Body {
    NodeCost cost;
    ModelStats uncounted;
  };
  Body body(const ir::Graph& g) {
    Body b;
    CostCounter inner(shapes_, b.uncounted);
    b.cost = inner.graph(g);
    return b;
  }
  void absorb(const Body& b) {
    const ModelStats& u = b.uncounted;
    stats_.nodes_without_shapes += u.nodes_without_shapes;
    for (const auto& [op, count] : u.ops_without_shapes) stats_.ops_without_shapes[op] += count;
    stats_.nodes_without_cost_model += u.nodes_without_cost_model;
    for (const auto& [op, count] : u.ops_without_cost_model) stats_.ops_without_cost_model[op] += count;
    stats_.cost_notes.insert(stats_.cost_notes.end(), u.cost_notes.begin(), u.cost_notes.end());
  }
  static NodeCost times(NodeCost c, uint64_t k) { return {c.macs * k, c.flops * k}; }

  NodeCost control_flow(const ir::Node& n) {
    const std::string& op = n.op_type();
    if (op == "If") return if_cost(n);
    std::vector<Body> bodies;
    for (const ir::Graph* g : n.subgraphs()) bodies.push_back(body(*g));
    NodeCost once;
    for (const Body& b : bodies) {
      absorb(b);
      once.macs += b.cost.macs;
      once.flops += b.cost.flops;
    }
    if (op == "Loop") {
      // torch writes a while loop as a trip count of INT64_MAX: no count.
      auto trips = constant_scalar(n.input(0));
      if (!trips || *trips == std::numeric_limits<int64_t>::max() || *trips == std::numeric_limits<int32_t>::max()) {
        stats_.cost_notes.push_back(fmt::format("{}: trip count {}; one iteration counted", node_label(n),
                                                trips ? "unbounded (a while loop)" : "not constant"));
        return once;
      }
      auto go_on = constant_scalar(n.input(1));
      if (n.input(1) != nullptr && (!go_on || *go_on == 0))
        stats_.cost_notes.push_back(
            fmt::format("{}: all {} iterations counted; its condition may end it sooner", node_label(n), *trips));
      return times(once, static_cast<uint64_t>(std::max<int64_t>(*trips, 0)));
    }
    if (op == "Scan") {
      const auto scan_inputs = static_cast<size_t>(n.attr_int("num_scan_inputs", 0));
      const size_t first = n.inputs().size() >= scan_inputs ? n.inputs().size() - scan_inputs : 0;
      auto dims = scan_inputs > 0 ? shapes_.dims(n.input(first)) : std::nullopt;
      auto axes = n.attr_ints("scan_input_axes");
      int64_t axis = axes.empty() ? 0 : axes[0];
      if (dims && axis < 0) axis += static_cast<int64_t>(dims->size());
      if (!dims || axis < 0 || axis >= static_cast<int64_t>(dims->size())) {
        stats_.cost_notes.push_back(fmt::format("{}: sequence length unknown; one iteration counted", node_label(n)));
        return once;
      }
      return times(once, static_cast<uint64_t>((*dims)[static_cast<size_t>(axis)]));
    }
    stats_.cost_notes.push_back(fmt::format("{}: each sub-graph counted once", node_label(n)));
    return once;
  }

  // The branch a constant condition takes; else the costlier branch, since
  // which runs depends on the data.
  NodeCost if_cost(const ir::Node& n) {
    const ir::Attribute* then_attr = n.attribute("then_branch");
    const ir::Attribute* else_attr = n.attribute("else_branch");
    if (then_attr == nullptr || !then_attr->graph || else_attr == nullptr || !else_attr->graph) return NodeCost{};
    Body then_body = body(*then_attr->graph);
    Body else_body = body(*else_attr->graph);
    bool take_then;
    if (auto cond = constant_scalar(n.input(0))) {
      take_then = *cond != 0;
    } else {
      auto key = [](const NodeCost& c) { return std::pair(c.macs, c.flops); };
      take_then = key(then_body.cost) >= key(else_body.cost);
      if (key(then_body.cost) != key(else_body.cost))
        stats_.cost_notes.push_back(
            fmt::format("{}: the costlier branch counted ({})", node_label(n), take_then ? "then_branch" : "else_branch"));
    }
    const Body& taken = take_then ? then_body : else_body;
    absorb(taken);
    return taken.cost;
  }

  const ShapeLookup& shapes_;
  ModelStats& stats_;
};

void add_tensor(TensorTally& tally, const onnx::TensorProto& t) {
  auto count = io::element_count(t);
  if (!count.ok()) return;  // validated at load; kept defensive for hand-built models
  ++tally.tensors;
  tally.elements += *count;
  if (t.data_type() == onnx::TensorProto::STRING) {
    for (const auto& s : t.string_data()) tally.bytes += s.size();
  } else {
    tally.bytes += io::data_byte_size(t.data_type(), *count);
  }
}

// Integer and bool constants are shapes, axes, indices and flags, and a
// single number is a scalar of the formula (an epsilon, a clip bound): not
// weights.
bool holds_weights(const onnx::TensorProto& t) {
  auto count = io::element_count(t);
  if (!count.ok() || *count <= 1) return false;
  switch (t.data_type()) {
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::UINT64:
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::BOOL:
    case onnx::TensorProto::STRING: return false;
    default: return true;
  }
}

}  // namespace

ModelStats compute_stats(const ir::Model& model, const TypeMap& types) {
  ModelStats stats;
  const ir::Graph& graph = model.graph();
  std::map<std::pair<std::string, std::string>, size_t> histogram;
  graph.for_each_graph([&](const ir::Graph& g) {
    for (const ir::Node& n : g.nodes()) {
      ++stats.total_node_count;
      ++histogram[{n.domain(), n.op_type()}];
      const ir::Attribute* value = n.is_onnx_op("Constant") ? n.attribute("value") : nullptr;
      if (value != nullptr && value->proto.has_t() && holds_weights(value->proto.t()))
        add_tensor(stats.constant_nodes, value->proto.t());
    }
    if (&g == &graph) return;
    for (const ir::Value* v : g.initializers()) add_tensor(stats.subgraph_initializers, *v->initializer());
  });
  for (const auto& [key, count] : histogram) stats.operators.push_back({key.first, key.second, count});
  std::stable_sort(stats.operators.begin(), stats.operators.end(),
                   [](const OpCount& a, const OpCount& b) { return a.count > b.count; });

  TensorTally initializers;
  for (const ir::Value* v : graph.initializers()) add_tensor(initializers, *v->initializer());
  stats.initializer_count = initializers.tensors;
  stats.parameter_count = initializers.elements;
  stats.parameter_bytes = initializers.bytes;

  ShapeLookup shapes(types);
  stats.node_count = graph.nodes().size();
  CostCounter counter(shapes, stats);
  NodeCost total = counter.graph(graph, &stats.node_costs);
  stats.total_macs = total.macs;
  stats.total_flops = total.flops;
  return stats;
}

}  // namespace onnxkit::analysis
