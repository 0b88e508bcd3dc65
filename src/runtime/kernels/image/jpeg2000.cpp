// JPEG 2000 decoding with Debian's OpenJPEG: the JP2 file format and the
// bare codestream (J2K), lossless and lossy. One or two components (gray,
// gray with alpha) give gray; three or more give RGB from the first three
// (alpha dropped). Samples go to 8 bits as Pillow (the spec's reference)
// takes them: signed ones offset by half their range, then shifted left or
// right by the difference between their precision and 8. Subsampled
// components and the YCC and CMYK color spaces are refused.
//
// OpenJPEG's default handlers print: ours keep the first error's message
// for the error returned, and drop warnings and information. Strict mode
// (OpenJPEG's default) makes a truncated codestream an error.

#include <openjpeg.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "runtime/kernels/image/image.h"

namespace onnxkit::runtime::image {
namespace {

struct Source {
  std::span<const uint8_t> bytes;
  uint64_t at = 0;
  std::string message;
};

OPJ_SIZE_T read_bytes(void* out, OPJ_SIZE_T n, void* user) {
  auto* s = static_cast<Source*>(user);
  if (s->at >= s->bytes.size()) return static_cast<OPJ_SIZE_T>(-1);  // OpenJPEG's end of stream
  const size_t count = std::min<uint64_t>(n, s->bytes.size() - s->at);
  std::memcpy(out, s->bytes.data() + s->at, count);
  s->at += count;
  return count;
}

OPJ_OFF_T skip(OPJ_OFF_T n, void* user) {
  auto* s = static_cast<Source*>(user);
  if (n < 0 && static_cast<uint64_t>(-n) > s->at) return -1;
  s->at = n < 0 ? s->at - static_cast<uint64_t>(-n) : std::min<uint64_t>(s->at + static_cast<uint64_t>(n), s->bytes.size());
  return n;
}

OPJ_BOOL seek(OPJ_OFF_T to, void* user) {
  auto* s = static_cast<Source*>(user);
  if (to < 0 || static_cast<uint64_t>(to) > s->bytes.size()) return OPJ_FALSE;
  s->at = static_cast<uint64_t>(to);
  return OPJ_TRUE;
}

void on_error(const char* message, void* user) {
  auto* s = static_cast<Source*>(user);
  if (!s->message.empty()) return;
  s->message = message;
  while (!s->message.empty() && (s->message.back() == '\n' || s->message.back() == ' ')) s->message.pop_back();
}

void ignore(const char*, void*) {}

struct CodecDeleter {
  void operator()(opj_codec_t* c) const { opj_destroy_codec(c); }
};
struct StreamDeleter {
  void operator()(opj_stream_t* s) const { opj_stream_destroy(s); }
};
struct ImageDeleter {
  void operator()(opj_image_t* i) const { opj_image_destroy(i); }
};

Error jpeg2000_error(const Source& s, std::string_view what) {
  if (s.message.empty()) return make_error("corrupt or truncated JPEG 2000 data: {}", what);
  return make_error("corrupt or truncated JPEG 2000 data: {}: {}", what, s.message);
}

uint8_t to_8_bits(const opj_image_comp_t& c, OPJ_INT32 v) {
  const int64_t u = c.sgnd ? int64_t{v} + (int64_t{1} << (c.prec - 1)) : int64_t{v};
  const int64_t shifted = c.prec > 8 ? u >> (c.prec - 8) : u << (8 - c.prec);
  return static_cast<uint8_t>(std::clamp<int64_t>(shifted, 0, 255));
}

}  // namespace

Result<Pixels> decode_jpeg2000(std::span<const uint8_t> bytes) {
  // A JP2 file starts with its signature box; anything else matched is a
  // bare codestream.
  const bool jp2 = bytes.size() >= 4 && bytes[0] == 0 && bytes[1] == 0 && bytes[2] == 0 && bytes[3] == 12;
  Source source{bytes};
  std::unique_ptr<opj_codec_t, CodecDeleter> codec(opj_create_decompress(jp2 ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K));
  if (!codec) return make_error("OpenJPEG could not start a JPEG 2000 decoder");
  opj_set_error_handler(codec.get(), on_error, &source);
  opj_set_warning_handler(codec.get(), ignore, nullptr);
  opj_set_info_handler(codec.get(), ignore, nullptr);
  opj_dparameters_t parameters;
  opj_set_default_decoder_parameters(&parameters);
  if (!opj_setup_decoder(codec.get(), &parameters)) return jpeg2000_error(source, "setting up the decoder");

  std::unique_ptr<opj_stream_t, StreamDeleter> stream(opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_TRUE));
  if (!stream) return make_error("OpenJPEG could not start a JPEG 2000 decoder");
  opj_stream_set_user_data(stream.get(), &source, nullptr);
  opj_stream_set_user_data_length(stream.get(), bytes.size());
  opj_stream_set_read_function(stream.get(), read_bytes);
  opj_stream_set_skip_function(stream.get(), skip);
  opj_stream_set_seek_function(stream.get(), seek);

