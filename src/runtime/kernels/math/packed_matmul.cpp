#include "runtime/kernels/math/packed_matmul.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <array>
#include <string_view>

#include "runtime/kernels/nn/conv_dnnl.h"
#include "runtime/parallel.h"

namespace onnxkit::runtime::math {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

dnnl::primitive_attr product_attr(bool gelu) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // one scratchpad per run: runs may overlap
  if (gelu) {
    // On each tile of the product while it is in registers: cheaper than
    // a pass over the whole product after it.
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  return attr;
}

// Both kinds of primitive take B in the layout oneDNN picks for them.
dnnl::matmul::primitive_desc matmul_desc(int64_t m, int64_t k, int64_t n, bool bias, bool gelu) {
  const dnnl::memory::desc src({m, k}, dt::f32, tag::ab), dst({m, n}, dt::f32, tag::ab), weights({k, n}, dt::f32, tag::any);
  const dnnl::matmul::desc desc = bias ? dnnl::matmul::desc(src, weights, dnnl::memory::desc({1, n}, dt::f32, tag::ab), dst)
                                       : dnnl::matmul::desc(src, weights, dst);
  return dnnl::matmul::primitive_desc(desc, product_attr(gelu), nn::cpu_engine());
}

// The product as a 1x1 convolution over a 1 x m image in channels-last
// order: [m, K] row-major is its source, [m, N] its output, and B its
// [N, K, 1, 1] weights.
dnnl::convolution_forward::primitive_desc conv_desc(int64_t m, int64_t k, int64_t n, bool bias, bool gelu) {
  const dnnl::memory::desc src({1, k, 1, m}, dt::f32, tag::nhwc), dst({1, n, 1, m}, dt::f32, tag::nhwc),
      weights({n, k, 1, 1}, dt::f32, tag::any);
  const dnnl::memory::dims ones{1, 1}, zeros{0, 0};
  const auto kind = dnnl::prop_kind::forward_inference;
  const auto direct = dnnl::algorithm::convolution_direct;
  const dnnl::convolution_forward::desc desc =
      bias ? dnnl::convolution_forward::desc(kind, direct, src, weights, dnnl::memory::desc({n}, dt::f32, tag::a), dst, ones,
                                             zeros, zeros)
           : dnnl::convolution_forward::desc(kind, direct, src, weights, dst, ones, zeros, zeros);
  return dnnl::convolution_forward::primitive_desc(desc, product_attr(gelu), nn::cpu_engine());
}

// Rows the weights' layout is asked for with; any count gives the same one.
constexpr int64_t kLayoutRows = 64;

}  // namespace

struct PackedMatMul::State {
  bool conv = false;     // the primitives are 1x1 convolutions, not matmuls
  dnnl::memory weights;  // in the layout the primitives read
};

struct PackedMatMul::Primitive {
  dnnl::memory::desc src, dst, bias, scratchpad;
  dnnl::primitive primitive;
};

PackedMatMul::PackedMatMul(int64_t k, int64_t n, std::unique_ptr<State> state) : k_(k), n_(n), state_(std::move(state)) {}
PackedMatMul::~PackedMatMul() = default;

std::unique_ptr<PackedMatMul> PackedMatMul::create(const Tensor& b, bool trans_b) {
  if (b.dtype() != DataType::float32 || b.rank() != 2 || b.numel() == 0) return nullptr;
  const int64_t k = trans_b ? b.dim(1) : b.dim(0), n = trans_b ? b.dim(0) : b.dim(1);
  try {
    dnnl::engine& engine = nn::cpu_engine();
    auto state = std::make_unique<State>();
    dnnl::memory::desc packed, user;
    // The brgemm matmul (AVX-512) reads a blocked layout. Without it oneDNN
    // runs a matmul on sgemm with B plain, which packs B again on every
    // call; its 1x1 convolution reads blocked weights on AVX2 too and
    // multiplied ViT-B/16's and a detection head's products 5 to 25% faster
    // than sgemm (197 x 768 x 3072: 9.1 against 10.2 ms at 1 thread).
    if (const auto pd = matmul_desc(kLayoutRows, k, n, false, false); std::string_view(pd.impl_info_str()).starts_with("brg")) {
      packed = pd.weights_desc();
      // [N, K] read transposed is B in column-major order: tag ba.
      user = dnnl::memory::desc({k, n}, dt::f32, trans_b ? tag::ba : tag::ab);
    } else {
      const auto conv = conv_desc(kLayoutRows, k, n, false, false);
      // Not a convolution on sgemm itself.
      if (const std::string_view impl = conv.impl_info_str(); !impl.starts_with("jit_1x1") && !impl.starts_with("brgconv_1x1"))
        return nullptr;
      state->conv = true;
      packed = conv.weights_desc();
      // B [K, N] holds weight (o, i) at i * N + o: ihwo; [N, K] is oihw.
      user = dnnl::memory::desc({n, k, 1, 1}, dt::f32, trans_b ? tag::oihw : tag::ihwo);
    }
    dnnl::memory user_memory(user, engine, const_cast<void*>(b.raw()));
    state->weights = dnnl::memory(packed, engine);
    dnnl::stream stream(engine);
    dnnl::reorder(user_memory, state->weights).execute(stream, user_memory, state->weights);
    stream.wait();
    return std::unique_ptr<PackedMatMul>(new PackedMatMul(k, n, std::move(state)));
  } catch (const dnnl::error&) {
    return nullptr;  // no primitive for this weight: gemm() multiplies it
  }
}

