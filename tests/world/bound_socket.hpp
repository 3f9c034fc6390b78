#pragma once
// A socket made inside a network namespace and bound there, for the world's
// servers: they are served from the test process but listen in the world.

#include <cstdint>

namespace mayura::testing {

// An IPv4 socket of `type` (SOCK_STREAM: also listening) made in `netns`,
// bound to 0.0.0.0:port there, non-blocking. Throws std::runtime_error.
int bound_socket(int netns, int type, std::uint16_t port);

}  // namespace mayura::testing
