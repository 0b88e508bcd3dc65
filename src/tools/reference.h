#pragma once
// Values another engine (or an earlier run) computed, read for `compare
// --reference` and `debug reduce --reference`: a folder of .npy / .pb / .npz
// files (run's outputs.json, when there, names its output_K files), one
// .npz or .pb, or Polygraphy's JSON. Tensors are viewed where they were read
// into, not copied again.

#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/datum.h"
#include "util/result.h"

namespace onnxkit::tools {

struct Reference {
  // Per sample, tensor name -> value. Files without iterations are sample 0
  // of every sample (they merge into each).
  std::vector<std::unordered_map<std::string, runtime::Datum>> samples;
  std::vector<std::string> notes;  // which runner a Polygraphy file gave, files skipped
};

// Several paths merge (Polygraphy's inputs and outputs files, say); a name
// given twice in one sample is an error naming both files.
Result<Reference> load_reference(const std::vector<std::filesystem::path>& paths);

// The name a tensor file in a folder would carry for tensor `name`: the
// characters a file name cannot hold ('/', ':' ...) become '_'.
std::string tensor_file_stem(const std::string& name);

}  // namespace onnxkit::tools
