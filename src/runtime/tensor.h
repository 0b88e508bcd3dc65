#pragma once
// Tensors of the runtime: an element type, a shape, and a reference-counted
// buffer. A tensor may view memory it does not own (an initializer's bytes in
// the model, a mapped side file); the owner is kept alive by the same count.
// Buffers are 64-byte aligned when the runtime allocates them.

#include <complex>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "util/result.h"

namespace onnxkit::runtime {

// ONNX TensorProto.DataType codes.
enum class DataType : int32_t {
  undefined = 0,
  float32 = 1,
  uint8 = 2,
  int8 = 3,
  uint16 = 4,
  int16 = 5,
  int32 = 6,
  int64 = 7,
  string = 8,
  boolean = 9,
  float16 = 10,
  float64 = 11,
  uint32 = 12,
  uint64 = 13,
  complex64 = 14,
  complex128 = 15,
  bfloat16 = 16,
};

std::string to_string(DataType type);
// Bytes per element in memory (sizeof(std::string) for strings); 0 if unknown.
size_t element_size(DataType type);
bool is_floating(DataType type);  // float16, bfloat16, float32, float64
bool is_integer(DataType type);   // signed and unsigned integers (not bool)
bool is_signed(DataType type);

// IEEE half and bfloat16, stored as bits; arithmetic goes through float.
struct Float16 {
  uint16_t bits = 0;
  Float16() = default;
  explicit Float16(float f);
  operator float() const;  // NOLINT: implicit, like numpy
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f);
  operator float() const;  // NOLINT
};

// The C++ type of each element type.
template <DataType T> struct CppType;
template <> struct CppType<DataType::float32> { using type = float; };
template <> struct CppType<DataType::float64> { using type = double; };
template <> struct CppType<DataType::float16> { using type = Float16; };
template <> struct CppType<DataType::bfloat16> { using type = BFloat16; };
template <> struct CppType<DataType::int8> { using type = int8_t; };
template <> struct CppType<DataType::int16> { using type = int16_t; };
template <> struct CppType<DataType::int32> { using type = int32_t; };
template <> struct CppType<DataType::int64> { using type = int64_t; };
template <> struct CppType<DataType::uint8> { using type = uint8_t; };
template <> struct CppType<DataType::uint16> { using type = uint16_t; };
template <> struct CppType<DataType::uint32> { using type = uint32_t; };
template <> struct CppType<DataType::uint64> { using type = uint64_t; };
template <> struct CppType<DataType::boolean> { using type = bool; };
template <> struct CppType<DataType::string> { using type = std::string; };
template <> struct CppType<DataType::complex64> { using type = std::complex<float>; };
template <> struct CppType<DataType::complex128> { using type = std::complex<double>; };

template <class T> constexpr DataType data_type_of();
template <> constexpr DataType data_type_of<float>() { return DataType::float32; }
template <> constexpr DataType data_type_of<double>() { return DataType::float64; }
template <> constexpr DataType data_type_of<Float16>() { return DataType::float16; }
template <> constexpr DataType data_type_of<BFloat16>() { return DataType::bfloat16; }
template <> constexpr DataType data_type_of<int8_t>() { return DataType::int8; }
template <> constexpr DataType data_type_of<int16_t>() { return DataType::int16; }
template <> constexpr DataType data_type_of<int32_t>() { return DataType::int32; }
template <> constexpr DataType data_type_of<int64_t>() { return DataType::int64; }
template <> constexpr DataType data_type_of<uint8_t>() { return DataType::uint8; }
template <> constexpr DataType data_type_of<uint16_t>() { return DataType::uint16; }
template <> constexpr DataType data_type_of<uint32_t>() { return DataType::uint32; }
template <> constexpr DataType data_type_of<uint64_t>() { return DataType::uint64; }
template <> constexpr DataType data_type_of<bool>() { return DataType::boolean; }
template <> constexpr DataType data_type_of<std::string>() { return DataType::string; }
template <> constexpr DataType data_type_of<std::complex<float>>() { return DataType::complex64; }
template <> constexpr DataType data_type_of<std::complex<double>>() { return DataType::complex128; }

using Shape = std::vector<int64_t>;

// Product of the dims (1 for a scalar).
int64_t shape_size(const Shape& shape);
std::string shape_to_string(const Shape& shape);  // "[1,3,224,224]"

class Tensor {
 public:
  Tensor() = default;  // undefined: no type, no data
  // Allocates an uninitialized tensor (strings are empty).
  Tensor(DataType type, Shape shape);
  // A tensor viewing `data`, kept valid by `owner`. Read-only by contract.
  static Tensor view(DataType type, Shape shape, const void* data, std::shared_ptr<const void> owner);
  // A scalar or 1-D tensor from values, for tests and small constants.
  template <class T>
  static Tensor from(Shape shape, const std::vector<T>& values);

