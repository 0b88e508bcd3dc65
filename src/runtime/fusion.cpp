#include "runtime/fusion.h"

#include <cmath>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "runtime/kernels/elementwise/elementwise.h"
#include "runtime/kernels/math/math.h"
#include "runtime/kernels/nn/blocked.h"
#include "runtime/kernels/nn/nn.h"

namespace onnxkit::runtime {
namespace {

struct Matcher {
  const ConstantOf& constant_of;
  const IsReturned& is_returned;

  std::optional<double> scalar(const ir::Value* v) const { return constant_scalar(v, constant_of); }

  bool scalar_is(const ir::Value* v, double expected) const {
    auto s = scalar(v);
    return s && std::abs(*s - expected) <= 1e-6 * std::abs(expected);
  }

  const ir::Node* sole_reader(const ir::Value* v) const { return runtime::sole_reader(v, is_returned); }
  const ir::Node* sole_reader(const ir::Node* node) const { return runtime::sole_reader(node, is_returned); }

  // A binary default-domain `op` reading `v` once: its other input, or null.
  static const ir::Value* other_operand(const ir::Node* node, std::string_view op, const ir::Value* v) {
    if (node == nullptr || !node->is_onnx_op(op) || node->outputs().size() != 1) return nullptr;
    return ir::other_operand(*node, v);
  }

  // A float constant of one value that broadcasting cannot use to raise the
  // other operand's rank (rank 0 or 1).
  std::optional<double> plain_scalar(const ir::Value* v) const {
    const Tensor* t = v != nullptr ? constant_of(v) : nullptr;
    return t != nullptr && t->rank() <= 1 ? scalar(v) : std::nullopt;
  }

  // x / c or x * c (either side) with c a plain scalar: x and the factor.
  struct Scaling {
    const ir::Value* x;
    double factor;
  };
  std::optional<Scaling> scaling(const ir::Node* node) const {
    if (node == nullptr || node->inputs().size() != 2) return std::nullopt;
    if (node->is_onnx_op("Div")) {
      if (auto c = plain_scalar(node->input(1)); c && *c != 0 && node->input(0) != nullptr)
        return Scaling{node->input(0), 1 / *c};
    } else if (node->is_onnx_op("Mul")) {
      for (size_t i : {0, 1})
        if (auto c = plain_scalar(node->input(i)); c && node->input(1 - i) != nullptr) return Scaling{node->input(1 - i), *c};
    }
    return std::nullopt;
  }

  // torch's GELU around `erf`: x / sqrt 2 (or x * (1 / sqrt 2)) -> Erf -> + 1 -> * x -> * 0.5.
  std::optional<FusedChain> gelu(const ir::Node* erf) const {
    if (!erf->is_onnx_op("Erf")) return std::nullopt;
    const ir::Node* scale = erf->input(0) != nullptr ? erf->input(0)->producer() : nullptr;
    if (scale == nullptr || sole_reader(scale->output(0)) != erf) return std::nullopt;
    const auto scaled = scaling(scale);
    if (!scaled || std::abs(scaled->factor - std::sqrt(0.5)) > 1e-6 * std::sqrt(0.5)) return std::nullopt;
    const ir::Value* x = scaled->x;
    if (constant_of(x) != nullptr) return std::nullopt;
    const ir::Node* plus_one = sole_reader(erf->output(0));
    if (!scalar_is(other_operand(plus_one, "Add", erf->output(0)), 1.0)) return std::nullopt;
    const ir::Node* times_x = sole_reader(plus_one->output(0));
    if (other_operand(times_x, "Mul", plus_one->output(0)) != x) return std::nullopt;
    const ir::Node* half = sole_reader(times_x->output(0));
    if (!scalar_is(other_operand(half, "Mul", times_x->output(0)), 0.5)) return std::nullopt;
    return FusedChain{half, {scale, erf, plus_one, times_x}, {x}, "Gelu", elementwise::gelu_kernel()};
  }

  // MatMul(A, B) -> Add(bias): B a constant matrix, bias one float per column.
  std::optional<FusedChain> linear(const ir::Node* matmul) const {
    if (!matmul->is_onnx_op("MatMul") || matmul->inputs().size() != 2) return std::nullopt;
    const Tensor* b = constant_of(matmul->input(1));
    if (b == nullptr || b->dtype() != DataType::float32 || b->rank() != 2) return std::nullopt;
    const ir::Node* add = sole_reader(matmul->output(0));
    const ir::Value* bias_value = other_operand(add, "Add", matmul->output(0));
    const Tensor* bias = bias_value != nullptr ? constant_of(bias_value) : nullptr;
    if (bias == nullptr || bias->dtype() != DataType::float32 || bias->rank() != 1 || bias->dim(0) != b->dim(1))
      return std::nullopt;
    return FusedChain{add, {matmul}, {matmul->input(0)}, "MatMul+Add", {}};
  }