  opj_image_t* header = nullptr;
  if (!opj_read_header(stream.get(), codec.get(), &header)) {
    opj_image_destroy(header);
    return jpeg2000_error(source, "reading the header");
  }
  std::unique_ptr<opj_image_t, ImageDeleter> image(header);
  if (image->numcomps == 0) return jpeg2000_error(source, "an image without components");
  if (image->color_space == OPJ_CLRSPC_SYCC || image->color_space == OPJ_CLRSPC_EYCC || image->color_space == OPJ_CLRSPC_CMYK)
    return make_error("JPEG 2000 in the {} color space is not decoded; only gray and RGB",
                      image->color_space == OPJ_CLRSPC_CMYK ? "CMYK" : "YCC");
  const int channels = image->numcomps >= 3 ? 3 : 1;
  const int64_t width = int64_t{image->x1} - image->x0, height = int64_t{image->y1} - image->y0;
  if (width <= 0 || height <= 0) return make_error("corrupt JPEG 2000 data: a {} x {} image", width, height);
  // OpenJPEG holds every component of the whole image at 32 bits per sample.
  if (image->numcomps > 4)
    return make_error("JPEG 2000 with {} components is not decoded; only gray and RGB, with or without alpha", image->numcomps);
  ONNXKIT_TRY(check_whole_image(width, height, "JPEG 2000"));
  for (int c = 0; c < channels; ++c) {
    const opj_image_comp_t& comp = image->comps[c];
    if (comp.dx != 1 || comp.dy != 1)
      return make_error("JPEG 2000 with subsampled components is not decoded (component {} by {} x {})", c, comp.dx, comp.dy);
    if (comp.prec < 1 || comp.prec > 31) return jpeg2000_error(source, fmt::format("a precision of {} bits", comp.prec));
  }
  if (!opj_decode(codec.get(), stream.get(), image.get()) || !opj_end_decompress(codec.get(), stream.get()))
    return jpeg2000_error(source, "decoding the image");

  Pixels out;
  out.width = image->comps[0].w;
  out.height = image->comps[0].h;
  out.channels = channels;
  for (int c = 0; c < channels; ++c) {
    const opj_image_comp_t& comp = image->comps[c];
    if (comp.data == nullptr || comp.w != image->comps[0].w || comp.h != image->comps[0].h)
      return jpeg2000_error(source, fmt::format("component {} is missing or of another size", c));
  }
  const size_t pixels = static_cast<size_t>(out.width) * static_cast<size_t>(out.height);
  out.data.resize(pixels * static_cast<size_t>(channels));
  for (int c = 0; c < channels; ++c) {
    const opj_image_comp_t& comp = image->comps[c];
    for (size_t i = 0; i < pixels; ++i) out.data[i * channels + c] = to_8_bits(comp, comp.data[i]);
  }
  return out;
}

}  // namespace onnxkit::runtime::image
