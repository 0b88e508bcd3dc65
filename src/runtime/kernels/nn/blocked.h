#pragma once
// Kernels on activations in the blocked layout: a 4-D float tensor of
// logical shape [N, C, H, W] held as [N, ceil(C/B), H, W, B], channels padded
// with zeros, B = channel_block(): oneDNN's nChw16c where its AVX-512 kernels
// run, nChw8c (its AVX2 kernels) elsewhere. Chains
// of convolutions, pools and element-wise ops stay in it, so data is reordered once at each end of a
// chain instead of inside every convolution. The session decides which nodes
// run blocked (runtime/layout.h); these are the kernels it uses for them.

#include <memory>
#include <vector>

#include "runtime/kernel.h"

namespace onnxkit::runtime::nn {

// Channels per block: 16 where oneDNN runs AVX-512 (its effective ISA, so
// ONEDNN_MAX_CPU_ISA=AVX2 makes it 8 too), else 8. Fixed for the process.
int64_t channel_block();

// The blocked shape of a logical [N, C, H, W].
Shape blocked_shape(int64_t n, int64_t c, int64_t h, int64_t w);

// Whether a Conv node can run blocked: 2-D, float32, constant weights (and
// bias), and groups oneDNN's blocked kernels take (one, depthwise, or whole
// blocks of channels per group).
bool conv_can_run_blocked(const ir::Node& node, const Tensor* w, const Tensor* bias);
// Whether a pooling node (MaxPool, AveragePool, GlobalAveragePool,
// GlobalMaxPool) can run blocked.
bool pool_can_run_blocked(const ir::Node& node);

// Whether a Conv that starts a blocked region reads its plain input as it is
// (a first layer: fewer input channels than a block, one group) rather than a
// reordered copy.
bool conv_reads_plain(const ir::Node& node, const Tensor& w);
// Conv writing a blocked tensor (the fused activation of `info` applies),
// from a blocked input or, with `plain_input`, a plain one.
Result<std::unique_ptr<Kernel>> make_blocked_conv(const KernelInfo& info, bool plain_input);
// Pooling on blocked tensors; `channels` is C of the input.
Result<std::unique_ptr<Kernel>> make_blocked_pool(const KernelInfo& info, int64_t channels);
// Concat along channels of blocked tensors whose C are whole blocks.
std::unique_ptr<Kernel> make_blocked_concat();

// Between the layouts, for tensors with `channels` channels.
std::unique_ptr<Kernel> make_to_blocked(int64_t channels);
std::unique_ptr<Kernel> make_to_plain(int64_t channels);

}  // namespace onnxkit::runtime::nn
