// Gemm, MatMul and MatMulInteger: shape checks and broadcasting here, the
// arithmetic in gemm().

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <numeric>

#include "runtime/kernels/common.h"
#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/math/math.h"
#include "runtime/kernels/math/packed_matmul.h"
#include "runtime/session.h"

namespace onnxkit::runtime::math {
namespace {

// Whether a constant float matrix B [K, N] is worth storing transposed, as a
// copy (the model keeps the original), so that sgemm reads each output
// column's weights as one contiguous run. It pays when B's rows lie a
// multiple of 4 KiB apart (cache-set conflicts when sgemm packs them), and
// costs the weights' size once more, so other widths stay as they are
// (figures in docs/performance.md, "Rules behind the kernels").
bool transposing_pays(const Tensor& b) {
  return b.dtype() == DataType::float32 && b.rank() == 2 && b.dim(1) > 0 && b.dim(1) % 1024 == 0;
}

// A float matrix's transpose (copy_strided's tiles).
Tensor transposed_matrix(const Tensor& b) {
  Tensor t(DataType::float32, {b.dim(1), b.dim(0)});
  copy_strided(b, 0, {1, b.dim(1)}, t);
  return t;
}

// C of Gemm, stretched to m x n by unidirectional broadcasting: dims of C
// align to the right of [m, n], each equal or 1.
struct Bias {
  const Tensor* c = nullptr;
  int64_t row_stride = 0, col_stride = 0;
};

Result<Bias> gemm_bias(const Tensor& c, int64_t m, int64_t n, bool exact) {
  const Shape target{m, n};
  auto mismatch = [&] {
    return make_error("input C has shape {}, which does not broadcast to the output [{},{}]{}", shape_to_string(c.shape()), m, n,
                      exact ? " (broadcast=0 asks for exactly that shape)" : "");
  };
  if (c.rank() > 2) return mismatch();
  if (exact && c.shape() != target) return mismatch();
  Bias bias{&c};
  const int64_t rows = c.rank() == 2 ? c.dim(0) : 1;
  const int64_t cols = c.rank() >= 1 ? c.dim(c.rank() - 1) : 1;
  if ((rows != m && rows != 1) || (cols != n && cols != 1)) return mismatch();
  bias.col_stride = cols == 1 ? 0 : 1;
  bias.row_stride = rows == 1 ? 0 : cols;
  return bias;
}

template <class T, class Out> void fill_bias(const Bias& bias, int64_t m, int64_t n, Out* y) {
  const T* c = bias.c->data<T>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) y[i * n + j] = static_cast<Out>(c[i * bias.row_stride + j * bias.col_stride]);
}

struct GemmAttrs {
  float alpha = 1, beta = 1;
  bool trans_a = false, trans_b = false;
  bool c_required = false;  // before opset 11
  bool c_exact = false;     // opset 1-6 with broadcast=0
};

template <class T>
Status run_gemm(const GemmAttrs& g, const Tensor& a, const Tensor& b, const std::optional<Bias>& bias, int64_t m, int64_t n,
                int64_t k, Tensor& out) {
  const int64_t lda = a.dim(1), ldb = b.dim(1);
  const bool use_c = bias.has_value() && g.beta != 0.0f;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    T* y = out.mutable_data<T>();
    if (use_c) fill_bias<T>(*bias, m, n, y);
    gemm(g.trans_a, g.trans_b, m, n, k, static_cast<T>(g.alpha), a.data<T>(), lda, b.data<T>(), ldb,
         use_c ? static_cast<T>(g.beta) : T(0), y, n);
  } else if constexpr (is_half_v<T>) {
    const std::vector<float> fa = to_float(a), fb = to_float(b);
    std::vector<float> y(static_cast<size_t>(m * n));
    if (use_c) fill_bias<T>(*bias, m, n, y.data());
    gemm(g.trans_a, g.trans_b, m, n, k, g.alpha, fa.data(), lda, fb.data(), ldb, use_c ? g.beta : 0.0f, y.data(), n);
    from_float(y.data(), out.mutable_data<T>(), m * n);
  } else {
    T* y = out.mutable_data<T>();
    const bool unit = g.alpha == 1.0f && (g.beta == 1.0f || !use_c);
    if (unit) {
      // Exact integer arithmetic in the common case.
      if (use_c) fill_bias<T>(*bias, m, n, y);
      gemm_reference<T, T>(g.trans_a, g.trans_b, m, n, k, T(1), a.data<T>(), lda, b.data<T>(), ldb, use_c ? T(1) : T(0), y, n);
    } else {
      // Fractional alpha or beta on integers: the product is exact, the
      // scaling goes through double and truncates like a cast.
      gemm_reference<T, T>(g.trans_a, g.trans_b, m, n, k, T(1), a.data<T>(), lda, b.data<T>(), ldb, T(0), y, n);
      std::vector<double> c(static_cast<size_t>(m * n), 0.0);
      if (use_c) fill_bias<T>(*bias, m, n, c.data());
      for (int64_t i = 0; i < m * n; ++i)
        y[i] = static_cast<T>(static_cast<double>(g.alpha) * static_cast<double>(y[i]) + static_cast<double>(g.beta) * c[i]);
    }
  }
  return {};
}

