#include "runtime/kernels/math/packed_matmul.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <array>
#include <string>

#include "runtime/kernels/nn/conv_dnnl.h"
#include "runtime/parallel.h"

namespace onnxkit::runtime::math {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

dnnl::matmul::primitive_desc matmul_desc(int64_t m, int64_t k, int64_t n, bool bias, bool gelu,
                                         const dnnl::memory::desc& weights) {
  const dnnl::memory::desc src({m, k}, dt::f32, tag::ab), dst({m, n}, dt::f32, tag::ab);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // one scratchpad per run: runs may overlap
  if (gelu) {
    // On each tile of the product while it is in registers: cheaper than
    // a pass over the whole product after it.
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  const dnnl::matmul::desc desc = bias ? dnnl::matmul::desc(src, weights, dnnl::memory::desc({1, n}, dt::f32, tag::ab), dst)
                                       : dnnl::matmul::desc(src, weights, dst);
  return dnnl::matmul::primitive_desc(desc, attr, nn::cpu_engine());
}

// Rows the weights' layout is asked for with; any count gives the same one.
constexpr int64_t kLayoutRows = 64;

}  // namespace

struct PackedMatMul::State {
  dnnl::memory weights;  // in the layout the primitives read
};

struct PackedMatMul::Primitive {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul matmul;
};

PackedMatMul::PackedMatMul(int64_t k, int64_t n, std::unique_ptr<State> state) : k_(k), n_(n), state_(std::move(state)) {}
PackedMatMul::~PackedMatMul() = default;

std::unique_ptr<PackedMatMul> PackedMatMul::create(const Tensor& b, bool trans_b) {
  if (b.dtype() != DataType::float32 || b.rank() != 2 || b.numel() == 0) return nullptr;
  const int64_t k = trans_b ? b.dim(1) : b.dim(0), n = trans_b ? b.dim(0) : b.dim(1);
  try {
    dnnl::engine& engine = nn::cpu_engine();
    const dnnl::memory::desc any({k, n}, dt::f32, tag::any);
    const dnnl::matmul::primitive_desc pd = matmul_desc(kLayoutRows, k, n, false, false, any);
    // Only the brgemm kernels (AVX-512) read a blocked layout; without them
    // oneDNN runs the primitive on the same sgemm, B plain, and ran
    // Faster R-CNN's 33 x 12544 x 1024 slower than gemm() (48 ms against
    // 30 with ONEDNN_MAX_CPU_ISA=AVX2): the copy would buy nothing.
    if (std::string(pd.impl_info_str()).rfind("brg", 0) != 0) return nullptr;
    // [N, K] read transposed is B in column-major order: tag ba.
    const dnnl::memory::desc user_md({k, n}, dt::f32, trans_b ? tag::ba : tag::ab);
    dnnl::memory user(user_md, engine, const_cast<void*>(b.raw()));
    auto state = std::make_unique<State>();
    state->weights = dnnl::memory(pd.weights_desc(), engine);
    dnnl::stream stream(engine);
    dnnl::reorder(user, state->weights).execute(stream, user, state->weights);
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
    dnnl::matmul::primitive_desc pd = matmul_desc(m, k_, n_, bias, gelu, dnnl::memory::desc({k_, n_}, dt::f32, tag::any));
    if (pd.weights_desc() == state_->weights.get_desc()) {
      dnnl::matmul matmul(pd);
      made = std::make_shared<const Primitive>(Primitive{std::move(pd), std::move(matmul)});
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
    const dnnl::memory::desc scratchpad_md = p->pd.scratchpad_desc();
    const dnnl::memory src(p->pd.src_desc(), engine, const_cast<float*>(a)), dst(p->pd.dst_desc(), engine, y),
        scratchpad(scratchpad_md, engine, nn::thread_scratchpad(scratchpad_md.get_size()));
    dnnl::memory bias_memory;
    std::array<dnnl_exec_arg_t, 5> args{{{DNNL_ARG_SRC, src.get()},
                                         {DNNL_ARG_WEIGHTS, state_->weights.get()},
                                         {DNNL_ARG_DST, dst.get()},
                                         {DNNL_ARG_SCRATCHPAD, scratchpad.get()}}};
    int count = 4;
    if (bias != nullptr) {
      bias_memory = dnnl::memory(p->pd.bias_desc(), engine, const_cast<float*>(bias));
      args[static_cast<size_t>(count++)] = {DNNL_ARG_BIAS, bias_memory.get()};
    }
    const ThreadLimit limit(threads);
    dnnl::error::wrap_c_api(dnnl_primitive_execute(p->matmul.get(), stream.get(), count, args.data()),
                            "could not execute the matmul");
    stream.wait();
  } catch (const dnnl::error& e) {
    return make_error("oneDNN matmul failed: {}", e.what());
  }
  return true;
}

const PackedMatMul* PackedOnFirstUse::get(const Tensor& b) {
  std::call_once(once_, [&] { packed_ = PackedMatMul::create(b, trans_b_); });
  return packed_.get();
}

}  // namespace onnxkit::runtime::math
