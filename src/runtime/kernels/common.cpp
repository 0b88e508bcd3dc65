#include "runtime/kernels/common.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "runtime/broadcast.h"
#include "runtime/kernels/cpu_clones.h"
#include "runtime/parallel.h"

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace onnxkit::runtime {

Tensor to_float32(const Tensor& t) {
  if (t.dtype() == DataType::float32) return t;
  Tensor f(DataType::float32, t.shape());
  float* out = f.mutable_data<float>();
  const int64_t n = t.numel();
  (void)dispatch_float(t.dtype(), [&]<class T>() -> Status {
    const T* in = t.data<T>();
    parallel_ranges(n, n >= kParallelWork, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = static_cast<float>(in[i]);
    });
    return {};
  });
  return f;
}

void from_float32(const Tensor& f, Tensor& out) {
  const float* in = f.data<float>();
  const int64_t n = out.numel();
  (void)dispatch_float(out.dtype(), [&]<class T>() -> Status {
    T* p = out.mutable_data<T>();
    parallel_ranges(n, n >= kParallelWork, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) p[i] = static_cast<T>(in[i]);
    });
    return {};
  });
}

Status check_attribute_range(const std::vector<int64_t>& v, std::string_view name) {
  for (int64_t x : v)
    if (x > kMaxAttributeValue) return make_error("{} has a value above {}: {}", name, kMaxAttributeValue, shape_to_string(v));
  return {};
}

Result<int64_t> normalize_axis(int64_t axis, int64_t rank, std::string_view what, std::string_view operand) {
  if (axis < -rank || axis >= rank)
    return make_error("{} {} is out of range for {} of rank {} (accepted: [{}, {}])", what, axis, operand, rank, -rank, rank - 1);
  return axis < 0 ? axis + rank : axis;
}

