// What the math family's parts share: the numpy matmul plan and the
// 16-bit float conversions.

#include "runtime/kernels/math/math.h"

namespace onnxkit::runtime::math {

std::vector<float> to_float(const Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  if (t.dtype() == DataType::float16) {
    const Float16* p = t.data<Float16>();
    for (int64_t i = 0; i < t.numel(); ++i) out[i] = static_cast<float>(p[i]);
  } else if (t.dtype() == DataType::bfloat16) {
    const BFloat16* p = t.data<BFloat16>();
    for (int64_t i = 0; i < t.numel(); ++i) out[i] = static_cast<float>(p[i]);
  } else if (t.dtype() == DataType::float32) {
    std::copy(t.data<float>(), t.data<float>() + t.numel(), out.begin());
  }
  return out;
}

Result<MatMulPlan> plan_matmul(const Shape& a, const Shape& b, std::string_view a_name, std::string_view b_name) {
  if (a.empty() || b.empty())
    return make_error("matrix product of a scalar: {} has shape {}, {} has shape {} (both need rank >= 1)", a_name,
                      shape_to_string(a), b_name, shape_to_string(b));
  MatMulPlan plan;
  const bool a_vector = a.size() == 1, b_vector = b.size() == 1;
  const int64_t ra = static_cast<int64_t>(a.size()), rb = static_cast<int64_t>(b.size());
  plan.m = a_vector ? 1 : a[ra - 2];
  plan.k = a[ra - 1];
  const int64_t kb = b_vector ? b[0] : b[rb - 2];
  plan.n = b_vector ? 1 : b[rb - 1];
  if (plan.k != kb)
    return make_error("inner dimensions differ: {} {} has {} columns, {} {} has {} rows", a_name, shape_to_string(a), plan.k,
                      b_name, shape_to_string(b), kb);

  const Shape a_batch(a.begin(), a.end() - std::min<int64_t>(ra, 2));
  const Shape b_batch(b.begin(), b.end() - std::min<int64_t>(rb, 2));
  const size_t rank = std::max(a_batch.size(), b_batch.size());
  Shape batch(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i + a_batch.size() >= rank ? a_batch[i + a_batch.size() - rank] : 1;
    const int64_t db = i + b_batch.size() >= rank ? b_batch[i + b_batch.size() - rank] : 1;
    if (da != db && da != 1 && db != 1)
      return make_error("batch dimensions do not broadcast: {} {} and {} {} (dim {}: {} vs {})", a_name, shape_to_string(a),
                        b_name, shape_to_string(b), i, da, db);
    batch[i] = da == 1 ? db : da;
  }
  plan.out = batch;
  if (!a_vector) plan.out.push_back(plan.m);
  if (!b_vector) plan.out.push_back(plan.n);
  ONNXKIT_TRY(checked_size(plan.out, "the product"));

  plan.batch = shape_size(batch);
  // Strides, in matrices, of each operand's batch dims as seen from `batch`.
  auto strides = [&](const Shape& own) {
    std::vector<int64_t> s(rank, 0);
    int64_t stride = 1;
    for (size_t i = own.size(); i-- > 0;) {
      const size_t o = rank - own.size() + i;
      s[o] = own[i] == 1 ? 0 : stride;
      stride *= own[i];
    }
    return s;
  };
  const std::vector<int64_t> sa = strides(a_batch), sb = strides(b_batch);
  plan.a_offset.resize(plan.batch);
  plan.b_offset.resize(plan.batch);
  plan.a_batch.resize(plan.batch);
  plan.b_batch.resize(plan.batch);
  std::vector<int64_t> index(rank, 0);
  for (int64_t e = 0; e < plan.batch; ++e) {
    int64_t ia = 0, ib = 0;
    for (size_t d = 0; d < rank; ++d) ia += index[d] * sa[d], ib += index[d] * sb[d];
    plan.a_batch[e] = ia;
    plan.b_batch[e] = ib;
    plan.a_offset[e] = ia * plan.m * plan.k;
    plan.b_offset[e] = ib * plan.k * plan.n;
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < batch[d]) break;
      index[d] = 0;
    }
  }
  plan.foldable = plan.batch > 1;
  for (int64_t e = 0; e < plan.batch && plan.foldable; ++e) plan.foldable = plan.b_batch[e] == 0 && plan.a_batch[e] == e;
  return plan;
}

}  // namespace onnxkit::runtime::math
