#pragma once
// The kernel toolkit: what every family uses, in one copy. Element types
// and the type arithmetic happens in, the limits on sizes and attribute
// values, axes, integer lists from tensors, element copies that do not care
// about the element type, and one dispatch for floating-point kernels.

#include <cstdint>
#include <string_view>
#include <type_traits>
#include <vector>

#include "runtime/kernel.h"

namespace onnxkit::runtime {

// --- element types --------------------------------------------------------------

template <class T> constexpr bool is_half_v = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// The type arithmetic happens in: float for the 16-bit floats, else T.
template <class T> using compute_t = std::conditional_t<is_half_v<T>, float, T>;

// For kernels that only move elements (Gather, Pad...): every element type,
// the low-precision ones as their one byte of code (uint8_t), which moving
// keeps whatever the format.
template <class F> Status dispatch_movable(DataType type, F&& f) {
  if (is_low_precision(type)) return f.template operator()<uint8_t>();
  return dispatch_all(type, std::forward<F>(f));
}

// A float tensor converted to float32 and back, for the 16-bit types that
// compute through float.
Tensor to_float32(const Tensor& t);
void from_float32(const Tensor& f, Tensor& out);

// Runs a floating-point computation in the type it is written for:
// f.template operator()<C>(inputs, y) with C = double for float64 and float
// for the others. The 16-bit floats go through float32 copies of `inputs`
// (a null, an absent optional input, stays null) and of `y`, which gets the
// result back after. Any other element type of `y` is an error.
template <class F> Status compute_in_float(const std::vector<const Tensor*>& inputs, Tensor& y, F&& f) {
  switch (y.dtype()) {
    case DataType::float32: return f.template operator()<float>(inputs, y);
    case DataType::float64: return f.template operator()<double>(inputs, y);
    case DataType::float16:
    case DataType::bfloat16: {
      std::vector<Tensor> wide;
      wide.reserve(inputs.size());
      std::vector<const Tensor*> args;
      for (const Tensor* t : inputs) {
        if (t != nullptr) wide.push_back(to_float32(*t));
        args.push_back(t != nullptr ? &wide.back() : nullptr);
      }
      Tensor yf(DataType::float32, y.shape());
      ONNXKIT_TRY(f.template operator()<float>(args, yf));
      from_float32(yf, y);
      return {};
    }
    default: return make_error("element type {} is not supported here (floating point only)", to_string(y.dtype()));
  }
}

// --- limits ---------------------------------------------------------------------

// Work (elements touched) below which a kernel stays on one thread.
inline constexpr int64_t kParallelWork = 1 << 15;

// checked_shape_size (tensor.h: negative dims, kMaxElements) with the error
// naming `what`, for a kernel that sizes a buffer or loop before it asks
// for its output (whose shape KernelContext::output checks in any case).
Result<int64_t> checked_size(const Shape& shape, std::string_view what);

// Attribute and scalar-input values that become dims or offsets (pads,
// strides, sizes, lengths...) above this are refused, so that the index
// arithmetic built on them cannot overflow.
inline constexpr int64_t kMaxAttributeValue = int64_t{1} << 31;

// An error naming `name` ("attribute pads", "image_shape") when a value of
// `v` is above kMaxAttributeValue.
Status check_attribute_range(const std::vector<int64_t>& v, std::string_view name);

// --- axes and integer lists -----------------------------------------------------

// `axis` in [-rank, rank) made non-negative; otherwise an error naming it
// (`what`) and the tensor it indexes (`operand`), e.g. "axis 2 is out of
// range for input data of rank 2 (accepted: [-2, 1])".
Result<int64_t> normalize_axis(int64_t axis, int64_t rank, std::string_view what = "axis", std::string_view operand = "a tensor");

// A Transpose's perm for an input of `rank`: empty means reversed; entries
// may be negative; an error when one is out of range or repeated.
Result<std::vector<int64_t>> normalize_perm(std::vector<int64_t> perm, size_t rank);

// The values of an int32 or int64 tensor (shapes, axes, repeats, indices).
Result<std::vector<int64_t>> read_int64s(const Tensor& tensor);

// The elements of a floating-point tensor (any of the four float types) as
// doubles, or an error naming `name`: for parameters, boxes and probabilities
// that kernels read whatever their type.
Result<std::vector<double>> read_doubles(const Tensor& tensor, std::string_view name);

// The product of dims [first, last) of `shape`.
int64_t dims_product(const Shape& shape, size_t first, size_t last);

// The one value of scalar (or one-element) input i: an int32/int64 one, or a
// floating-point one; else an error naming `name`.
Result<int64_t> read_int_scalar(KernelContext& ctx, size_t i, std::string_view name);
Result<double> read_float_scalar(KernelContext& ctx, size_t i, std::string_view name);

// Row-major strides of a shape (or of any list of dims), in elements.
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);

// out[i] = src[offset + sum(index_d * strides_d)] over out's shape, for any
// element type (strings included).
void copy_strided(const Tensor& src, int64_t offset, const std::vector<int64_t>& strides, Tensor& out);

// dst[a * dst_ld + b] = src[b * src_ld + a] for a < rows, b < cols, in
// vector registers: one tile, small enough to stay in L1 (the caller tiles).
void transpose_floats(const float* src, int64_t src_ld, float* dst, int64_t dst_ld, int64_t rows, int64_t cols);

// Copies `count` elements between tensors of the same type.
void copy_elements(const Tensor& src, int64_t src_offset, Tensor& dst, int64_t dst_offset, int64_t count);

}  // namespace onnxkit::runtime
