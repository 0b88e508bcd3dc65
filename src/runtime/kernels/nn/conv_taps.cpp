#include "runtime/kernels/nn/conv_taps.h"

#include <algorithm>
#include <vector>

#include "runtime/kernels/gemm.h"
#include "runtime/kernels/window.h"
#include "runtime/parallel.h"

namespace onnxkit::runtime::nn {

TapProducts::TapProducts(const ConvParams& p, FusedActivation activation) : p_(p), activation_(activation) {}

std::unique_ptr<TapProducts> TapProducts::create(const ConvParams& p, const float* w, const float* bias,
                                                 FusedActivation activation) {
  if (p.window.rank() != 2 || p.group != 1 || activation.add_residual) return nullptr;
  std::unique_ptr<TapProducts> made(new TapProducts(p, activation));
  const int64_t m = p.out_channels, c = p.in_channels, taps = p.window.kernel_size();
  made->taps_.resize(static_cast<size_t>(taps * c * m));
  for (int64_t o = 0; o < m; ++o)
    for (int64_t i = 0; i < c; ++i)
      for (int64_t t = 0; t < taps; ++t) made->taps_[static_cast<size_t>((t * c + i) * m + o)] = w[(o * c + i) * taps + t];
  made->bias_.assign(static_cast<size_t>(m), 0.0f);
  if (bias != nullptr) std::copy(bias, bias + m, made->bias_.begin());
  return made;
}

TapProducts::LiveRange TapProducts::live_range(size_t dim, int64_t tap) const {
  const WindowGeometry& g = p_.window;
  const int64_t s = g.strides[dim], offset = tap * g.dilations[dim] - g.pads_begin[dim];  // output o reads o * s + offset
  LiveRange r;
  r.begin = std::clamp<int64_t>(ceil_div(-offset, s), 0, g.out[dim]);
  r.end = std::clamp<int64_t>(floor_div(g.in[dim] - 1 - offset, s) + 1, r.begin, g.out[dim]);
  r.first_input = r.begin * s + offset;
  return r;
}

double TapProducts::live_share() const {
  const WindowGeometry& g = p_.window;
  double live = 0;
  for (int64_t i = 0; i < g.kernel[0]; ++i)
    for (int64_t j = 0; j < g.kernel[1]; ++j) {
      const LiveRange rows = live_range(0, i), columns = live_range(1, j);
      live += static_cast<double>(rows.end - rows.begin) * static_cast<double>(columns.end - columns.begin);
    }
  return live / (static_cast<double>(g.out_size()) * static_cast<double>(g.kernel_size()));
}

void TapProducts::run(const float* x, float* y, int threads) const {
  const WindowGeometry& g = p_.window;
  const int64_t c = p_.in_channels, m = p_.out_channels;
  const int64_t in_h = g.in[0], in_w = g.in[1], out_h = g.out[0], out_w = g.out[1];
  const int64_t out_pixels = out_h * out_w;
  // The threads share the output channels, in whole cache lines.
  constexpr int64_t kLine = 16;
  const int64_t lines = (m + kLine - 1) / kLine;
  const int64_t chunks = std::clamp<int64_t>(threads, 1, lines);
  for_each_chunk(chunks, [&](int64_t chunk) {
    const int64_t first = std::min(m, lines * chunk / chunks * kLine), last = std::min(m, lines * (chunk + 1) / chunks * kLine);
    const int64_t width = last - first;
    if (width <= 0) return;
    // A tap whose live outputs are part of each row reads them gathered into
    // one matrix, and its products go through a buffer into their rows: one
    // product per tap. One per output row (24 rows of 512 x 512 at DeepLabV3's
    // dilation 4) had oneDNN's sgemm copy the tap's weights for each row,
    // 40% more time than ONNX Runtime's direct kernel on AVX2.
    std::vector<float> gathered, products;
    for (int64_t n = 0; n < p_.batch; ++n) {
      const float* image = x + n * in_h * in_w * c;
      float* out = y + n * out_pixels * m;
      for (int64_t pixel = 0; pixel < out_pixels; ++pixel)
        std::copy(bias_.begin() + first, bias_.begin() + last, out + pixel * m + first);
      for (int64_t i = 0; i < g.kernel[0]; ++i)
        for (int64_t j = 0; j < g.kernel[1]; ++j) {
          const LiveRange rows = live_range(0, i), columns = live_range(1, j);
          if (rows.begin == rows.end || columns.begin == columns.end) continue;
          const float* tap = taps_.data() + (i * g.kernel[1] + j) * c * m + first;
          const int64_t row_count = rows.end - rows.begin, pixels = columns.end - columns.begin;
          // Whole rows that follow each other in the input and the output
          // are one product as they lie, and so is a single row.
          const bool whole_rows = g.strides[0] == 1 && g.strides[1] == 1 && columns.begin == 0 && columns.end == out_w &&
                                  out_w == in_w && columns.first_input == 0;
          if (whole_rows || row_count == 1) {
            const float* a = image + (rows.first_input * in_w + columns.first_input) * c;
            float* into = out + (rows.begin * out_w + columns.begin) * m + first;
            gemm(false, false, whole_rows ? row_count * out_w : pixels, width, c, 1.0f, a, g.strides[1] * c, tap, m, 1.0f, into,
                 m);
            continue;
          }
          gathered.resize(static_cast<size_t>(row_count * pixels * c));
          products.resize(static_cast<size_t>(row_count * pixels * width));
          for (int64_t k = 0; k < row_count; ++k) {
            const float* from = image + ((rows.first_input + k * g.strides[0]) * in_w + columns.first_input) * c;
            float* to = gathered.data() + k * pixels * c;
            if (g.strides[1] == 1) {
              std::copy(from, from + pixels * c, to);
            } else {
              for (int64_t q = 0; q < pixels; ++q)
                std::copy(from + q * g.strides[1] * c, from + (q * g.strides[1] + 1) * c, to + q * c);
            }
          }
          gemm(false, false, row_count * pixels, width, c, 1.0f, gathered.data(), c, tap, m, 0.0f, products.data(), width);
          for (int64_t k = 0; k < row_count; ++k)
            for (int64_t q = 0; q < pixels; ++q) {
              const float* v = products.data() + (k * pixels + q) * width;
              float* into = out + ((rows.begin + k) * out_w + columns.begin + q) * m + first;
              for (int64_t o = 0; o < width; ++o) into[o] += v[o];
            }
        }
      if (activation_.kind != FusedActivation::Kind::none)
        for (int64_t pixel = 0; pixel < out_pixels; ++pixel)
          for (float* v = out + pixel * m + first; v != out + pixel * m + last; ++v) *v = activation_.apply(*v);
    }
  });
}

}  // namespace onnxkit::runtime::nn
