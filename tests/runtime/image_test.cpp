// ImageDecoder (opset 20) on images this test encodes itself, with libpng
// and libjpeg's encoders: PNG is lossless, so the decoded pixels must be
// the encoded ones exactly; JPEG is lossy, so flat colors must come back
// within a few levels; BMP and PNM files are written by hand. Gray values
// are Pillow's convert("L") (the ONNX reference implementation's), worked
// by hand: pure red, green and blue give 76, 150 and 29. Then the errors:
// truncated and corrupt bytes of each format, the formats that are
// recognised but not decoded, unknown bytes. TIFF, WebP and JPEG 2000, and
// every format against Pillow, are in test_image_decoder.py.

#include <gtest/gtest.h>

#include <cstdio>  // before jpeglib.h, which uses FILE and size_t
#include <cstdlib>
#include <cstring>

#include <jpeglib.h>
#include <png.h>

#include "support/node_runner.h"

namespace onnxkit {
namespace {

using runtime::DataType;
using runtime::Tensor;
using testing::attr;
using testing::expect_tensor_near;
using testing::run_node;
using testing::try_run_node;
using Bytes = std::vector<uint8_t>;

// A 3 x 2 picture: red, green, blue / white, black, gray 100.
const Bytes kRgb = {255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255, 0, 0, 0, 100, 100, 100};

Bytes encode_png(const Bytes& pixels, int width, int height, png_uint_32 format) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = format;
  png_alloc_size_t size = 0;
  EXPECT_TRUE(png_image_write_to_memory(&image, nullptr, &size, 0, pixels.data(), 0, nullptr));
  Bytes out(size);
  EXPECT_TRUE(png_image_write_to_memory(&image, out.data(), &size, 0, pixels.data(), 0, nullptr));
  out.resize(size);
  return out;
}

Bytes encode_jpeg(const Bytes& pixels, int width, int height, int components) {
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &buffer, &size);
  c.image_width = static_cast<JDIMENSION>(width);
  c.image_height = static_cast<JDIMENSION>(height);
  c.input_components = components;
  c.in_color_space = components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 95, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(pixels.data()) + c.next_scanline * width * components;
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  Bytes out(buffer, buffer + size);
  std::free(buffer);
  return out;
}

Result<std::vector<runtime::Datum>> decode(const Bytes& bytes, const char* pixel_format = "RGB") {
  return try_run_node({.op_type = "ImageDecoder",
                       .opset = 20,
                       .inputs = {{"data", Tensor::from<uint8_t>({static_cast<int64_t>(bytes.size())}, bytes)}},
                       .attributes = {attr("pixel_format", pixel_format)}});
}

Tensor pixels(int64_t height, int64_t width, int64_t channels, const Bytes& values) {
  return Tensor::from<uint8_t>({height, width, channels}, values);
}

void expect_error(const Result<std::vector<runtime::Datum>>& out, const std::string& fragment) {
  ASSERT_FALSE(out.ok()) << "expected an error";
  EXPECT_NE(out.error().message().find(fragment), std::string::npos) << out.error().message();
  EXPECT_NE(out.error().message().find("ImageDecoder"), std::string::npos) << out.error().message();
}

TEST(Image, PngRgbBgrAndGray) {
  const Bytes png = encode_png(kRgb, 3, 2, PNG_FORMAT_RGB);
  auto rgb = decode(png, "RGB");
  ASSERT_TRUE(rgb.ok()) << rgb.error().message();
  expect_tensor_near((*rgb)[0].tensor(), pixels(2, 3, 3, kRgb));
  auto bgr = decode(png, "BGR");
  ASSERT_TRUE(bgr.ok()) << bgr.error().message();
  expect_tensor_near((*bgr)[0].tensor(),
                     pixels(2, 3, 3, {0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255, 255, 0, 0, 0, 100, 100, 100}));
  auto gray = decode(png, "Grayscale");
  ASSERT_TRUE(gray.ok()) << gray.error().message();
  expect_tensor_near((*gray)[0].tensor(), pixels(2, 3, 1, {76, 150, 29, 255, 0, 100}));
}

// Alpha is dropped; a gray image's values are kept, and copied to three
// channels for RGB.
TEST(Image, PngAlphaAndGraySources) {
  const Bytes rgba = {10, 20, 30, 0, 40, 50, 60, 255};
  auto out = decode(encode_png(rgba, 2, 1, PNG_FORMAT_RGBA));
  ASSERT_TRUE(out.ok()) << out.error().message();
  expect_tensor_near((*out)[0].tensor(), pixels(1, 2, 3, {10, 20, 30, 40, 50, 60}));
  const Bytes gray = {7, 200};
  out = decode(encode_png(gray, 2, 1, PNG_FORMAT_GRAY), "Grayscale");
  ASSERT_TRUE(out.ok()) << out.error().message();
  expect_tensor_near((*out)[0].tensor(), pixels(1, 2, 1, {7, 200}));
  out = decode(encode_png(gray, 2, 1, PNG_FORMAT_GRAY), "RGB");
  ASSERT_TRUE(out.ok()) << out.error().message();
  expect_tensor_near((*out)[0].tensor(), pixels(1, 2, 3, {7, 7, 7, 200, 200, 200}));
}

