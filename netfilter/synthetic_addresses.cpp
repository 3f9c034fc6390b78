#include "mayura/netfilter/synthetic_addresses.hpp"

namespace mayura::netfilter {

std::optional<std::uint32_t> SyntheticAddresses::address_of(const std::string& name) {
  std::lock_guard lock(mutex_);
  if (const auto it = by_name_.find(name); it != by_name_.end()) return it->second;
  if (next_ > kLast || by_name_.size() >= kMaxNames) return std::nullopt;
  const std::uint32_t address = next_++;
  by_name_.emplace(name, address);
  by_address_.emplace(address, name);
  return address;
}

std::optional<std::string> SyntheticAddresses::name_of(std::uint32_t address) const {
  std::lock_guard lock(mutex_);
  const auto it = by_address_.find(address);
  if (it == by_address_.end()) return std::nullopt;
  return it->second;
}

}  // namespace mayura::netfilter