  // The Softmax that alone reads x = MatMul(a, B) + bias along its last
  // axis: axis -1, or rank - 1 (x's rank is a's, B being a matrix; asked
  // only then), in the 2-D view of opsets before 13 as in the one axis of
  // later ones; without the attribute, 1 before 13 and -1 from 13
  // (`opset`). A text recognizer's class scores.
  const ir::Node* last_axis_softmax(const ir::Value* x, const ir::Value* a, int64_t opset, const KnownRank& rank_of) const {
    const ir::Node* softmax = sole_reader(x);
    if (softmax == nullptr || !softmax->is_onnx_op("Softmax") || softmax->outputs().size() != 1) return nullptr;
    const int64_t axis = softmax->attr_int("axis", opset >= 13 ? -1 : 1);
    if (axis == -1) return softmax;
    const std::optional<int64_t> rank = rank_of(a);
    return rank && axis == *rank - 1 ? softmax : nullptr;
  }

  // Operand i of `matmul` walked back through a scaling by a constant scalar
  // (folded into alpha), then a Transpose whose matrices gemm reads in place
  // (perm), each read only on this path and claimed by no other chain; the
  // nodes walked through go to `absorbed`. The value the product reads.
  const ir::Value* operand(const ir::Node* matmul, size_t i, float& alpha, std::vector<int64_t>& perm,
                           std::vector<const ir::Node*>& absorbed, const std::unordered_set<const ir::Node*>& claimed) const {
    auto free = [&](const ir::Node* n) { return n != nullptr && !claimed.count(n); };
    const ir::Node* reader = matmul;
    const ir::Value* v = matmul->input(i);
    const ir::Node* source = v->producer();
    if (auto scaled = free(source) && sole_reader(source) == reader ? scaling(source) : std::nullopt) {
      alpha *= static_cast<float>(scaled->factor);
      absorbed.push_back(source);
      reader = source, v = scaled->x;
      source = v->producer();
    }
    if (!free(source) || !source->is_onnx_op("Transpose") || source->inputs().size() != 1 || source->input(0) == nullptr ||
        sole_reader(source) != reader)
      return v;
    // Read in place when one of its last two dims is the input's last.
    std::vector<int64_t> p = source->attr_ints("perm");
    const int64_t r = static_cast<int64_t>(p.size());
    if (r < 2 || (p[r - 1] != r - 1 && p[r - 2] != r - 1)) return v;
    perm = std::move(p);
    absorbed.push_back(source);
    return source->input(0);
  }

  // MatMul whose operands come through a Transpose and/or a scaling by a
  // constant scalar, and whose product goes through such a scaling and/or a
  // Transpose, each read only here and none in another chain (`claimed`):
  // the attention's head split, 1 / sqrt(d) and head merge.
  std::optional<FusedChain> transposed_matmul(const ir::Node* matmul, const std::unordered_set<const ir::Node*>& claimed) const {
    if (!matmul->is_onnx_op("MatMul") || matmul->inputs().size() != 2 || matmul->outputs().size() != 1 || claimed.count(matmul) ||
        matmul->input(0) == nullptr || matmul->input(1) == nullptr)
      return std::nullopt;  // a missing input is the plain kernel's to name
    math::TransposedMatMul spec;
    FusedChain chain{matmul, {}, {}, "MatMul (transposed operands)", {}};
    chain.inputs = {operand(matmul, 0, spec.alpha, spec.a_perm, chain.absorbed, claimed),
                    operand(matmul, 1, spec.alpha, spec.b_perm, chain.absorbed, claimed)};
    auto take = [&](const ir::Node* next) {
      chain.absorbed.push_back(chain.last);
      chain.last = next;
    };
    // The reader of `node`'s output, unless another chain has it.
    auto free_reader = [&](const ir::Node* node) {
      const ir::Node* r = sole_reader(node);
      return r != nullptr && !claimed.count(r) ? r : nullptr;
    };
    const bool operands_absorbed = !chain.absorbed.empty();
    const ir::Node* next = free_reader(matmul);
    // The scores' scaling after the product (GPT-2's "/ sqrt(d)") is alpha too.
    if (auto scaled = next != nullptr ? scaling(next) : std::nullopt; scaled && scaled->x == matmul->output(0)) {
      spec.alpha *= static_cast<float>(scaled->factor);
      take(next);
      next = free_reader(next);
    }
    if (next != nullptr && next->is_onnx_op("Transpose")) {
      std::vector<int64_t> perm = next->attr_ints("perm");
      if (!perm.empty() && perm.back() == static_cast<int64_t>(perm.size()) - 1) {
        spec.y_perm = std::move(perm);
        take(next);
      }
    }
    if (chain.absorbed.empty()) return std::nullopt;
    // A product by constant weights with nothing but a scaling after it
    // keeps the MatMul kernel's packed weights; the scaling runs apart.
    if (!operands_absorbed && spec.y_perm.empty() && constant_of(matmul->input(1)) != nullptr) return std::nullopt;
    chain.create = math::transposed_matmul_kernel(std::move(spec));
    return chain;
  }