// 16 x 16 flat colors, quarter by quarter: JPEG keeps them within a few levels.
TEST(Image, JpegFlatColors) {
  const uint8_t colors[4][3] = {{200, 30, 30}, {30, 200, 30}, {30, 30, 200}, {128, 128, 128}};
  Bytes image(16 * 16 * 3);
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 16; ++x) std::memcpy(&image[(y * 16 + x) * 3], colors[(y / 8) * 2 + x / 8], 3);
  auto out = decode(encode_jpeg(image, 16, 16, 3), "BGR");
  ASSERT_TRUE(out.ok()) << out.error().message();
  const Tensor& t = (*out)[0].tensor();
  ASSERT_EQ(t.shape(), (runtime::Shape{16, 16, 3}));
  // The centres of the quarters, away from the blur of the edges.
  for (int q = 0; q < 4; ++q) {
    const int y = (q / 2) * 8 + 4, x = (q % 2) * 8 + 4;
    for (int c = 0; c < 3; ++c)
      EXPECT_NEAR(t.data<uint8_t>()[(y * 16 + x) * 3 + c], colors[q][2 - c], 4) << "quarter " << q << " channel " << c;
  }
  const Bytes gray(8 * 8, 90);
  out = decode(encode_jpeg(gray, 8, 8, 1), "RGB");
  ASSERT_TRUE(out.ok()) << out.error().message();
  ASSERT_EQ((*out)[0].tensor().shape(), (runtime::Shape{8, 8, 3}));
  for (int i = 0; i < 8 * 8 * 3; ++i) EXPECT_NEAR((*out)[0].tensor().data<uint8_t>()[i], 90, 1);
}

// A 2 x 2 24-bit BMP written by hand, rows bottom-up, each padded to 8
// bytes, pixels BGR: red, green / blue, white.
TEST(Image, Bmp24Bit) {
  Bytes bmp = {'B', 'M', 70, 0, 0, 0, 0, 0, 0, 0, 54, 0, 0, 0,                                  // file header
               40,  0,   0,  0, 2, 0, 0, 0, 2, 0, 0,  0, 1, 0, 24, 0, 0, 0, 0, 0, 16, 0, 0, 0,  // info header
               0,   0,   0,  0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0,  0};
  for (uint8_t b : {255, 0, 0, 255, 255, 255, 0, 0}) bmp.push_back(b);  // blue, white (bottom row)
  for (uint8_t b : {0, 0, 255, 0, 255, 0, 0, 0}) bmp.push_back(b);      // red, green (top row)
  auto out = decode(bmp);
  ASSERT_TRUE(out.ok()) << out.error().message();
  expect_tensor_near((*out)[0].tensor(), pixels(2, 2, 3, {255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255}));
  expect_error(decode(Bytes(bmp.begin(), bmp.end() - 4)), "corrupt or truncated BMP");
}

// PNM: a plain PPM with a comment, and a raw PGM of maxval 15 (scaled to
// 255: 15 -> 255, 5 -> 85, 0 -> 0).
TEST(Image, PnmPlainAndRaw) {
  const std::string ppm = "P3\n# two pixels\n2 1\n255\n255 0 0  7 8 9\n";
  auto out = decode(Bytes(ppm.begin(), ppm.end()));
  ASSERT_TRUE(out.ok()) << out.error().message();
  expect_tensor_near((*out)[0].tensor(), pixels(1, 2, 3, {255, 0, 0, 7, 8, 9}));
  std::string pgm = "P5 3 1 15\n";
  pgm += std::string{15, 5, 0};
  out = decode(Bytes(pgm.begin(), pgm.end()), "Grayscale");
  ASSERT_TRUE(out.ok()) << out.error().message();
  expect_tensor_near((*out)[0].tensor(), pixels(1, 3, 1, {255, 85, 0}));
  expect_error(decode(Bytes(pgm.begin(), pgm.end() - 1)), "corrupt or truncated PNM");
  const std::string big = "P3 2 1 255 1 2 3 4 5 300\n";
  expect_error(decode(Bytes(big.begin(), big.end())), "above maxval");
}

TEST(Image, CorruptAndTruncatedBytesAreErrors) {
  const Bytes png = encode_png(kRgb, 3, 2, PNG_FORMAT_RGB);
  expect_error(decode(Bytes(png.begin(), png.begin() + png.size() / 2)), "corrupt or truncated PNG");
  Bytes bad_png = png;
  bad_png[20] ^= 0xFF;  // inside IHDR: its CRC no longer matches
  expect_error(decode(bad_png), "corrupt or truncated PNG");

  Bytes image(32 * 32 * 3);
  for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<uint8_t>(i * 37);
  const Bytes jpeg = encode_jpeg(image, 32, 32, 3);
  expect_error(decode(Bytes(jpeg.begin(), jpeg.begin() + jpeg.size() / 2)), "corrupt or truncated JPEG");
  expect_error(decode({0xFF, 0xD8, 0xFF}), "corrupt or truncated JPEG");
  expect_error(decode({0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3, 4, 5, 6, 7, 8}), "corrupt or truncated JPEG");
}

