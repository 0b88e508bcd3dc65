#include "runtime/kernels/nn/conv_padding.h"

#include <algorithm>
#include <cstring>

namespace onnxkit::runtime::nn {

std::optional<ConvParams> pads_in_input(const ConvParams& p) {
  WindowGeometry g = p.window;
  bool any = false;
  for (size_t i = 0; i < g.rank(); ++i) {
    any = any || g.pads_begin[i] != 0 || g.pads_end[i] != 0;
    g.in[i] += g.pads_begin[i] + g.pads_end[i];
    g.pads_begin[i] = g.pads_end[i] = 0;
  }
  if (!any) return std::nullopt;
  ConvParams padded = p;
  padded.window = std::move(g);
  return padded;
}

void pad_input(const ConvParams& p, int64_t outer, int64_t inner, const float* x, float* padded) {
  const WindowGeometry& g = p.window;
  const size_t rank = g.rank();
  std::vector<int64_t> to(rank);
  for (size_t i = 0; i < rank; ++i) to[i] = g.in[i] + g.pads_begin[i] + g.pads_end[i];
  int64_t from_image = inner, to_image = inner;
  for (size_t i = 0; i < rank; ++i) {
    from_image *= g.in[i];
    to_image *= to[i];
  }
  std::fill(padded, padded + outer * to_image, 0.0f);
  // One row (the last spatial dim) at a time: rows = the input's other spatial positions.
  const int64_t row = g.in[rank - 1] * inner;
  const int64_t rows = g.in[rank - 1] > 0 ? from_image / row : 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t r = 0; r < rows; ++r) {
      int64_t rest = r, offset = g.pads_begin[rank - 1], stride = to[rank - 1];
      for (size_t i = rank - 1; i-- > 0;) {
        offset += (rest % g.in[i] + g.pads_begin[i]) * stride;
        rest /= g.in[i];
        stride *= to[i];
      }
      std::memcpy(padded + o * to_image + offset * inner, x + o * from_image + r * row, static_cast<size_t>(row) * sizeof(float));
    }
}

}  // namespace onnxkit::runtime::nn
