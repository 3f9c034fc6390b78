#pragma once
// Lower-case hex, the one encoder of it: digests, store names, random ids.

#include <cstddef>
#include <string>

namespace mayura {

// Two digits for each of `size` bytes at `bytes`.
std::string hex_of(const unsigned char* bytes, std::size_t size);

}  // namespace mayura
