// The indexing family: gathers, scatters, padding, resizing, sampling and
// selections.

#include "runtime/kernels/indexing/indexing.h"

namespace onnxkit::runtime {
void register_indexing_kernels(KernelRegistry& registry) {
  indexing::register_gather(registry);
  indexing::register_scatter(registry);
  indexing::register_pad(registry);
  indexing::register_resize(registry);
  indexing::register_grid_sample(registry);
  indexing::register_select(registry);
}

}  // namespace onnxkit::runtime
