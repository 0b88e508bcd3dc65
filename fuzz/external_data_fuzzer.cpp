// libFuzzer target for the external-data resolver. A folder is made once
// with a side file, a subfolder, links that stay inside and links that lead
// out, a FIFO and a directory; each input is a tensor's external_data
// entries (location, offset, length: lines of text) and dims. Any slice the
// resolver hands out must be of a regular file inside the folder, within
// that file's bytes: anything else aborts, which the fuzzer reports.
//
// Build and run: see the README's fuzzing line; seeds in fuzz/seeds/external_data.

#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "io/external_data.h"
#include "util/text.h"

namespace {

namespace fs = std::filesystem;
using namespace onnxkit;

// The folder, made at the first input and removed at exit.
struct Folder {
  fs::path root, model;
  Folder() {
    char pattern[] = "/tmp/onnxkit-fuzz-XXXXXX";
    root = ::mkdtemp(pattern);
    model = root / "model";
    fs::create_directories(model / "sub");
    std::ofstream(model / "w.bin", std::ios::binary) << std::string(64, 'w');
    std::ofstream(model / "sub/x.bin", std::ios::binary) << std::string(16, 'x');
    std::ofstream(root / "secret.bin", std::ios::binary) << std::string(64, 's');
    fs::create_symlink("w.bin", model / "in_link");
    fs::create_symlink("sub", model / "sub_link");
    fs::create_symlink("../secret.bin", model / "out_link");
    fs::create_symlink(root / "secret.bin", model / "abs_link");
    fs::create_symlink("/dev/zero", model / "dev_link");
    ::mkfifo((model / "fifo").c_str(), 0600);
    fs::create_directory(model / "dir");
  }
  ~Folder() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

void require(bool condition, const char* what) {
  if (condition) return;
  std::fprintf(stderr, "external data resolver: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Folder folder;
  const std::vector<std::string> lines = split(std::string_view(reinterpret_cast<const char*>(data), size), '\n');
  onnx::TensorProto tensor;
  tensor.set_name("w");
  tensor.set_data_type(onnx::TensorProto::UINT8);
  tensor.set_data_location(onnx::TensorProto::EXTERNAL);
  const char* keys[] = {"location", "offset", "length"};
  for (size_t i = 0; i < lines.size() && i < 3; ++i) {
    if (lines[i] == "-") continue;  // the entry left out
    auto* entry = tensor.add_external_data();
    entry->set_key(keys[i]);
    entry->set_value(lines[i]);
  }
  for (size_t i = 3; i < lines.size() && i < 8; ++i) tensor.add_dims(std::strtoll(lines[i].c_str(), nullptr, 10));
  if (lines.size() > 8) tensor.set_data_type(static_cast<int32_t>(std::strtol(lines[8].c_str(), nullptr, 10)));

  io::ExternalDataStore store(folder.model);
  auto slice = store.slice(tensor);
  if (!slice.ok()) return 0;
  std::error_code ec;
  // Folded first, as the resolver folds it: "<300 bytes>/../w.bin" is
  // w.bin, but weakly_canonical fails on the long name (ENAMETOOLONG).
  const fs::path file = fs::weakly_canonical(folder.model / fs::path(slice->location).lexically_normal(), ec);
  const std::string inside = fs::canonical(folder.model, ec).string() + "/";
  require(file.string().rfind(inside, 0) == 0, "a slice of a file outside the folder");
  struct stat st {};
  require(::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode), "a slice of something not a regular file");
  require(slice->offset <= slice->file->size() && slice->length <= slice->file->size() - slice->offset,
          "a slice past the end of its file");
  require(slice->bytes().size() == slice->length, "a slice of the wrong length");
  auto reopened = store.reopen(*slice);
  require(reopened.ok(), "a slice whose file cannot be opened again");
  return 0;
}
