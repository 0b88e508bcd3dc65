#pragma once
// The image family: ImageDecoder (opset 20), decoding encoded image bytes
// into (height, width, channels) uint8 pixels. Each codec (jpeg.cpp,
// png.cpp, tiff.cpp, webp.cpp and jpeg2000.cpp on Debian's libjpeg-turbo,
// libpng, libtiff, libwebp and OpenJPEG; bmp.cpp and pnm.cpp, simple
// uncompressed formats, written here) decodes to 8-bit RGB, or to 8-bit
// gray when the image itself is gray; image_decoder.cpp detects the format
// from the magic bytes and makes the asked pixel format.

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/kernels/common.h"

namespace onnxkit::runtime::image {

// Decoded pixels, row-major, `channels` interleaved bytes per pixel.
struct Pixels {
  int64_t height = 0, width = 0;
  int channels = 0;  // 3 (RGB) or 1 (gray)
  std::vector<uint8_t> data;
};

// Interlaced PNG, TIFF through libtiff's RGBA interface and JPEG 2000 are
// decoded whole, into buffers sized from the header before any pixel data
// is read: a few bytes may claim any size. Larger images than this are
// refused (16384 x 16384; the other decoders grow their output row by row
// as the data comes).
inline constexpr int64_t kMaxWholeImagePixels = int64_t{1} << 28;
inline Status check_whole_image(int64_t width, int64_t height, std::string_view format) {
  if (height > 0 && width > kMaxWholeImagePixels / height)
    return make_error("the {} image declares {} x {} pixels; above {} it is not decoded", format, width, height,
                      kMaxWholeImagePixels);
  return {};
}

// Each an error (never a crash, never an exit) on corrupt or truncated
// bytes; a warning of the codec about damaged data is an error too.
Result<Pixels> decode_jpeg(std::span<const uint8_t> bytes);
Result<Pixels> decode_png(std::span<const uint8_t> bytes);
Result<Pixels> decode_bmp(std::span<const uint8_t> bytes);
Result<Pixels> decode_pnm(std::span<const uint8_t> bytes);
Result<Pixels> decode_tiff(std::span<const uint8_t> bytes);
Result<Pixels> decode_webp(std::span<const uint8_t> bytes);      // bytes: at least the 12 of the RIFF header
Result<Pixels> decode_jpeg2000(std::span<const uint8_t> bytes);  // a JP2 file or a J2K codestream

void register_image_decoder(KernelRegistry& registry);  // ImageDecoder (opset 20+)

}  // namespace onnxkit::runtime::image
