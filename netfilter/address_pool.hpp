#pragma once
// The IPv4 pool sandboxes with network `all` take their addresses from: one
// /31 point-to-point pair per slot (RFC 3021), the host's end first.

#include <cstdint>
#include <string>

namespace mayura::netfilter {

struct SlotAddresses {
  std::uint32_t host = 0;     // host byte order
  std::uint32_t sandbox = 0;  // host byte order
};

class AddressPool {
 public:
  // Parses "a.b.c.d/len"; throws SandboxError(INVALID_CONFIG) saying what is
  // wrong with it.
  explicit AddressPool(const std::string& cidr);

  std::uint64_t slots() const { return (std::uint64_t{1} << (32 - prefix_)) / 2; }
  // Throws SandboxError(LIMIT_REACHED) for a slot the pool has no pair for.
  SlotAddresses slot(std::uint32_t index) const;
  // "a.b.c.d/len", as nft reads it.
  std::string text() const;

 private:
  std::uint32_t base_ = 0;
  int prefix_ = 0;
};

std::string dotted_quad(std::uint32_t address);

}  // namespace mayura::netfilter
