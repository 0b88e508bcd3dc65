// PNM decoding (Netpbm's PBM, PGM and PPM: P1 to P6), written here: the
// format is a text header and a raster, plain (ASCII numbers) or raw
// (bytes; two per sample when maxval is above 255). Samples are scaled from
// 0..maxval to 0..255, rounding to nearest; PBM's 1 is black. PAM (P7) is
// not decoded.

#include <cctype>

#include "runtime/kernels/image/image.h"

namespace onnxkit::runtime::image {
namespace {

class Parser {
 public:
  explicit Parser(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  // The next decimal number of the header or of a plain raster, skipping
  // whitespace and comments (# to the end of the line).
  Result<int64_t> number(std::string_view what) {
    while (at_ < bytes_.size()) {
      if (bytes_[at_] == '#') {
        while (at_ < bytes_.size() && bytes_[at_] != '\n') ++at_;
      } else if (std::isspace(bytes_[at_])) {
        ++at_;
      } else {
        break;
      }
    }
    if (at_ >= bytes_.size() || !std::isdigit(bytes_[at_]))
      return make_error("corrupt or truncated PNM data: expected the {} at byte {}", what, at_);
    int64_t n = 0;
    while (at_ < bytes_.size() && std::isdigit(bytes_[at_])) {
      n = n * 10 + (bytes_[at_++] - '0');
      if (n > (int64_t{1} << 31)) return make_error("corrupt PNM data: the {} is too large", what);
    }
    return n;
  }
  // One plain PBM digit, which needs no separator.
  Result<int64_t> bit() {
    while (at_ < bytes_.size() && (std::isspace(bytes_[at_]) || bytes_[at_] == '#')) {
      if (bytes_[at_] == '#')
        while (at_ < bytes_.size() && bytes_[at_] != '\n') ++at_;
      else ++at_;
    }
    if (at_ >= bytes_.size() || (bytes_[at_] != '0' && bytes_[at_] != '1'))
      return make_error("corrupt or truncated PNM data: expected a 0 or 1 at byte {}", at_);
    return bytes_[at_++] - '0';
  }
  // The raw raster starts after one whitespace byte.
  Result<std::span<const uint8_t>> raster(size_t size) {
    if (at_ >= bytes_.size() || !std::isspace(bytes_[at_])) return make_error("corrupt PNM data: no raster after the header");
    ++at_;
    if (bytes_.size() - at_ < size)
      return make_error("corrupt or truncated PNM data: the raster needs {} bytes, {} are left", size, bytes_.size() - at_);
    return bytes_.subspan(at_, size);
  }

 private:
  std::span<const uint8_t> bytes_;
  size_t at_ = 2;  // after the magic number
};

}  // namespace

Result<Pixels> decode_pnm(std::span<const uint8_t> bytes) {
  const char kind = bytes.size() >= 2 ? static_cast<char>(bytes[1]) : '?';
  if (kind < '1' || kind > '6') return make_error("PNM variant P{} (PAM) is not decoded", kind);
  const bool bitmap = kind == '1' || kind == '4', plain = kind <= '3';
  Parser p(bytes);
  Pixels out;
  ONNXKIT_ASSIGN(out.width, p.number("width"));
  ONNXKIT_ASSIGN(out.height, p.number("height"));
  int64_t maxval = 1;
  if (!bitmap) {
    ONNXKIT_ASSIGN(maxval, p.number("maxval"));
  }
  if (maxval < 1 || maxval > 65535) return make_error("corrupt PNM data: maxval {} is outside 1..65535", maxval);
  out.channels = kind == '3' || kind == '6' ? 3 : 1;
  ONNXKIT_ASSIGN(const int64_t samples, checked_size({out.height, out.width, out.channels}, "the PNM image"));
  // A plain sample takes at least one byte: the header cannot claim more
  // samples than there are bytes.
  if (plain && samples > static_cast<int64_t>(bytes.size()))
    return make_error("corrupt or truncated PNM data: {} samples claimed in {} bytes", samples, bytes.size());
  auto scaled = [maxval](int64_t v) -> Result<uint8_t> {
    if (v > maxval) return make_error("corrupt PNM data: sample {} above maxval {}", v, maxval);
    return static_cast<uint8_t>((v * 255 + maxval / 2) / maxval);
  };
  out.data.resize(static_cast<size_t>(plain ? samples : 0));
  if (kind == '1') {
    for (auto& px : out.data) {
      ONNXKIT_ASSIGN(const int64_t b, p.bit());
      px = b ? 0 : 255;
    }
  } else if (plain) {
    for (auto& px : out.data) {
      ONNXKIT_ASSIGN(const int64_t v, p.number("sample"));
      ONNXKIT_ASSIGN(px, scaled(v));
    }
  } else if (kind == '4') {
    const size_t row = static_cast<size_t>((out.width + 7) / 8);
    ONNXKIT_ASSIGN(auto raw, p.raster(row * static_cast<size_t>(out.height)));
    out.data.resize(static_cast<size_t>(samples));
    for (int64_t y = 0; y < out.height; ++y)
      for (int64_t x = 0; x < out.width; ++x)
        out.data[static_cast<size_t>(y * out.width + x)] = (raw[y * row + x / 8] >> (7 - x % 8)) & 1 ? 0 : 255;
  } else {
    const size_t width = maxval > 255 ? 2 : 1;
    ONNXKIT_ASSIGN(auto raw, p.raster(static_cast<size_t>(samples) * width));
    out.data.resize(static_cast<size_t>(samples));
    for (size_t i = 0; i < out.data.size(); ++i) {
      const int64_t v = width == 2 ? raw[2 * i] << 8 | raw[2 * i + 1] : raw[i];
      ONNXKIT_ASSIGN(out.data[i], scaled(v));
    }
  }
  return out;
}

}  // namespace onnxkit::runtime::image
