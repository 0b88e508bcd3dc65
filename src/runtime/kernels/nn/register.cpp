// The neural-network family: convolutions, pooling, normalizations, softmax,
// rotary embeddings, attention (and FlexAttention), linear attention, dropout
// and losses.

#include "runtime/kernels/nn/nn.h"

namespace onnxkit::runtime {

void register_nn_kernels(KernelRegistry& registry) {
  nn::register_conv(registry);
  nn::register_causal_conv(registry);
  nn::register_deform_conv(registry);
  nn::register_pool(registry);
  nn::register_normalization(registry);
  nn::register_softmax(registry);
  nn::register_rotary_embedding(registry);
  nn::register_linear_attention(registry);
  nn::register_attention(registry);
  nn::register_flex_attention(registry);
  nn::register_dropout(registry);
  nn::register_loss(registry);
}

}  // namespace onnxkit::runtime
