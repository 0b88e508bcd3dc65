#include "io/polygraphy_json.h"

#include <nlohmann/json.hpp>

#include <array>
#include <optional>

#include "io/mapped_file.h"
#include "io/tensor_file.h"
#include "util/text.h"

namespace onnxkit::io {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Where the parser is: one frame per open object or array.
struct Frame {
  bool is_array = false;
  std::string key;          // the key this container sits under (parent an object)
  int64_t index = -1;       // its index in the parent (parent an array)
  int64_t children = 0;     // arrays: elements seen so far
  std::string current_key;  // objects: the key being read
};

// An array is a string under the key "array" of an object (Polygraphy's
// encoded ndarray). Its name is the key that object sits under, or, when
// that key is "values" (a LazyArray around it), the key above. Its
// iteration is the index of the innermost array element around the name;
// in a RunResults ({"lst": [[runner, [iterations]], ...]}) only the first
// runner's arrays are kept.
class Handler : public json::json_sax_t {
 public:
  explicit Handler(std::string file) : file_(std::move(file)) {}

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t) override { return scalar(); }
  bool number_unsigned(number_unsigned_t) override { return scalar(); }
  bool number_float(number_float_t, const string_t&) override { return scalar(); }
  bool binary(binary_t&) override { return scalar(); }

  bool string(string_t& value) override {
    if (!frames_.empty() && !frames_.back().is_array && frames_.back().current_key == "array") return array(value);
    // A runner's name: element 0 of a pair inside "lst".
    if (frames_.size() >= 2 && frames_.back().is_array && frames_.back().children == 0 && frames_[frames_.size() - 2].is_array &&
        frames_[frames_.size() - 2].key == "lst")
      result_.runners.push_back(value);
    return scalar();
  }

  bool start_object(std::size_t) override { return open(false); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& key) override {
    frames_.back().current_key = key;
    return true;
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    if (!error_) error_ = make_error("{}: not valid JSON at byte {} ({})", file_, position, short_message(e.what()));
    return false;
  }

  Result<PolygraphyArrays> finish(bool parsed) {
    if (error_) return *error_;
    if (!parsed) return make_error("{}: not valid JSON", file_);
    if (arrays_seen_ == 0)
      return make_error("{}: no arrays found (expected Polygraphy's --save-outputs or --save-inputs JSON)", file_);
    return std::move(result_);
  }

 private:
  static std::string short_message(const std::string& what) {
    size_t colon = what.rfind(": ");
    return colon == std::string::npos ? what : what.substr(colon + 2);
  }

  bool scalar() {
    if (!frames_.empty() && frames_.back().is_array) ++frames_.back().children;
    return true;
  }

  bool open(bool is_array) {
    Frame f;
    f.is_array = is_array;
    if (!frames_.empty()) {
      Frame& parent = frames_.back();
      if (parent.is_array) f.index = parent.children++;
      else f.key = parent.current_key;
    }
    frames_.push_back(std::move(f));
    return true;
  }

  bool close() {
    frames_.pop_back();
    return true;
  }

  bool array(const std::string& text) {
    ++arrays_seen_;
    // frames_.back() is the ndarray object.
    size_t holder = frames_.size() - 1;
    if (frames_[holder].key == "values" && holder > 0) --holder;
    const std::string name = frames_[holder].key;
    if (name.empty()) return fail(make_error("{}: an array outside any name", file_));
    int64_t iteration = 0;
    for (size_t k = holder; k-- > 0;) {
      if (frames_[k].is_array) {
        iteration = frames_[k + 1].index;
        break;
      }
    }
    // Inside "lst": frames_[i] is the list, frames_[i + 1] the runner's pair.
    for (size_t k = 0; k + 1 < holder; ++k)
      if (frames_[k].is_array && frames_[k].key == "lst" && frames_[k + 1].index != 0) return true;

    std::optional<std::string> bytes = decode_base64(text);
    if (!bytes) bytes = latin1_bytes(text);  // Polygraphy's older encoding
    if (!bytes) return fail(make_error("{}: array '{}' is neither base64 nor latin-1 .npy bytes", file_, name));
    auto tensor = parse_npy(*bytes, file_ + ":" + name);
    if (!tensor.ok()) return fail(tensor.error());
    tensor->set_name(name);
    auto& iterations = result_.iterations;
    if (iterations.size() <= static_cast<size_t>(iteration)) iterations.resize(static_cast<size_t>(iteration) + 1);
    iterations[static_cast<size_t>(iteration)].emplace_back(name, std::move(tensor).value());
    return true;
  }

  static std::optional<std::string> latin1_bytes(const std::string& text) {
    std::string out;
    for (size_t i = 0; i < text.size();) {
      char32_t c = 0;
      size_t length = decode_utf8(text, i, c);
      if (length == 0 || c > 0xff) return std::nullopt;
      out += static_cast<char>(c);
      i += length;
    }
    return out;
  }

  bool fail(Error error) {
    error_ = std::move(error);
    return false;
  }

  std::string file_;
  std::vector<Frame> frames_;
  PolygraphyArrays result_;
  size_t arrays_seen_ = 0;
  std::optional<Error> error_;
};

}  // namespace

std::optional<std::string> decode_base64(std::string_view text) {
  static const std::array<int8_t, 256> table = [] {
    std::array<int8_t, 256> t{};
    t.fill(-1);
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(alphabet[i])] = static_cast<int8_t>(i);
    return t;
  }();
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3 + 2);
  uint32_t bits = 0;
  int count = 0;
  for (char ch : text) {
    const int8_t v = table[static_cast<unsigned char>(ch)];
    if (v < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<uint32_t>(v);
    if (++count == 4) {
      out += static_cast<char>((bits >> 16) & 0xff);
      out += static_cast<char>((bits >> 8) & 0xff);
      out += static_cast<char>(bits & 0xff);
      bits = 0;
      count = 0;
    }
  }
  if (count == 2) out += static_cast<char>((bits >> 4) & 0xff);
  if (count == 3) {
    out += static_cast<char>((bits >> 10) & 0xff);
    out += static_cast<char>((bits >> 2) & 0xff);
  }
  return out;
}

Result<PolygraphyArrays> read_polygraphy_json(const fs::path& path) {
  ONNXKIT_ASSIGN(auto mapped, MappedFile::open(path));
  auto bytes = mapped->bytes();
  const char* begin = reinterpret_cast<const char*>(bytes.data());
  Handler handler(path.string());
  bool parsed = false;
  if (begin != nullptr) parsed = json::sax_parse(begin, begin + bytes.size(), &handler);
  else return make_error("{}: empty file, not Polygraphy JSON", path.string());
  return handler.finish(parsed);
}

}  // namespace onnxkit::io
