// Cast and CastLike between every pair of element types, strings, float8
// (E8M0 with its rounding modes), float4 and 2- and 4-bit integers included;
// BitCast between types of one bit width.

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "runtime/kernels/tensor/tensor.h"
#include "runtime/parallel.h"

namespace onnxkit::runtime::tensor_ops {
namespace {

// A float converted to an integer type (int4 and uint4 included): NaN gives
// 0 and values out of range saturate (C++ leaves both undefined; ONNX leaves
// them unspecified).
template <class To> To float_to_integer(double v) {
  if (std::isnan(v)) return To(0);
  if (v <= static_cast<double>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
  if (v >= static_cast<double>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
  return static_cast<To>(v);
}

// How values that do not fit are handled: `saturate` (opset 19) matters for
// float8 targets only, `rounding` (opset 25's round_mode) for E8M0 only.
struct CastMode {
  bool saturate = true;
  E8M0Rounding rounding = E8M0Rounding::up;
};

template <class To, class From> To convert(const From& v, const CastMode& mode) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (is_half_v<From> || is_small_float_v<From>) {
    return convert<To>(static_cast<float>(v), mode);  // exact
  } else if constexpr (is_small_int_v<From>) {
    return convert<To>(static_cast<int>(v), mode);
  } else if constexpr (std::is_same_v<From, std::string>) {
    if constexpr (std::is_same_v<To, bool>) {
      return !(v.empty() || v == "0" || v == "false" || v == "False");
    } else {
      double d = std::strtod(v.c_str(), nullptr);  // accepts "inf", "-INF", "NaN"
      return convert<To>(d, mode);
    }
  } else if constexpr (std::is_same_v<To, std::string>) {
    if constexpr (std::is_same_v<From, bool>) return v ? "1" : "0";
    else return fmt::format("{}", v);
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_same_v<To, Float8E8M0>) {
    return To(static_cast<double>(v), mode.saturate, mode.rounding);
  } else if constexpr (is_small_float_v<To>) {
    return To(static_cast<double>(v), mode.saturate);
  } else if constexpr (is_half_v<To>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<From> && !std::is_floating_point_v<To>) {
    return float_to_integer<To>(static_cast<double>(v));
  } else {
    return static_cast<To>(v);  // integers narrow by keeping their low bits, int4 and uint4 too
  }
}

// Element types Cast can handle (complex is not a Cast type).
template <class F> Status dispatch_castable(DataType t, F&& f) {
  if (is_low_precision(t)) return dispatch_low_precision(t, std::forward<F>(f));
  switch (t) {
    case DataType::boolean: return f.template operator()<bool>();
    case DataType::string: return f.template operator()<std::string>();
    default: return dispatch_numeric(t, std::forward<F>(f));
  }
}

Status cast(const Tensor& x, DataType to, const CastMode& mode, KernelContext& ctx) {
  if (x.dtype() == to) {
    ctx.set_output(0, x);
    return {};
  }
  Tensor& y = ctx.output(0, to, x.shape());
  return dispatch_castable(x.dtype(), [&]<class From>() -> Status {
    return dispatch_castable(to, [&]<class To>() -> Status {
      const From* src = x.data<From>();
      To* dst = y.mutable_data<To>();
      const int64_t n = x.numel();
      constexpr bool trivial = !std::is_same_v<From, std::string> && !std::is_same_v<To, std::string>;
      parallel_ranges(n, trivial && n >= (1 << 16), [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) dst[i] = convert<To>(src[i], mode);
      });
      return {};
    });
  });
}

// BitCast (opset 26): the bits of each element read as another type of the
// same width, little-endian as the host.
Status bit_cast(const Tensor& x, DataType to, KernelContext& ctx) {
  const int bits = bit_width(x.dtype());
  if (bits == 0 || bits != bit_width(to))
    return make_error("cannot bit-cast {} ({} bits) to {} ({} bits): the widths must be equal and non-zero", to_string(x.dtype()),
                      bits, to_string(to), bit_width(to));
  Tensor& y = ctx.output(0, to, x.shape());
  if (bits < 8) {
    // The low bits of each byte are the element; signed integers are kept
    // sign-extended in memory.
    const auto* in = static_cast<const uint8_t*>(x.raw());
    auto* out = static_cast<uint8_t*>(y.mutable_raw());
    for (int64_t i = 0; i < x.numel(); ++i) {
      switch (to) {
        case DataType::int4: out[i] = static_cast<uint8_t>(Int4(in[i]).value); break;
        case DataType::int2: out[i] = static_cast<uint8_t>(Int2(in[i]).value); break;
        default: out[i] = static_cast<uint8_t>(in[i] & ((1u << bits) - 1)); break;
      }
    }
    return {};
  }
  if (x.nbytes() > 0) std::memcpy(y.mutable_raw(), x.raw(), x.nbytes());
  // A C++ bool holds 0 or 1 only: any other byte reads as true.
  if (to == DataType::boolean) {
    const auto* in = static_cast<const uint8_t*>(x.raw());
    bool* out = y.mutable_data<bool>();
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = in[i] != 0;
  }
  return {};
}

Result<CastMode> cast_mode(const KernelInfo& info) {
  CastMode mode;
  mode.saturate = info.attr_int("saturate", 1) != 0;
  const std::string round_mode = info.attr_string("round_mode", "up");
  if (round_mode == "up") mode.rounding = E8M0Rounding::up;
  else if (round_mode == "down") mode.rounding = E8M0Rounding::down;
  else if (round_mode == "nearest") mode.rounding = E8M0Rounding::nearest;
  else return make_error("attribute round_mode must be \"up\", \"down\" or \"nearest\", got \"{}\"", round_mode);
  return mode;
}

}  // namespace

void register_cast(KernelRegistry& r) {
  r.add("", "BitCast", 26, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          if (!info.has_attr("to")) return make_error("attribute 'to' is required");
          auto to = static_cast<DataType>(info.attr_int("to", 0));
          if (element_size(to) == 0 || to == DataType::string)
            return make_error("attribute 'to' ({}) is not a supported non-string element type", static_cast<int>(to));
          return ComputeFn([to](KernelContext& ctx) -> Status {
            ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
            return bit_cast(*x, to, ctx);
          });
        }));
  r.add("", "Cast", 6, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          auto to = static_cast<DataType>(info.attr_int("to", 0));
          if (element_size(to) == 0)
            return make_error("attribute 'to' ({}) is not a supported element type", static_cast<int>(to));
          ONNXKIT_ASSIGN(CastMode mode, cast_mode(info));
          return ComputeFn([to, mode](KernelContext& ctx) -> Status {
            ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
            return cast(*x, to, mode, ctx);
          });
        }));
  r.add("", "CastLike", 15, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          ONNXKIT_ASSIGN(CastMode mode, cast_mode(info));
          return ComputeFn([mode](KernelContext& ctx) -> Status {
            ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
            ONNXKIT_ASSIGN(const Tensor* like, ctx.tensor(1));
            return cast(*x, like->dtype(), mode, ctx);
          });
        }));
}

}  // namespace onnxkit::runtime::tensor_ops
