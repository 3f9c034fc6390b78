#include "veth.hpp"

#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/route.h>
#include <sched.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <thread>

namespace mayura::testing {
namespace {

struct NlDeleter {
  void operator()(nl_sock* s) const { nl_socket_free(s); }
  void operator()(rtnl_link* l) const { rtnl_link_put(l); }
  void operator()(rtnl_addr* a) const { rtnl_addr_put(a); }
  void operator()(rtnl_route* r) const { rtnl_route_put(r); }
  void operator()(nl_addr* a) const { nl_addr_put(a); }
};
template <typename T>
using Nl = std::unique_ptr<T, NlDeleter>;

// Fails the step `what` with libnl's reason when `err` is an error.
void check(int err, const std::string& what) {
  if (err < 0) throw std::runtime_error(what + ": " + nl_geterror(err));
}

Nl<nl_addr> parse_address(const std::string& text) {
  nl_addr* raw = nullptr;
  check(nl_addr_parse(text.c_str(), AF_INET, &raw), "parsing " + text);
  return Nl<nl_addr>(raw);
}

// Runs `work` with a netlink socket inside `netns`, on a short-lived thread:
// a netlink socket talks to the namespace it was made in, and the caller's
// thread must never change namespace.
void in_netns(int netns, const std::function<void(nl_sock*)>& work) {
  std::exception_ptr failure;
  std::thread worker([&] {
    try {
      if (::setns(netns, CLONE_NEWNET) != 0) throw std::runtime_error(std::string("setns: ") + std::strerror(errno));
      Nl<nl_sock> sock(nl_socket_alloc());
      if (!sock) throw std::runtime_error("nl_socket_alloc failed");
      check(nl_connect(sock.get(), NETLINK_ROUTE), "connecting to rtnetlink");
      work(sock.get());
    } catch (...) {
      failure = std::current_exception();
    }
  });
  worker.join();
  if (failure) std::rethrow_exception(failure);
}

// Up, addresses, default route: in that order, as the kernel refuses a route
// through a link that is down or a gateway no address reaches.
void configure(nl_sock* sock, const VethEnd& end) {
  rtnl_link* raw = nullptr;
  check(rtnl_link_get_kernel(sock, 0, end.name.c_str(), &raw), "finding " + end.name);
  Nl<rtnl_link> link(raw);
  const int index = rtnl_link_get_ifindex(link.get());

  Nl<rtnl_link> change(rtnl_link_alloc());
  rtnl_link_set_flags(change.get(), IFF_UP);
  check(rtnl_link_change(sock, link.get(), change.get(), 0), "bringing up " + end.name);

  for (const auto& text : end.addresses) {
    Nl<rtnl_addr> address(rtnl_addr_alloc());
    rtnl_addr_set_ifindex(address.get(), index);
    check(rtnl_addr_set_local(address.get(), parse_address(text).get()), "setting " + text);
    check(rtnl_addr_add(sock, address.get(), 0), "adding " + text + " to " + end.name);
  }

  if (!end.gateway.empty()) {
    Nl<rtnl_route> route(rtnl_route_alloc());
    rtnl_route_set_family(route.get(), AF_INET);
    check(rtnl_route_set_dst(route.get(), parse_address("0.0.0.0/0").get()), "default route");
    rtnl_nexthop* hop = rtnl_route_nh_alloc();  // the route owns it once added
    rtnl_route_nh_set_ifindex(hop, index);
    rtnl_route_nh_set_gateway(hop, parse_address(end.gateway).get());
    rtnl_route_add_nexthop(route.get(), hop);
    check(rtnl_route_add(sock, route.get(), NLM_F_CREATE | NLM_F_EXCL), "default route via " + end.gateway);
  }
}

void remove(const VethEnd& end) noexcept {
  try {
    in_netns(end.netns, [&](nl_sock* sock) {
      Nl<rtnl_link> link(rtnl_link_alloc());
      rtnl_link_set_name(link.get(), end.name.c_str());
      rtnl_link_delete(sock, link.get());
    });
  } catch (...) {
    // The namespace's end goes with the namespace anyway, if later.
  }
}

}  // namespace

VethPair::VethPair(VethEnd a, VethEnd b) : a_(std::move(a)), b_(std::move(b)) {
  // Made from inside b's namespace, its peer sent straight to a's.
  in_netns(b_.netns, [&](nl_sock* sock) {
    Nl<rtnl_link> veth(rtnl_link_veth_alloc());
    if (!veth) throw std::runtime_error("rtnl_link_veth_alloc failed");
    rtnl_link_set_name(veth.get(), b_.name.c_str());
    Nl<rtnl_link> peer(rtnl_link_veth_get_peer(veth.get()));
    rtnl_link_set_name(peer.get(), a_.name.c_str());
    rtnl_link_set_ns_fd(peer.get(), a_.netns);
    check(rtnl_link_add(sock, veth.get(), NLM_F_CREATE | NLM_F_EXCL),
          "making the veth pair " + a_.name + "/" + b_.name + " (is there one already?)");
  });
  try {
    in_netns(a_.netns, [&](nl_sock* sock) { configure(sock, a_); });
    in_netns(b_.netns, [&](nl_sock* sock) { configure(sock, b_); });
  } catch (...) {
    remove(a_);
    throw;
  }
}

VethPair::~VethPair() { remove(a_); }

}  // namespace mayura::testing
