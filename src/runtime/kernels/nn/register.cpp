// The neural-network family: convolutions, pooling, normalizations, softmax,
// rotary embeddings, attention (and FlexAttention), linear attention, dropout
// and losses.

#include "runtime/kernels/nn/nn.h"

namespace onnxkit::runtime {

void register_nn_kernels(KernelRegistry& registry) {
  register_each(registry,
                {nn::register_conv, nn::register_causal_conv, nn::register_deform_conv, nn::register_pool,
                 nn::register_normalization, nn::register_softmax, nn::register_rotary_embedding, nn::register_linear_attention,
                 nn::register_attention, nn::register_flex_attention, nn::register_dropout, nn::register_loss});
}

}  // namespace onnxkit::runtime
