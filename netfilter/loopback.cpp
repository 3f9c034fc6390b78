#include "mayura/netfilter/loopback.hpp"

#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <sched.h>

#include <cerrno>
#include <memory>
#include <thread>

namespace mayura::netfilter {
namespace {

struct SocketDeleter {
  void operator()(nl_sock* s) const { nl_socket_free(s); }
};
struct LinkDeleter {
  void operator()(rtnl_link* l) const { rtnl_link_put(l); }
};

int set_lo_up() {
  std::unique_ptr<nl_sock, SocketDeleter> sock(nl_socket_alloc());
  if (!sock) return ENOMEM;
  if (nl_connect(sock.get(), NETLINK_ROUTE) < 0) return EPROTO;
  rtnl_link* raw = nullptr;
  if (rtnl_link_get_kernel(sock.get(), 0, "lo", &raw) < 0) return ENODEV;
  std::unique_ptr<rtnl_link, LinkDeleter> link(raw);
  std::unique_ptr<rtnl_link, LinkDeleter> change(rtnl_link_alloc());
  if (!change) return ENOMEM;
  rtnl_link_set_flags(change.get(), IFF_UP);
  if (rtnl_link_change(sock.get(), link.get(), change.get(), 0) < 0) return EPERM;
  return 0;
}

}  // namespace

int bring_up_loopback(int netns_fd) noexcept {
  int result = 0;
  try {
    std::thread worker([&] {
      // The netlink socket must be made inside the namespace it talks to.
      if (::setns(netns_fd, CLONE_NEWNET) != 0) {
        result = errno;
        return;
      }
      result = set_lo_up();
    });
    worker.join();
  } catch (...) {
    return EAGAIN;
  }
  return result;
}

}  // namespace mayura::netfilter