std::shared_ptr<const PackedMatMul::Primitive> PackedMatMul::primitive_for(int64_t m, bool bias, bool gelu, int threads) const {
  const std::tuple key{m, bias, gelu, threads};
  std::lock_guard lock(mutex_);
  if (auto it = primitives_.find(key); it != primitives_.end()) return it->second;
  if (primitives_.size() >= kMaxPrimitives) primitives_.clear();  // runs holding one keep it
  std::shared_ptr<const Primitive> made;
  try {
    // oneDNN splits the work among the threads there are when it makes the
    // primitive, and uses that many on every run.
    const ThreadLimit limit(threads);
    const auto make = [&](const auto& pd) {
      if (pd.weights_desc() == state_->weights.get_desc())
        made = std::make_shared<const Primitive>(
            Primitive{pd.src_desc(), pd.dst_desc(), pd.bias_desc(), pd.scratchpad_desc(), dnnl::primitive(pd)});
    };
    if (state_->conv) {
      make(conv_desc(m, k_, n_, bias, gelu));
    } else {
      make(matmul_desc(m, k_, n_, bias, gelu));
    }
  } catch (const dnnl::error&) {}
  primitives_.emplace(key, made);
  return made;
}

Result<bool> PackedMatMul::run(int64_t m, const float* a, const float* bias, float* y, bool gelu) const {
  if (m <= 0) return true;
  const double macs = static_cast<double>(m) * static_cast<double>(k_) * static_cast<double>(n_);
  const int threads = macs < kParallelMacs ? 1 : available_threads();
  const std::shared_ptr<const Primitive> p = primitive_for(m, bias != nullptr, gelu, threads);
  if (p == nullptr) return false;
  try {
    // This thread's stream and scratchpad (no allocation per run), and the
    // arguments as the C call's array (the C++ call takes a map, built per run).
    dnnl::engine& engine = nn::cpu_engine();
    dnnl::stream& stream = nn::thread_stream();
    const dnnl::memory src(p->src, engine, const_cast<float*>(a)), dst(p->dst, engine, y),
        scratchpad(p->scratchpad, engine, nn::thread_scratchpad(p->scratchpad.get_size()));
    dnnl::memory bias_memory;
    std::array<dnnl_exec_arg_t, 5> args{{{DNNL_ARG_SRC, src.get()},
                                         {DNNL_ARG_WEIGHTS, state_->weights.get()},
                                         {DNNL_ARG_DST, dst.get()},
                                         {DNNL_ARG_SCRATCHPAD, scratchpad.get()}}};
    int count = 4;
    if (bias != nullptr) {
      bias_memory = dnnl::memory(p->bias, engine, const_cast<float*>(bias));
      args[static_cast<size_t>(count++)] = {DNNL_ARG_BIAS, bias_memory.get()};
    }
    const ThreadLimit limit(threads);
    dnnl::error::wrap_c_api(dnnl_primitive_execute(p->primitive.get(), stream.get(), count, args.data()),
                            "could not execute the product");
    stream.wait();
  } catch (const dnnl::error& e) {
    return make_error("oneDNN product failed: {}", e.what());
  }
  return true;
}

const PackedMatMul* PackedOnFirstUse::get(const Tensor& b) {
  std::call_once(once_, [&] { packed_ = PackedMatMul::create(b, trans_b_); });
  return packed_.get();
}

}  // namespace onnxkit::runtime::math
