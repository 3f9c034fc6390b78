#include "mayura/netfilter/address_policy.hpp"

#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#include "mayura/errors.hpp"

namespace mayura::netfilter {
namespace {

using boost::asio::ip::address;
using boost::asio::ip::address_v4;
using boost::asio::ip::address_v6;

constexpr bool in(std::uint32_t a, std::uint32_t net, int bits) {
  const std::uint32_t mask = bits == 0 ? 0 : ~std::uint32_t{0} << (32 - bits);
  return (a & mask) == net;
}

constexpr std::uint32_t v4(int a, int b, int c, int d) {
  return static_cast<std::uint32_t>(a) << 24 | static_cast<std::uint32_t>(b) << 16 |
         static_cast<std::uint32_t>(c) << 8 | static_cast<std::uint32_t>(d);
}

AddressClass classify_v4(std::uint32_t a) {
  // Metadata first: some live inside ranges classified below.
  // AWS/GCP/Azure IMDS, ECS task metadata, Alibaba, Oracle's 192.0.0.192,
  // Azure's WireServer.
  for (std::uint32_t m : {v4(169, 254, 169, 254), v4(169, 254, 170, 2), v4(100, 100, 100, 200), v4(192, 0, 0, 192),
                          v4(168, 63, 129, 16)}) {
    if (a == m) return AddressClass::metadata;
  }
  if (in(a, v4(0, 0, 0, 0), 8)) return AddressClass::unspecified;
  if (in(a, v4(127, 0, 0, 0), 8)) return AddressClass::loopback;
  if (in(a, v4(169, 254, 0, 0), 16)) return AddressClass::link_local;
  if (in(a, v4(224, 0, 0, 0), 4)) return AddressClass::multicast;
  if (in(a, v4(10, 0, 0, 0), 8) || in(a, v4(172, 16, 0, 0), 12) || in(a, v4(192, 168, 0, 0), 16) ||
      in(a, v4(100, 64, 0, 0), 10)) {
    return AddressClass::private_range;
  }
  if (in(a, v4(240, 0, 0, 0), 4) ||   // reserved, and the broadcast address
      in(a, v4(192, 0, 0, 0), 24) ||  // IETF protocol assignments
      in(a, v4(192, 0, 2, 0), 24) || in(a, v4(198, 51, 100, 0), 24) || in(a, v4(203, 0, 113, 0), 24) ||
      in(a, v4(198, 18, 0, 0), 15)) {  // documentation, benchmarking
    return AddressClass::reserved;
  }
  return AddressClass::global;
}

std::uint32_t v4_at(const address_v6::bytes_type& b, std::size_t i) {
  return static_cast<std::uint32_t>(b[i]) << 24 | static_cast<std::uint32_t>(b[i + 1]) << 16 |
         static_cast<std::uint32_t>(b[i + 2]) << 8 | static_cast<std::uint32_t>(b[i + 3]);
}

bool zero(const address_v6::bytes_type& b, std::size_t from, std::size_t to) {
  return std::all_of(b.begin() + static_cast<long>(from), b.begin() + static_cast<long>(to),
                     [](unsigned char c) { return c == 0; });
}

AddressClass classify_v6(const address_v6& a) {
  const auto b = a.to_bytes();
  // IPv4 inside IPv6: ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible),
  // 64:ff9b::a.b.c.d (NAT64), 2002:AABB:CCDD:: (6to4). A connection to any
  // of them may reach the IPv4 address, so it is judged as that.
  if (zero(b, 0, 10) && b[10] == 0xff && b[11] == 0xff) return classify_v4(v4_at(b, 12));
  if (a.is_unspecified()) return AddressClass::unspecified;
  if (a.is_loopback()) return AddressClass::loopback;
  if (zero(b, 0, 12)) return classify_v4(v4_at(b, 12));
  if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && zero(b, 4, 12)) return classify_v4(v4_at(b, 12));
  if (b[0] == 0x20 && b[1] == 0x02) return classify_v4(v4_at(b, 2));
  // AWS's and GCP's IPv6 metadata services
  static const address_v6 aws = boost::asio::ip::make_address_v6("fd00:ec2::254");
  static const address_v6 gcp = boost::asio::ip::make_address_v6("fd20:ce::254");
  if (a == aws || a == gcp) return AddressClass::metadata;
  // Local NAT64 (64:ff9b:1::/48) and Teredo (2001::/32) carry an IPv4
  // address in forms not worth decoding: refused whole.
  if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4] == 0x00 && b[5] == 0x01)
    return AddressClass::reserved;
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x00 && b[3] == 0x00) return AddressClass::reserved;
  if (a.is_multicast()) return AddressClass::multicast;
  if (a.is_link_local()) return AddressClass::link_local;                              // fe80::/10
  if ((b[0] & 0xfe) == 0xfc || a.is_site_local()) return AddressClass::private_range;  // fc00::/7, fec0::/10
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) return AddressClass::reserved;  // documentation
  return AddressClass::global;
}

}  // namespace

