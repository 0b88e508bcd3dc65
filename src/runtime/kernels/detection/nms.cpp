// NonMaxSuppression: for each batch and class, the boxes taken greedily by
// decreasing score (ties: lower index first), skipping every box whose IoU
// with one already taken exceeds iou_threshold, up to
// max_output_boxes_per_class. Rows of the output are (batch, class, box),
// batch-major, then class, then the order of selection.

#include <algorithm>
#include <cmath>
#include <new>
#include <numeric>
#include <optional>

#include "runtime/kernels/detection/detection.h"

namespace onnxkit::runtime::detection {
namespace {

enum Input : size_t { kBoxes = 0, kScores, kMaxOutput, kIouThreshold, kScoreThreshold };

// A box by its min and max corners, whichever corners the input gave.
struct Box {
  double y_min, x_min, y_max, x_max;
  double area() const { return (y_max - y_min) * (x_max - x_min); }
};

Box make_box(const double* v, bool center_point) {
  if (center_point) {  // [x_center, y_center, width, height]
    const double half_w = v[2] / 2, half_h = v[3] / 2;
    return {v[1] - half_h, v[0] - half_w, v[1] + half_h, v[0] + half_w};
  }
  // [y1, x1, y2, x2], any diagonal
  return {std::min(v[0], v[2]), std::min(v[1], v[3]), std::max(v[0], v[2]), std::max(v[1], v[3])};
}

double iou(const Box& a, const Box& b) {
  const double h = std::min(a.y_max, b.y_max) - std::max(a.y_min, b.y_min);
  const double w = std::min(a.x_max, b.x_max) - std::max(a.x_min, b.x_min);
  if (!(h > 0 && w > 0)) return 0;
  const double inter = h * w;
  const double uni = a.area() + b.area() - inter;
  return uni > 0 ? inter / uni : 0;
}

// An optional one-value float input (a scalar or a 1-element tensor).
Result<std::optional<double>> float_scalar(KernelContext& ctx, size_t index, const char* name) {
  if (!ctx.has_input(index)) return std::optional<double>();
  ONNXKIT_ASSIGN(double v, read_float_scalar(ctx, index, name));
  return std::optional<double>(v);
}

Status nms(KernelContext& ctx, bool center_point) {
  ONNXKIT_ASSIGN(const Tensor* boxes_t, ctx.tensor(kBoxes));
  ONNXKIT_ASSIGN(const Tensor* scores_t, ctx.tensor(kScores));
  if (boxes_t->rank() != 3 || boxes_t->dim(2) != 4)
    return make_error("boxes must be [num_batches, spatial_dimension, 4], got shape {}",
                      shape_to_string(boxes_t->shape()));
  if (scores_t->rank() != 3)
    return make_error("scores must be [num_batches, num_classes, spatial_dimension], got shape {}",
                      shape_to_string(scores_t->shape()));
  const int64_t batches = boxes_t->dim(0), count = boxes_t->dim(1), classes = scores_t->dim(1);
  if (scores_t->dim(0) != batches || scores_t->dim(2) != count)
    return make_error("scores has shape {} and boxes {}: scores must be [num_batches={}, num_classes, spatial_dimension={}]",
                      shape_to_string(scores_t->shape()), shape_to_string(boxes_t->shape()), batches, count);

  int64_t max_output = 0;  // absent: nothing is selected
  if (ctx.has_input(kMaxOutput)) {
    ONNXKIT_ASSIGN(const int64_t v, read_int_scalar(ctx, kMaxOutput, "max_output_boxes_per_class"));
    max_output = std::clamp<int64_t>(v, 0, count);
  }
  ONNXKIT_ASSIGN(std::optional<double> iou_threshold, float_scalar(ctx, kIouThreshold, "iou_threshold"));
  const double iou_limit = iou_threshold.value_or(0.0);
  if (!(iou_limit >= 0 && iou_limit <= 1))
    return make_error("iou_threshold is {}; it must be in [0, 1]", iou_limit);
  ONNXKIT_ASSIGN(std::optional<double> score_threshold, float_scalar(ctx, kScoreThreshold, "score_threshold"));
  if (score_threshold && std::isnan(*score_threshold)) return make_error("score_threshold is NaN");
  ONNXKIT_ASSIGN(std::vector<double> coords, read_doubles(*boxes_t, "boxes"));
  ONNXKIT_ASSIGN(std::vector<double> scores, read_doubles(*scores_t, "scores"));

  std::vector<int64_t> selected_rows;  // (batch, class, box) triples
  std::vector<Box> boxes(static_cast<size_t>(count));
  std::vector<int64_t> order, kept;
  for (int64_t n = 0; n < batches && max_output > 0; ++n) {
    for (int64_t i = 0; i < count; ++i)
      boxes[static_cast<size_t>(i)] = make_box(coords.data() + (n * count + i) * 4, center_point);
    for (int64_t c = 0; c < classes; ++c) {
      const double* s = scores.data() + (n * classes + c) * count;
      // A NaN score ranks nowhere: such boxes are never selected.
      order.clear();
      for (int64_t i = 0; i < count; ++i)
        if (!std::isnan(s[i]) && (!score_threshold || s[i] > *score_threshold)) order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return s[a] > s[b]; });
      kept.clear();
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= max_output) break;
        const Box& candidate = boxes[static_cast<size_t>(i)];
        bool suppressed = false;
        for (int64_t k : kept)
          if (iou(candidate, boxes[static_cast<size_t>(k)]) > iou_limit) {
            suppressed = true;
            break;
          }
        if (suppressed) continue;
        kept.push_back(i);
        selected_rows.insert(selected_rows.end(), {n, c, i});
      }
    }
  }
  const int64_t rows = static_cast<int64_t>(selected_rows.size() / 3);
  Tensor& out = ctx.output(0, DataType::int64, {rows, 3});
  std::copy(selected_rows.begin(), selected_rows.end(), out.mutable_data<int64_t>());
  return {};
}

}  // namespace

void register_nms(KernelRegistry& registry) {
  // Opset 11 only reworded the spec.
  registry.add("", "NonMaxSuppression", 10, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
                 const int64_t center = info.attr_int("center_point_box", 0);
                 if (center != 0 && center != 1)
                   return make_error("attribute 'center_point_box' is {}; it must be 0 or 1", center);
                 return ComputeFn([center](KernelContext& ctx) -> Status {
                   try {
                     return nms(ctx, center == 1);
                   } catch (const std::bad_alloc&) {
                     return make_error("out of memory while selecting boxes");
                   }
                 });
               }));
}

}  // namespace onnxkit::runtime::detection
