#pragma once
// `onnxkit edit`: operations (from the command line or a script) applied in
// order to a model file; the result is validated (tools/edit.h,
// validate_edited_model) and written atomically, or nothing is written.

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/model_file.h"
#include "ir/model.h"
#include "util/result.h"

namespace onnxkit::tools {

struct EditOperation {
  std::string name;      // as the flag, without dashes: "set-attr"
  std::string argument;  // empty for operations that take none
  std::string origin;    // for messages: "--set-attr" or "fix.txt:3"
};

struct EditOperationInfo {
  std::string_view name;
  std::string_view argument;  // its syntax ("NODE:ATTR=VALUE"), empty when it takes none
  std::string_view summary;
};

// Every operation, in the order --help lists them.
const std::vector<EditOperationInfo>& edit_operations();
const EditOperationInfo* find_edit_operation(std::string_view name);

// Operations from a script: one per line, as on the command line with or
// without the leading "--" ("set-attr conv1:epsilon=1e-5"); '#' starts a
// comment at the beginning of a line or after a space. Errors name the line.
Result<std::vector<EditOperation>> parse_edit_script(std::string_view text, const std::string& origin);
Result<std::vector<EditOperation>> read_edit_script(const std::filesystem::path& path);

struct EditToolReport {
  std::vector<std::string> done;  // one line per operation
  std::vector<std::string> warnings;
  // Outputs declared by element type alone: inference cannot tell their shape.
  std::vector<std::string> shapeless_outputs;
  io::SaveSummary saved;
  std::string batch;                         // what --batch set, if it ran: checked by a dry run
  bool batch_ran = false;                    // the dry run showed the batch free
  size_t nodes_before = 0, nodes_after = 0;  // main graph
};

// Applies one operation; `model` may be replaced (--opset).
Status apply_edit_operation(std::unique_ptr<ir::Model>& model, const EditOperation& operation, EditToolReport& report);

struct EditToolOptions {
  io::SaveOptions save;
};

Result<EditToolReport> edit_file(const std::filesystem::path& in, const std::filesystem::path& out,
                                 const std::vector<EditOperation>& operations, const EditToolOptions& options = {});

std::string render_edit_text(const EditToolReport& report, const std::filesystem::path& out);

}  // namespace onnxkit::tools