  bool defined() const { return type_ != DataType::undefined; }
  DataType dtype() const { return type_; }
  const Shape& shape() const { return shape_; }
  size_t rank() const { return shape_.size(); }
  int64_t dim(size_t i) const { return shape_[i]; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * element_size(type_); }

  const void* raw() const { return data_; }
  void* mutable_raw() { return data_; }
  template <class T>
  const T* data() const {
    return static_cast<const T*>(data_);
  }
  template <class T>
  T* mutable_data() {
    return static_cast<T*>(data_);
  }
  template <class T>
  std::span<const T> values() const {
    return {data<T>(), static_cast<size_t>(numel_)};
  }

  // The same elements under another shape (no copy).
  Tensor reshaped(Shape shape) const;
  // A deep copy with its own buffer.
  Tensor clone() const;
  // True if both tensors share a buffer.
  bool shares_buffer_with(const Tensor& other) const { return storage_ == other.storage_ && storage_ != nullptr; }

 private:
  DataType type_ = DataType::undefined;
  Shape shape_;
  int64_t numel_ = 0;
  std::shared_ptr<const void> storage_;
  void* data_ = nullptr;
};

template <class T>
Tensor Tensor::from(Shape shape, const std::vector<T>& values) {
  Tensor t(data_type_of<T>(), std::move(shape));
  for (size_t i = 0; i < values.size() && i < static_cast<size_t>(t.numel()); ++i) t.mutable_data<T>()[i] = values[i];
  return t;
}

// Calls f.template operator()<T>() with the C++ type of `type`. The variants
// name the sets of types an op accepts; an unsupported type is an error.
template <class F>
Status dispatch_numeric(DataType type, F&& f);  // all numbers (no bool, string, complex)
template <class F>
Status dispatch_all(DataType type, F&& f);  // every element type
template <class F>
Status dispatch_float(DataType type, F&& f);  // float16, bfloat16, float32, float64
template <class F>
Status dispatch_integer(DataType type, F&& f);  // signed and unsigned integers

#define ONNXKIT_DISPATCH_CASE(code, f) \
  case DataType::code:                 \
    return f.template operator()<typename CppType<DataType::code>::type>();

template <class F>
Status dispatch_numeric(DataType type, F&& f) {
  switch (type) {
    ONNXKIT_DISPATCH_CASE(float32, f)
    ONNXKIT_DISPATCH_CASE(float64, f)
    ONNXKIT_DISPATCH_CASE(float16, f)
    ONNXKIT_DISPATCH_CASE(bfloat16, f)
    ONNXKIT_DISPATCH_CASE(int8, f)
    ONNXKIT_DISPATCH_CASE(int16, f)
    ONNXKIT_DISPATCH_CASE(int32, f)
    ONNXKIT_DISPATCH_CASE(int64, f)
    ONNXKIT_DISPATCH_CASE(uint8, f)
    ONNXKIT_DISPATCH_CASE(uint16, f)
    ONNXKIT_DISPATCH_CASE(uint32, f)
    ONNXKIT_DISPATCH_CASE(uint64, f)
    default:
      return make_error("element type {} is not supported here", to_string(type));
  }
}

template <class F>
Status dispatch_float(DataType type, F&& f) {
  switch (type) {
    ONNXKIT_DISPATCH_CASE(float32, f)
    ONNXKIT_DISPATCH_CASE(float64, f)
    ONNXKIT_DISPATCH_CASE(float16, f)
    ONNXKIT_DISPATCH_CASE(bfloat16, f)
    default:
      return make_error("element type {} is not supported here (floating point only)", to_string(type));
  }
}

template <class F>
Status dispatch_integer(DataType type, F&& f) {
  switch (type) {
    ONNXKIT_DISPATCH_CASE(int8, f)
    ONNXKIT_DISPATCH_CASE(int16, f)
    ONNXKIT_DISPATCH_CASE(int32, f)
    ONNXKIT_DISPATCH_CASE(int64, f)
    ONNXKIT_DISPATCH_CASE(uint8, f)
    ONNXKIT_DISPATCH_CASE(uint16, f)
    ONNXKIT_DISPATCH_CASE(uint32, f)
    ONNXKIT_DISPATCH_CASE(uint64, f)
    default:
      return make_error("element type {} is not supported here (integers only)", to_string(type));
  }
}

template <class F>
Status dispatch_all(DataType type, F&& f) {
  switch (type) {
    ONNXKIT_DISPATCH_CASE(boolean, f)
    ONNXKIT_DISPATCH_CASE(string, f)
    ONNXKIT_DISPATCH_CASE(complex64, f)
    ONNXKIT_DISPATCH_CASE(complex128, f)
    default:
      return dispatch_numeric(type, std::forward<F>(f));
  }
}

}  // namespace onnxkit::runtime
