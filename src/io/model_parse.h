#pragma once
// Parsing a ModelProto without protobuf's growth copies of large weights.
//
// protobuf reads a bytes field that runs past its input buffer by appending
// to a string reserved at no more than 50 MB, so the raw_data of a 400 MB
// weight read from a file grows by doubling and is copied on the way: the
// parse alone peaks near twice the weight. Here the wire format is walked
// along ModelProto.graph (7) → GraphProto.initializer (5) →
// TensorProto.raw_data (9); each such raw_data is read into a string of
// exactly its size, protobuf parses the rest (the same bytes with those
// fields cut out), and the strings are moved into their tensors. The result
// is the message protobuf alone would give.
//
// The same holds for the lists of a node's attribute (a tree ensemble's
// millions of node ids, modes and thresholds): protobuf grows a repeated
// field by doubling as it parses, touching about three times the memory
// the list needs, which on a large forest costs more than the parse itself.
// Attributes of at least 1 MB of the main graph's nodes, holding lists and
// scalars only, are cut out likewise and parsed apart into lists reserved
// at their exact sizes, then put back in their place.

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "util/result.h"

namespace onnxkit::io {

// Reads input front to back, from memory or from a file descriptor, in
// buffered steps; long runs go straight to their destination.
class ForwardReader {
 public:
  // Reads `bytes`, which must outlive the reader.
  explicit ForwardReader(std::span<const std::byte> bytes);
  // Reads the first `size` bytes of the file `fd` is open on, from its
  // current offset (the reader never seeks). `name` stands for it in errors.
  ForwardReader(int fd, uint64_t size, std::string name);

  uint64_t position() const { return position_; }
  uint64_t size() const { return size_; }
  // The next byte; false at the end of the input or when a read fails.
  bool next_byte(uint8_t& byte) {
    if (next_ == end_ && !refill()) return false;
    byte = static_cast<uint8_t>(*next_++);
    ++position_;
    return true;
  }
  // The next `n` bytes into `out`; false when fewer remain or a read fails.
  bool read(char* out, uint64_t n);
  // Set when a read of the file failed (not at its end): an error to report,
  // where running out of input is only a malformed model.
  const Status& status() const { return status_; }

 private:
  bool refill();

  int fd_ = -1;  // -1 when reading memory
  std::string name_;
  std::unique_ptr<char[]> buffer_;
  const char* next_ = nullptr;  // the unread part of the window [next_, end_)
  const char* end_ = nullptr;
  uint64_t position_ = 0;  // of next_ in the input
  uint64_t size_ = 0;
  Status status_;
};

// Parses the model `in` holds into `proto` (which must be empty), reading the
// main graph's initializers' raw_data apart. Returns false, with `proto` in
// no particular state, where the bytes do not parse this way: anything off
// the plain wire format (groups, over-long tags or lengths, a length past the
// end of its message) or anything protobuf refuses. The caller then parses
// with protobuf alone, which stays the one judge of malformed input and of
// what its errors say. The only error is a failed read.
Result<bool> parse_model_proto(ForwardReader& in, onnx::ModelProto& proto);

}  // namespace onnxkit::io
