#pragma once
// Tensors of the runtime: an element type, a shape, and a reference-counted
// buffer. A tensor may view memory it does not own (an initializer's bytes in
// the model, a mapped side file); the owner is kept alive by the same count.
// Buffers are 64-byte aligned when the runtime allocates them.

#include <complex>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
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
  float8e4m3fn = 17,
  float8e4m3fnuz = 18,
  float8e5m2 = 19,
  float8e5m2fnuz = 20,
  uint4 = 21,
  int4 = 22,
};

std::string to_string(DataType type);
// Bytes per element in memory (sizeof(std::string) for strings); 0 if unknown.
size_t element_size(DataType type);
bool is_floating(DataType type);  // float16, bfloat16, float32, float64
bool is_integer(DataType type);   // signed and unsigned integers (not bool, not int4/uint4)
bool is_signed(DataType type);
// The float8 formats, int4 and uint4: ops store and convert them (Cast,
// Q/DQ, data movement) but never compute in them, so the predicates above
// and the dispatch helpers other than dispatch_low_precision leave them out.
bool is_low_precision(DataType type);

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

// The float8 formats of opset 19, stored as bits; arithmetic goes through
// float. E4M3 has 4 exponent and 3 mantissa bits, E5M2 5 and 2. E5M2 is
// IEEE-like (infinities, several NaNs); E4M3FN has no infinities and keeps
// only S.1111.111 for NaN; the UZ formats have neither infinities nor -0,
// 0x80 being their one NaN, and an exponent bias one more than IEEE's.
enum class Float8Format { e4m3fn, e4m3fnuz, e5m2, e5m2fnuz };

template <Float8Format F>
struct Float8 {
  uint8_t bits = 0;
  Float8() = default;
  // Rounds to nearest even. Infinities and what rounds beyond the largest
  // finite value follow Cast's table: with `saturate`, the largest finite
  // value (but NaN for an infinity in the UZ formats); without, infinity in
  // E5M2 and NaN elsewhere.
  explicit Float8(double v, bool saturate = true);
  operator float() const;  // NOLINT: exact, and implicit like Float16
};
using Float8E4M3FN = Float8<Float8Format::e4m3fn>;
using Float8E4M3FNUZ = Float8<Float8Format::e4m3fnuz>;
using Float8E5M2 = Float8<Float8Format::e5m2>;
using Float8E5M2FNUZ = Float8<Float8Format::e5m2fnuz>;

// The 4-bit integers of opset 21, one per byte in memory so that every
// kernel moving bytes handles them; a TensorProto packs two per byte
// (tensor_proto.cpp). Construction keeps the low 4 bits, sign-extended for
// Int4: integers out of range wrap, as Cast narrows integers.
template <bool Signed>
struct BasicInt4 {
  using Storage = std::conditional_t<Signed, int8_t, uint8_t>;
  Storage value = 0;
  BasicInt4() = default;
  constexpr explicit BasicInt4(int64_t v)
      : value(static_cast<Storage>(Signed ? ((v & 0xf) ^ 0x8) - 0x8 : v & 0xf)) {}
  constexpr operator int() const { return value; }  // NOLINT
};
using Int4 = BasicInt4<true>;
using UInt4 = BasicInt4<false>;

template <class T> inline constexpr bool is_float8_v = false;
template <Float8Format F> inline constexpr bool is_float8_v<Float8<F>> = true;
template <class T> inline constexpr bool is_int4_v = false;
template <bool Signed> inline constexpr bool is_int4_v<BasicInt4<Signed>> = true;

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
template <> struct CppType<DataType::float8e4m3fn> { using type = Float8E4M3FN; };
template <> struct CppType<DataType::float8e4m3fnuz> { using type = Float8E4M3FNUZ; };
template <> struct CppType<DataType::float8e5m2> { using type = Float8E5M2; };
template <> struct CppType<DataType::float8e5m2fnuz> { using type = Float8E5M2FNUZ; };
template <> struct CppType<DataType::int4> { using type = Int4; };
template <> struct CppType<DataType::uint4> { using type = UInt4; };

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
template <> constexpr DataType data_type_of<Float8E4M3FN>() { return DataType::float8e4m3fn; }
template <> constexpr DataType data_type_of<Float8E4M3FNUZ>() { return DataType::float8e4m3fnuz; }
template <> constexpr DataType data_type_of<Float8E5M2>() { return DataType::float8e5m2; }
template <> constexpr DataType data_type_of<Float8E5M2FNUZ>() { return DataType::float8e5m2fnuz; }
template <> constexpr DataType data_type_of<Int4>() { return DataType::int4; }
template <> constexpr DataType data_type_of<UInt4>() { return DataType::uint4; }

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
  // Elements [first, first + shape_size(shape)) of this tensor as a tensor of
  // `shape` that shares the buffer: writes through either show in both.
  Tensor part(int64_t first, Shape shape) const;
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
Status dispatch_all(DataType type, F&& f);  // every element type but the low-precision ones
template <class F>
Status dispatch_low_precision(DataType type, F&& f);  // float8 formats, int4, uint4
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

template <class F>
Status dispatch_low_precision(DataType type, F&& f) {
  switch (type) {
    ONNXKIT_DISPATCH_CASE(float8e4m3fn, f)
    ONNXKIT_DISPATCH_CASE(float8e4m3fnuz, f)
    ONNXKIT_DISPATCH_CASE(float8e5m2, f)
    ONNXKIT_DISPATCH_CASE(float8e5m2fnuz, f)
    ONNXKIT_DISPATCH_CASE(int4, f)
    ONNXKIT_DISPATCH_CASE(uint4, f)
    default:
      return make_error("element type {} is not supported here (float8, int4, uint4 only)", to_string(type));
  }
}

}  // namespace onnxkit::runtime

// Integer limits of the 4-bit types, so that saturating code written for
// the standard integers (Cast, QuantizeLinear) takes them as they are.
namespace std {
template <bool Signed>
class numeric_limits<onnxkit::runtime::BasicInt4<Signed>> {
  using T = onnxkit::runtime::BasicInt4<Signed>;

 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = Signed;
  static constexpr bool is_integer = true;
  static constexpr bool is_exact = true;
  static constexpr int digits = Signed ? 3 : 4;
  static constexpr T min() { return T(Signed ? -8 : 0); }
  static constexpr T lowest() { return min(); }
  static constexpr T max() { return T(Signed ? 7 : 15); }
};
}  // namespace std
