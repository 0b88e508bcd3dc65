// The reduce family: the Reduce* ops, ArgMax and ArgMin.

#include "runtime/kernels/reduce/reduce.h"

namespace onnxkit::runtime {

void register_reduce_kernels(KernelRegistry& registry) {
  reduce::register_reductions(registry);
  reduce::register_arg(registry);
}

}  // namespace onnxkit::runtime
