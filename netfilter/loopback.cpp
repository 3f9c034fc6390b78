#include "mayura/netfilter/loopback.hpp"

#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <arpa/inet.h>
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
struct AddrDeleter {
  void operator()(rtnl_addr* a) const { rtnl_addr_put(a); }
};
struct NlAddrDeleter {
  void operator()(nl_addr* a) const { nl_addr_put(a); }
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

int add_lo_address(std::uint32_t address, int prefix) {
  std::unique_ptr<nl_sock, SocketDeleter> sock(nl_socket_alloc());
  if (!sock) return ENOMEM;
  if (nl_connect(sock.get(), NETLINK_ROUTE) < 0) return EPROTO;
  const int index = static_cast<int>(::if_nametoindex("lo"));
  if (index == 0) return ENODEV;
  const std::uint32_t be = htonl(address);
  std::unique_ptr<nl_addr, NlAddrDeleter> local(nl_addr_build(AF_INET, &be, sizeof be));
  std::unique_ptr<rtnl_addr, AddrDeleter> addr(rtnl_addr_alloc());
  if (!local || !addr) return ENOMEM;
  nl_addr_set_prefixlen(local.get(), prefix);
  rtnl_addr_set_ifindex(addr.get(), index);
  rtnl_addr_set_local(addr.get(), local.get());
  const int r = rtnl_addr_add(sock.get(), addr.get(), 0);
  if (r == -NLE_EXIST) return 0;
  return r < 0 ? EPERM : 0;
}

// Runs `work` on a short-lived thread inside `netns_fd` (a netlink socket
// must be made inside the namespace it talks to); the caller's thread never
// changes namespace. 0, or an errno value.
template <class Work>
int in_netns(int netns_fd, Work work) noexcept {
  int result = 0;
  try {
    std::thread worker([&] {
      if (::setns(netns_fd, CLONE_NEWNET) != 0) {
        result = errno;
        return;
      }
      result = work();
    });
    worker.join();
  } catch (...) {
    return EAGAIN;
  }
  return result;
}

}  // namespace

int add_loopback_address(int netns_fd, std::uint32_t address, int prefix) noexcept {
  return in_netns(netns_fd, [&] { return add_lo_address(address, prefix); });
}

int bring_up_loopback(int netns_fd) noexcept { return in_netns(netns_fd, set_lo_up); }

}  // namespace mayura::netfilter
