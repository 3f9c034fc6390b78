#include "mayura/netfilter/loopback.hpp"

#include <cerrno>

#include "veth.hpp"

namespace mayura::netfilter {

int bring_up_loopback(int netns_fd) noexcept {
  try {
    RouteSocket(netns_fd).set_up("lo");
    return 0;
  } catch (...) {
    return EPERM;
  }
}

}  // namespace mayura::netfilter
