#include "mayura/random_id.hpp"

#include <cstring>
#include <string>
#include <vector>

#include "mayura/base/hex.hpp"
#include "mayura/base/random_bytes.hpp"
#include "mayura/errors.hpp"

namespace mayura {
namespace {

void fill(void* bytes, std::size_t size) {
  if (const int error = random_bytes(bytes, size); error != 0)
    throw SandboxError(Reason::INTERNAL, std::string("no random bytes (getrandom): ") + std::strerror(error));
}

}  // namespace

std::string random_hex(std::size_t digits) {
  std::vector<unsigned char> bytes((digits + 1) / 2);
  fill(bytes.data(), bytes.size());
  std::string out = hex_of(bytes.data(), bytes.size());
  out.resize(digits);  // an odd count drops the last byte's low digit
  return out;
}

std::uint64_t random_below(std::uint64_t bound) {
  // Rejection: no value more likely than another.
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  for (;;) {
    std::uint64_t v = 0;
    fill(&v, sizeof v);
    if (v < limit) return v % bound;
  }
}

}  // namespace mayura
