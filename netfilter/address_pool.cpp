#include "address_pool.hpp"

#include <arpa/inet.h>

#include <array>

#include "mayura/errors.hpp"

namespace mayura::netfilter {
namespace {

// Narrowest pool we accept: a /8 already gives 8 million sandboxes, and a
// wider one would masquerade a good part of the internet's own addresses.
constexpr int kWidestPrefix = 8;
constexpr int kNarrowestPrefix = 31;  // one pair

struct Range {
  std::uint32_t base;
  int prefix;
  const char* what;
};

// Ranges whose addresses cannot be a point-to-point pair, or that the
// table's own rules single out (link-local is where metadata services live).
constexpr std::array kUnusable{
    Range{0x00000000, 8, "\"this network\" (0.0.0.0/8)"}, Range{0x7f000000, 8, "loopback (127.0.0.0/8)"},
    Range{0xa9fe0000, 16, "link-local (169.254.0.0/16)"}, Range{0xe0000000, 4, "multicast (224.0.0.0/4)"},
    Range{0xf0000000, 4, "reserved (240.0.0.0/4)"},
};

std::uint32_t mask_of(int prefix) { return prefix == 0 ? 0 : ~std::uint32_t{0} << (32 - prefix); }

bool overlaps(std::uint32_t a, int a_prefix, std::uint32_t b, int b_prefix) {
  const int shorter = a_prefix < b_prefix ? a_prefix : b_prefix;
  return ((a ^ b) & mask_of(shorter)) == 0;
}

[[noreturn]] void invalid(const std::string& cidr, const std::string& why) {
  throw SandboxError(Reason::INVALID_CONFIG, "network pool \"" + cidr + "\": " + why);
}

}  // namespace

AddressPool::AddressPool(const std::string& cidr) {
  const auto slash = cidr.find('/');
  if (slash == std::string::npos) invalid(cidr, "expected an IPv4 network such as 10.234.0.0/16");
  const std::string address = cidr.substr(0, slash);
  const std::string length = cidr.substr(slash + 1);
  in_addr parsed{};
  if (::inet_pton(AF_INET, address.c_str(), &parsed) != 1) invalid(cidr, "\"" + address + "\" is not an IPv4 address");
  if (length.empty() || length.size() > 2 || length.find_first_not_of("0123456789") != std::string::npos) {
    invalid(cidr, "\"" + length + "\" is not a prefix length");
  }
  prefix_ = std::stoi(length);
  if (prefix_ < kWidestPrefix || prefix_ > kNarrowestPrefix) {
    invalid(cidr, "the prefix length must be between " + std::to_string(kWidestPrefix) + " and " +
                      std::to_string(kNarrowestPrefix));
  }
  base_ = ntohl(parsed.s_addr);
  if ((base_ & ~mask_of(prefix_)) != 0) {
    invalid(cidr, "host bits are set (the network is " + dotted_quad(base_ & mask_of(prefix_)) + "/" + length + ")");
  }
  for (const Range& r : kUnusable) {
    if (overlaps(base_, prefix_, r.base, r.prefix)) invalid(cidr, std::string("overlaps ") + r.what);
  }
}

SlotAddresses AddressPool::slot(std::uint32_t index) const {
  if (index >= slots()) {
    throw SandboxError(Reason::LIMIT_REACHED, "network slot " + std::to_string(index) + " is beyond the pool " +
                                                  text() + " (" + std::to_string(slots()) + " slots)");
  }
  const std::uint32_t host = base_ + 2 * index;
  return {host, host + 1};
}

std::string AddressPool::text() const { return dotted_quad(base_) + "/" + std::to_string(prefix_); }

std::string dotted_quad(std::uint32_t address) {
  in_addr a{};
  a.s_addr = htonl(address);
  char buf[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

}  // namespace mayura::netfilter
