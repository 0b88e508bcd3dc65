// The reduce family: the Reduce* ops, ArgMax and ArgMin.

#include "runtime/kernels/reduce/reduce.h"

namespace onnxkit::runtime {

void register_reduce_kernels(KernelRegistry& registry) {
  register_each(registry, {reduce::register_reductions, reduce::register_arg});
}

}  // namespace onnxkit::runtime