Result<ComputeFn> build_gemm(const KernelInfo& info) {
  GemmAttrs g;
  g.alpha = info.attr_float("alpha", 1.0f);
  g.beta = info.attr_float("beta", 1.0f);
  g.trans_a = info.attr_int("transA", 0) != 0;
  g.trans_b = info.attr_int("transB", 0) != 0;
  g.c_required = info.opset() < 11;
  g.c_exact = info.opset() < 7 && info.attr_int("broadcast", 0) == 0;
  std::optional<Tensor> b_transposed;
  std::shared_ptr<PackedOnFirstUse> packed;
  const Tensor* constant_b = info.constant_input(1);
  if (constant_b != nullptr && constant_b->dtype() == DataType::float32 && info.options().prepack_weights && !g.trans_a &&
      g.alpha == 1.0f)
    packed = std::make_shared<PackedOnFirstUse>(g.trans_b);
  if (!packed && !g.trans_b && constant_b != nullptr && info.options().prepack_weights && transposing_pays(*constant_b))
    b_transposed = transposed_matrix(*constant_b);
  return ComputeFn([g, b_transposed = std::move(b_transposed), packed](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* a, ctx.tensor(0));
    ONNXKIT_ASSIGN(const Tensor* b, ctx.tensor(1));
    if (a->rank() != 2) return make_error("input A must be a matrix (rank 2), got shape {}", shape_to_string(a->shape()));
    if (b->rank() != 2) return make_error("input B must be a matrix (rank 2), got shape {}", shape_to_string(b->shape()));
    if (a->dtype() != b->dtype())
      return make_error("inputs A and B have different element types ({} and {})", to_string(a->dtype()), to_string(b->dtype()));
    const int64_t m = g.trans_a ? a->dim(1) : a->dim(0), k = g.trans_a ? a->dim(0) : a->dim(1);
    const int64_t kb = g.trans_b ? b->dim(1) : b->dim(0), n = g.trans_b ? b->dim(0) : b->dim(1);
    if (k != kb)
      return make_error("inner dimensions differ: A {} with transA={} has {} columns, B {} with transB={} has {} rows",
                        shape_to_string(a->shape()), int(g.trans_a), k, shape_to_string(b->shape()), int(g.trans_b), kb);
    std::optional<Bias> bias;
    if (ctx.has_input(2)) {
      ONNXKIT_ASSIGN(const Tensor* c, ctx.tensor(2));
      if (c->dtype() != a->dtype())
        return make_error("input C has element type {}, A and B have {}", to_string(c->dtype()), to_string(a->dtype()));
      ONNXKIT_ASSIGN(bias, gemm_bias(*c, m, n, g.c_exact));
    } else if (g.c_required) {
      return make_error("input C is missing (it is optional only from opset 11)");
    }
    ONNXKIT_TRY(checked_size({m, n}, "the output"));
    Tensor& out = ctx.output(0, a->dtype(), {m, n});
    // The packed weights take one row of bias per product (or none); the
    // single row stays with gemm(), which reads B once without packing it.
    const bool use_c = bias.has_value() && g.beta != 0.0f;
    const PackedMatMul* weights = nullptr;
    if (packed && a->dtype() == DataType::float32 && m > 1 &&
        (!use_c || (g.beta == 1.0f && bias->row_stride == 0 && bias->col_stride == 1)))
      weights = packed->get(*b);
    if (weights != nullptr) {
      ONNXKIT_ASSIGN(const bool ran,
                     weights->run(m, a->data<float>(), use_c ? bias->c->data<float>() : nullptr, out.mutable_data<float>()));
      if (ran) return {};
    }
    if (b_transposed && a->dtype() == DataType::float32) {
      GemmAttrs transposed = g;
      transposed.trans_b = true;
      return run_gemm<float>(transposed, *a, *b_transposed, bias, m, n, k, out);
    }
    return dispatch_numeric(a->dtype(), [&]<class T>() -> Status { return run_gemm<T>(g, *a, *b, bias, m, n, k, out); });
  });
}

