#include "runtime/broadcast.h"

#include <fmt/format.h>

namespace onnxkit::runtime {

Result<Shape> broadcast_shapes(const std::vector<const Shape*>& shapes) {
  size_t rank = 0;
  for (const Shape* s : shapes) rank = std::max(rank, s->size());
  Shape out(rank, 1);
  for (const Shape* s : shapes) {
    size_t offset = rank - s->size();
    for (size_t i = 0; i < s->size(); ++i) {
      int64_t d = (*s)[i];
      int64_t& o = out[offset + i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      return make_error("shapes {} cannot broadcast together (dim {}: {} vs {})",
                        fmt::join(
                            [&] {
                              std::vector<std::string> all;
                              for (const Shape* x : shapes) all.push_back(shape_to_string(*x));
                              return all;
                            }(),
                            " and "),
                        offset + i, o, d);
    }
  }
  return out;
}

std::vector<int64_t> broadcast_strides(const Shape& shape, const Shape& out) {
  std::vector<int64_t> strides(out.size(), 0);
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    size_t o = out.size() - shape.size() + i;
    strides[o] = shape[i] == 1 && out[o] != 1 ? 0 : stride;
    stride *= shape[i];
  }
  return strides;
}

namespace detail {

Layout merge_dims(const Shape& out, const std::vector<std::vector<int64_t>>& strides) {
  Layout layout;
  layout.strides.resize(strides.size());
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;  // size-1 dims change nothing
    bool merge = !layout.dims.empty();
    for (size_t k = 0; k < strides.size() && merge; ++k) merge = layout.strides[k].back() == strides[k][d] * out[d];
    if (merge) {
      layout.dims.back() *= out[d];
      for (size_t k = 0; k < strides.size(); ++k) layout.strides[k].back() = strides[k][d];
    } else {
      layout.dims.push_back(out[d]);
      for (size_t k = 0; k < strides.size(); ++k) layout.strides[k].push_back(strides[k][d]);
    }
  }
  return layout;
}

}  // namespace detail
}  // namespace onnxkit::runtime
