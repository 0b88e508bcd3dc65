// TIFF decoding with Debian's libtiff: the first image of the file, as
// Pillow (the spec's reference) opens it.
//
// 8-bit gray, RGB and palette images in strips (the common case, and what
// Pillow writes) are read scanline by scanline, so that the pixels grow
// with the data actually decoded rather than with the size the header
// claims; extra samples (alpha) are dropped as stored, as Pillow reads
// them, and palette entries keep their high byte, as Pillow's palette does.
// Everything else libtiff can read (tiles, other bit depths, planar
// separation, YCbCr, CMYK, Lab...) goes through libtiff's RGBA interface,
// whose raster of the whole image is allocated from the header's size
// (within check_whole_image's limit). That interface premultiplies
// unassociated alpha: such alpha is declared associated first, so that
// colors stay as stored there too.
//
// Errors and warnings go to handlers of this handle only (libtiff 4.5's
// TIFFOpenOptions), which keep the first error's message. A warning is not
// an error (libtiff warns about unknown tags of valid files), except
// libjpeg's within JPEG-compressed strips: libjpeg only warns about damaged
// or missing data, and fills the rows it lacks in gray (as in jpeg.cpp).

#include <tiffio.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>

#include "runtime/kernels/image/image.h"

namespace onnxkit::runtime::image {
namespace {

struct Source {
  std::span<const uint8_t> bytes;
  uint64_t at = 0;
  char message[256] = {};
  bool damaged = false;  // libjpeg warned
};

tmsize_t read_bytes(thandle_t handle, void* out, tmsize_t n) {
  auto* s = static_cast<Source*>(handle);
  if (n < 0 || s->at >= s->bytes.size()) return 0;
  const size_t count = std::min<uint64_t>(static_cast<uint64_t>(n), s->bytes.size() - s->at);
  std::memcpy(out, s->bytes.data() + s->at, count);
  s->at += count;
  return static_cast<tmsize_t>(count);
}

tmsize_t write_bytes(thandle_t, void*, tmsize_t) { return -1; }

toff_t seek(thandle_t handle, toff_t offset, int whence) {
  auto* s = static_cast<Source*>(handle);
  uint64_t base = 0;
  if (whence == SEEK_CUR) base = s->at;
  else if (whence == SEEK_END) base = s->bytes.size();
  if (offset > UINT64_MAX - base) return static_cast<toff_t>(-1);
  s->at = base + offset;  // beyond the end is allowed: reads there return 0 bytes
  return s->at;
}

int close(thandle_t) { return 0; }
toff_t size(thandle_t handle) { return static_cast<Source*>(handle)->bytes.size(); }
// The bytes stand for the file's mapping, which libtiff only reads (it maps
// files read-only): strips and tiles are then taken in place, not copied,
// and libtiff 4.5's check of an uncompressed tile's size, which fails on
// its rounded-up copy buffer, holds.
int map(thandle_t handle, void** base, toff_t* size) {
  auto* s = static_cast<Source*>(handle);
  *base = const_cast<uint8_t*>(s->bytes.data());
  *size = s->bytes.size();
  return 1;
}
void unmap(thandle_t, void*, toff_t) {}

int on_error(TIFF*, void* user, const char* module, const char* format, va_list args) {
  auto* s = static_cast<Source*>(user);
  if (s->message[0] == '\0') std::vsnprintf(s->message, sizeof s->message, format, args);
  return 1;  // handled: libtiff's global handler, which prints, is not called
}

int on_warning(TIFF* t, void* user, const char* module, const char* format, va_list args) {
  if (module != nullptr && std::strcmp(module, "JPEGLib") == 0) {
    static_cast<Source*>(user)->damaged = true;
    return on_error(t, user, module, format, args);
  }
  return 1;
}

struct Closer {
  void operator()(TIFF* t) const { TIFFClose(t); }
};

Error tiff_error(const Source& s, std::string_view what) {
  if (s.message[0] == '\0') return make_error("corrupt or truncated TIFF data: {}", what);
  return make_error("corrupt or truncated TIFF data: {}: {}", what, s.message);
}

struct Layout {
  uint32_t width = 0, height = 0;
  uint16_t bits = 0, samples = 0, photometric = 0, planar = 0, format = 0, compression = 0;
};

// The layout the scanline reader handles: 8-bit unsigned gray, RGB or
// palette samples, interleaved, in strips.
bool is_plain(TIFF* t, const Layout& l) {
  if (TIFFIsTiled(t) || l.bits != 8 || l.planar != PLANARCONFIG_CONTIG || l.format != SAMPLEFORMAT_UINT ||
      l.compression == COMPRESSION_OJPEG)
    return false;
  switch (l.photometric) {
    case PHOTOMETRIC_MINISBLACK:
    case PHOTOMETRIC_MINISWHITE:
    case PHOTOMETRIC_PALETTE: return l.samples >= 1;
    case PHOTOMETRIC_RGB: return l.samples >= 3;
    default: return false;
  }
}

Result<Pixels> read_plain(TIFF* t, const Layout& l, const Source& s) {
  const uint16_t* palette[3] = {};
  if (l.photometric == PHOTOMETRIC_PALETTE && !TIFFGetField(t, TIFFTAG_COLORMAP, &palette[0], &palette[1], &palette[2]))
    return tiff_error(s, "a palette image without a color map");
  Pixels out;
  out.width = l.width;
  out.height = l.height;
  out.channels = l.photometric == PHOTOMETRIC_RGB || l.photometric == PHOTOMETRIC_PALETTE ? 3 : 1;
  const size_t row = static_cast<size_t>(l.width) * l.samples;
  if (TIFFScanlineSize(t) != static_cast<tmsize_t>(row)) return tiff_error(s, "an unexpected scanline size");
  std::vector<uint8_t> line(row);
  const size_t out_row = static_cast<size_t>(l.width) * static_cast<size_t>(out.channels);
  for (uint32_t y = 0; y < l.height; ++y) {
    if (TIFFReadScanline(t, line.data(), y, 0) < 0) return tiff_error(s, fmt::format("reading row {}", y));
    out.data.resize(out.data.size() + out_row);
    uint8_t* dst = out.data.data() + out.data.size() - out_row;
    for (uint32_t x = 0; x < l.width; ++x) {
      const uint8_t* px = line.data() + static_cast<size_t>(x) * l.samples;
      switch (l.photometric) {
        case PHOTOMETRIC_MINISBLACK: dst[x] = px[0]; break;
        case PHOTOMETRIC_MINISWHITE: dst[x] = static_cast<uint8_t>(255 - px[0]); break;
        case PHOTOMETRIC_RGB: std::memcpy(dst + 3 * x, px, 3); break;
        default:  // the color map has 2^8 entries of 16 bits
          for (int c = 0; c < 3; ++c) dst[3 * x + c] = static_cast<uint8_t>(palette[c][px[0]] >> 8);
      }
    }
  }
  return out;
}

Result<Pixels> read_rgba(TIFF* t, const Layout& l, const Source& s) {
  char why[1024] = {};
  if (!TIFFRGBAImageOK(t, why))
    return make_error("TIFF image (photometric {}, {} samples of {} bits) is not decoded: {}", l.photometric, l.samples, l.bits,
                      why);
  ONNXKIT_TRY(check_whole_image(l.width, l.height, "TIFF"));
  uint16_t extra = 0;
  const uint16_t* extra_kinds = nullptr;
  TIFFGetFieldDefaulted(t, TIFFTAG_EXTRASAMPLES, &extra, &extra_kinds);
  if (extra > 0 && extra_kinds[0] == EXTRASAMPLE_UNASSALPHA) {
    // The in-memory directory only; a TIFF opened for reading is not written.
    std::vector<uint16_t> kinds(extra_kinds, extra_kinds + extra);
    kinds[0] = EXTRASAMPLE_ASSOCALPHA;
    TIFFSetField(t, TIFFTAG_EXTRASAMPLES, extra, kinds.data());
  }
  std::vector<uint32_t> raster(static_cast<size_t>(l.width) * l.height);
  if (!TIFFReadRGBAImageOriented(t, l.width, l.height, raster.data(), ORIENTATION_TOPLEFT, 1))
    return tiff_error(s, "reading the image");
  Pixels out;
  out.width = l.width;
  out.height = l.height;
  const bool gray =
      (l.photometric == PHOTOMETRIC_MINISBLACK || l.photometric == PHOTOMETRIC_MINISWHITE) && l.samples - extra == 1;
  out.channels = gray ? 1 : 3;
  out.data.resize(raster.size() * static_cast<size_t>(out.channels));
  for (size_t i = 0; i < raster.size(); ++i) {
    if (gray) {
      out.data[i] = static_cast<uint8_t>(TIFFGetR(raster[i]));
    } else {
      out.data[3 * i] = static_cast<uint8_t>(TIFFGetR(raster[i]));
      out.data[3 * i + 1] = static_cast<uint8_t>(TIFFGetG(raster[i]));
      out.data[3 * i + 2] = static_cast<uint8_t>(TIFFGetB(raster[i]));
    }
  }
  return out;
}

}  // namespace

Result<Pixels> decode_tiff(std::span<const uint8_t> bytes) {
  Source source{bytes};
  std::unique_ptr<TIFFOpenOptions, decltype(&TIFFOpenOptionsFree)> options(TIFFOpenOptionsAlloc(), TIFFOpenOptionsFree);
  if (!options) return make_error("libtiff could not start a TIFF reader");
  TIFFOpenOptionsSetErrorHandlerExtR(options.get(), on_error, &source);
  TIFFOpenOptionsSetWarningHandlerExtR(options.get(), on_warning, &source);
  std::unique_ptr<TIFF, Closer> tiff(TIFFClientOpenExt("ImageDecoder input", "r", &source, read_bytes, write_bytes, seek, close,
                                                       size, map, unmap, options.get()));
  if (!tiff) return tiff_error(source, "no image could be opened");
  TIFF* t = tiff.get();
  Layout l;
  if (!TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &l.width) || !TIFFGetField(t, TIFFTAG_IMAGELENGTH, &l.height))
    return tiff_error(source, "no image size");
  if (l.width == 0 || l.height == 0) return make_error("corrupt TIFF data: a {} x {} image", l.width, l.height);
  TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &l.bits);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &l.samples);
  TIFFGetFieldDefaulted(t, TIFFTAG_PLANARCONFIG, &l.planar);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLEFORMAT, &l.format);
  TIFFGetFieldDefaulted(t, TIFFTAG_COMPRESSION, &l.compression);
  if (!TIFFGetField(t, TIFFTAG_PHOTOMETRIC, &l.photometric)) return tiff_error(source, "no photometric interpretation");
  Result<Pixels> pixels = is_plain(t, l) ? read_plain(t, l, source) : read_rgba(t, l, source);
  if (pixels.ok() && source.damaged) return tiff_error(source, "damaged JPEG-compressed data");
  return pixels;
}

}  // namespace onnxkit::runtime::image
