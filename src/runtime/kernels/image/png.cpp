// PNG decoding with Debian's libpng: every bit depth and color type, and
// interlaced images. Palettes become RGB, gray below 8 bits becomes 8-bit
// gray, 16-bit samples keep their high byte, and alpha (a channel or tRNS)
// is dropped: ImageDecoder's pixel formats have none.
//
// libpng reports errors by longjmp to the setjmp of the reading function;
// that function has plain locals only, and what it fills lives in its
// caller's frame, so a jump leaves nothing half-built. Warnings (a bad
// ancillary chunk, which libpng skips) are ignored.

#include <png.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "runtime/kernels/image/image.h"

namespace onnxkit::runtime::image {
namespace {

struct Reader {
  std::span<const uint8_t> bytes;
  size_t at = 0;
  char message[256] = {};
};

void read_bytes(png_structp png, png_bytep out, size_t n) {
  auto* r = static_cast<Reader*>(png_get_io_ptr(png));
  if (n > r->bytes.size() - r->at) png_error(png, "the data ends early");
  std::memcpy(out, r->bytes.data() + r->at, n);
  r->at += n;
}

[[noreturn]] void on_error(png_structp png, png_const_charp message) {
  auto* r = static_cast<Reader*>(png_get_error_ptr(png));
  std::snprintf(r->message, sizeof r->message, "%s", message);
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}

enum class Outcome { decoded, failed, refused };

// Decodes into `out` (`rows` holds the row pointers of an interlaced
// image); on failure reader.message says why, on refusal `refusal`.
Outcome run_decoder(png_structp png, png_infop info, Pixels& out, std::vector<png_bytep>& rows, Status& refusal) {
  if (setjmp(png_jmpbuf(png))) return Outcome::failed;
  png_read_info(png, info);
  const int color = png_get_color_type(png, info);
  const int depth = png_get_bit_depth(png, info);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (depth == 16) png_set_strip_16(png);
  png_set_strip_alpha(png);
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  out.height = png_get_image_height(png, info);
  out.width = png_get_image_width(png, info);
  out.channels = png_get_channels(png, info);
  const size_t row = png_get_rowbytes(png, info);
  if (row != static_cast<size_t>(out.width) * static_cast<size_t>(out.channels))
    png_error(png, "unexpected row size after conversion to 8-bit samples");
  if (passes == 1) {
    // Grown row by row rather than sized from the header: a few bytes may
    // claim a huge image and then end.
    for (int64_t y = 0; y < out.height; ++y) {
      out.data.resize(out.data.size() + row);
      png_read_row(png, out.data.data() + out.data.size() - row, nullptr);
    }
  } else {
    // Each pass revisits every row: the whole image is needed at once.
    refusal = check_whole_image(out.width, out.height, "interlaced PNG");
    if (!refusal.ok()) return Outcome::refused;
    out.data.resize(row * static_cast<size_t>(out.height));
    rows.resize(static_cast<size_t>(out.height));
    for (int64_t y = 0; y < out.height; ++y) rows[static_cast<size_t>(y)] = out.data.data() + y * row;
    png_read_image(png, rows.data());
  }
  png_read_end(png, nullptr);
  return Outcome::decoded;
}

}  // namespace

Result<Pixels> decode_png(std::span<const uint8_t> bytes) {
  Reader reader{bytes};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &reader, on_error, on_warning);
  if (png == nullptr) return make_error("libpng could not start a PNG reader");
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return make_error("libpng could not start a PNG reader");
  }
  png_set_read_fn(png, &reader, read_bytes);
  Pixels pixels;
  std::vector<png_bytep> rows;
  Status refusal;
  const Outcome outcome = run_decoder(png, info, pixels, rows, refusal);
  png_destroy_read_struct(&png, &info, nullptr);
  if (outcome == Outcome::failed) return make_error("corrupt or truncated PNG data: {}", reader.message);
  if (outcome == Outcome::refused) return refusal.error();
  return pixels;
}

}  // namespace onnxkit::runtime::image
