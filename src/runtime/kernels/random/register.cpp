// The random family: RandomUniform, RandomNormal, their -Like forms, Bernoulli and Multinomial.

#include "runtime/kernels/common.h"

namespace onnxkit::runtime {

void register_random_kernels(KernelRegistry& registry) { (void)registry; }

}  // namespace onnxkit::runtime
