// The image family: ImageDecoder.

#include "runtime/kernels/image/image.h"

namespace onnxkit::runtime {

void register_image_kernels(KernelRegistry& registry) { image::register_image_decoder(registry); }

}  // namespace onnxkit::runtime
