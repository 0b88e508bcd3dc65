// LinearAttention (opset 27): attention as a recurrence over a state S of
// [d_k, d_v] per key/value head, token by token (the spec's definition;
// chunk_size only tunes chunked GPU kernels and changes no result):
//   linear:       S = S + k v^T
//   gated:        S = diag(exp(g)) S + k v^T
//   delta:        S = S + beta k (v - S^T k)^T
//   gated_delta:  S' = diag(exp(g)) S, then S = S' + beta k (v - S'^T k)^T
//   o = scale * S^T q, for each query head sharing the key/value head
// (query head h reads key/value head h / (q_num_heads / kv_num_heads)).
// g, the decay in log space, has one value per key dim or one per head.
// Inputs are packed [B, T, heads * dim]; the states are [B, H_kv, d_k, d_v].
// Everything is computed in double.

#include <cmath>

#include "runtime/kernels/nn/nn.h"

namespace onnxkit::runtime::nn {
namespace {

enum class UpdateRule { linear, gated, delta, gated_delta };

Result<UpdateRule> parse_update_rule(const std::string& name) {
  if (name == "linear") return UpdateRule::linear;
  if (name == "gated") return UpdateRule::gated;
  if (name == "delta") return UpdateRule::delta;
  if (name == "gated_delta") return UpdateRule::gated_delta;
  return make_error("attribute 'update_rule' is '{}'; it must be linear, gated, delta or gated_delta", name);
}

struct LinearAttentionSpec {
  UpdateRule rule;
  int64_t q_heads, kv_heads;
  double scale;  // 0: 1 / sqrt(d_k)
};

// decay or beta: [B, T, heads * n] for one of the n in `per_head_options`
// (0 standing for [B, T, 1], one value for all heads); its values, and the n
// it has in `per_head`.
Result<std::vector<double>> read_gate(KernelContext& ctx, size_t index, const char* name, int64_t batch, int64_t tokens,
                                      int64_t heads, std::vector<int64_t> per_head_options, int64_t& per_head) {
  ONNXKIT_ASSIGN(const Tensor* t, ctx.tensor(index));
  const Shape& s = t->shape();
  bool fits = false;
  for (int64_t option : per_head_options) {
    // Option 0: one value for every head.
    const int64_t width = option == 0 ? 1 : heads * option;
    if (s.size() == 3 && s[0] == batch && s[1] == tokens && s[2] == width) {
      per_head = option;
      fits = true;
      break;
    }
  }
  if (!fits)
    return make_error("{} has shape {}, which is not [batch, tokens, heads * n] for this op's heads ({})", name,
                      shape_to_string(s), heads);
  return read_doubles(*t, name);
}

Status linear_attention(KernelContext& ctx, const LinearAttentionSpec& spec) {
  ONNXKIT_ASSIGN(const Tensor* q_t, ctx.tensor(0));
  ONNXKIT_ASSIGN(const Tensor* k_t, ctx.tensor(1));
  ONNXKIT_ASSIGN(const Tensor* v_t, ctx.tensor(2));
  for (const Tensor* t : {q_t, k_t, v_t})
    if (t->rank() != 3)
      return make_error("query, key and value must be [batch, tokens, heads * dim], got {}", shape_to_string(t->shape()));
  const int64_t batch = q_t->dim(0), tokens = q_t->dim(1);
  const int64_t hq = spec.q_heads, hkv = spec.kv_heads;
  if (q_t->dim(2) % hq != 0 || v_t->dim(2) % hkv != 0)
    return make_error("query's last dim {} and value's {} must divide by q_num_heads {} and kv_num_heads {}", q_t->dim(2),
                      v_t->dim(2), hq, hkv);
  const int64_t dk = q_t->dim(2) / hq, dv = v_t->dim(2) / hkv;
  if (k_t->shape() != Shape{batch, tokens, hkv * dk} || v_t->dim(0) != batch || v_t->dim(1) != tokens)
    return make_error("key {} must be [{}, {}, {}] and value {} [{}, {}, kv_num_heads * d_v]", shape_to_string(k_t->shape()),
                      batch, tokens, hkv * dk, shape_to_string(v_t->shape()), batch, tokens);
  ONNXKIT_ASSIGN(std::vector<double> q, read_doubles(*q_t, "query"));
  ONNXKIT_ASSIGN(std::vector<double> k, read_doubles(*k_t, "key"));
  ONNXKIT_ASSIGN(std::vector<double> v, read_doubles(*v_t, "value"));

  const int64_t state_size = batch * hkv * dk * dv;
  std::vector<double> state(static_cast<size_t>(state_size), 0.0);
  DataType state_type = q_t->dtype();
  if (ctx.has_input(3)) {
    ONNXKIT_ASSIGN(const Tensor* past, ctx.tensor(3));
    if (past->shape() != Shape{batch, hkv, dk, dv})
      return make_error("past_state must be [batch, kv_num_heads, d_k, d_v] = [{}, {}, {}, {}], got {}", batch, hkv, dk, dv,
                        shape_to_string(past->shape()));
    ONNXKIT_ASSIGN(state, read_doubles(*past, "past_state"));
    state_type = past->dtype();
  }
  const bool gated = spec.rule == UpdateRule::gated || spec.rule == UpdateRule::gated_delta;
  const bool delta = spec.rule == UpdateRule::delta || spec.rule == UpdateRule::gated_delta;
  std::vector<double> decay, beta;
  int64_t decay_per_head = 0, beta_per_head = 0;
  if (gated) {
    if (!ctx.has_input(4)) return make_error("update_rule {} needs the decay input", gated && delta ? "gated_delta" : "gated");
    ONNXKIT_ASSIGN(decay, read_gate(ctx, 4, "decay", batch, tokens, hkv, {dk, 1}, decay_per_head));
  }
  if (delta) {
    if (!ctx.has_input(5)) return make_error("update_rule {} needs the beta input", gated ? "gated_delta" : "delta");
    // per_head 0 stands for one beta shared by every head ([B, T, 1]).
    ONNXKIT_ASSIGN(beta, read_gate(ctx, 5, "beta", batch, tokens, hkv, {1, 0}, beta_per_head));
  }
  const double scale = spec.scale != 0 ? spec.scale : 1.0 / std::sqrt(static_cast<double>(dk));
  const int64_t group = hq / hkv;

  std::vector<double> out(static_cast<size_t>(batch * tokens * hq * dv));
  std::vector<double> recalled(static_cast<size_t>(dv));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < tokens; ++t) {
      const int64_t token = b * tokens + t;
      for (int64_t h = 0; h < hkv; ++h) {
        double* s = state.data() + (b * hkv + h) * dk * dv;
        const double* kk = k.data() + (token * hkv + h) * dk;
        const double* vv = v.data() + (token * hkv + h) * dv;
        if (gated) {
          for (int64_t i = 0; i < dk; ++i) {
            const double g = decay_per_head == 1 ? decay[static_cast<size_t>(token * hkv + h)]
                                                 : decay[static_cast<size_t>((token * hkv + h) * dk + i)];
            const double factor = std::exp(g);
            for (int64_t j = 0; j < dv; ++j) s[i * dv + j] *= factor;
          }
        }
        if (delta) {
          const double rate = beta_per_head == 0 ? beta[static_cast<size_t>(token)] : beta[static_cast<size_t>(token * hkv + h)];
          // What the state recalls for k (S^T k), replaced by v at rate beta.
          for (int64_t j = 0; j < dv; ++j) {
            double r = 0;
            for (int64_t i = 0; i < dk; ++i) r += s[i * dv + j] * kk[i];
            recalled[static_cast<size_t>(j)] = rate * (vv[j] - r);
          }
          for (int64_t i = 0; i < dk; ++i)
            for (int64_t j = 0; j < dv; ++j) s[i * dv + j] += kk[i] * recalled[static_cast<size_t>(j)];
        } else {
          for (int64_t i = 0; i < dk; ++i)
            for (int64_t j = 0; j < dv; ++j) s[i * dv + j] += kk[i] * vv[j];
        }
        for (int64_t qh = h * group; qh < (h + 1) * group; ++qh) {
          const double* qq = q.data() + (token * hq + qh) * dk;
          double* o = out.data() + (token * hq + qh) * dv;
          for (int64_t j = 0; j < dv; ++j) {
            double sum = 0;
            for (int64_t i = 0; i < dk; ++i) sum += qq[i] * s[i * dv + j];
            o[j] = scale * sum;
          }
        }
      }
    }
  }
  ctx.set_output(0, doubles_to_tensor(q_t->dtype(), {batch, tokens, hq * dv}, out));
  if (ctx.wants_output(1)) ctx.set_output(1, doubles_to_tensor(state_type, {batch, hkv, dk, dv}, state));
  return {};
}

KernelFactory linear_attention_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    LinearAttentionSpec spec;
    ONNXKIT_ASSIGN(spec.rule, parse_update_rule(info.attr_string("update_rule", "gated_delta")));
    if (!info.has_attr("q_num_heads") || !info.has_attr("kv_num_heads"))
      return make_error("attributes q_num_heads and kv_num_heads are required");
    spec.q_heads = info.attr_int("q_num_heads", 0);
    spec.kv_heads = info.attr_int("kv_num_heads", 0);
    if (spec.kv_heads < 1 || spec.q_heads < 1 || spec.q_heads % spec.kv_heads != 0)
      return make_error("q_num_heads ({}) must be a positive multiple of kv_num_heads ({})", spec.q_heads, spec.kv_heads);
    spec.scale = info.attr_float("scale", 0.0f);
    return ComputeFn([spec](KernelContext& ctx) { return linear_attention(ctx, spec); });
  });
}

}  // namespace

void register_linear_attention(KernelRegistry& r) { r.add("", "LinearAttention", 27, kLatestOpset, linear_attention_kernel()); }

}  // namespace onnxkit::runtime::nn
