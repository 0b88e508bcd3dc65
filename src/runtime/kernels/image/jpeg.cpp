// JPEG decoding with Debian's libjpeg-turbo: baseline and progressive,
// gray, YCbCr and RGB; the library's default ("fancy") chroma upsampling,
// which the spec names, and its accurate integer DCT.
//
// libjpeg's default error handler prints and calls exit(): ours jumps back
// to the decoder with the message instead, and so does every warning, since
// libjpeg only warns about truncated or damaged data (and fills the missing
// rows in gray). The setjmp sits in a function of plain locals; what it
// fills lives in its caller's frame, so a jump leaves nothing half-built.

// jpeglib.h uses size_t and FILE without including their headers.
#include <csetjmp>
#include <cstdio>

#include <jpeglib.h>

#include "runtime/kernels/image/image.h"

namespace onnxkit::runtime::image {
namespace {

struct ErrorManager {
  jpeg_error_mgr base;  // first, so that libjpeg's jpeg_error_mgr* points at the whole
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Level -1 is a warning (damaged data); the others are trace messages.
void on_message(j_common_ptr cinfo, int level) {
  if (level < 0) on_error(cinfo);
}

enum class Outcome { decoded, failed };

// Decodes into `out`; on failure err.message says why.
Outcome run_decoder(jpeg_decompress_struct& cinfo, ErrorManager& err, std::span<const uint8_t> bytes, Pixels& out) {
  if (setjmp(err.jump)) return Outcome::failed;
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  out.channels = cinfo.jpeg_color_space == JCS_GRAYSCALE ? 1 : 3;
  cinfo.out_color_space = out.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;  // CMYK is refused by libjpeg here
  cinfo.dct_method = JDCT_ISLOW;
  cinfo.do_fancy_upsampling = TRUE;
  jpeg_start_decompress(&cinfo);
  out.height = cinfo.output_height;
  out.width = cinfo.output_width;
  const size_t row = static_cast<size_t>(cinfo.output_width) * static_cast<size_t>(out.channels);
  // Grown row by row rather than sized from the header: a few bytes may
  // claim a 65500 x 65500 image and then end.
  while (cinfo.output_scanline < cinfo.output_height) {
    out.data.resize(out.data.size() + row);
    JSAMPROW rows[1] = {out.data.data() + out.data.size() - row};
    jpeg_read_scanlines(&cinfo, rows, 1);
  }
  jpeg_finish_decompress(&cinfo);
  return Outcome::decoded;
}

}  // namespace

Result<Pixels> decode_jpeg(std::span<const uint8_t> bytes) {
  jpeg_decompress_struct cinfo{};  // zeroed: destroying it is safe even if creating it failed
  ErrorManager err;
  err.message[0] = '\0';
  cinfo.err = jpeg_std_error(&err.base);
  err.base.error_exit = on_error;
  err.base.emit_message = on_message;
  Pixels pixels;
  const Outcome outcome = run_decoder(cinfo, err, bytes, pixels);
  jpeg_destroy_decompress(&cinfo);
  if (outcome == Outcome::failed) return make_error("corrupt or truncated JPEG data: {}", err.message);
  return pixels;
}

}  // namespace onnxkit::runtime::image
