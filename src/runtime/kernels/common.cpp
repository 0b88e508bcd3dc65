#include "runtime/kernels/common.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "runtime/broadcast.h"
#include "runtime/parallel.h"

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

template <class T> void copy_strided_as(const T* src, const std::vector<int64_t>& strides, T* dst, const Shape& shape) {
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