Result<std::vector<int64_t>> normalize_perm(std::vector<int64_t> perm, size_t rank) {
  if (perm.empty()) {
    perm.resize(rank);
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  if (perm.size() != rank) return make_error("perm has {} entries for an input of rank {}", perm.size(), rank);
  std::vector<bool> seen(rank, false);
  for (int64_t& p : perm) {
    ONNXKIT_ASSIGN(p, normalize_axis(p, static_cast<int64_t>(rank)));
    if (seen[static_cast<size_t>(p)]) return make_error("perm repeats axis {}", p);
    seen[static_cast<size_t>(p)] = true;
  }
  return perm;
}

Result<std::vector<int64_t>> read_int64s(const Tensor& tensor) {
  if (tensor.dtype() == DataType::int64)
    return std::vector<int64_t>(tensor.values<int64_t>().begin(), tensor.values<int64_t>().end());
  if (tensor.dtype() == DataType::int32)
    return std::vector<int64_t>(tensor.values<int32_t>().begin(), tensor.values<int32_t>().end());
  return make_error("expected an int64 (or int32) tensor, got {}", to_string(tensor.dtype()));
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

Result<int64_t> checked_size(const Shape& shape, std::string_view what) {
  auto n = checked_shape_size(shape);
  if (!n.ok()) return n.error().in(what);
  return n;
}

int64_t dims_product(const Shape& shape, size_t first, size_t last) {
  int64_t n = 1;
  for (size_t i = first; i < last && i < shape.size(); ++i) n *= shape[i];
  return n;
}

Result<std::vector<double>> read_doubles(const Tensor& tensor, std::string_view name) {
  std::vector<double> out(static_cast<size_t>(tensor.numel()));
  Status s = dispatch_float(tensor.dtype(), [&]<class T>() -> Status {
    const T* p = tensor.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(p[i]);
    return {};
  });
  if (!s.ok()) return s.error().in(name);
  return out;
}

Result<int64_t> read_int_scalar(KernelContext& ctx, size_t i, std::string_view name) {
  ONNXKIT_ASSIGN(const Tensor* t, ctx.tensor(i));
  if (t->numel() != 1) return make_error("{} must be a scalar, got shape {}", name, shape_to_string(t->shape()));
  Result<std::vector<int64_t>> v = read_int64s(*t);
  if (!v.ok()) return v.error().in(name);
  return v.value()[0];
}

Result<double> read_float_scalar(KernelContext& ctx, size_t i, std::string_view name) {
  ONNXKIT_ASSIGN(const Tensor* t, ctx.tensor(i));
  if (t->numel() != 1) return make_error("{} must be a scalar, got shape {}", name, shape_to_string(t->shape()));
  ONNXKIT_ASSIGN(std::vector<double> v, read_doubles(*t, name));
  return v[0];
}

namespace {

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ONNXKIT_TRANSPOSE_AVX2 1
// out[k * out_stride + r] = in[r * in_stride + k] for r, k < 8, in registers.
__attribute__((target("avx2"))) void transpose_8x8_avx2(const float* in, int64_t in_stride, float* out, int64_t out_stride) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(in + i * in_stride);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(out + i * out_stride, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(out + (i + 4) * out_stride, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}
#endif

// dst[a * dst_ld + b] = src[b * src_ld + a] for a < rows, b < cols: one
// tile, small enough that the source lines it reads stay in L1 while all
// their elements are taken. Four-byte elements go eight by eight through
// AVX2 registers where the CPU has them, then four by four through SSE
// ones (bit-exact moves, whatever the type).
template <class T> void transpose_tile(const T* src, int64_t src_ld, T* dst, int64_t dst_ld, int64_t rows, int64_t cols) {
  int64_t a = 0;
#if defined(ONNXKIT_TRANSPOSE_AVX2)
  if constexpr (sizeof(T) == 4) {
    if (cpu_has_avx2_fma()) {
      for (; a + 8 <= rows; a += 8) {
        int64_t b = 0;
        for (; b + 8 <= cols; b += 8)
          transpose_8x8_avx2(reinterpret_cast<const float*>(src + b * src_ld + a), src_ld,
                             reinterpret_cast<float*>(dst + a * dst_ld + b), dst_ld);
        for (; b < cols; ++b)
          for (int64_t k = 0; k < 8; ++k) dst[(a + k) * dst_ld + b] = src[b * src_ld + a + k];
      }
    }
  }
#endif
#if defined(__SSE2__)
  if constexpr (sizeof(T) == 4) {
    for (; a + 4 <= rows; a += 4) {
      int64_t b = 0;
      for (; b + 4 <= cols; b += 4) {
        const auto* s = reinterpret_cast<const float*>(src + b * src_ld + a);
        __m128 r0 = _mm_loadu_ps(s), r1 = _mm_loadu_ps(s + src_ld), r2 = _mm_loadu_ps(s + 2 * src_ld),
               r3 = _mm_loadu_ps(s + 3 * src_ld);
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        auto* d = reinterpret_cast<float*>(dst + a * dst_ld + b);
        _mm_storeu_ps(d, r0);
        _mm_storeu_ps(d + dst_ld, r1);
        _mm_storeu_ps(d + 2 * dst_ld, r2);
        _mm_storeu_ps(d + 3 * dst_ld, r3);
      }
      for (; b < cols; ++b)
        for (int64_t k = 0; k < 4; ++k) dst[(a + k) * dst_ld + b] = src[b * src_ld + a + k];
    }
  }
#endif
  for (; a < rows; ++a)
    for (int64_t b = 0; b < cols; ++b) dst[a * dst_ld + b] = src[b * src_ld + a];
}

// copy_strided where the output's last dim is not the source's contiguous
// one but another output dim is: a batch of matrix transposes (NCHW to
// NHWC and back, attention heads split or merged). Element by element each
// read lands on another cache line; in tiles the lines a tile reads serve
// all their elements. Shared among the threads when large. False when the
// copy is not of that form.
}  // namespace

void transpose_floats(const float* src, int64_t src_ld, float* dst, int64_t dst_ld, int64_t rows, int64_t cols) {
  transpose_tile(src, src_ld, dst, dst_ld, rows, cols);
}

namespace {

template <class T> bool copy_transposing(const T* src, const std::vector<int64_t>& strides, T* dst, const Shape& shape) {
  // Most copies (Slice, Split, Concat's parts) read their innermost dim in
  // order: no transposes there, and nothing to build to find that out.
  size_t inner = shape.size();
  while (inner > 0 && shape[inner - 1] == 1) --inner;
  if (inner == 0 || strides[inner - 1] == 1) return false;
  struct Dim {
    int64_t size, from, to;  // elements; stride in the source; stride in the output
  };
  // Innermost first, dims of one element dropped, neighbours the source
  // also keeps together merged.
  std::vector<Dim> dims;
  int64_t to = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1) {
      if (!dims.empty() && dims.back().from * dims.back().size == strides[d]) {
        dims.back().size *= shape[d];
      } else {
        dims.push_back({shape[d], strides[d], to});
      }
    }
    to *= shape[d];
  }
  if (dims.size() < 2 || dims[0].from == 1) return false;
  const auto row = std::find_if(dims.begin() + 1, dims.end(), [](const Dim& d) { return d.from == 1; });
  if (row == dims.end()) return false;
  const Dim rows = *row, cols = dims[0];
  if (rows.size < 4 || cols.size < 4) return false;
  dims.erase(row);
  dims.erase(dims.begin());  // the outer dims remain
  constexpr int64_t kStrip = 16, kCols = 64;
  const int64_t strips = (rows.size + kStrip - 1) / kStrip;
  int64_t matrices = 1;
  for (const Dim& d : dims) matrices *= d.size;
  const int64_t items = matrices * strips;
  parallel_ranges(items, matrices * rows.size * cols.size >= kParallelWork, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      int64_t from = 0, out = 0;
      for (int64_t rest = item / strips; const Dim& d : dims) {
        from += (rest % d.size) * d.from;
        out += (rest % d.size) * d.to;
        rest /= d.size;
      }
      const int64_t a0 = (item % strips) * kStrip, a_count = std::min(kStrip, rows.size - a0);
      for (int64_t b0 = 0; b0 < cols.size; b0 += kCols)
        transpose_tile(src + from + a0 + b0 * cols.from, cols.from, dst + out + a0 * rows.to + b0, rows.to, a_count,
                       std::min(kCols, cols.size - b0));
    }
  });
  return true;
}

