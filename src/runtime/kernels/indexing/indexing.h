#pragma once
// The indexing family: ops that pick, place, pad and resample elements by
// position (Gather*, Scatter*, Pad, CenterCropPad, Resize, Upsample,
// GridSample, NonZero, OneHot, Compress, ReverseSequence, Unique).
//
// Every index read from a tensor is checked against its bound before it is
// used, and output shapes computed from input values (pads, scales, depth)
// are checked before anything is allocated: bad input is an error, never an
// out-of-bounds access.

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "runtime/kernels/common.h"

namespace onnxkit::runtime::indexing {

void register_gather(KernelRegistry& registry);       // Gather, GatherElements, GatherND
void register_scatter(KernelRegistry& registry);      // ScatterND, ScatterElements, Scatter, TensorScatter
void register_pad(KernelRegistry& registry);          // Pad, CenterCropPad
void register_resize(KernelRegistry& registry);       // Resize, Upsample
void register_grid_sample(KernelRegistry& registry);  // GridSample, AffineGrid
void register_select(KernelRegistry& registry);       // NonZero, OneHot, Compress, ReverseSequence, Unique

// Resize on activations in the blocked layout (kernels/nn/blocked.h) of
// `channels` channels: nearest, with constant scales of 1 for N and C (an
// FPN's or a YOLO neck's 2x upsampling, which otherwise leaves the blocked
// region and comes back, a reorder each way per level). Each output pixel
// copies its input pixel's channels, picked by the plain kernel's rules.
bool resize_runs_blocked(const ir::Node& node, const ConstantOf& constant);
Result<std::unique_ptr<Kernel>> make_blocked_resize(const KernelInfo& info, int64_t channels);

// `axis` in [-rank, rank) made non-negative. Unlike normalize_axis, a
// scalar (rank 0) has no axis at all.
Result<int64_t> existing_axis(int64_t axis, size_t rank);

// The values of an int32/int64 index tensor named `name`, or an error naming
// the input and its type.
Result<std::vector<int64_t>> read_index_tensor(const Tensor& t, std::string_view name);

// Makes every value of `indices` non-negative: values in [-bound, bound)
// wrap, anything else is an error naming the element, its value and the
// bound (`what` says which dim the bound belongs to, e.g. "axis 1").
Status wrap_indices(std::vector<int64_t>& indices, int64_t bound, std::string_view name, std::string_view what);

// The values of an index tensor wrapped as wrap_indices does, read where
// they lie when they are int64 and none is negative (a detection head's
// ScatterElements reads millions of them, which a copy would add to the
// peak memory), copied otherwise.
class WrappedIndices {
 public:
  static Result<WrappedIndices> read(const Tensor& t, int64_t bound, std::string_view name, std::string_view what);
  int64_t operator[](int64_t i) const { return values_[i]; }

  // A copy would point into the original's buffer.
  WrappedIndices(WrappedIndices&&) = default;
  WrappedIndices& operator=(WrappedIndices&&) = default;
  WrappedIndices(const WrappedIndices&) = delete;
  WrappedIndices& operator=(const WrappedIndices&) = delete;

 private:
  WrappedIndices() = default;
  std::vector<int64_t> copy_;
  const int64_t* values_ = nullptr;  // the tensor's, or copy_'s (a vector's move keeps its buffer)
};

// Walks a shape in row-major order while keeping the linear offset of the
// same multi-index in another layout (strides may be 0 to drop a dim).
class OffsetWalker {
 public:
  OffsetWalker(Shape shape, std::vector<int64_t> strides)
      : shape_(std::move(shape)), strides_(std::move(strides)), index_(shape_.size(), 0) {}
  int64_t offset() const { return offset_; }
  // The multi-index of the current position.
  const std::vector<int64_t>& index() const { return index_; }
  void next() {
    for (size_t d = shape_.size(); d-- > 0;) {
      offset_ += strides_[d];
      if (++index_[d] < shape_[d]) return;
      offset_ -= strides_[d] * index_[d];
      index_[d] = 0;
    }
  }

 private:
  Shape shape_;
  std::vector<int64_t> strides_;
  std::vector<int64_t> index_;
  int64_t offset_ = 0;
};

// --- element types as numbers -------------------------------------------------

template <class T>
constexpr bool is_complex_v = std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;

// Types that interpolate and compare as real numbers (not bool, string or complex).
template <class T> constexpr bool is_real_v = !std::is_same_v<T, bool> && !std::is_same_v<T, std::string> && !is_complex_v<T>;

// A double as element type T: integers round to nearest and saturate (NaN
// becomes 0), bool is "non-zero", strings are empty.
template <class T> T from_double(double v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return std::string();
  } else if constexpr (is_complex_v<T>) {
    return T(static_cast<typename T::value_type>(v));
  } else if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return T(0);
    v = std::round(v);
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else if constexpr (is_half_v<T>) {
    return T(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

// The value of element `i` of a numeric tensor as a double (any numeric type).
Result<double> numeric_at(const Tensor& t, int64_t i, std::string_view name);

}  // namespace onnxkit::runtime::indexing
