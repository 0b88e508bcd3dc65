// BMP decoding, written here: Windows bitmaps with a BITMAPINFOHEADER or a
// later header (40 bytes and up), uncompressed (BI_RGB) at 1, 4, 8, 24 and
// 32 bits per pixel, and 32-bit BI_BITFIELDS with the usual BGRX masks.
// Rows are padded to 4 bytes and stored bottom-up unless the height is
// negative; palette entries are BGRX; a 32-bit pixel's fourth byte is
// dropped. The RLE compressions and the old OS/2 header are refused.

#include <cstring>

#include "runtime/kernels/image/image.h"

namespace onnxkit::runtime::image {
namespace {

uint32_t u32(std::span<const uint8_t> b, size_t at) {
  return uint32_t{b[at]} | uint32_t{b[at + 1]} << 8 | uint32_t{b[at + 2]} << 16 | uint32_t{b[at + 3]} << 24;
}
uint16_t u16(std::span<const uint8_t> b, size_t at) { return static_cast<uint16_t>(b[at] | b[at + 1] << 8); }

constexpr size_t kFileHeader = 14;
constexpr uint32_t kBiRgb = 0, kBiBitfields = 3;

}  // namespace

Result<Pixels> decode_bmp(std::span<const uint8_t> bytes) {
  if (bytes.size() < kFileHeader + 40) return make_error("corrupt or truncated BMP data: the headers need 54 bytes");
  const uint32_t pixels_at = u32(bytes, 10), info_size = u32(bytes, 14);
  if (info_size < 40)
    return make_error("BMP with a {}-byte info header (OS/2) is not decoded; only BITMAPINFOHEADER and later", info_size);
  const int32_t width = static_cast<int32_t>(u32(bytes, 18)), signed_height = static_cast<int32_t>(u32(bytes, 22));
  const uint16_t bits = u16(bytes, 28);
  const uint32_t compression = u32(bytes, 30), colors_used = u32(bytes, 46);
  const bool top_down = signed_height < 0;
  const int64_t height = top_down ? -int64_t{signed_height} : signed_height;
  if (width <= 0 || height == 0) return make_error("corrupt BMP data: a {} x {} image", width, height);
  const bool bitfields = compression == kBiBitfields && bits == 32;
  if (compression != kBiRgb && !bitfields)
    return make_error("compressed BMP (compression {} at {} bits per pixel) is not decoded", compression, bits);
  if (bitfields) {
    // The masks follow a 40-byte header, or are its next fields in later ones.
    const size_t masks = kFileHeader + 40;
    if (bytes.size() < masks + 12) return make_error("corrupt or truncated BMP data: no bit field masks");
    if (u32(bytes, masks) != 0x00FF0000 || u32(bytes, masks + 4) != 0x0000FF00 || u32(bytes, masks + 8) != 0x000000FF)
      return make_error("BMP bit fields other than 8-bit BGRX are not decoded");
  }
  if (bits != 1 && bits != 4 && bits != 8 && bits != 24 && bits != 32)
    return make_error("BMP at {} bits per pixel is not decoded", bits);

  // The palette of an indexed image.
  std::vector<uint8_t> palette;  // RGB triples
  if (bits <= 8) {
    const size_t entries = colors_used != 0 ? colors_used : size_t{1} << bits;
    const size_t at = kFileHeader + info_size;
    if (entries > (size_t{1} << bits) || at > bytes.size() || (bytes.size() - at) / 4 < entries)
      return make_error("corrupt or truncated BMP data: a palette of {} colors", entries);
    for (size_t i = 0; i < entries; ++i)
      palette.insert(palette.end(), {bytes[at + 4 * i + 2], bytes[at + 4 * i + 1], bytes[at + 4 * i]});
  }
  const size_t row = (static_cast<size_t>(width) * bits + 31) / 32 * 4;
  if (pixels_at > bytes.size() || (bytes.size() - pixels_at) / row < static_cast<size_t>(height))
    return make_error("corrupt or truncated BMP data: {} rows of {} bytes do not fit", height, row);

  Pixels out;
  out.height = height;
  out.width = width;
  out.channels = 3;
  out.data.resize(static_cast<size_t>(height) * static_cast<size_t>(width) * 3);
  for (int64_t y = 0; y < height; ++y) {
    const uint8_t* src = bytes.data() + pixels_at + static_cast<size_t>(top_down ? y : height - 1 - y) * row;
    uint8_t* dst = out.data.data() + static_cast<size_t>(y) * static_cast<size_t>(width) * 3;
    for (int64_t x = 0; x < width; ++x, dst += 3) {
      if (bits >= 24) {
        const uint8_t* px = src + x * (bits / 8);
        dst[0] = px[2], dst[1] = px[1], dst[2] = px[0];
        continue;
      }
      const int64_t bit = x * bits;
      const size_t index = (src[bit / 8] >> (8 - bits - bit % 8)) & ((1u << bits) - 1);
      if (3 * index >= palette.size())
        return make_error("corrupt BMP data: color index {} beyond the palette's {} colors", index, palette.size() / 3);
      std::memcpy(dst, &palette[3 * index], 3);
    }
  }
  return out;
}

}  // namespace onnxkit::runtime::image