  // A LayerNormalization in no other chain (`claimed`) with only Y asked for.
  bool only_y_of_layer_norm(const ir::Node* norm, const std::unordered_set<const ir::Node*>& claimed) const {
    if (!norm->is_onnx_op("LayerNormalization") || norm->inputs().size() < 2 || claimed.count(norm)) return false;
    for (size_t i = 1; i < norm->outputs().size(); ++i)
      if (norm->output(i) != nullptr && (norm->output(i)->is_used() || is_returned(norm->output(i)))) return false;
    return true;
  }

  // Add(a, b) -> LayerNormalization(sum, Scale[, B]) with only Y asked for,
  // neither in another chain (`claimed`).
  std::optional<FusedChain> add_layer_norm(const ir::Node* norm, const SameShape& same_shape,
                                           const std::unordered_set<const ir::Node*>& claimed) const {
    if (!only_y_of_layer_norm(norm, claimed)) return std::nullopt;
    const ir::Node* add = norm->input(0) != nullptr ? norm->input(0)->producer() : nullptr;
    if (add == nullptr || claimed.count(add) || !add->is_onnx_op("Add") || add->inputs().size() != 2 ||
        sole_reader(add->output(0)) != norm)
      return std::nullopt;
    const ir::Value *a = add->input(0), *b = add->input(1);
    if (a == nullptr || b == nullptr || constant_of(a) != nullptr || constant_of(b) != nullptr || !same_shape(a, b))
      return std::nullopt;
    std::vector<const ir::Value*> inputs = {a, b, norm->input(1)};
    if (norm->input(2) != nullptr) inputs.push_back(norm->input(2));
    return FusedChain{norm, {add}, inputs, "Add+LayerNormalization", nn::layer_norm_kernel(/*residual=*/true)};
  }

  // Transpose(x, [0, 2, ..., r-1, 1]) -> LayerNormalization over the last
  // axis, Scale (and B) one constant float per channel, only Y asked for,
  // neither in another chain (`claimed`): ConvNeXt's channels moved last
  // for its LayerNorm, normalized where they lie.
  std::optional<FusedChain> channels_last_layer_norm(const ir::Node* norm,
                                                     const std::unordered_set<const ir::Node*>& claimed) const {
    if (!only_y_of_layer_norm(norm, claimed) || norm->input(0) == nullptr) return std::nullopt;
    const ir::Node* transpose = norm->input(0)->producer();
    if (transpose == nullptr || claimed.count(transpose) || !transpose->is_onnx_op("Transpose") ||
        transpose->inputs().size() != 1 || transpose->input(0) == nullptr || sole_reader(transpose) != norm)
      return std::nullopt;
    const std::vector<int64_t> perm = transpose->attr_ints("perm");
    const auto r = static_cast<int64_t>(perm.size());
    if (r < 3 || perm[0] != 0 || perm[r - 1] != 1) return std::nullopt;
    for (int64_t d = 1; d + 1 < r; ++d)
      if (perm[d] != d + 1) return std::nullopt;
    const int64_t axis = norm->attr_int("axis", -1);
    if (axis != -1 && axis != r - 1) return std::nullopt;
    auto per_channel = [&](const ir::Value* v) {
      const Tensor* t = v != nullptr ? constant_of(v) : nullptr;
      return t != nullptr && t->dtype() == DataType::float32 && t->rank() == 1;
    };
    std::vector<const ir::Value*> inputs = {transpose->input(0), norm->input(1)};
    if (!per_channel(norm->input(1))) return std::nullopt;
    if (norm->inputs().size() > 2 && norm->input(2) != nullptr) {
      if (!per_channel(norm->input(2))) return std::nullopt;
      inputs.push_back(norm->input(2));
    }
    return FusedChain{norm, {transpose}, inputs, "Transpose+LayerNormalization", nn::channels_last_layer_norm_kernel()};
  }

