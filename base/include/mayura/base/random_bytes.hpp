#pragma once
// The one source of randomness for ids, tags and names: the kernel's
// generator (getrandom) each time, never a generator's state, which a few
// outputs give away and which the processes a host forks would share.

#include <cstddef>

namespace mayura {

// Fills `size` bytes at `bytes`: 0, or the errno of the failure.
int random_bytes(void* bytes, std::size_t size) noexcept;

}  // namespace mayura
