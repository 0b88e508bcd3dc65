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
#include <stdexcept>
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
  float4e2m1 = 23,
  float8e8m0 = 24,
  uint2 = 25,
  int2 = 26,
};

std::string to_string(DataType type);
// Bytes per element in memory (sizeof(std::string) for strings); 0 if unknown.
size_t element_size(DataType type);
bool is_floating(DataType type);  // float16, bfloat16, float32, float64
bool is_integer(DataType type);   // signed and unsigned integers (not bool, not the 2- and 4-bit ones)
bool is_signed(DataType type);
// The float8 formats (E8M0 included), float4 E2M1 and the 2- and 4-bit
// integers: ops store and convert them (Cast, Q/DQ, data movement) but never
// compute in them, so the predicates above and the dispatch helpers other
// than dispatch_low_precision leave them out. One element per byte in memory.
bool is_low_precision(DataType type);
// Bits per element as ONNX counts them: 4 for int4, uint4 and float4e2m1, 2
// for int2 and uint2 (TensorProtos pack those), else 8 * element_size; 0 for
// strings and unknown types.
int bit_width(DataType type);

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

template <Float8Format F> struct Float8 {
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

// Float4 E2M1 (opset 23): sign, 2 exponent bits (bias 1), 1 mantissa bit,
// in the low 4 bits of a byte. Its values are 0, 0.5, 1, 1.5, 2, 3, 4, 6; it
// has no infinity and no NaN, so conversion rounds to nearest even and always
// saturates to +-6 (infinities too), NaN giving +6 as ONNX's reference does.
// `saturate` is taken so that generic code can pass it; it changes nothing.
struct Float4E2M1 {
  uint8_t bits = 0;
  Float4E2M1() = default;
  explicit Float4E2M1(double v, bool saturate = true);
  operator float() const;  // NOLINT: exact
};

// Float8 E8M0 (opset 24), the scale type of the MX formats: an unsigned
// power of two 2^(bits - 127), 0xFF being NaN; no zero, no sign. Conversion
// keeps the exponent of the float32 value (the sign is dropped, zero and
// float32 subnormals give 2^-127) and rounds the mantissa away per Cast's
// round_mode: `up` goes to the next power for any fraction, `down` truncates,
// `nearest` goes up from 1.5 on (ties up). Infinity and NaN give 0xFF;
// rounding up past 2^127 gives 2^127 with `saturate`, else NaN.
enum class E8M0Rounding { up, down, nearest };
struct Float8E8M0 {
  uint8_t bits = 0;
  Float8E8M0() = default;
  explicit Float8E8M0(double v, bool saturate = true, E8M0Rounding rounding = E8M0Rounding::up);
  operator float() const;  // NOLINT: exact
};

// The 4-bit integers of opset 21 and the 2-bit ones of opset 25, one per
// byte in memory so that every kernel moving bytes handles them; a
// TensorProto packs two or four per byte (tensor_proto.cpp). Construction
// keeps the low `Bits` bits, sign-extended when signed: integers out of
// range wrap, as Cast narrows integers.
template <int Bits, bool Signed> struct BasicIntN {
  using Storage = std::conditional_t<Signed, int8_t, uint8_t>;
  static constexpr int64_t kMask = (1 << Bits) - 1, kSignBit = 1 << (Bits - 1);
  Storage value = 0;
  BasicIntN() = default;
  constexpr explicit BasicIntN(int64_t v)
      : value(static_cast<Storage>(Signed ? ((v & kMask) ^ kSignBit) - kSignBit : v & kMask)) {}
  constexpr operator int() const { return value; }  // NOLINT
};
using Int4 = BasicIntN<4, true>;
using UInt4 = BasicIntN<4, false>;
using Int2 = BasicIntN<2, true>;
using UInt2 = BasicIntN<2, false>;

// The small float types: constructed from (double, saturate), read as float.
template <class T> inline constexpr bool is_small_float_v = std::is_same_v<T, Float4E2M1> || std::is_same_v<T, Float8E8M0>;
template <Float8Format F> inline constexpr bool is_small_float_v<Float8<F>> = true;
template <class T> inline constexpr bool is_small_int_v = false;  // the 2- and 4-bit integers
template <int Bits, bool Signed> inline constexpr bool is_small_int_v<BasicIntN<Bits, Signed>> = true;

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
template <> struct CppType<DataType::float4e2m1> { using type = Float4E2M1; };
template <> struct CppType<DataType::float8e8m0> { using type = Float8E8M0; };
template <> struct CppType<DataType::int2> { using type = Int2; };
template <> struct CppType<DataType::uint2> { using type = UInt2; };

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
template <> constexpr DataType data_type_of<Float4E2M1>() { return DataType::float4e2m1; }
template <> constexpr DataType data_type_of<Float8E8M0>() { return DataType::float8e8m0; }
template <> constexpr DataType data_type_of<Int2>() { return DataType::int2; }
template <> constexpr DataType data_type_of<UInt2>() { return DataType::uint2; }

using Shape = std::vector<int64_t>;

// Product of the dims (1 for a scalar), for shapes already checked (those of
// tensors that exist).
int64_t shape_size(const Shape& shape);

// The most elements a tensor may hold: terabytes, beyond any real model,
// while a corrupt or hostile one easily asks for more, or for a count that
// wraps around int64 to something small.
inline constexpr int64_t kMaxElements = int64_t{1} << 40;

// The element count of `shape`, or an error quoting it when a dim is
// negative or the count is above kMaxElements (found without overflowing;
// the other dims of an empty shape are held to the limit too, as strides are
// computed from them). The one check of every shape that becomes a buffer:
// Tensor's constructor, a kernel's outputs, the inputs a run makes.
Result<int64_t> checked_shape_size(const Shape& shape);

// What Tensor's constructor, reshaped() and part() throw for a shape that
// checked_shape_size refuses. A kernel's throw becomes an error naming its
// node (run_kernel); code that takes shapes from outside checks them first.
struct ShapeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
std::string shape_to_string(const Shape& shape);  // "[1,3,224,224]"

class Tensor {
 public:
  Tensor() = default;  // undefined: no type, no data
  // Allocates an uninitialized tensor (strings are empty); throws ShapeError
  // for a shape checked_shape_size refuses.
  Tensor(DataType type, Shape shape);
  // A tensor viewing `data`, kept valid by `owner`. Read-only by contract.
  static Tensor view(DataType type, Shape shape, const void* data, std::shared_ptr<const void> owner);
  // A scalar or 1-D tensor from values, for tests and small constants.
  template <class T> static Tensor from(Shape shape, const std::vector<T>& values);

  bool defined() const { return type_ != DataType::undefined; }
  DataType dtype() const { return type_; }
  const Shape& shape() const { return shape_; }
  size_t rank() const { return shape_.size(); }
  int64_t dim(size_t i) const { return shape_[i]; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * element_size(type_); }

  const void* raw() const { return data_; }
  void* mutable_raw() { return data_; }
  template <class T> const T* data() const { return static_cast<const T*>(data_); }
  template <class T> T* mutable_data() { return static_cast<T*>(data_); }
  template <class T> std::span<const T> values() const { return {data<T>(), static_cast<size_t>(numel_)}; }

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

template <class T> Tensor Tensor::from(Shape shape, const std::vector<T>& values) {
  Tensor t(data_type_of<T>(), std::move(shape));
  for (size_t i = 0; i < values.size() && i < static_cast<size_t>(t.numel()); ++i) t.mutable_data<T>()[i] = values[i];
  return t;
}

// Calls f.template operator()<T>() with the C++ type of `type`. The variants
// name the sets of types an op accepts; an unsupported type is an error.
template <class F> Status dispatch_numeric(DataType type, F&& f);        // all numbers (no bool, string, complex)
template <class F> Status dispatch_all(DataType type, F&& f);            // every element type but the low-precision ones
template <class F> Status dispatch_low_precision(DataType type, F&& f);  // float8 formats, float4, 2- and 4-bit integers
template <class F> Status dispatch_float(DataType type, F&& f);          // float16, bfloat16, float32, float64
template <class F> Status dispatch_integer(DataType type, F&& f);        // signed and unsigned integers

#define ONNXKIT_DISPATCH_CASE(code, f) \
  case DataType::code: return f.template operator()<typename CppType<DataType::code>::type>();
// The float and integer sets, each listed once: dispatch_numeric is their union.
#define ONNXKIT_FLOAT_CASES(f)      \
  ONNXKIT_DISPATCH_CASE(float32, f) \
  ONNXKIT_DISPATCH_CASE(float64, f) \
  ONNXKIT_DISPATCH_CASE(float16, f) \
  ONNXKIT_DISPATCH_CASE(bfloat16, f)
#define ONNXKIT_INTEGER_CASES(f)   \
  ONNXKIT_DISPATCH_CASE(int8, f)   \
  ONNXKIT_DISPATCH_CASE(int16, f)  \
  ONNXKIT_DISPATCH_CASE(int32, f)  \
  ONNXKIT_DISPATCH_CASE(int64, f)  \
  ONNXKIT_DISPATCH_CASE(uint8, f)  \
  ONNXKIT_DISPATCH_CASE(uint16, f) \
  ONNXKIT_DISPATCH_CASE(uint32, f) \
  ONNXKIT_DISPATCH_CASE(uint64, f)

template <class F> Status dispatch_numeric(DataType type, F&& f) {
  switch (type) {
    ONNXKIT_FLOAT_CASES(f)
    ONNXKIT_INTEGER_CASES(f)
    default: return make_error("element type {} is not supported here", to_string(type));
  }
}

template <class F> Status dispatch_float(DataType type, F&& f) {
  switch (type) {
    ONNXKIT_FLOAT_CASES(f)
    default: return make_error("element type {} is not supported here (floating point only)", to_string(type));
  }
}

template <class F> Status dispatch_integer(DataType type, F&& f) {
  switch (type) {
    ONNXKIT_INTEGER_CASES(f)
    default: return make_error("element type {} is not supported here (integers only)", to_string(type));
  }
}

template <class F> Status dispatch_all(DataType type, F&& f) {
  switch (type) {
    ONNXKIT_DISPATCH_CASE(boolean, f)
    ONNXKIT_DISPATCH_CASE(string, f)
    ONNXKIT_DISPATCH_CASE(complex64, f)
    ONNXKIT_DISPATCH_CASE(complex128, f)
    default: return dispatch_numeric(type, std::forward<F>(f));
  }
}

template <class F> Status dispatch_low_precision(DataType type, F&& f) {
  switch (type) {
    ONNXKIT_DISPATCH_CASE(float8e4m3fn, f)
    ONNXKIT_DISPATCH_CASE(float8e4m3fnuz, f)
    ONNXKIT_DISPATCH_CASE(float8e5m2, f)
    ONNXKIT_DISPATCH_CASE(float8e5m2fnuz, f)
    ONNXKIT_DISPATCH_CASE(int4, f)
    ONNXKIT_DISPATCH_CASE(uint4, f)
    ONNXKIT_DISPATCH_CASE(float4e2m1, f)
    ONNXKIT_DISPATCH_CASE(float8e8m0, f)
    ONNXKIT_DISPATCH_CASE(int2, f)
    ONNXKIT_DISPATCH_CASE(uint2, f)
    default:
      return make_error("element type {} is not supported here (float8, float4, 2- and 4-bit integers only)", to_string(type));
  }
}

}  // namespace onnxkit::runtime

// Integer limits of the 2- and 4-bit types, so that saturating code written
// for the standard integers (Cast, QuantizeLinear) takes them as they are.
namespace std {
template <int Bits, bool Signed> class numeric_limits<onnxkit::runtime::BasicIntN<Bits, Signed>> {
  using T = onnxkit::runtime::BasicIntN<Bits, Signed>;

 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = Signed;
  static constexpr bool is_integer = true;
  static constexpr bool is_exact = true;
  static constexpr int digits = Signed ? Bits - 1 : Bits;
  static constexpr T min() { return T(Signed ? -(1 << (Bits - 1)) : 0); }
  static constexpr T lowest() { return min(); }
  static constexpr T max() { return T(Signed ? (1 << (Bits - 1)) - 1 : (1 << Bits) - 1); }
};
}  // namespace std
