//===- test/fuzz/ReplayMain.cpp - run a fuzz target over files ----------===//
//
// The fuzz targets' main when libFuzzer is not used: feeds every file named
// on the command line (folders are walked) to LLVMFuzzerTestOneInput, so
// ctest replays a corpus on every build and the targets never rot.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void runFile(const std::filesystem::path &p, int &count) {
  std::ifstream in(p, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  // Every prefix too: truncated inputs are the commonest corruption.
  for (size_t n = 0; n < bytes.size(); n += 1 + bytes.size() / 64)
    LLVMFuzzerTestOneInput(bytes.data(), n);
  ++count;
}

int main(int argc, char **argv) {
  int count = 0;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path p(argv[i]);
    if (std::filesystem::is_directory(p)) {
      std::vector<std::filesystem::path> files;
      for (const auto &e : std::filesystem::recursive_directory_iterator(p))
        if (e.is_regular_file()) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (const auto &f : files) runFile(f, count);
    } else {
      runFile(p, count);
    }
  }
  std::printf("replayed %d inputs (and their prefixes)\n", count);
  return count > 0 ? 0 : 1;
}
