// Runs each file named on the command line (or each file in each directory
// named) through the harness once: the corpus and every input that ever
// crashed a harness, replayed by ctest without libFuzzer.

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz.hpp"

namespace {

int run(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::cerr << "replay: cannot read " << file << "\n";
    return 1;
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t inputs = 0;
  int failed = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    std::vector<std::filesystem::path> files;
    if (std::filesystem::is_directory(arg)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(arg))
        if (e.is_regular_file()) files.push_back(e.path());
    } else {
      files.push_back(arg);
    }
    for (const auto& f : files) {
      failed += run(f);
      ++inputs;
    }
  }
  std::cout << "replayed " << inputs << " inputs\n";
  // A corpus that is not there must not pass as an empty one.
  return failed != 0 || inputs == 0 ? 1 : 0;
}
