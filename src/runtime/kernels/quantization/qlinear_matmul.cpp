// QLinearMatMul: an integer matrix product of two quantized operands,
// requantized to the output's scale and zero point. Shapes broadcast like
// MatMul; scales are per tensor, or per row of A (and of the output) and
// per column of B.

#include <fmt/format.h>

#include "runtime/kernels/math/math.h"
#include "runtime/kernels/quantization/quantization.h"

namespace onnxkit::runtime::quantization {
namespace {

bool is_8bit(DataType t) { return t == DataType::int8 || t == DataType::uint8; }

// A scale or zero point of one value, or `per` values (one per row or
// column), stretched to `per` entries.
template <class V>
Result<std::vector<V>> stretch(const std::vector<V>& values, const Tensor& t, int64_t per, std::string_view name,
                               std::string_view unit) {
  if (t.numel() == 1 && t.rank() <= 1) return std::vector<V>(static_cast<size_t>(per), values[0]);
  if (t.rank() == 1 && t.dim(0) == per) return values;
  return make_error("input {} has shape {}: expected a scalar or [{}] (one per {})", name, shape_to_string(t.shape()), per, unit);
}

Status compute_qlinear_matmul(KernelContext& ctx) {
  ONNXKIT_ASSIGN(const Tensor* a, ctx.tensor(0));
  ONNXKIT_ASSIGN(const Tensor* a_scale, ctx.tensor(1));
  ONNXKIT_ASSIGN(const Tensor* b, ctx.tensor(3));
  ONNXKIT_ASSIGN(const Tensor* b_scale, ctx.tensor(4));
  ONNXKIT_ASSIGN(const Tensor* y_scale, ctx.tensor(6));
  if (!is_8bit(a->dtype())) return make_error("input a must be int8 or uint8, got {}", to_string(a->dtype()));
  if (!is_8bit(b->dtype())) return make_error("input b must be int8 or uint8, got {}", to_string(b->dtype()));
  ONNXKIT_ASSIGN(math::MatMulPlan plan, math::plan_matmul(a->shape(), b->shape(), "a", "b"));
  const int64_t m = plan.m, n = plan.n;

  // Zero points: optional here (absent means 0), of their operand's type.
  auto zero_point = [&](size_t index, const char* name, DataType type, int64_t per,
                        const char* unit) -> Result<std::vector<int32_t>> {
    if (!ctx.has_input(index)) return std::vector<int32_t>(static_cast<size_t>(per), 0);
    ONNXKIT_ASSIGN(const Tensor* z, ctx.tensor(index));
    if (z->dtype() != type)
      return make_error("input {} is {} but its operand is {}", name, to_string(z->dtype()), to_string(type));
    ONNXKIT_ASSIGN(std::vector<int32_t> values, ints_of(*z, name));
    return stretch(values, *z, per, name, unit);
  };
  // y_zero_point decides the output type (a's when it is absent).
  DataType out_type = a->dtype();
  if (ctx.has_input(7)) {
    ONNXKIT_ASSIGN(const Tensor* zy, ctx.tensor(7));
    out_type = zy->dtype();
  }
  if (!is_8bit(out_type)) return make_error("input y_zero_point must be int8 or uint8, got {}", to_string(out_type));
  ONNXKIT_ASSIGN(std::vector<int32_t> za, zero_point(2, "a_zero_point", a->dtype(), m, "row of a"));
  ONNXKIT_ASSIGN(std::vector<int32_t> zb, zero_point(5, "b_zero_point", b->dtype(), n, "column of b"));
  ONNXKIT_ASSIGN(std::vector<int32_t> zy, zero_point(7, "y_zero_point", out_type, m, "row of y"));
  ONNXKIT_ASSIGN(std::vector<float> sa_values, floats_of(*a_scale, "a_scale"));
  ONNXKIT_ASSIGN(std::vector<float> sb_values, floats_of(*b_scale, "b_scale"));
  ONNXKIT_ASSIGN(std::vector<float> sy_values, floats_of(*y_scale, "y_scale"));
  ONNXKIT_ASSIGN(std::vector<float> sa, stretch(sa_values, *a_scale, m, "a_scale", "row of a"));
  ONNXKIT_ASSIGN(std::vector<float> sb, stretch(sb_values, *b_scale, n, "b_scale", "column of b"));
  ONNXKIT_ASSIGN(std::vector<float> sy, stretch(sy_values, *y_scale, m, "y_scale", "row of y"));

  Tensor& y = ctx.output(0, out_type, plan.out);
  auto go = [&]<class A, class B, class Q>() -> Status {
    const int64_t k = plan.k;
    const A* pa = a->data<A>();
    const B* pb = b->data<B>();
    Q* py = y.mutable_data<Q>();
    math::for_each_matmul(plan, [&](int64_t, int64_t ao, int64_t bo, int64_t co, int64_t rows) {
      std::vector<int32_t> acc(static_cast<size_t>(rows * n));
      std::vector<int32_t> row_zero(static_cast<size_t>(rows));
      // A folded batch spans several matrices: per-row values repeat.
      for (int64_t i = 0; i < rows; ++i) row_zero[i] = za[i % m];
      gemm_integer<A, B>(rows, n, k, pa + ao, k, row_zero.data(), pb + bo, n, zb.data(), acc.data(), n);
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t r = i % m;
        const float zr = static_cast<float>(zy[r]);
        // One accumulator unit in units of y, grouped as the reference
        // does, (a_scale * b_scale) / y_scale, so halves round alike.
        for (int64_t j = 0; j < n; ++j)
          py[co + i * n + j] = round_saturate<Q>(static_cast<float>(acc[i * n + j]) * (sa[r] * sb[j] / sy[r]), zr);
      }
    });
    return {};
  };
  auto with_output = [&]<class A, class B>() -> Status {
    if (out_type == DataType::uint8) return go.template operator()<A, B, uint8_t>();
    return go.template operator()<A, B, int8_t>();
  };
  const bool ua = a->dtype() == DataType::uint8, ub = b->dtype() == DataType::uint8;
  if (ua && ub) return with_output.template operator()<uint8_t, uint8_t>();
  if (ua) return with_output.template operator()<uint8_t, int8_t>();
  if (ub) return with_output.template operator()<int8_t, uint8_t>();
  return with_output.template operator()<int8_t, int8_t>();
}

}  // namespace

void register_qlinear_matmul(KernelRegistry& r) {
  r.add("", "QLinearMatMul", 10, kLatestOpset, make_kernel(compute_qlinear_matmul));
}

}  // namespace onnxkit::runtime::quantization
