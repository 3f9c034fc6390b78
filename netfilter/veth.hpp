#pragma once
// Links, addresses and routes of one network namespace, through netlink
// (libnl-route): veth pairs whose ends live in two namespaces.

#include <cstdint>
#include <string>
#include <vector>

struct nl_sock;

namespace mayura::netfilter {

// A NETLINK_ROUTE socket of the network namespace `netns_fd`. A netlink
// socket talks to the namespace it was made in for all its life, so it is
// made by a short-lived thread inside that namespace and then used from any
// thread. Every call throws SandboxError(INTERNAL) naming its step.
class RouteSocket {
 public:
  explicit RouteSocket(int netns_fd);
  ~RouteSocket();
  RouteSocket(const RouteSocket&) = delete;
  RouteSocket& operator=(const RouteSocket&) = delete;

  // A veth pair, both ends down: `name` in this namespace, `peer_name` made
  // directly in `peer_netns` (so it never clashes with a name here). Fails
  // if `name` exists.
  void add_veth(const std::string& name, int peer_netns, const std::string& peer_name);
  // Addresses are in host byte order.
  void add_address(const std::string& link, std::uint32_t address, int prefix);
  void set_up(const std::string& link);
  // A route to destination/prefix (0/0: the default route) via `gateway`.
  void add_route(std::uint32_t destination, int prefix, std::uint32_t gateway);
  // Deletes the link (a veth's peer goes with it, before this returns);
  // false if there was no such link.
  bool delete_link(const std::string& name);
  // Names of this namespace's links that start with `prefix`.
  std::vector<std::string> links_starting_with(const std::string& prefix);

 private:
  int index_of(const std::string& link);
  nl_sock* sock_ = nullptr;
};

}  // namespace mayura::netfilter
