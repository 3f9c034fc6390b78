#pragma once
// The one source of random ids, tags and names: the kernel's generator
// (getrandom) for each, never a generator's state, which a few outputs give
// away and which forked processes would share.

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
