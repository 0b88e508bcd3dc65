#pragma once
// The inputs of a run or a benchmark: read from files (.npy, .npz, .pb) or
// made up (--random), checked against what the model declares.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/session.h"
#include "util/result.h"

namespace onnxkit::tools {

struct InputOptions {
  std::vector<std::pair<std::string, std::string>> files;   // NAME=FILE; NAME may be empty for a .npz
  std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;  // NAME:1,3,224,224
  bool random = false;  // fill the inputs no file gives
  uint64_t seed = 0;
};

// Parses "NAME=FILE" (or just "FILE.npz").
Result<std::pair<std::string, std::string>> parse_input_flag(const std::string& flag);
// Parses "NAME:1,3,224,224".
Result<std::pair<std::string, std::vector<int64_t>>> parse_shape_flag(const std::string& flag);


// One value per input the session needs, in its order; errors name the input.
// A bfloat16 input takes uint16 or int16 data as the bit patterns of its
// elements (numpy has no bfloat16: ml_dtypes' `a.view(np.uint16)`).
Result<runtime::NamedValues> prepare_inputs(const runtime::Session& session, const InputOptions& options);

// Random data of a declared type: floats uniform in [0, 1), integers in
// [0, min(10, limit)) (valid as indices and token ids for any table of 10 or
// more), bools either way. Symbolic dims take their value from `shape`.
Result<runtime::Value> random_value(const runtime::ValueInfo& input, const std::vector<int64_t>* shape, uint64_t seed,
                                    int64_t limit = 10);

// For each integer input of `graph` read as Gather indices (directly or
// through a Cast), the size of the smallest table it indexes: random data
// must stay below it (a BERT's token_type_ids index a table of 2 rows).
std::vector<std::pair<std::string, int64_t>> integer_input_limits(const ir::Graph& graph);

// Inputs whose declared shape has symbolic dims and which `options` gives no
// --shape get one, each symbolic dim as `value`; returns a note per input
// ("input 'x': symbolic dim 'batch' taken as 1").
std::vector<std::string> default_symbolic_dims(const runtime::Session& session, InputOptions& options, int64_t value);

}  // namespace onnxkit::tools
