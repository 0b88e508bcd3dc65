// The indexing family: gathers, scatters, padding, resizing, sampling and
// selections.

#include "runtime/kernels/indexing/indexing.h"

namespace onnxkit::runtime {
void register_indexing_kernels(KernelRegistry& registry) {
  register_each(registry, {indexing::register_gather, indexing::register_scatter, indexing::register_pad,
                           indexing::register_resize, indexing::register_grid_sample, indexing::register_select});
}

}  // namespace onnxkit::runtime