template <class T> void copy_strided_as(const T* src, const std::vector<int64_t>& strides, T* dst, const Shape& shape) {
  if constexpr (std::is_trivially_copyable_v<T>)
    if (copy_transposing(src, strides, dst, shape)) return;
  for_each_strided_run<1>(shape, {strides},
                          [&](int64_t o, const std::array<int64_t, 1>& off, const std::array<int64_t, 1>& step, int64_t n) {
                            const T* s = src + off[0];
                            T* d = dst + o;
                            if (step[0] == 1) {
                              if constexpr (std::is_trivially_copyable_v<T>) {
                                std::memcpy(d, s, static_cast<size_t>(n) * sizeof(T));
                              } else {
                                for (int64_t i = 0; i < n; ++i) d[i] = s[i];
                              }
                            } else {
                              for (int64_t i = 0; i < n; ++i) d[i] = s[i * step[0]];
                            }
                          });
}

struct Bytes16 {
  uint64_t lo, hi;
};

}  // namespace

void copy_strided(const Tensor& src, int64_t offset, const std::vector<int64_t>& strides, Tensor& out) {
  switch (src.dtype() == DataType::string ? 0 : element_size(src.dtype())) {
    case 0: copy_strided_as(src.data<std::string>() + offset, strides, out.mutable_data<std::string>(), out.shape()); break;
    case 1: copy_strided_as(src.data<uint8_t>() + offset, strides, out.mutable_data<uint8_t>(), out.shape()); break;
    case 2: copy_strided_as(src.data<uint16_t>() + offset, strides, out.mutable_data<uint16_t>(), out.shape()); break;
    case 4: copy_strided_as(src.data<uint32_t>() + offset, strides, out.mutable_data<uint32_t>(), out.shape()); break;
    case 8: copy_strided_as(src.data<uint64_t>() + offset, strides, out.mutable_data<uint64_t>(), out.shape()); break;
    default: copy_strided_as(src.data<Bytes16>() + offset, strides, out.mutable_data<Bytes16>(), out.shape()); break;
  }
}

void copy_elements(const Tensor& src, int64_t src_offset, Tensor& dst, int64_t dst_offset, int64_t count) {
  if (count <= 0) return;
  if (src.dtype() == DataType::string) {
    for (int64_t i = 0; i < count; ++i) dst.mutable_data<std::string>()[dst_offset + i] = src.data<std::string>()[src_offset + i];
    return;
  }
  size_t es = element_size(src.dtype());
  std::memcpy(static_cast<char*>(dst.mutable_raw()) + dst_offset * es, static_cast<const char*>(src.raw()) + src_offset * es,
              static_cast<size_t>(count) * es);
}

}  // namespace onnxkit::runtime
