#pragma once
// NonMaxSuppression's selection for one (batch, class), in two engines that
// select exactly the same boxes in the same order: the plain greedy loop of
// the spec (every candidate against every box already kept), kept as the
// oracle, and the one the kernel runs, which compares a candidate only with
// the kept boxes whose x-extent can overlap its own.
//
// Detection heads exported from torchvision run one NonMaxSuppression over
// every class at once, each class's boxes shifted out of the others' way
// (batched_nms): tens of thousands of candidates and thousands kept, which
// the plain loop takes O(candidates x kept) IoUs for.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace onnxkit::runtime::detection {

// A box by its min and max corners, whichever corners the input gave.
struct NmsBox {
  double y_min, x_min, y_max, x_max;
  double area() const { return (y_max - y_min) * (x_max - x_min); }
};

// v: [y1, x1, y2, x2] (any diagonal) or, with center_point,
// [x_center, y_center, width, height].
NmsBox nms_box(const double* v, bool center_point);

struct NmsLimits {
  int64_t max_output = 0;                 // at most this many kept (>= 0)
  double iou_limit = 0;                   // suppress when IoU > this, in [0, 1]
  std::optional<double> score_threshold;  // candidates need a score above it
};

// Appends to `kept` the indices selected among boxes (scores[i] for
// boxes[i]): by decreasing score, ties lower index first, NaN scores never.
void nms_select_reference(std::span<const NmsBox> boxes, const double* scores, const NmsLimits& limits,
                          std::vector<int64_t>& kept);

// The same selection, fast. Holds scratch buffers reused across calls.
class NmsSelector {
 public:
  // `areas` holds boxes[i].area(), computed once for every class.
  void select(std::span<const NmsBox> boxes, std::span<const double> areas, const double* scores, const NmsLimits& limits,
              std::vector<int64_t>& kept);

 private:
  struct Kept {
    NmsBox box;
    double area;
    int32_t first;  // the first x-bucket the box covers
  };
  std::vector<int64_t> order_;             // candidates by decreasing score
  std::vector<std::vector<Kept>> bucket_;  // the kept boxes covering each x-bucket
};

}  // namespace onnxkit::runtime::detection