std::string_view class_name(AddressClass c) {
  switch (c) {
    case AddressClass::global: return "global";
    case AddressClass::private_range: return "private";
    case AddressClass::loopback: return "loopback";
    case AddressClass::link_local: return "link-local";
    case AddressClass::multicast: return "multicast";
    case AddressClass::metadata: return "cloud metadata";
    case AddressClass::unspecified: return "unspecified";
    case AddressClass::reserved: return "reserved";
  }
  return "unknown";
}

AddressClass classify(const address& a) {
  return a.is_v4() ? classify_v4(a.to_v4().to_uint()) : classify_v6(a.to_v6());
}

namespace {

// An IPv4 address mapped into IPv6 as itself, so both spellings compare equal.
address plain(const address& x) {
  if (x.is_v6() && x.to_v6().is_v4_mapped())
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, x.to_v6());
  return x;
}

bool is_host_address(const address& a, const std::vector<address>& host_addresses) {
  const address target = plain(a);
  return std::any_of(host_addresses.begin(), host_addresses.end(),
                     [&](const address& h) { return plain(h) == target; });
}

}  // namespace

bool Prefix::contains(const address& candidate) const {
  const address a = plain(candidate);
  if (a.is_v4() != network.is_v4()) return false;
  if (a.is_v4()) {
    const std::uint32_t mask = length == 0 ? 0 : ~std::uint32_t{0} << (32 - length);
    return (a.to_v4().to_uint() & mask) == (network.to_v4().to_uint() & mask);
  }
  const auto x = a.to_v6().to_bytes();
  const auto y = network.to_v6().to_bytes();
  for (int bit = 0; bit < length; ++bit) {
    const int byte = bit / 8, shift = 7 - bit % 8;
    if (((x[byte] >> shift) & 1) != ((y[byte] >> shift) & 1)) return false;
  }
  return true;
}

Prefix parse_prefix(const std::string& text) {
  const auto bad = [&] {
    return SandboxError(Reason::INVALID_CONFIG, "'" + text + "' is not an address range like 203.0.113.0/24");
  };
  const auto slash = text.find('/');
  if (slash == std::string::npos || slash + 1 == text.size() || text.size() - slash > 4) throw bad();
  boost::system::error_code ec;
  Prefix p;
  p.network = boost::asio::ip::make_address(text.substr(0, slash), ec);
  if (ec) throw bad();
  const std::string len = text.substr(slash + 1);
  if (len.find_first_not_of("0123456789") != std::string::npos) throw bad();
  p.length = std::stoi(len);
  if (p.length > (p.network.is_v4() ? 32 : 128)) throw bad();
  return p;
}

bool may_connect(const address& a, bool allow_private, const std::vector<address>& host_addresses) {
  EgressRules rules;
  rules.allow_private = allow_private;
  return may_connect(a, rules, host_addresses);
}

bool may_connect(const address& a, const EgressRules& rules, const std::vector<address>& host_addresses) {
  if (std::any_of(rules.never.begin(), rules.never.end(), [&](const Prefix& p) { return p.contains(a); })) return false;
  const AddressClass c = classify(a);
  const bool opened =
      (c == AddressClass::private_range || c == AddressClass::reserved) &&
      std::any_of(rules.also_public.begin(), rules.also_public.end(), [&](const Prefix& p) { return p.contains(a); });
  if (c != AddressClass::global && !opened && !(rules.allow_private && c == AddressClass::private_range)) return false;
  return !is_host_address(a, host_addresses);
}

std::vector<address> host_addresses() {
  std::vector<address> found;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return found;
  for (const ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr) continue;
    if (i->ifa_addr->sa_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
      found.push_back(boost::asio::ip::address_v4(ntohl(in->sin_addr.s_addr)));
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
      boost::asio::ip::address_v6::bytes_type bytes;
      std::memcpy(bytes.data(), &in6->sin6_addr, bytes.size());
      found.push_back(boost::asio::ip::address_v6(bytes));
    }
  }
  ::freeifaddrs(list);
  return found;
}

}  // namespace mayura::netfilter
