// WebP decoding with Debian's libwebp: lossy and lossless still images,
// with the library's default (fancy) chroma upsampling, as Pillow decodes
// them; alpha is dropped and the colors kept as stored (not premultiplied).
// Animated WebP is refused: which frame, on which background, is not
// something the spec says.
//
// libwebp decodes only whole images, into a buffer of the size the header
// claims (at most 16383 x 16383). Bytes that end before the RIFF container's
// declared size are refused before that buffer is made.

#include <webp/decode.h>

#include "runtime/kernels/image/image.h"

namespace onnxkit::runtime::image {
namespace {

const char* status_text(VP8StatusCode status) {
  switch (status) {
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_SUSPENDED: return "suspended";
    case VP8_STATUS_USER_ABORT: return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "the data ends early";
    default: return "unknown error";
  }
}

}  // namespace

Result<Pixels> decode_webp(std::span<const uint8_t> bytes) {
  // The RIFF header: "RIFF", the size of what follows it, "WEBP" (the
  // caller has matched both tags).
  const uint64_t riff_size = uint64_t{bytes[4]} | uint64_t{bytes[5]} << 8 | uint64_t{bytes[6]} << 16 | uint64_t{bytes[7]} << 24;
  if (riff_size + 8 > bytes.size())
    return make_error("corrupt or truncated WebP data: the RIFF container declares {} bytes, {} are present", riff_size + 8,
                      bytes.size());
  WebPBitstreamFeatures features;
  const VP8StatusCode status = WebPGetFeatures(bytes.data(), bytes.size(), &features);
  if (status != VP8_STATUS_OK) return make_error("corrupt or truncated WebP data: {}", status_text(status));
  if (features.has_animation) return make_error("animated WebP is not decoded; only still images");
  Pixels out;
  out.width = features.width;
  out.height = features.height;
  out.channels = 3;
  ONNXKIT_ASSIGN(const int64_t size, checked_size({out.height, out.width, 3}, "the WebP image"));
  out.data.resize(static_cast<size_t>(size));
  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config)) return make_error("libwebp could not start a WebP decoder");
  config.output.colorspace = MODE_RGB;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = out.data.data();
  config.output.u.RGBA.stride = static_cast<int>(out.width * 3);
  config.output.u.RGBA.size = out.data.size();
  const VP8StatusCode decoded = WebPDecode(bytes.data(), bytes.size(), &config);
  WebPFreeDecBuffer(&config.output);  // external memory: frees nothing of ours
  if (decoded != VP8_STATUS_OK) return make_error("corrupt or truncated WebP data: {}", status_text(decoded));
  return out;
}

}  // namespace onnxkit::runtime::image
