#pragma once
// What every harness shares. A harness defines LLVMFuzzerTestOneInput over
// the real decoding function; it is linked either with libFuzzer (clang,
// scripts/fuzz.sh) or with replay_main.cpp, which runs a corpus through it
// once (ctest, in every build, the sanitized one included), and checks that
// the corpus's valid seeds (corpus/NAME/valid-*) are accepted.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

// A property that must hold for every input. abort() rather than assert(),
// so the check stays in a build with NDEBUG.
#define FUZZ_CHECK(cond)                                                               \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)

namespace mayura::fuzz {

inline std::string_view bytes(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Whether the decoder took the input (it decoded, parsed, compiled or
// unpacked it rather than refusing it). A harness calls accept() where the
// input has come through; libFuzzer never looks, and the return value of
// LLVMFuzzerTestOneInput stays 0 (-1 would keep the input out of its
// corpus). The replay clears it before each input and reads it after: a
// seed named valid-* that comes back refused fails the replay, so a
// decoder that refuses everything cannot pass as one that holds its
// properties on everything it takes.
inline bool accepted = false;
inline void accept() { accepted = true; }

}  // namespace mayura::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
