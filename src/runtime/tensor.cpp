#include "runtime/tensor.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <stdexcept>

#include "io/tensor_proto.h"

namespace onnxkit::runtime {
namespace {

constexpr size_t kAlignment = 64;

// Large buffers freed by one run are kept for the next: the C library would
// hand them back to the kernel (they are mmapped) and every run would pay
// the page faults of touching fresh memory again (a fifth of a BERT
// encoder's time on 2 threads). Sizes are rounded to pages; a request takes
// the smallest kept buffer that holds it, if that is at most twice its size,
// so that buffers of one size serve the next-smaller shapes too rather than
// each shape keeping buffers of its own (peak RSS). What is kept is bounded.
class BufferCache {
 public:
  static constexpr size_t kMinBytes = size_t{64} << 10;
  static constexpr size_t kMaxHeldBytes = size_t{256} << 20;

  static BufferCache& instance() {
    static auto* cache = new BufferCache();  // never destroyed: buffers may be freed during exit
    return *cache;
  }

  // A kept buffer of `bytes` to 2 * `bytes` (its size in `capacity`), or null.
  void* take(size_t bytes, size_t& capacity) {
    std::lock_guard lock(mutex_);
    auto it = free_.lower_bound(bytes);
    if (it == free_.end() || it->first > 2 * bytes) return nullptr;
    void* p = it->second;
    capacity = it->first;
    free_.erase(it);
    held_ -= capacity;
    return p;
  }

  void give(void* p, size_t bytes) {
    {
      std::lock_guard lock(mutex_);
      if (held_ + bytes <= kMaxHeldBytes) {
        free_.emplace(bytes, p);
        held_ += bytes;
        return;
      }
    }
    std::free(p);
  }

 private:
  std::mutex mutex_;
  std::multimap<size_t, void*> free_;
  size_t held_ = 0;
};

std::shared_ptr<void> allocate_bytes(size_t bytes) {
  size_t rounded = (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded < BufferCache::kMinBytes) {
    void* p = std::aligned_alloc(kAlignment, rounded);
    if (p == nullptr) throw std::bad_alloc();
    return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  }
  constexpr size_t kPage = 4096;
  rounded = (rounded + kPage - 1) / kPage * kPage;
  size_t capacity = rounded;
  void* p = BufferCache::instance().take(rounded, capacity);
  if (p == nullptr) p = std::aligned_alloc(kPage, rounded);
  if (p == nullptr) throw std::bad_alloc();
  return std::shared_ptr<void>(p, [capacity](void* q) { BufferCache::instance().give(q, capacity); });
}

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

std::string to_string(DataType type) { return io::data_type_name(static_cast<int32_t>(type)); }

size_t element_size(DataType type) {
  switch (type) {
    case DataType::float32:
    case DataType::int32:
    case DataType::uint32: return 4;
    case DataType::float64:
    case DataType::int64:
    case DataType::uint64:
    case DataType::complex64: return 8;
    case DataType::complex128: return 16;
    case DataType::float16:
    case DataType::bfloat16:
    case DataType::int16:
    case DataType::uint16: return 2;
    case DataType::int8:
    case DataType::uint8:
    case DataType::boolean:
    case DataType::float8e4m3fn:
    case DataType::float8e4m3fnuz:
    case DataType::float8e5m2:
    case DataType::float8e5m2fnuz:
    case DataType::int4:  // unpacked in memory, as the other sub-byte types
    case DataType::uint4:
    case DataType::float4e2m1:
    case DataType::float8e8m0:
    case DataType::int2:
    case DataType::uint2: return 1;
    case DataType::string: return sizeof(std::string);
    default: return 0;
  }
}

bool is_floating(DataType t) {
  return t == DataType::float32 || t == DataType::float64 || t == DataType::float16 || t == DataType::bfloat16;
}

bool is_integer(DataType t) {
  switch (t) {
    case DataType::int8:
    case DataType::int16:
    case DataType::int32:
    case DataType::int64:
    case DataType::uint8:
    case DataType::uint16:
    case DataType::uint32:
    case DataType::uint64: return true;
    default: return false;
  }
}

bool is_signed(DataType t) {
  return t == DataType::int8 || t == DataType::int16 || t == DataType::int32 || t == DataType::int64 || is_floating(t);
}

bool is_low_precision(DataType t) {
  switch (t) {
    case DataType::float8e4m3fn:
    case DataType::float8e4m3fnuz:
    case DataType::float8e5m2:
    case DataType::float8e5m2fnuz:
    case DataType::int4:
    case DataType::uint4:
    case DataType::float4e2m1:
    case DataType::float8e8m0:
    case DataType::int2:
    case DataType::uint2: return true;
    default: return false;
  }
}

int bit_width(DataType type) {
  switch (type) {
    case DataType::int4:
    case DataType::uint4:
    case DataType::float4e2m1: return 4;
    case DataType::int2:
    case DataType::uint2: return 2;
    case DataType::string: return 0;
    default: return static_cast<int>(element_size(type) * 8);
  }
}

Float16::Float16(float f) {
  // Round to nearest even, with overflow to infinity and subnormals.
  uint32_t x = float_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or nan
    bits = static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u | ((abs >> 13) & 0x3ffu) : 0));
    return;
  }
  if (abs >= 0x477ff000u) {  // rounds to >= 65520: infinity
    bits = static_cast<uint16_t>(sign | 0x7c00u);
    return;
  }
  if (abs < 0x38800000u) {                         // below the smallest normal half: subnormal or zero
    float scaled = bits_float(abs) * 16777216.0f;  // 2^24: units of the smallest subnormal
    uint32_t m = static_cast<uint32_t>(std::nearbyint(scaled));
    bits = static_cast<uint16_t>(sign | m);
    return;
  }
  uint32_t mantissa_odd = (abs >> 13) & 1u;
  abs += 0xc8000fffu + mantissa_odd;  // rebias exponent (-112 << 23) and round
  bits = static_cast<uint16_t>(sign | (abs >> 13));
}

