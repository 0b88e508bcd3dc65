#pragma once
// The inputs of a run or a benchmark: read from files (.npy, .npz, .pb),
// typed on the command line (16000, int64:[[1,2,3]]) or made up (--random),
// checked against what the model declares.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/session.h"
#include "util/result.h"

namespace onnxkit::tools {

// Random values of an input from lo to hi: integers (and bools, as 0 or 1)
// uniform over lo..hi inclusive, floats uniform in [lo, hi).
struct ValueRange {
  double lo = 0, hi = 0;
  bool operator==(const ValueRange&) const = default;
};

struct InputOptions {
  // NAME=FILE (.npy, .npz, .pb) or NAME=LITERAL (16000, [1,2], int64:[[1,2,3]],
  // as edit --freeze-input reads them); NAME is empty for a .npz feeding
  // every input it holds.
  std::vector<std::pair<std::string, std::string>> files;
  std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;  // NAME:1,3,224,224
  // SYMBOL=N: symbolic dim SYMBOL is N in every input that declares it.
  std::vector<std::pair<std::string, int64_t>> dims;
  // NAME:LO,HI: the range of input NAME's random values (every input's when
  // NAME is empty). Without one: floats in [0, 1), integers in [0, 10) and
  // below the size of any table they index (integer_input_limits).
  std::vector<std::pair<std::string, ValueRange>> ranges;
  bool random = false;  // fill the inputs no file gives
  uint64_t seed = 0;
  // Symbolic dims of random inputs that nothing sets (no --shape, no --dim,
  // no data of another input holding the same symbol) take this value, with a
  // note; 0: such a dim is an error naming the flags that set it.
  int64_t unbound_dims = 0;
};

// Parses "NAME=FILE", "NAME=LITERAL" (or just "FILE.npz").
Result<std::pair<std::string, std::string>> parse_input_flag(const std::string& flag);
// Parses "NAME:1,3,224,224".
Result<std::pair<std::string, std::vector<int64_t>>> parse_shape_flag(const std::string& flag);
// Parses "SYMBOL=N" (N >= 0).
Result<std::pair<std::string, int64_t>> parse_dim_flag(const std::string& flag);
// Parses "NAME:LO,HI" or "LO,HI" (every input); LO <= HI, both finite.
Result<std::pair<std::string, ValueRange>> parse_range_flag(const std::string& flag);

// The texts of the input flags that run, bench, compare and simplify share
// (and the Python functions that mirror them), parsed; the first bad one is
// the error.
struct InputFlagTexts {
  std::vector<std::string> inputs, shapes, dims, ranges;
};
Result<InputOptions> parse_input_flags(const InputFlagTexts& flags);

// One value per input the session needs, in its order; errors name the input
// and the flag. A bfloat16 input takes uint16 or int16 data as the bit
// patterns of its elements (numpy has no bfloat16: ml_dtypes'
// `a.view(np.uint16)`). A literal that is one number fills an input declared
// with one element of any rank (sr=16000 for an int64[1] input). With
// `notes`, one line per symbolic dim `unbound_dims` set ("symbolic dim
// 'batch' taken as 1 (--dim batch=N sets it)").
Result<runtime::NamedValues> prepare_inputs(const runtime::Session& session, const InputOptions& options,
                                            std::vector<std::string>* notes = nullptr);

// Random data of a declared type: by default floats uniform in [0, 1),
// integers in [0, min(10, limit)) (valid as indices and token ids for any
// table of 10 or more), bools either way; `range` replaces that. Symbolic
// dims take their value from `shape`.
Result<runtime::Datum> random_value(const runtime::ValueInfo& input, const std::vector<int64_t>* shape, uint64_t seed,
                                    int64_t limit = 10, const ValueRange* range = nullptr);

// For each integer input of `graph` read as Gather indices (directly or
// through a Cast), the size of the smallest table it indexes: random data
// must stay below it (a BERT's token_type_ids index a table of 2 rows).
std::vector<std::pair<std::string, int64_t>> integer_input_limits(const ir::Graph& graph);

}  // namespace onnxkit::tools
