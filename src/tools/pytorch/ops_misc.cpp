// The rest: resizing, linear algebra, detection, quantization, signal.

#include <fmt/format.h>

#include "tools/pytorch/emitter.h"
#include "tools/pytorch/writer.h"

namespace onnxkit::tools::pytorch {

void add_misc_emitters(EmitterTable&) {}

}  // namespace onnxkit::tools::pytorch
