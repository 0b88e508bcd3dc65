// NonMaxSuppression: for each batch and class, the boxes taken greedily by
// decreasing score (ties: lower index first), skipping every box whose IoU
// with one already taken exceeds iou_threshold, up to
// max_output_boxes_per_class. Rows of the output are (batch, class, box),
// batch-major, then class, then the order of selection.

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>
#include <optional>

#include "runtime/kernels/detection/detection.h"
#include "runtime/kernels/detection/nms.h"

namespace onnxkit::runtime::detection {
namespace {

enum Input : size_t { kBoxes = 0, kScores, kMaxOutput, kIouThreshold, kScoreThreshold };

// IoU of a and b given their areas; 0 when they do not overlap, so a pair
// whose x-extents are apart never suppresses (iou_limit >= 0).
double iou(const NmsBox& a, double area_a, const NmsBox& b, double area_b) {
  const double h = std::min(a.y_max, b.y_max) - std::max(a.y_min, b.y_min);
  const double w = std::min(a.x_max, b.x_max) - std::max(a.x_min, b.x_min);
  if (!(h > 0 && w > 0)) return 0;
  const double inter = h * w;
  const double uni = area_a + area_b - inter;
  return uni > 0 ? inter / uni : 0;
}

// The candidates of one class: scores above the threshold, NaN never, by
// decreasing score, ties lower index first.
void rank_candidates(size_t count, const double* scores, const NmsLimits& limits, std::vector<int64_t>& order) {
  order.clear();
  for (size_t i = 0; i < count; ++i)
    if (!std::isnan(scores[i]) && (!limits.score_threshold || scores[i] > *limits.score_threshold))
      order.push_back(static_cast<int64_t>(i));
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return scores[a] > scores[b] || (scores[a] == scores[b] && a < b); });
}

// A uniform grid over the candidates' x-range whose cells are about half a
// mean box wide (finer cells meet fewer distant boxes, coarser ones list
// each box in fewer cells). bucket() is non-decreasing in x, so two boxes whose
// x-extents overlap share at least one bucket.
class XBuckets {
 public:
  XBuckets(std::span<const NmsBox> boxes, std::span<const int64_t> candidates) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo, widths = 0;
    int64_t finite = 0;
    for (int64_t i : candidates) {
      const NmsBox& b = boxes[static_cast<size_t>(i)];
      if (!std::isfinite(b.x_min) || !std::isfinite(b.x_max)) continue;
      lo = std::min(lo, b.x_min);
      hi = std::max(hi, b.x_max);
      widths += std::max(0.0, b.x_max - b.x_min);
      ++finite;
    }
    if (finite == 0 || !(hi > lo)) return;
    const double mean_width = widths / static_cast<double>(finite);
    // At most one bucket per candidate (and per kMaxBuckets) bounds the memory.
    const double most = static_cast<double>(std::min<int64_t>(static_cast<int64_t>(candidates.size()), kMaxBuckets));
    const double wanted = mean_width > 0 ? std::min((hi - lo) * 2 / mean_width, most) : most;
    const double scale = std::floor(wanted) / (hi - lo);
    if (!(wanted >= 2 && std::isfinite(scale) && scale > 0)) return;
    count_ = static_cast<int32_t>(wanted);
    lo_ = lo;
    scale_ = scale;
  }

  int32_t count() const { return count_; }
  int32_t bucket(double x) const {
    const double t = (x - lo_) * scale_;
    if (!(t > 0)) return 0;
    return t >= count_ ? count_ - 1 : static_cast<int32_t>(t);
  }

 private:
  static constexpr int64_t kMaxBuckets = 1 << 16;
  int32_t count_ = 1;
  double lo_ = 0, scale_ = 0;
};

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
    return make_error("boxes must be [num_batches, spatial_dimension, 4], got shape {}", shape_to_string(boxes_t->shape()));
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
  if (!(iou_limit >= 0 && iou_limit <= 1)) return make_error("iou_threshold is {}; it must be in [0, 1]", iou_limit);
  ONNXKIT_ASSIGN(std::optional<double> score_threshold, float_scalar(ctx, kScoreThreshold, "score_threshold"));
  if (score_threshold && std::isnan(*score_threshold)) return make_error("score_threshold is NaN");
  ONNXKIT_ASSIGN(std::vector<double> coords, read_doubles(*boxes_t, "boxes"));
  ONNXKIT_ASSIGN(std::vector<double> scores, read_doubles(*scores_t, "scores"));

  const NmsLimits limits{.max_output = max_output, .iou_limit = iou_limit, .score_threshold = score_threshold};
  std::vector<int64_t> selected_rows;  // (batch, class, box) triples
  std::vector<NmsBox> boxes(static_cast<size_t>(count));
  std::vector<double> areas(static_cast<size_t>(count));
  std::vector<int64_t> kept;
  NmsSelector selector;
  for (int64_t n = 0; n < batches && max_output > 0; ++n) {
    for (size_t i = 0; i < boxes.size(); ++i) {
      boxes[i] = nms_box(coords.data() + (static_cast<size_t>(n * count) + i) * 4, center_point);
      areas[i] = boxes[i].area();
    }
    for (int64_t c = 0; c < classes; ++c) {
      kept.clear();
      selector.select(boxes, areas, scores.data() + (n * classes + c) * count, limits, kept);
      for (int64_t i : kept) selected_rows.insert(selected_rows.end(), {n, c, i});
    }
  }
  const int64_t rows = static_cast<int64_t>(selected_rows.size() / 3);
  Tensor& out = ctx.output(0, DataType::int64, {rows, 3});
  std::copy(selected_rows.begin(), selected_rows.end(), out.mutable_data<int64_t>());
  return {};
}

}  // namespace

