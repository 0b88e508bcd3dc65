#include "passes/fuse/fuse_common.h"
#include "passes/registry.h"

namespace onnxkit::passes {

void add_fusion_passes(std::vector<std::unique_ptr<Pass>>& passes) {
  // BN first: a Conv followed by BN then Add folds both, BN into the weights
  // and the Add into the bias that BN gave it.
  add_each(passes, {fuse::make_fuse_bn_into_conv, fuse::make_fuse_bn_into_gemm, fuse::make_fuse_add_into_conv_bias,
                    fuse::make_fuse_mul_into_conv_weights, fuse::make_fuse_matmul_add_into_gemm, fuse::make_fuse_pad_into_conv,
                    fuse::make_fuse_pad_into_maxpool, fuse::make_fuse_transpose_into_gemm, fuse::make_fuse_reduce_unsqueeze,
                    fuse::make_einsum_as_matmul});
}

}  // namespace onnxkit::passes
