#include "tools/convert.h"

#include "io/atomic_file.h"
#include "ir/model.h"

namespace onnxkit::tools {

Result<io::SaveSummary> convert_model(const std::filesystem::path& in, const std::filesystem::path& out,
                                      const io::SaveOptions& options) {
  ONNXKIT_TRY(io::check_writable(out));
  ONNXKIT_ASSIGN(auto model, ir::load_model(in));
  return ir::save_model(*model, out, options);
}

}  // namespace onnxkit::tools
