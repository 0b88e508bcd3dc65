#pragma once
// Functions GCC builds more than once, for wider vector units than the
// baseline, the loader picking one by the CPU at hand: x86-64-v3 (AVX2,
// FMA), and with ONNXKIT_AVX512_CLONES x86-64-v4 (AVX-512) too, for loops
// bound by arithmetic rather than memory. Clang (the fuzz build) and other
// CPUs build the baseline alone.

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define ONNXKIT_AVX2_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#define ONNXKIT_AVX512_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ONNXKIT_AVX2_CLONES
#define ONNXKIT_AVX512_CLONES
#endif

namespace onnxkit::runtime {

// Whether the CPU runs AVX2 and FMA: the floor of the kernels written with
// their intrinsics (Winograd, depthwise, recurrent products).
inline bool cpu_has_avx2_fma() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool yes = [] {
    __builtin_cpu_init();  // this may run before libgcc's constructor has
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return yes;
#else
  return false;
#endif
}

}  // namespace onnxkit::runtime