template <class T> void run_matmul(const MatMulPlan& plan, const Tensor& a, const Tensor& b, Tensor& out) {
  const int64_t n = plan.n, k = plan.k;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* pc = out.mutable_data<T>();
    for_each_matmul(plan, [&](int64_t, int64_t ao, int64_t bo, int64_t co, int64_t rows) {
      gemm(false, false, rows, n, k, T(1), pa + ao, k, pb + bo, n, T(0), pc + co, n);
    });
  } else if constexpr (is_half_v<T>) {
    const std::vector<float> fa = to_float(a), fb = to_float(b);
    std::vector<float> fc(static_cast<size_t>(out.numel()));
    for_each_matmul(plan, [&](int64_t, int64_t ao, int64_t bo, int64_t co, int64_t rows) {
      gemm(false, false, rows, n, k, 1.0f, fa.data() + ao, k, fb.data() + bo, n, 0.0f, fc.data() + co, n);
    });
    from_float(fc.data(), out.mutable_data<T>(), out.numel());
  } else {
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* pc = out.mutable_data<T>();
    for_each_matmul(plan, [&](int64_t, int64_t ao, int64_t bo, int64_t co, int64_t rows) {
      gemm_reference<T, T>(false, false, rows, n, k, T(1), pa + ao, k, pb + bo, n, T(0), pc + co, n);
    });
  }
}

Status compute_matmul(KernelContext& ctx) {
  ONNXKIT_ASSIGN(const Tensor* a, ctx.tensor(0));
  ONNXKIT_ASSIGN(const Tensor* b, ctx.tensor(1));
  if (a->dtype() != b->dtype())
    return make_error("inputs A and B have different element types ({} and {})", to_string(a->dtype()), to_string(b->dtype()));
  ONNXKIT_ASSIGN(MatMulPlan plan, plan_matmul(a->shape(), b->shape()));
  Tensor& out = ctx.output(0, a->dtype(), plan.out);
  return dispatch_numeric(a->dtype(), [&]<class T>() -> Status {
    run_matmul<T>(plan, *a, *b, out);
    return {};
  });
}

// MatMul's B when it is a constant float matrix: transposed once at build
// when that pays (transposing_pays) and copies are allowed
// (SessionOptions::prepack_weights), else read where it is. Where the copy
// pays, oneDNN's blocked layout (packed_matmul.h) serves better than the transpose,
// for the same memory: its kernels read it without repacking B on every
// call, and take the bias and a GELU on each tile of the product while it
// is in registers instead of in a pass over the whole product after it
// (GPT-2's and ViT's first MLP layers, 1024 and 3072 wide: 0.30 against
// 0.34 ms, 2.3 against 2.8 for the product alone).
class ConstantWeights {
 public:
  static bool applies(const Tensor& b) { return b.dtype() == DataType::float32 && b.rank() == 2; }

  ConstantWeights(const Tensor& b, bool may_copy) : ConstantWeights(b, Copy{may_copy && transposing_pays(b)}) {}

  struct Product {
    Tensor* out;
    bool finished;  // the bias and GELU asked for are applied
  };

