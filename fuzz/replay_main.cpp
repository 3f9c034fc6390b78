// Runs each file named on the command line (or each file in each directory
// named) through the harness once: the corpus and every input that ever
// crashed a harness, replayed by ctest without libFuzzer.
//
// The properties a harness checks hold only on what its decoder accepts, so
// a decoder that refused every input would pass them all. A corpus's valid
// seeds are named valid-* (the rest are inputs to refuse, regression-* ones
// and what libFuzzer adds): each must come back accepted
// (mayura::fuzz::accept(), fuzz.hpp), and a directory with no valid seed
// fails, so that its seeds cannot all lose the name unnoticed. A file named
// alone (a crash to look at) is only replayed.

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz.hpp"

namespace {

bool valid_seed(const std::filesystem::path& file) { return file.filename().string().rfind("valid-", 0) == 0; }

int run(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::cerr << "replay: cannot read " << file << "\n";
    return 1;
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  mayura::fuzz::accepted = false;
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  if (valid_seed(file) && !mayura::fuzz::accepted) {
    std::cerr << "replay: " << file << " is a valid seed, and the harness refused it\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t inputs = 0;
  std::size_t valid = 0;
  int failed = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    std::vector<std::filesystem::path> files;
    const bool corpus = std::filesystem::is_directory(arg);
    if (corpus) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(arg))
        if (e.is_regular_file()) files.push_back(e.path());
    } else {
      files.push_back(arg);
    }
    std::size_t seeds = 0;
    for (const auto& f : files) {
      failed += run(f);
      ++inputs;
      if (valid_seed(f)) ++seeds;
    }
    if (corpus && seeds == 0) {
      std::cerr << "replay: " << arg << " has no valid seed (a file named valid-* that the harness must accept)\n";
      ++failed;
    }
    valid += seeds;
  }
  std::cout << "replayed " << inputs << " inputs, " << valid << " of them valid seeds\n";
  // A corpus that is not there must not pass as an empty one.
  return failed != 0 || inputs == 0 ? 1 : 0;
}