NmsBox nms_box(const double* v, bool center_point) {
  if (center_point) {  // [x_center, y_center, width, height]
    const double half_w = v[2] / 2, half_h = v[3] / 2;
    return {v[1] - half_h, v[0] - half_w, v[1] + half_h, v[0] + half_w};
  }
  // [y1, x1, y2, x2], any diagonal
  return {std::min(v[0], v[2]), std::min(v[1], v[3]), std::max(v[0], v[2]), std::max(v[1], v[3])};
}

void nms_select_reference(std::span<const NmsBox> boxes, const double* scores, const NmsLimits& limits,
                          std::vector<int64_t>& kept) {
  std::vector<int64_t> order;
  for (size_t i = 0; i < boxes.size(); ++i)
    if (!std::isnan(scores[i]) && (!limits.score_threshold || scores[i] > *limits.score_threshold))
      order.push_back(static_cast<int64_t>(i));
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return scores[a] > scores[b]; });
  const size_t first = kept.size();
  for (int64_t i : order) {
    if (static_cast<int64_t>(kept.size() - first) >= limits.max_output) break;
    const NmsBox& candidate = boxes[static_cast<size_t>(i)];
    bool suppressed = false;
    for (size_t k = first; k < kept.size() && !suppressed; ++k) {
      const NmsBox& other = boxes[static_cast<size_t>(kept[k])];
      suppressed = iou(candidate, candidate.area(), other, other.area()) > limits.iou_limit;
    }
    if (!suppressed) kept.push_back(i);
  }
}

// As the reference, but a candidate meets only the kept boxes that share an
// x-bucket with it, each pair once: in the first bucket both cover. A box
// with a NaN x has a NaN area, so its IoU with any box is 0: it is kept
// (while room is left) and never indexed.
void NmsSelector::select(std::span<const NmsBox> boxes, std::span<const double> areas, const double* scores,
                         const NmsLimits& limits, std::vector<int64_t>& kept) {
  if (limits.max_output <= 0) return;
  rank_candidates(boxes.size(), scores, limits, order_);
  if (order_.empty()) return;
  const XBuckets grid(boxes, order_);
  if (bucket_.size() < static_cast<size_t>(grid.count())) bucket_.resize(static_cast<size_t>(grid.count()));
  for (int32_t b = 0; b < grid.count(); ++b) bucket_[static_cast<size_t>(b)].clear();
  int64_t taken = 0;
  for (int64_t i : order_) {
    if (taken >= limits.max_output) break;
    const size_t ci = static_cast<size_t>(i);
    const NmsBox& candidate = boxes[ci];
    if (!std::isnan(candidate.x_min) && !std::isnan(candidate.x_max)) {
      const int32_t first = grid.bucket(candidate.x_min), last = grid.bucket(candidate.x_max);
      bool suppressed = false;
      for (int32_t b = first; b <= last && !suppressed; ++b)
        for (const Kept& k : bucket_[static_cast<size_t>(b)]) {
          if (std::max(k.first, first) != b) continue;  // met in an earlier bucket
          if (iou(candidate, areas[ci], k.box, k.area) > limits.iou_limit) {
            suppressed = true;
            break;
          }
        }
      if (suppressed) continue;
      for (int32_t b = first; b <= last; ++b) bucket_[static_cast<size_t>(b)].push_back({candidate, areas[ci], first});
    }
    kept.push_back(i);
    ++taken;
  }
}

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