  // Pad(x, zeros on H and W) read only by an AveragePool that can take its pads.
  std::optional<FusedChain> pad_then_average_pool(const ir::Node* pad) const {
    if (!pad->is_onnx_op("Pad") || pad->input(0) == nullptr) return std::nullopt;
    const ir::Node* pool = sole_reader(pad);
    if (pool == nullptr || pool->input(0) != pad->output(0) || !nn::average_pool_takes_pads(*pool)) return std::nullopt;
    auto pads = nn::spatial_zero_pads(*pad, [&](size_t i) { return constant_of(pad->input(i)); });
    if (!pads) return std::nullopt;
    return FusedChain{pool, {pad}, {pad->input(0)}, "Pad+AveragePool", {}, nn::PadsBefore{*pads}};
  }

  // `node` as a step of an element-wise chain reading `v`: a unary op of
  // the table, or arithmetic with a float constant scalar (`constant_rank`
  // set to its rank); for `last`, arithmetic with a tensor (`tensor` set).
  std::optional<elementwise::ChainStep> chain_step(const ir::Node* node, const ir::Value* v, int64_t& constant_rank,
                                                   const ir::Value** tensor) const {
    using Op = elementwise::ChainStep::Op;
    static const std::pair<const char*, Op> kUnary[] = {
        {"Relu", Op::relu}, {"Sigmoid", Op::sigmoid}, {"Tanh", Op::tanh}, {"Neg", Op::neg}, {"Abs", Op::abs}};
    static const std::pair<const char*, Op> kArithmetic[] = {
        {"Add", Op::add}, {"Sub", Op::sub}, {"Mul", Op::mul}, {"Div", Op::div}};
    if (node == nullptr || node->outputs().size() != 1 || node->output(0) == nullptr) return std::nullopt;
    for (const auto& [name, op] : kUnary)
      if (node->is_onnx_op(name) && node->inputs().size() == 1 && node->input(0) == v) return elementwise::ChainStep{op};
    for (const auto& [name, op] : kArithmetic) {
      if (!node->is_onnx_op(name) || node->inputs().size() != 2) continue;
      const ir::Value* other = ir::other_operand(*node, v);
      if (other == nullptr) return std::nullopt;
      const bool first = node->input(1) == v;
      if (auto c = plain_scalar(other)) {
        constant_rank = static_cast<int64_t>(constant_of(other)->rank());
        return elementwise::ChainStep{op, static_cast<float>(*c), first};
      }
      if (tensor == nullptr || constant_of(other) != nullptr) return std::nullopt;
      *tensor = other;
      return elementwise::ChainStep{op, 0, first};
    }
    return std::nullopt;
  }