  // Output 0 = input 0 times B, then + bias (one per column, when not
  // null) and GELU (when `gelu`) where the packed weights take them.
  Result<Product> multiply(KernelContext& ctx, const float* bias = nullptr, bool gelu = false) const {
    ONNXKIT_ASSIGN(const Tensor* a, ctx.tensor(0));
    if (a->dtype() != DataType::float32) return make_error("input A has element type {}, B has float", to_string(a->dtype()));
    ONNXKIT_ASSIGN(MatMulPlan plan, plan_matmul(a->shape(), shape_));
    Tensor& out = ctx.output(0, DataType::float32, plan.out);
    const float* pa = a->data<float>();
    float* y = out.mutable_data<float>();
    // A's matrices lie one after the other: one product of all their rows.
    // A single row reads B where it lies (gemm) rather than packed.
    const int64_t all_rows = plan.k > 0 ? a->numel() / plan.k : 0;
    if (packed_ && all_rows > 1 && a->rank() >= 2) {
      ONNXKIT_ASSIGN(const bool ran, packed_->run(all_rows, pa, bias, y, gelu));
      if (ran) return Product{&out, true};
    }
    for_each_matmul(plan, [&](int64_t, int64_t ao, int64_t, int64_t co, int64_t rows) {
      gemm(false, transposed_, rows, plan.n, plan.k, 1.0f, pa + ao, plan.k, weights_.data<float>(), transposed_ ? plan.k : plan.n,
           0.0f, y + co, plan.n);
    });
    return Product{&out, bias == nullptr && !gelu};
  }

 private:
  struct Copy {
    bool pays;  // a copy of B pays (transposing_pays) and is allowed
  };
  ConstantWeights(const Tensor& b, Copy copy)
      : shape_(b.shape()),
        packed_(copy.pays ? PackedMatMul::create(b, false) : nullptr),
        transposed_(!packed_ && copy.pays),
        weights_(transposed_ ? transposed_matrix(b) : b) {}

  Shape shape_;
  std::shared_ptr<const PackedMatMul> packed_;
  bool transposed_;
  Tensor weights_;
};

Result<ComputeFn> build_matmul(const KernelInfo& info) {
  const Tensor* b = info.constant_input(1);
  if (b == nullptr || !ConstantWeights::applies(*b)) return ComputeFn(compute_matmul);
  return ComputeFn([product = ConstantWeights(*b, info.options().prepack_weights)](KernelContext& ctx) -> Status {
    ONNXKIT_TRY(product.multiply(ctx));
    return {};
  });
}

// A zero point of MatMulInteger, expanded to one value per row of every
// matrix of its operand (or per column, for B).
Result<std::vector<int32_t>> expand_zero_point(KernelContext& ctx, size_t index, const Tensor& operand, const MatMulPlan& plan,
                                               bool rows) {
  const char* name = index == 2 ? "a_zero_point" : "b_zero_point";
  const char* op_name = index == 2 ? "A" : "B";
  const Shape& s = operand.shape();
  const int64_t r = static_cast<int64_t>(s.size());
  const int64_t matrices = r > 2 ? shape_size(Shape(s.begin(), s.end() - 2)) : 1;
  const int64_t per = rows ? plan.m : plan.n;
  std::vector<int32_t> out(static_cast<size_t>(matrices * per), 0);
  if (!ctx.has_input(index)) return out;
  ONNXKIT_ASSIGN(const Tensor* z, ctx.tensor(index));
  if (z->dtype() != operand.dtype())
    return make_error("input {} has element type {}, {} has {}", name, to_string(z->dtype()), op_name,
                      to_string(operand.dtype()));
  // Where each expanded entry reads z from.
  std::function<int64_t(int64_t)> source;
  if (z->numel() == 1) {
    source = [](int64_t) { return int64_t(0); };
  } else if (z->rank() == 1 && z->dim(0) == per) {
    source = [per](int64_t i) { return i % per; };
  } else {
    // The full form: A's shape with the last dim 1, or B's with the row dim 1.
    Shape expected = s;
    if (r >= 2) expected[rows ? r - 1 : r - 2] = 1;
    if (r < 2 || z->shape() != expected)
      return make_error("input {} has shape {}; expected a scalar, [{}] (one per {}){}", name, shape_to_string(z->shape()), per,
                        rows ? "row of A" : "column of B", r >= 2 ? " or " + shape_to_string(expected) : std::string());
    source = [](int64_t i) { return i; };
  }
  const int64_t count = static_cast<int64_t>(out.size());
  if (z->dtype() == DataType::uint8) {
    for (int64_t i = 0; i < count; ++i) out[i] = z->data<uint8_t>()[source(i)];
  } else {
    for (int64_t i = 0; i < count; ++i) out[i] = z->data<int8_t>()[source(i)];
  }
  return out;
}