Float16::operator float() const {
  uint32_t sign = (bits & 0x8000u) << 16, exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu;
  if (exponent == 0x1f) return bits_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return bits_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
  float magnitude = static_cast<float>(mantissa) / 16777216.0f;  // subnormal: mantissa * 2^-24
  return sign ? -magnitude : magnitude;
}

BFloat16::BFloat16(float f) {
  uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    bits = static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
    return;
  }
  x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest even
  bits = static_cast<uint16_t>(x >> 16);
}

BFloat16::operator float() const { return bits_float(static_cast<uint32_t>(bits) << 16); }

namespace {

// What tells the float8 formats apart. Codes are sign | magnitude; the
// magnitudes above max_magnitude are NaN (or infinity, just above it in E5M2).
struct Float8Layout {
  int mantissa_bits;
  int exponent_bias;
  uint8_t max_magnitude;  // the largest finite value
  bool has_infinity;
  bool unsigned_zero;  // no -0: 0x80 is the NaN
};

constexpr Float8Layout float8_layout(Float8Format format) {
  switch (format) {
    case Float8Format::e4m3fn: return {3, 7, 0x7e, false, false};
    case Float8Format::e4m3fnuz: return {3, 8, 0x7f, false, true};
    case Float8Format::e5m2: return {2, 15, 0x7b, true, false};
    case Float8Format::e5m2fnuz: return {2, 16, 0x7f, false, true};
  }
  return {};
}

// The value of a finite magnitude code: subnormal when its exponent field is 0.
double float8_magnitude(const Float8Layout& layout, uint8_t magnitude) {
  const int m = layout.mantissa_bits;
  const int exponent = magnitude >> m, mantissa = magnitude & ((1 << m) - 1);
  if (exponent == 0) return std::ldexp(mantissa, 1 - layout.exponent_bias - m);
  return std::ldexp(mantissa | (1 << m), exponent - layout.exponent_bias - m);
}

uint8_t float8_encode(const Float8Layout& layout, double v, bool saturate) {
  const uint8_t sign = std::signbit(v) ? 0x80 : 0;
  // E4M3FN has a single NaN magnitude; E5M2 takes IEEE's quiet NaN.
  const uint8_t nan = layout.unsigned_zero ? 0x80 : sign | (layout.has_infinity ? 0x7e : 0x7f);
  if (std::isnan(v)) return nan;
  const uint8_t largest = sign | layout.max_magnitude;
  const uint8_t beyond_largest = layout.has_infinity ? sign | (layout.max_magnitude + 1) : nan;
  if (std::isinf(v)) return saturate && !layout.unsigned_zero ? largest : beyond_largest;

  // Scale |v| so that one unit is the last mantissa bit of its binade (of the
  // smallest normal one for subnormals), and let nearbyint round to even.
  const int m = layout.mantissa_bits;
  const int min_exponent = 1 - layout.exponent_bias;
  const double a = std::fabs(v);
  int exponent = a == 0.0 ? min_exponent : std::max(std::ilogb(a), min_exponent);
  double units = std::nearbyint(std::ldexp(a, m - exponent));
  if (units == 2 << m) {  // rounded up into the next binade
    units = 1 << m;
    ++exponent;
  }
  if (units == 0) return layout.unsigned_zero ? 0 : sign;
  if (std::ldexp(units, exponent - m) > float8_magnitude(layout, layout.max_magnitude))
    return saturate ? largest : beyond_largest;
  const int implicit_bit = 1 << m;
  if (units < implicit_bit) return sign | static_cast<uint8_t>(units);  // subnormal: exponent field 0
  return sign | static_cast<uint8_t>(((exponent + layout.exponent_bias) << m) | (static_cast<int>(units) - implicit_bit));
}

}  // namespace

