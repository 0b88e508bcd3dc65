#pragma once
// W floats in registers as a GCC/Clang vector: the kernels whose one body
// becomes AVX2 or AVX-512 code by the function it is built into (W 8 or 16:
// wider vectors than the registers go through memory). Moved in and out by
// memcpy (any alignment, no aliasing question); a function taking or
// returning one outside such a function draws GCC's ABI warning (-Wpsabi).

namespace onnxkit::runtime {

template <int W> struct LanesOf { typedef float type __attribute__((vector_size(4 * W))); };
template <int W> using Lanes = typename LanesOf<W>::type;

}  // namespace onnxkit::runtime
