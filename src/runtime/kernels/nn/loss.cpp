// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (which is the
// former applied to log_softmax of the scores along the class axis).

#include <cmath>
#include <optional>

#include "runtime/kernels/nn/nn.h"

namespace onnxkit::runtime::nn {
namespace {

enum class Reduction { none, sum, mean };

Result<Reduction> parse_reduction(const std::string& text) {
  if (text == "none") return Reduction::none;
  if (text == "sum") return Reduction::sum;
  if (text == "mean") return Reduction::mean;
  return make_error("reduction '{}' is not one of none, sum, mean", text);
}

struct LossAttributes {
  Reduction reduction = Reduction::mean;
  std::optional<int64_t> ignore_index;
};

Result<LossAttributes> read_loss_attributes(const KernelInfo& info) {
  LossAttributes a;
  ONNXKIT_ASSIGN(a.reduction, parse_reduction(info.attr_string("reduction", "mean")));
  if (info.has_attr("ignore_index")) a.ignore_index = info.attr_int("ignore_index", 0);
  return a;
}

// The class index of every (n, d...) position, checked against [0, classes).
Result<std::vector<int64_t>> read_targets(const Tensor& target, const Tensor& input, const char* input_name,
                                          const char* target_name, const LossAttributes& a) {
  if (input.rank() < 2)
    return make_error("{} must have shape [N, C, d1, ...], got {}", input_name, shape_to_string(input.shape()));
  Shape expected = input.shape();
  expected.erase(expected.begin() + 1);
  if (target.shape() != expected)
    return make_error("{} has shape {}, expected {} ({} without its class dim)", target_name, shape_to_string(target.shape()),
                      shape_to_string(expected), input_name);
  std::vector<int64_t> t(static_cast<size_t>(target.numel()));
  if (target.dtype() == DataType::int64) {
    for (size_t i = 0; i < t.size(); ++i) t[i] = target.data<int64_t>()[i];
  } else if (target.dtype() == DataType::int32) {
    for (size_t i = 0; i < t.size(); ++i) t[i] = target.data<int32_t>()[i];
  } else {
    return make_error("{} must be int32 or int64, got {}", target_name, to_string(target.dtype()));
  }
  const int64_t classes = input.dim(1);
  for (size_t i = 0; i < t.size(); ++i) {
    if (a.ignore_index && t[i] == *a.ignore_index) continue;
    if (t[i] < 0 || t[i] >= classes)
      return make_error("{}[{}] = {} is not a class index in [0, {}){}", target_name, i, t[i], classes,
                        a.ignore_index ? fmt::format(" nor ignore_index {}", *a.ignore_index) : "");
  }
  return t;
}

// loss = -log_prob[n, t, d] * weight[t], reduced; log_prob is [N, C, D].
Status negative_log_likelihood(KernelContext& ctx, const LossAttributes& a, const Tensor& log_prob,
                               const std::vector<int64_t>& targets, const Shape& target_shape, size_t weight_input) {
  const int64_t classes = log_prob.dim(1), n_batch = log_prob.dim(0);
  const int64_t inner = dims_product(log_prob.shape(), 2, log_prob.rank());
  std::vector<double> weights;
  if (ctx.has_input(weight_input)) {
    ONNXKIT_ASSIGN(const Tensor* w, ctx.tensor(weight_input));
    if (w->rank() != 1 || w->dim(0) != classes)
      return make_error("weights must have shape [{}] (one per class), got {}", classes, shape_to_string(w->shape()));
    if (w->dtype() != log_prob.dtype())
      return make_error("weights have type {}, the scores {}", to_string(w->dtype()), to_string(log_prob.dtype()));
    ONNXKIT_ASSIGN(weights, read_doubles(*w, "weights"));
  }
  ONNXKIT_ASSIGN(std::vector<double> lp, read_doubles(log_prob, "log_prob"));
  std::vector<double> loss(targets.size());
  double total = 0, weight_sum = 0;
  for (int64_t n = 0; n < n_batch; ++n)
    for (int64_t d = 0; d < inner; ++d) {
      const size_t i = static_cast<size_t>(n * inner + d);
      const int64_t t = targets[i];
      if (a.ignore_index && t == *a.ignore_index) {
        loss[i] = 0;
        continue;
      }
      const double w = weights.empty() ? 1.0 : weights[static_cast<size_t>(t)];
      loss[i] = -lp[static_cast<size_t>((n * classes + t) * inner + d)] * w;
      total += loss[i];
      weight_sum += w;
    }
  if (a.reduction == Reduction::none) {
    ctx.set_output(0, doubles_to_tensor(log_prob.dtype(), target_shape, loss));
  } else {
    // A mean over no (or zero-weight) targets is 0/0, NaN, as in the spec's formula.
    const double value = a.reduction == Reduction::sum ? total : total / weight_sum;
    ctx.set_output(0, doubles_to_tensor(log_prob.dtype(), {}, {value}));
  }
  return {};
}

KernelFactory nll_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    ONNXKIT_ASSIGN(LossAttributes a, read_loss_attributes(info));
    return ComputeFn([a](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* input, ctx.tensor(0));
      ONNXKIT_ASSIGN(const Tensor* target, ctx.tensor(1));
      if (!is_floating(input->dtype())) return make_error("input has type {}, must be floating point", to_string(input->dtype()));
      ONNXKIT_ASSIGN(std::vector<int64_t> t, read_targets(*target, *input, "input", "target", a));
      return negative_log_likelihood(ctx, a, *input, t, target->shape(), 2);
    });
  });
}

KernelFactory sce_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    ONNXKIT_ASSIGN(LossAttributes a, read_loss_attributes(info));
    return ComputeFn([a](KernelContext& ctx) -> Status {
      ONNXKIT_ASSIGN(const Tensor* scores, ctx.tensor(0));
      ONNXKIT_ASSIGN(const Tensor* labels, ctx.tensor(1));
      if (!is_floating(scores->dtype()))
        return make_error("scores have type {}, must be floating point", to_string(scores->dtype()));
      ONNXKIT_ASSIGN(std::vector<int64_t> t, read_targets(*labels, *scores, "scores", "labels", a));
      Tensor log_prob(scores->dtype(), scores->shape());
      ONNXKIT_TRY(
          log_softmax_along(*scores, scores->dim(0), scores->dim(1), dims_product(scores->shape(), 2, scores->rank()), log_prob));
      ONNXKIT_TRY(negative_log_likelihood(ctx, a, log_prob, t, labels->shape(), 2));
      if (ctx.wants_output(1)) ctx.set_output(1, std::move(log_prob));
      return {};
    });
  });
}

}  // namespace

void register_loss(KernelRegistry& r) {
  // Opset 13 only widened the types.
  r.add("", "NegativeLogLikelihoodLoss", 12, kLatestOpset, nll_kernel());
  r.add("", "SoftmaxCrossEntropyLoss", 12, kLatestOpset, sce_kernel());
}

}  // namespace onnxkit::runtime::nn
