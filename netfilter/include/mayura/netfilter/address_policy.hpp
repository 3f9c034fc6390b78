#pragma once
// Which addresses the engine's proxy may connect to on a sandbox's behalf.
// An allowed name can still resolve to an address inside the host's own
// world (loopback, a cloud's metadata service, a private network): those are
// refused, in every spelling, IPv4 addresses carried inside IPv6 included.

#include <boost/asio/ip/address.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace mayura::netfilter {

enum class AddressClass {
  global,         // the internet
  private_range,  // RFC 1918, CGNAT 100.64/10, IPv6 ULA fc00::/7, site-local
  loopback,
  link_local,
  multicast,
  metadata,     // a cloud's instance metadata service
  unspecified,  // 0.0.0.0/8, ::
  reserved,     // 240/4, broadcast, documentation and benchmark ranges
};

std::string_view class_name(AddressClass c);

// What `address` is, looking through IPv4-mapped, IPv4-compatible, NAT64
// (64:ff9b::/96) and 6to4 (2002::/16) forms to the IPv4 address inside.
AddressClass classify(const boost::asio::ip::address& address);

// An address range, `a.b.c.d/len` or `x::/len`.
struct Prefix {
  boost::asio::ip::address network;
  int length = 0;
  bool contains(const boost::asio::ip::address& candidate) const;
};
// Throws SandboxError(INVALID_CONFIG) naming `text` if it is no prefix.
Prefix parse_prefix(const std::string& text);

// What an operator lets the proxy reach beyond the internet.
struct EgressRules {
  bool allow_private = false;
  // Ranges taken as the internet although they are private or reserved (a
  // test's world on documentation addresses, a company's own registry).
  // They never open loopback, link-local, multicast or metadata addresses.
  std::vector<Prefix> also_public;
  // Ranges never reached whatever the above say (network all's pool: the
  // other sandboxes).
  std::vector<Prefix> never;
};

// Whether the proxy may connect to `address`: only global addresses (and
// private ones when `allow_private`), never one of the host's own.
bool may_connect(const boost::asio::ip::address& address, bool allow_private,
                 const std::vector<boost::asio::ip::address>& host_addresses = {});
bool may_connect(const boost::asio::ip::address& address, const EgressRules& rules,
                 const std::vector<boost::asio::ip::address>& host_addresses = {});

// The addresses of the host's interfaces now (getifaddrs); empty if they
// cannot be read.
std::vector<boost::asio::ip::address> host_addresses();

}  // namespace mayura::netfilter
