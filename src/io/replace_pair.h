#pragma once
// Replacing a model file and its side file (external data) so that a reader,
// or a save stopped at any point by an error or a kill, finds the old pair or
// the new pair, never the old model reading the new data (which `run` would
// take for valid weights and answer wrong). One rename is atomic; two are
// not, so the order matters, for a model OUT whose side file is to be D:
//
// - D is written under a temporary name first (".D.tmp-XXXXXX", see
//   temporary_name_prefix), and so is the model.
// - If the model now at OUT does not reference D (a new output, or one that
//   was inline or had another side file), D is renamed into place, then the
//   model: until the model's rename OUT reads what it read before.
// - If it does reference D (saving again over the same output, or in place),
//   D must not change before OUT does. The new model, referencing the
//   temporary name, is renamed over OUT: the new pair is in place. Then D is
//   replaced by a hard link to the temporary (a copy where the file system
//   has no hard links), the model is written again referencing D and renamed
//   over OUT, and the temporary name is removed. So the usual name D is what
//   a successful save leaves. Stopped in between, OUT reads its data under
//   the temporary name: a whole pair, which the next save over OUT tidies.
// - Side files the old model referenced and the new one does not are removed
//   when they are OUT's own (D, "OUT.data", or a temporary of either); any
//   other may be shared with another model and is kept.
//
// Temporary files are removed on every error path; a killed save leaves them
// under their recognisable names.

#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "io/atomic_file.h"
#include "util/result.h"

namespace onnxkit::io {

struct PairReplacement {
  std::filesystem::path model;  // OUT
  std::string data_name;        // D, a plain file name next to OUT
  // The new side file, complete under its temporary name; empty when the new
  // model has no external data.
  std::optional<AtomicFile> data;
  // Writes the new model, every external tensor pointing at `location`, to a
  // new uncommitted AtomicFile for OUT (called once, or twice as above).
  std::function<Result<AtomicFile>(const std::string& location)> write_model;
  // SaveOptions::after_step.
  std::function<Status(std::string_view step)> after_step;
};

// Carries out the scheme above. Returns the side file's name as the new model
// references it ("" when it has none).
Result<std::string> replace_model_and_data(PairReplacement replacement);

// Every external data location the model file at `path` references, read
// from its protobuf without keeping tensor bytes. Empty when there is no
// file; nullopt when the file is not a model that can be read.
std::optional<std::set<std::string>> referenced_locations(const std::filesystem::path& path);

// The side file's name when none is given: "OUT.data".
std::string conventional_data_name(const std::filesystem::path& model);

}  // namespace onnxkit::io