template <Float8Format F> Float8<F>::Float8(double v, bool saturate) : bits(float8_encode(float8_layout(F), v, saturate)) {}

namespace {

float float8_decode(const Float8Layout& layout, uint8_t bits) {
  const uint8_t magnitude = bits & 0x7f;
  float value;
  if (layout.unsigned_zero && bits == 0x80) {
    value = std::numeric_limits<float>::quiet_NaN();
  } else if (magnitude > layout.max_magnitude) {
    value = layout.has_infinity && magnitude == layout.max_magnitude + 1 ? std::numeric_limits<float>::infinity()
                                                                         : std::numeric_limits<float>::quiet_NaN();
  } else {
    value = static_cast<float>(float8_magnitude(layout, magnitude));
  }
  return bits & 0x80 ? -value : value;
}

}  // namespace

template <Float8Format F> Float8<F>::operator float() const {
  // 256 codes: decoded once, looked up per element.
  static const std::array<float, 256> values = [] {
    std::array<float, 256> v;
    for (int code = 0; code < 256; ++code) v[code] = float8_decode(float8_layout(F), static_cast<uint8_t>(code));
    return v;
  }();
  return values[bits];
}

namespace {

// Float4 E2M1 goes through the float8 code with this layout: its codes are
// those of a float8 with the sign moved from bit 3 to bit 7.
constexpr Float8Layout kFloat4Layout = {1, 1, 0x07, false, false};
constexpr double kFloat4Max = 6.0;

}  // namespace

Float4E2M1::Float4E2M1(double v, bool /*saturate*/) {
  if (std::isnan(v)) {
    bits = 0x07;
    return;
  }
  const uint8_t code = float8_encode(kFloat4Layout, std::isinf(v) ? std::copysign(kFloat4Max, v) : v, true);
  bits = static_cast<uint8_t>((code & 0x07) | ((code & 0x80) >> 4));
}

Float4E2M1::operator float() const {
  return float8_decode(kFloat4Layout, static_cast<uint8_t>((bits & 0x07) | ((bits & 0x08) << 4)));
}