// The header of an Adam7-interlaced PNG, as libpng writes it, and an empty IDAT chunk.
Bytes interlaced_png_header(png_uint_32 width, png_uint_32 height) {
  Bytes out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_set_write_fn(
      png, &out,
      [](png_structp p, png_bytep data, size_t size) {
        auto* bytes = static_cast<Bytes*>(png_get_io_ptr(p));
        bytes->insert(bytes->end(), data, data + size);
      },
      nullptr);
  png_set_IHDR(png, info, width, height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_ADAM7, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  png_write_chunk(png, reinterpret_cast<png_const_bytep>("IDAT"), nullptr, 0);  // readers stop at the first IDAT
  png_destroy_write_struct(&png, &info);
  return out;
}

// A little-endian TIFF of one 16-bit gray strip (read through libtiff's
// RGBA interface), its directory declaring width x height and its strip
// holding 8 bytes.
Bytes gray16_tiff(uint32_t width, uint32_t height) {
  Bytes out = {'I', 'I', 42, 0, 8, 0, 0, 0};
  auto put16 = [&](uint32_t v) { out.insert(out.end(), {uint8_t(v), uint8_t(v >> 8)}); };
  auto put32 = [&](uint32_t v) { out.insert(out.end(), {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)}); };
  const uint32_t entries = 9, strip_at = 8 + 2 + entries * 12 + 4;
  put16(entries);
  auto entry = [&](uint16_t tag, uint16_t type, uint32_t value) {
    put16(tag), put16(type), put32(1);
    if (type == 3) put16(value), put16(0);  // a SHORT, left-justified in the value field
    else put32(value);
  };
  entry(256, 4, width);
  entry(257, 4, height);
  entry(258, 3, 16);        // bits per sample
  entry(259, 3, 1);         // no compression
  entry(262, 3, 1);         // min-is-black
  entry(273, 4, strip_at);  // strip offset
  entry(277, 3, 1);         // samples per pixel
  entry(278, 4, height);    // rows per strip
  entry(279, 4, 8);         // strip byte count
  put32(0);                 // no next directory
  out.insert(out.end(), 8, 0);
  return out;
}

// Formats decoded whole are sized from their header: a few bytes claiming
// 20000 x 20000 pixels are refused before any allocation of that size.
TEST(Image, HugeDeclaredSizesOfWholeImageFormatsAreErrors) {
  expect_error(decode(interlaced_png_header(20000, 20000)), "interlaced PNG image declares 20000 x 20000 pixels");
  expect_error(decode(gray16_tiff(20000, 20000)), "TIFF image declares 20000 x 20000 pixels");
  // Small enough, the same bytes are only truncated.
  expect_error(decode(interlaced_png_header(200, 200)), "corrupt or truncated PNG");
  expect_error(decode(gray16_tiff(200, 200)), "corrupt or truncated TIFF");
}

// A header and nothing after it: each format's decoder says which format
// it found damaged.
TEST(Image, FormatsAreNamedInErrors) {
  expect_error(decode({'R', 'I', 'F', 'F', 8, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8', ' '}), "corrupt or truncated WebP");
  expect_error(decode({'R', 'I', 'F', 'F', 80, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8', ' '}),
               "the RIFF container declares 88 bytes, 16 are present");
  expect_error(decode({'I', 'I', 42, 0, 8, 0, 0, 0}), "corrupt or truncated TIFF");
  expect_error(decode({'M', 'M', 0, 43, 0, 8, 0, 0}), "corrupt or truncated TIFF");  // BigTIFF
  expect_error(decode({0, 0, 0, 12, 'j', 'P', ' ', ' ', '\r', '\n', 0x87, '\n'}), "corrupt or truncated JPEG 2000");
  expect_error(decode({0xFF, 0x4F, 0xFF, 0x51, 0, 4}), "corrupt or truncated JPEG 2000");
  expect_error(decode({'B', 'M', 0, 0, 0, 0}), "corrupt or truncated BMP");
  expect_error(decode({'P', '7', '\n'}), "PAM");
  expect_error(decode({'G', 'I', 'F', '8', '9', 'a'}), "GIF");
  expect_error(decode({1, 2, 3, 4}), "not an image of a known format (first bytes: 01 02 03 04)");
  expect_error(decode(encode_png(kRgb, 3, 2, PNG_FORMAT_RGB), "HSV"), "pixel_format");
}

}  // namespace
}  // namespace onnxkit