bool is_8bit(DataType t) { return t == DataType::int8 || t == DataType::uint8; }

template <class A, class B>
void run_matmul_integer(const MatMulPlan& plan, const Tensor& a, const Tensor& b, const std::vector<int32_t>& za,
                        const std::vector<int32_t>& zb, Tensor& out) {
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  int32_t* pc = out.mutable_data<int32_t>();
  const int64_t m = plan.m, n = plan.n, k = plan.k;
  for_each_matmul(plan, [&](int64_t e, int64_t ao, int64_t bo, int64_t co, int64_t rows) {
    gemm_integer<A, B>(rows, n, k, pa + ao, k, za.data() + plan.a_batch[e] * m, pb + bo, n, zb.data() + plan.b_batch[e] * n,
                       pc + co, n);
  });
}

Status compute_matmul_integer(KernelContext& ctx) {
  ONNXKIT_ASSIGN(const Tensor* a, ctx.tensor(0));
  ONNXKIT_ASSIGN(const Tensor* b, ctx.tensor(1));
  if (!is_8bit(a->dtype())) return make_error("input A must be int8 or uint8, got {}", to_string(a->dtype()));
  if (!is_8bit(b->dtype())) return make_error("input B must be int8 or uint8, got {}", to_string(b->dtype()));
  ONNXKIT_ASSIGN(MatMulPlan plan, plan_matmul(a->shape(), b->shape()));
  ONNXKIT_ASSIGN(std::vector<int32_t> za, expand_zero_point(ctx, 2, *a, plan, true));
  ONNXKIT_ASSIGN(std::vector<int32_t> zb, expand_zero_point(ctx, 3, *b, plan, false));
  Tensor& out = ctx.output(0, DataType::int32, plan.out);
  const bool ua = a->dtype() == DataType::uint8, ub = b->dtype() == DataType::uint8;
  if (ua && ub) run_matmul_integer<uint8_t, uint8_t>(plan, *a, *b, za, zb, out);
  else if (ua) run_matmul_integer<uint8_t, int8_t>(plan, *a, *b, za, zb, out);
  else if (ub) run_matmul_integer<int8_t, uint8_t>(plan, *a, *b, za, zb, out);
  else run_matmul_integer<int8_t, int8_t>(plan, *a, *b, za, zb, out);
  return {};
}

}  // namespace

KernelFactory matmul_bias_kernel(Tensor weights, Tensor bias, LinearThen then) {
  return make_kernel([weights = std::move(weights), bias = std::move(bias), then](const KernelInfo& info) -> Result<ComputeFn> {
    if (!ConstantWeights::applies(weights) || bias.dtype() != DataType::float32 || bias.numel() != weights.dim(1))
      return make_error(
          "the fused MatMul+Add takes a float matrix B and one float bias per column, got B {} {} and "
          "bias {} {}",
          to_string(weights.dtype()), shape_to_string(weights.shape()), to_string(bias.dtype()), shape_to_string(bias.shape()));
    return ComputeFn(
        [product = ConstantWeights(weights, info.options().prepack_weights), bias, then](KernelContext& ctx) -> Status {
          const bool gelu = then == LinearThen::gelu, softmax = then == LinearThen::softmax;
          ONNXKIT_ASSIGN(const ConstantWeights::Product p, product.multiply(ctx, bias.data<float>(), gelu));
          if (p.finished && !softmax) return {};
          // One pass over the product while it is still in cache: + bias,
          // then GELU or the softmax, row by row (a row of a recognizer's
          // 6625 classes fits in the L1 cache).
          float* y = p.out->mutable_data<float>();
          const float* row_bias = bias.data<float>();
          const int64_t n = bias.numel(), rows = n == 0 ? 0 : p.out->numel() / n;
          parallel_ranges(rows, rows * n >= kParallelWork, [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
              float* row = y + r * n;
              if (!p.finished) {
                if (gelu) {
                  gelu_floats(row, row_bias, row, n);
                } else {
                  for (int64_t j = 0; j < n; ++j) row[j] += row_bias[j];
                }
              }
              if (softmax) softmax_floats(row, row, n);
            }
          });
          return {};
        });
  });
}