Float8E8M0::Float8E8M0(double v, bool saturate, E8M0Rounding rounding) {
  // ONNX defines the conversion on the bits of the float32 value.
  const uint32_t x = float_bits(static_cast<float>(v));
  uint32_t exponent = (x >> 23) & 0xffu;
  const uint32_t fraction = x & 0x7fffffu;
  if (exponent == 0xffu) {
    bits = 0xff;
    return;
  }
  bool round_up = false;
  switch (rounding) {
    case E8M0Rounding::up: round_up = fraction != 0; break;
    case E8M0Rounding::down: break;
    case E8M0Rounding::nearest:
      // From 1.5 up; an exact 0.5 of a float32 subnormal (exponent 0) stays down.
      round_up = (fraction & 0x400000u) != 0 && ((fraction & 0x3fffffu) != 0 || exponent > 0);
      break;
  }
  if (round_up) {
    if (exponent == 0xfeu) {
      bits = saturate ? 0xfe : 0xff;
      return;
    }
    ++exponent;
  }
  bits = static_cast<uint8_t>(exponent);
}

Float8E8M0::operator float() const {
  if (bits == 0xff) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, static_cast<int>(bits) - 127);
}

template struct Float8<Float8Format::e4m3fn>;
template struct Float8<Float8Format::e4m3fnuz>;
template struct Float8<Float8Format::e5m2>;
template struct Float8<Float8Format::e5m2fnuz>;

int64_t shape_size(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_to_string(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ",")); }

Result<int64_t> checked_shape_size(const Shape& shape) {
  // The other dims of an empty shape count too: strides and offsets are
  // computed from them.
  int64_t n = 1;
  bool empty = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t d = shape[i];
    if (d < 0) return make_error("shape {}: dim {} is negative", shape_to_string(shape), i);
    if (d == 0) {
      empty = true;
    } else if (n > kMaxElements / d) {
      return make_error("shape {} has more than {} elements, too many to allocate", shape_to_string(shape), kMaxElements);
    } else {
      n *= d;
    }
  }
  return empty ? 0 : n;
}

namespace {

int64_t checked_numel(const Shape& shape) {
  auto n = checked_shape_size(shape);
  if (!n.ok()) throw ShapeError(n.error().message());
  return *n;
}

}  // namespace

Tensor::Tensor(DataType type, Shape shape) : type_(type), shape_(std::move(shape)), numel_(checked_numel(shape_)) {
  if (type_ == DataType::string) {
    auto* strings = new std::string[static_cast<size_t>(std::max<int64_t>(numel_, 1))];
    storage_ = std::shared_ptr<std::string>(strings, std::default_delete<std::string[]>());
    data_ = strings;
    return;
  }
  auto buffer = allocate_bytes(nbytes());
  data_ = buffer.get();
  storage_ = std::move(buffer);
}

Tensor Tensor::view(DataType type, Shape shape, const void* data, std::shared_ptr<const void> owner) {
  Tensor t;
  t.type_ = type;
  t.shape_ = std::move(shape);
  t.numel_ = checked_numel(t.shape_);
  t.storage_ = std::move(owner);
  t.data_ = const_cast<void*>(data);
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  Tensor t = *this;
  t.shape_ = std::move(shape);
  t.numel_ = checked_numel(t.shape_);
  return t;
}

Tensor Tensor::part(int64_t first, Shape shape) const {
  Tensor t = *this;
  t.shape_ = std::move(shape);
  t.numel_ = checked_numel(t.shape_);
  if (type_ == DataType::string || first < 0 || first + t.numel_ > numel_)
    throw std::out_of_range("Tensor::part: elements outside the tensor");
  t.data_ = static_cast<char*>(data_) + static_cast<size_t>(first) * element_size(type_);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t(type_, shape_);
  if (type_ == DataType::string) {
    for (int64_t i = 0; i < numel_; ++i) t.mutable_data<std::string>()[i] = data<std::string>()[i];
  } else if (nbytes() > 0) {
    std::memcpy(t.data_, data_, nbytes());
  }
  return t;
}

}  // namespace onnxkit::runtime
