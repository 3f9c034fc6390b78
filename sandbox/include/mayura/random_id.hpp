#pragma once
// Random ids, tags and names, from the one source of randomness
// (mayura/base/random_bytes.hpp: the kernel's generator).

#include <cstddef>
#include <cstdint>
#include <string>

namespace mayura {

// `digits` lowercase hex digits. Throws SandboxError (INTERNAL) if the
// kernel gives no random bytes.
std::string random_hex(std::size_t digits);
// A number below `bound` (> 0), uniformly.
std::uint64_t random_below(std::uint64_t bound);

}  // namespace mayura