namespace {

// How transpose(x, perm) reads x: its shape and the stride of each of its
// dims in x's elements.
struct StridedView {
  Shape shape;
  std::vector<int64_t> strides;
};

// `what` names x in errors.
Result<StridedView> transposed_view(const Shape& x, const std::vector<int64_t>& perm, std::string_view what) {
  const std::vector<int64_t> contiguous = contiguous_strides(x);
  if (perm.empty()) return StridedView{x, contiguous};
  auto normalized = normalize_perm(perm, x.size());
  if (!normalized.ok()) return make_error("the Transpose of {}: {}", what, normalized.error().message());
  StridedView v{Shape(x.size()), std::vector<int64_t>(x.size())};
  for (size_t i = 0; i < x.size(); ++i) {
    const auto axis = static_cast<size_t>((*normalized)[i]);
    v.shape[i] = x[axis];
    v.strides[i] = contiguous[axis];
  }
  return v;
}

// Element offset of matrix `index` (row-major over the dims before the last
// two) of a view.
int64_t matrix_offset(const StridedView& v, int64_t index) {
  int64_t offset = 0;
  for (size_t d = v.shape.size() - 2; d-- > 0;) {
    offset += (index % v.shape[d]) * v.strides[d];
    index /= v.shape[d];
  }
  return offset;
}

// One operand's matrices as gemm reads them: row-major with leading
// dimension ld, transposed or not; none when neither of the last two dims
// is contiguous.
struct GemmOperand {
  bool transposed = false;
  int64_t ld = 0;
};
std::optional<GemmOperand> as_gemm_operand(const StridedView& v) {
  const size_t r = v.shape.size();
  const int64_t row = v.strides[r - 2], col = v.strides[r - 1];
  if (col == 1 || v.shape[r - 1] == 1) return GemmOperand{false, std::max<int64_t>({row, v.shape[r - 1], 1})};
  if (row == 1 || v.shape[r - 2] == 1) return GemmOperand{true, std::max<int64_t>({col, v.shape[r - 2], 1})};
  return std::nullopt;
}

// How errors name an operand: "Transpose(A)" when it goes through one.
std::string operand_name(const std::vector<int64_t>& perm, const char* name) {
  return perm.empty() ? std::string(name) : fmt::format("Transpose({})", name);
}

// The plain way, for what the strided one does not take (vectors, other
// element types): materialize each transpose.
Status transposed_matmul_by_copies(KernelContext& ctx, const TransposedMatMul& spec, const Tensor& a, const Tensor& b) {
  auto copy = [](const Tensor& x, const StridedView& v) {
    Tensor t(x.dtype(), v.shape);
    if (t.numel() > 0) copy_strided(x, 0, v.strides, t);
    return t;
  };
  ONNXKIT_ASSIGN(StridedView va, transposed_view(a.shape(), spec.a_perm, "A"));
  ONNXKIT_ASSIGN(StridedView vb, transposed_view(b.shape(), spec.b_perm, "B"));
  const Tensor ta = copy(a, va), tb = copy(b, vb);
  ONNXKIT_ASSIGN(MatMulPlan plan,
                 plan_matmul(ta.shape(), tb.shape(), operand_name(spec.a_perm, "A"), operand_name(spec.b_perm, "B")));
  Tensor product(a.dtype(), plan.out);
  ONNXKIT_TRY(dispatch_numeric(a.dtype(), [&]<class T>() -> Status {
    run_matmul<T>(plan, ta, tb, product);
    if (spec.alpha == 1.0f) return {};
    if constexpr (std::is_floating_point_v<T> || is_half_v<T>) {
      T* p = product.mutable_data<T>();
      for (int64_t i = 0; i < product.numel(); ++i) p[i] = static_cast<T>(static_cast<float>(p[i]) * spec.alpha);
      return {};
    } else {
      return make_error("the product of {} operands cannot be scaled by {}", to_string(a.dtype()), spec.alpha);
    }
  }));
  ONNXKIT_ASSIGN(StridedView vy, transposed_view(product.shape(), spec.y_perm, "the product"));
  Tensor& y = ctx.output(0, a.dtype(), vy.shape);
  if (y.numel() > 0) copy_strided(product, 0, vy.strides, y);
  return {};
}

}  // namespace

