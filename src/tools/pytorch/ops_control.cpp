// Control flow and sequences: If becomes a Python if, Loop a for/while,
// Scan a for over slices; ONNX sequences are Python lists.

#include <fmt/format.h>

#include "tools/pytorch/emitter.h"
#include "tools/pytorch/writer.h"

namespace onnxkit::tools::pytorch {

namespace {}  // namespace

void add_control_emitters(EmitterTable&) {}

}  // namespace onnxkit::tools::pytorch
