#pragma once
// What every harness shares. A harness defines LLVMFuzzerTestOneInput over
// the real decoding function; it is linked either with libFuzzer (clang,
// scripts/fuzz.sh) or with replay_main.cpp, which runs a corpus through it
// once (ctest, in every build, the sanitized one included).

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

}  // namespace mayura::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