KernelFactory transposed_matmul_kernel(TransposedMatMul spec) {
  return make_kernel([spec = std::move(spec)](KernelContext& ctx) -> Status {
    ONNXKIT_ASSIGN(const Tensor* a, ctx.tensor(0));
    ONNXKIT_ASSIGN(const Tensor* b, ctx.tensor(1));
    if (a->dtype() != b->dtype())
      return make_error("inputs A and B have different element types ({} and {})", to_string(a->dtype()), to_string(b->dtype()));
    if (a->dtype() != DataType::float32 || a->rank() < 2 || b->rank() < 2) return transposed_matmul_by_copies(ctx, spec, *a, *b);
    ONNXKIT_ASSIGN(StridedView va, transposed_view(a->shape(), spec.a_perm, "A"));
    ONNXKIT_ASSIGN(StridedView vb, transposed_view(b->shape(), spec.b_perm, "B"));
    const std::optional<GemmOperand> ga = as_gemm_operand(va), gb = as_gemm_operand(vb);
    if (!ga || !gb) return transposed_matmul_by_copies(ctx, spec, *a, *b);
    ONNXKIT_ASSIGN(MatMulPlan plan,
                   plan_matmul(va.shape, vb.shape, operand_name(spec.a_perm, "A"), operand_name(spec.b_perm, "B")));
    // The product's matrices as they lie in the output: the output holds
    // transpose(product, y_perm), so the product's dim y_perm[d] has the
    // output's stride d.
    const size_t r = plan.out.size();
    std::vector<int64_t> y_perm(r);
    std::iota(y_perm.begin(), y_perm.end(), 0);
    if (!spec.y_perm.empty()) {
      auto normalized = normalize_perm(spec.y_perm, r);
      if (!normalized.ok()) return make_error("the Transpose of the product: {}", normalized.error().message());
      y_perm = std::move(normalized).value();
    }
    Shape y_shape(r);
    StridedView vy{plan.out, std::vector<int64_t>(r)};
    for (size_t d = 0; d < r; ++d) y_shape[d] = plan.out[static_cast<size_t>(y_perm[d])];
    const std::vector<int64_t> out_strides = contiguous_strides(y_shape);
    for (size_t d = 0; d < r; ++d) vy.strides[static_cast<size_t>(y_perm[d])] = out_strides[d];
    if (vy.strides[r - 1] != 1) return transposed_matmul_by_copies(ctx, spec, *a, *b);  // the rows are scattered
    Tensor& y = ctx.output(0, DataType::float32, y_shape);
    const float* pa = a->data<float>();
    const float* pb = b->data<float>();
    float* py = y.mutable_data<float>();
    const int64_t m = plan.m, n = plan.n, k = plan.k, ldc = std::max<int64_t>(vy.strides[r - 2], n);
    auto product = [&](int64_t e) {
      gemm(ga->transposed, gb->transposed, m, n, k, spec.alpha, pa + matrix_offset(va, plan.a_batch[e]), ga->ld,
           pb + matrix_offset(vb, plan.b_batch[e]), gb->ld, 0.0f, py + matrix_offset(vy, e), ldc);
    };
    parallel_for(plan.batch, batch_across_threads(plan), product);
    return {};
  });
}

void register_matmul(KernelRegistry& r) {
  r.add("", "Gemm", 1, kLatestOpset, make_kernel(build_gemm));
  r.add("", "MatMul", 1, kLatestOpset, make_kernel(build_matmul));
  r.add("", "MatMulInteger", 10, kLatestOpset, make_kernel(compute_matmul_integer));
}

}  // namespace onnxkit::runtime::math