  // Element-wise nodes one after the other from `head` (at least two), each
  // value between them read only by the next: the unary ops and arithmetic
  // with a constant scalar, then maybe arithmetic with a tensor. Only where
  // the values are surely floating point (a Sigmoid, a Tanh or a float
  // constant says so), so that the fused kernel takes every type the nodes
  // would; none of the nodes in another chain (`claimed`).
  std::optional<FusedChain> elementwise_chain(const ir::Node* head, const std::unordered_set<const ir::Node*>& claimed) const {
    using Op = elementwise::ChainStep::Op;
    if (claimed.count(head) || head->inputs().empty() || head->input(0) == nullptr) return std::nullopt;
    elementwise::ChainSpec spec;
    bool floating = false;
    auto note = [&](const elementwise::ChainStep& step, int64_t constant_rank) {
      floating = floating || step.op == Op::sigmoid || step.op == Op::tanh || constant_rank >= 0;
      spec.lifts_rank_0 = spec.lifts_rank_0 || constant_rank == 1;
    };
    // The head reads x as input 0, or as input 1 of arithmetic with a constant.
    const ir::Value* x = nullptr;
    int64_t rank = -1;
    for (const ir::Value* candidate : head->inputs()) {
      if (candidate == nullptr || constant_of(candidate) != nullptr) continue;
      rank = -1;
      if (auto step = chain_step(head, candidate, rank, nullptr)) {
        x = candidate;
        spec.steps.push_back(*step);
        note(*step, rank);
        break;
      }
    }
    if (x == nullptr) return std::nullopt;
    FusedChain chain{head, {}, {x}, "Element-wise chain", {}};
    for (;;) {
      const ir::Node* next = sole_reader(chain.last);
      if (next == nullptr || claimed.count(next)) break;
      const ir::Value* tensor = nullptr;
      rank = -1;
      auto step = chain_step(next, chain.last->output(0), rank, &tensor);
      if (!step) break;
      chain.absorbed.push_back(chain.last);
      chain.last = next;
      if (tensor != nullptr) {
        spec.with_tensor = *step;
        chain.inputs.push_back(tensor);
        break;
      }
      spec.steps.push_back(*step);
      note(*step, rank);
    }
    if (chain.absorbed.empty() || !floating) return std::nullopt;
    chain.create = elementwise::chain_kernel(std::move(spec));
    return chain;
  }
};

}  // namespace

std::vector<FusedChain> find_fused_chains(const std::vector<ir::Node*>& order, int64_t opset, const ConstantOf& constant_of,
                                          const IsReturned& is_returned, const SameShape& same_shape, const KnownRank& rank_of) {
  const Matcher match{constant_of, is_returned};
  std::unordered_map<const ir::Value*, FusedChain> gelu_of;  // by GELU's input
  for (const ir::Node* node : order)
    if (auto chain = match.gelu(node)) gelu_of.emplace(chain->inputs[0], std::move(*chain));

  std::vector<FusedChain> chains;
  for (const ir::Node* node : order) {
    auto linear = match.linear(node);
    if (!linear) continue;
    Tensor weights = *constant_of(node->input(1));
    Tensor bias = *constant_of(match.other_operand(linear->last, "Add", node->output(0)));
    // x = A B + bias read only by a GELU (its scaling and its "* x"): one kernel for all.
    const ir::Value* x = linear->last->output(0);
    auto gelu = gelu_of.find(x);
    if (gelu != gelu_of.end() && x->uses().size() == 2 && !x->is_any_graph_output() && !is_returned(x)) {
      linear->absorbed.push_back(linear->last);
      linear->absorbed.insert(linear->absorbed.end(), gelu->second.absorbed.begin(), gelu->second.absorbed.end());
      linear->last = gelu->second.last;
      linear->kind = "MatMul+Add+Gelu";
      linear->create = math::matmul_bias_kernel(std::move(weights), std::move(bias), math::LinearThen::gelu);
      gelu_of.erase(gelu);
    } else if (const ir::Node* softmax = match.last_axis_softmax(x, node->input(0), opset, rank_of)) {
      linear->absorbed.push_back(linear->last);
      linear->last = softmax;
      linear->kind = "MatMul+Add+Softmax";
      linear->create = math::matmul_bias_kernel(std::move(weights), std::move(bias), math::LinearThen::softmax);
    } else {
      linear->create = math::matmul_bias_kernel(std::move(weights), std::move(bias), math::LinearThen::nothing);
    }
    chains.push_back(std::move(*linear));
  }
  for (auto& [x, chain] : gelu_of) chains.push_back(std::move(chain));
  // The chains below take only what the chains before them left (the
  // attention products in order, so a product and the one after it do not
  // both take the Transpose between them): none overlaps another.
  std::unordered_set<const ir::Node*> claimed;
  auto claim = [&](const FusedChain& chain) {
    claimed.insert(chain.last);
    claimed.insert(chain.absorbed.begin(), chain.absorbed.end());
  };
  for (const FusedChain& chain : chains) claim(chain);
  auto take_all = [&](auto match_at) {
    for (const ir::Node* node : order) {
      if (auto chain = match_at(node)) {
        claim(*chain);
        chains.push_back(std::move(*chain));
      }
    }
  };
  take_all([&](const ir::Node* node) { return match.pad_then_average_pool(node); });
  take_all([&](const ir::Node* node) { return match.transposed_matmul(node, claimed); });
  take_all([&](const ir::Node* node) { return match.add_layer_norm(node, same_shape, claimed); });
  take_all([&](const ir::Node* node) { return match.channels_last_layer_norm(node, claimed); });
  take_all([&](const ir::Node* node) { return match.elementwise_chain(node, claimed); });
  return chains;
}

std::optional<double> constant_scalar(const ir::Value* v, const ConstantOf& constant_of) {
  const Tensor* t = v != nullptr ? constant_of(v) : nullptr;
  if (t == nullptr || t->dtype() != DataType::float32 || t->numel() != 1) return std::nullopt;
  return static_cast<double>(t->data<float>()[0]);
}

const ir::Node* sole_reader(const ir::Value* v, const IsReturned& is_returned) {
  const ir::Node* reader = ir::sole_consumer(v);
  return reader != nullptr && !is_returned(v) ? reader : nullptr;
}

const ir::Node* sole_reader(const ir::Node* node, const IsReturned& is_returned) {
  return node->outputs().size() == 1 ? sole_reader(node->output(0), is_returned) : nullptr;
}

}  // namespace onnxkit::runtime
