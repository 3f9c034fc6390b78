#pragma once
// The domains an allowlist network may reach: `example.com` (that name),
// `*.example.com` (its subdomains at any depth, not the name itself), either
// on the web's ports (80 and 443), or with `:PORT` on that port only. Names
// compare case-insensitively, with a trailing dot ignored
// (mayura::normalize_domain).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mayura/validate.hpp"

namespace mayura::netfilter {

class Allowlist {
 public:
  // The ports an entry without one allows.
  static constexpr std::uint16_t kHttpPort = 80;
  static constexpr std::uint16_t kHttpsPort = 443;

  Allowlist() = default;
  // Throws SandboxError(INVALID_INPUT) for a pattern that is no domain, or
  // that would allow a whole top-level domain (`*`, `*.com`).
  explicit Allowlist(const std::vector<std::string>& patterns);

  // Whether some rule allows `name` on some port (what the DNS server asks).
  bool allows_name(std::string_view name) const;
  // Whether a rule allows `name` on `port` (what the proxy asks).
  bool allows(std::string_view name, std::uint16_t port) const;
  bool empty() const { return rules_.empty(); }

 private:
  static bool matches(const DomainPattern& rule, std::string_view name);
  std::vector<DomainPattern> rules_;
};

}  // namespace mayura::netfilter
