#pragma once
// Small helpers every kernel family uses: axes, integer lists from tensors,
// and element copies that do not care about the element type.

#include <cstdint>
#include <string_view>
#include <vector>

#include "runtime/kernel.h"

namespace onnxkit::runtime {

// `axis` in [-rank, rank) made non-negative, or an error naming it.
Result<int64_t> normalize_axis(int64_t axis, int64_t rank);

// A Transpose's perm for an input of `rank`: empty means reversed; entries
// may be negative; an error when one is out of range or repeated.
Result<std::vector<int64_t>> normalize_perm(std::vector<int64_t> perm, size_t rank);

// The values of an int32 or int64 tensor (shapes, axes, repeats, indices).
Result<std::vector<int64_t>> read_int64s(const Tensor& tensor);

// The elements of a floating-point tensor (any of the four float types) as
// doubles, or an error naming `name`: for parameters, boxes and probabilities
// that kernels read whatever their type.
Result<std::vector<double>> read_doubles(const Tensor& tensor, std::string_view name);

// The element count of an output shape, or an error naming `what` when a dim
// is negative or the count does not fit in 63 bits.
Result<int64_t> checked_size(const Shape& shape, std::string_view what);

// The product of dims [first, last) of `shape`.
int64_t dims_product(const Shape& shape, size_t first, size_t last);

// The one value of scalar (or one-element) input i: an int32/int64 one, or a
// floating-point one; else an error naming `name`.
Result<int64_t> read_int_scalar(KernelContext& ctx, size_t i, std::string_view name);
Result<double> read_float_scalar(KernelContext& ctx, size_t i, std::string_view name);

// Row-major strides of a shape, in elements.
std::vector<int64_t> contiguous_strides(const Shape& shape);

// out[i] = src[offset + sum(index_d * strides_d)] over out's shape, for any
// element type (strings included).
void copy_strided(const Tensor& src, int64_t offset, const std::vector<int64_t>& strides, Tensor& out);

// Copies `count` elements between tensors of the same type.
void copy_elements(const Tensor& src, int64_t src_offset, Tensor& dst, int64_t dst_offset, int64_t count);

}  // namespace onnxkit::runtime
