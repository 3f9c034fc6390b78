#pragma once
// The addresses an allowlist sandbox's DNS answers with: one per allowed
// name, from 198.18.0.0/15 (a range set aside for benchmarks, never routed on
// the internet). They exist only inside the sandbox's namespace, where
// nftables sends every TCP connection to one of them to the engine's proxy;
// the proxy maps the address back to the name. Thread-safe.

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace mayura::netfilter {

class SyntheticAddresses {
 public:
  static constexpr std::uint32_t kBase = 0xC6120000;  // 198.18.0.0
  static constexpr int kPrefix = 15;
  // .0.0 to .0.255 stay free for the engine's own services.
  static constexpr std::uint32_t kFirst = kBase + 256;
  static constexpr std::uint32_t kLast = kBase + (1u << (32 - kPrefix)) - 2;
  // Names one sandbox may have addresses for: far more than any build asks
  // for, few enough that a wildcard cannot make the engine hold much.
  static constexpr std::size_t kMaxNames = 16384;

  // The name's address (the same one each time); none once kMaxNames
  // names have one. `name` is normalized (lower case, no trailing dot).
  std::optional<std::uint32_t> address_of(const std::string& name);
  // The name behind an address handed out; none for any other address.
  std::optional<std::string> name_of(std::uint32_t address) const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::uint32_t> by_name_;
  std::map<std::uint32_t, std::string> by_address_;
  std::uint32_t next_ = kFirst;
};

}  // namespace mayura::netfilter
