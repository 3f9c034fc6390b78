#include "mayura/random_id.hpp"

#include <cstring>
#include <string>
#include <vector>

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
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(digits);
  for (std::size_t i = 0; i < digits; ++i) out.push_back(kHex[(bytes[i / 2] >> (i % 2 ? 0 : 4)) & 0xf]);
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
