// ImageDecoder (opset 20): encoded image bytes (1-D uint8) to (height,
// width, channels) uint8 pixels, channels 3 for "RGB" and "BGR", 1 for
// "Grayscale".
//
// The format comes from the magic bytes. Every format the spec lists is
// decoded: JPEG, PNG, BMP, PNM, TIFF, WebP and JPEG 2000 (one file each,
// image.h). GIF, which the spec does not list, is recognised and refused by
// name, and anything unrecognised is refused with its first bytes. The spec lets a decoder return an
// empty tensor for bytes it cannot decode; we return an error instead, so
// that a damaged image is never mistaken for an empty one.
//
// Gray pixels from color ones are Pillow's ITU-R 601-2 luma, with its
// rounding (L = (19595 R + 38470 G + 7471 B + 2^15) >> 16), as the spec's
// reference implementation converts them; a gray image's pixels are
// returned as they are, and copied to three channels for RGB and BGR.

#include <algorithm>
#include <array>
#include <string>

#include <fmt/format.h>

#include "runtime/kernels/image/image.h"

namespace onnxkit::runtime::image {
namespace {

enum class PixelFormat { rgb, bgr, gray };

struct Format {
  const char* name;
  bool (*matches)(std::span<const uint8_t> b);
  Result<Pixels> (*decode)(std::span<const uint8_t> b);  // null: recognised but not decoded
};

bool starts_with(std::span<const uint8_t> b, std::initializer_list<uint8_t> magic) {
  return b.size() >= magic.size() && std::equal(magic.begin(), magic.end(), b.begin());
}

// Magic bytes of the formats the spec lists, and GIF.
const std::array<Format, 8> kFormats = {{
    {"JPEG",
     [](auto b) {
       return starts_with(b, {0xFF, 0xD8, 0xFF});
     },
     decode_jpeg},
    {"PNG",
     [](auto b) {
       return starts_with(b, {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'});
     },
     decode_png},
    {"BMP",
     [](auto b) {
       return starts_with(b, {'B', 'M'});
     },
     decode_bmp},
    {"TIFF",
     [](auto b) {
       return starts_with(b, {'I', 'I', 42, 0}) || starts_with(b, {'M', 'M', 0, 42}) ||  // classic
              starts_with(b, {'I', 'I', 43, 0}) || starts_with(b, {'M', 'M', 0, 43});    // BigTIFF
     },
     decode_tiff},
    {"WebP",
     [](auto b) {
       return starts_with(b, {'R', 'I', 'F', 'F'}) && b.size() >= 12 && std::equal(b.begin() + 8, b.begin() + 12, "WEBP");
     },
     decode_webp},
    {"JPEG 2000",
     [](auto b) {
       return starts_with(b, {0, 0, 0, 12, 'j', 'P', ' ', ' ', '\r', '\n', 0x87, '\n'}) ||
              starts_with(b, {0xFF, 0x4F, 0xFF, 0x51});
     },
     decode_jpeg2000},
    {"PNM", [](auto b) { return b.size() >= 2 && b[0] == 'P' && b[1] >= '1' && b[1] <= '7'; }, decode_pnm},
    {"GIF",
     [](auto b) {
       return starts_with(b, {'G', 'I', 'F', '8'});
     },
     nullptr},
}};

Result<PixelFormat> read_pixel_format(const KernelInfo& info) {
  const std::string name = info.attr_string("pixel_format", "RGB");
  if (name == "RGB") return PixelFormat::rgb;
  if (name == "BGR") return PixelFormat::bgr;
  if (name == "Grayscale") return PixelFormat::gray;
  return make_error("attribute pixel_format must be \"RGB\", \"BGR\" or \"Grayscale\", got \"{}\"", name);
}

Result<Pixels> decode(std::span<const uint8_t> bytes) {
  for (const Format& f : kFormats) {
    if (!f.matches(bytes)) continue;
    if (f.decode == nullptr)
      return make_error(
          "the encoded stream is a {} image, which is not decoded (the spec lists JPEG, PNG, BMP, PNM, "
          "TIFF, WebP and JPEG 2000)",
          f.name);
    return f.decode(bytes);
  }
  const size_t shown = std::min<size_t>(bytes.size(), 8);
  return make_error("the encoded stream is not an image of a known format (first bytes: {:02x})",
                    fmt::join(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(shown), " "));
}

Status compute_image_decoder(PixelFormat format, KernelContext& ctx) {
  ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
  if (x->dtype() != DataType::uint8 || x->rank() != 1)
    return make_error("input encoded_stream must be a 1-D uint8 tensor, got {} of shape {}", to_string(x->dtype()),
                      shape_to_string(x->shape()));
  if (x->numel() == 0) return make_error("input encoded_stream is empty");
  ONNXKIT_ASSIGN(const Pixels image, decode({x->data<uint8_t>(), static_cast<size_t>(x->numel())}));
  const int64_t pixels = image.height * image.width;
  const int channels = format == PixelFormat::gray ? 1 : 3;
  Tensor& y = ctx.output(0, DataType::uint8, {image.height, image.width, channels});
  const uint8_t* in = image.data.data();
  uint8_t* out = y.mutable_data<uint8_t>();
  if (image.channels == channels && format != PixelFormat::bgr) {
    std::copy_n(in, pixels * channels, out);
  } else if (image.channels == 1) {  // gray to RGB or BGR
    for (int64_t i = 0; i < pixels; ++i) std::fill_n(out + 3 * i, 3, in[i]);
  } else if (format == PixelFormat::bgr) {
    for (int64_t i = 0; i < pixels; ++i)
      for (int c = 0; c < 3; ++c) out[3 * i + c] = in[3 * i + 2 - c];
  } else {  // RGB to gray
    for (int64_t i = 0; i < pixels; ++i) {
      const uint32_t l = 19595u * in[3 * i] + 38470u * in[3 * i + 1] + 7471u * in[3 * i + 2] + 0x8000u;
      out[i] = static_cast<uint8_t>(l >> 16);
    }
  }
  return {};
}

KernelFactory image_decoder_kernel() {
  return make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
    ONNXKIT_ASSIGN(const PixelFormat format, read_pixel_format(info));
    return ComputeFn([format](KernelContext& ctx) { return compute_image_decoder(format, ctx); });
  });
}

}  // namespace

void register_image_decoder(KernelRegistry& r) { r.add("", "ImageDecoder", 20, kLatestOpset, image_decoder_kernel()); }

}  // namespace onnxkit::runtime::image
