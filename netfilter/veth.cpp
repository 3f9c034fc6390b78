#include "veth.hpp"

#include <arpa/inet.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netlink/cache.h>
#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/route.h>

#include <memory>

#include "address_pool.hpp"
#include "mayura/errors.hpp"
#include "netns_thread.hpp"

namespace mayura::netfilter {
namespace {

struct LinkDeleter {
  void operator()(rtnl_link* l) const { rtnl_link_put(l); }
};
struct AddrDeleter {
  void operator()(rtnl_addr* a) const { rtnl_addr_put(a); }
};
struct RouteDeleter {
  void operator()(rtnl_route* r) const { rtnl_route_put(r); }
};
struct NlAddrDeleter {
  void operator()(nl_addr* a) const { nl_addr_put(a); }
};
struct CacheDeleter {
  void operator()(nl_cache* c) const { nl_cache_free(c); }
};
using Link = std::unique_ptr<rtnl_link, LinkDeleter>;
using NlAddr = std::unique_ptr<nl_addr, NlAddrDeleter>;

[[noreturn]] void fail_netlink(const std::string& step, int nl_error) {
  throw SandboxError(Reason::INTERNAL, step + ": " + nl_geterror(nl_error));
}

template <class T>
T* made(T* object, const std::string& step) {
  if (!object) fail_netlink(step, -NLE_NOMEM);
  return object;
}

NlAddr ipv4(std::uint32_t address, int prefix, const std::string& step) {
  const std::uint32_t wire = htonl(address);
  NlAddr a(made(nl_addr_build(AF_INET, &wire, sizeof wire), step));
  nl_addr_set_prefixlen(a.get(), prefix);
  return a;
}

}  // namespace

RouteSocket::RouteSocket(int netns_fd) {
  run_in_netns(netns_fd, [this] {
    sock_ = made(nl_socket_alloc(), "making a netlink socket");
    if (const int err = nl_connect(sock_, NETLINK_ROUTE); err < 0) {
      nl_socket_free(sock_);
      sock_ = nullptr;
      fail_netlink("connecting a netlink socket", err);
    }
  });
}

RouteSocket::~RouteSocket() {
  if (sock_) nl_socket_free(sock_);
}

void RouteSocket::add_veth(const std::string& name, int peer_netns, const std::string& peer_name) {
  const std::string step = "making the veth pair " + name;
  Link link(made(rtnl_link_veth_alloc(), step));
  rtnl_link_set_name(link.get(), name.c_str());
  // The peer is owned by `link`; this reference is ours to drop (before
  // `link`'s, hence declared after it).
  Link peer(made(rtnl_link_veth_get_peer(link.get()), step));
  rtnl_link_set_name(peer.get(), peer_name.c_str());
  rtnl_link_set_ns_fd(peer.get(), peer_netns);
  if (const int err = rtnl_link_add(sock_, link.get(), NLM_F_CREATE | NLM_F_EXCL); err < 0) fail_netlink(step, err);
}

int RouteSocket::index_of(const std::string& link) {
  rtnl_link* raw = nullptr;
  if (const int err = rtnl_link_get_kernel(sock_, 0, link.c_str(), &raw); err < 0)
    fail_netlink("finding link " + link, err);
  const Link found(raw);
  return rtnl_link_get_ifindex(found.get());
}

void RouteSocket::add_address(const std::string& link, std::uint32_t address, int prefix) {
  const std::string step = "adding address " + dotted_quad(address) + "/" + std::to_string(prefix) + " to " + link;
  const int index = index_of(link);
  std::unique_ptr<rtnl_addr, AddrDeleter> addr(made(rtnl_addr_alloc(), step));
  rtnl_addr_set_ifindex(addr.get(), index);
  rtnl_addr_set_family(addr.get(), AF_INET);
  const NlAddr local = ipv4(address, prefix, step);
  if (const int err = rtnl_addr_set_local(addr.get(), local.get()); err < 0) fail_netlink(step, err);
  rtnl_addr_set_prefixlen(addr.get(), prefix);
  if (const int err = rtnl_addr_add(sock_, addr.get(), NLM_F_EXCL); err < 0) fail_netlink(step, err);
}

void RouteSocket::set_up(const std::string& link) {
  const std::string step = "bringing up " + link;
  rtnl_link* raw = nullptr;
  if (const int err = rtnl_link_get_kernel(sock_, 0, link.c_str(), &raw); err < 0) fail_netlink(step, err);
  const Link current(raw);
  const Link change(made(rtnl_link_alloc(), step));
  rtnl_link_set_flags(change.get(), IFF_UP);
  if (const int err = rtnl_link_change(sock_, current.get(), change.get(), 0); err < 0) fail_netlink(step, err);
}

void RouteSocket::add_route(std::uint32_t destination, int prefix, std::uint32_t gateway) {
  const std::string step =
      "adding the route " + dotted_quad(destination) + "/" + std::to_string(prefix) + " via " + dotted_quad(gateway);
  std::unique_ptr<rtnl_route, RouteDeleter> route(made(rtnl_route_alloc(), step));
  rtnl_route_set_family(route.get(), AF_INET);
  rtnl_route_set_table(route.get(), RT_TABLE_MAIN);
  rtnl_route_set_scope(route.get(), RT_SCOPE_UNIVERSE);
  rtnl_route_set_type(route.get(), RTN_UNICAST);
  rtnl_route_set_protocol(route.get(), RTPROT_STATIC);
  const NlAddr dst = ipv4(destination, prefix, step);
  if (const int err = rtnl_route_set_dst(route.get(), dst.get()); err < 0) fail_netlink(step, err);
  // The route takes the next hop over; it is freed with the route.
  rtnl_nexthop* hop = made(rtnl_route_nh_alloc(), step);
  const NlAddr via = ipv4(gateway, 32, step);
  rtnl_route_nh_set_gateway(hop, via.get());
  rtnl_route_add_nexthop(route.get(), hop);
  if (const int err = rtnl_route_add(sock_, route.get(), NLM_F_EXCL); err < 0) fail_netlink(step, err);
}

bool RouteSocket::delete_link(const std::string& name) {
  const std::string step = "deleting link " + name;
  const Link link(made(rtnl_link_alloc(), step));
  rtnl_link_set_name(link.get(), name.c_str());
  const int err = rtnl_link_delete(sock_, link.get());
  if (err == -NLE_NODEV || err == -NLE_OBJ_NOTFOUND) return false;
  if (err < 0) fail_netlink(step, err);
  return true;
}

std::vector<std::string> RouteSocket::links_starting_with(const std::string& prefix) {
  const std::string step = "listing links";
  nl_cache* raw = nullptr;
  if (const int err = rtnl_link_alloc_cache(sock_, AF_UNSPEC, &raw); err < 0) fail_netlink(step, err);
  const std::unique_ptr<nl_cache, CacheDeleter> cache(raw);
  std::vector<std::string> names;
  for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
    const char* name = rtnl_link_get_name(reinterpret_cast<rtnl_link*>(o));
    if (name && std::string_view(name).starts_with(prefix)) names.emplace_back(name);
  }
  return names;
}

}  // namespace mayura::netfilter
