#pragma once
// The checks the limits layer runs on every argument. Public so that a
// provider or a tool can refuse bad input with the same words.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mayura/types.hpp"

namespace mayura {

constexpr std::size_t kMaxPathBytes = 4096;
constexpr std::size_t kMaxCommandBytes = 128 * 1024;  // argv and env of one exec together
constexpr std::size_t kMaxEnvEntries = 1024;
constexpr std::size_t kMaxLabelBytes = 256;
constexpr std::size_t kMaxSeccompProfileBytes = 1 << 20;
constexpr std::size_t kMaxAllowedDomains = 1024;  // entries of one allowlist network

// Each throws SandboxError(INVALID_INPUT) naming what is wrong.
void check_path(std::string_view path, std::string_view what = "path");
void check_env(const std::map<std::string, std::string>& env);
void check_argv(const std::vector<std::string>& argv);
void check_port(int port);
void check_domain_pattern(std::string_view pattern);

// An allowlist entry: `example.com`, `*.example.com` (subdomains at any
// depth, not the domain), either with `:PORT`.
struct DomainPattern {
  std::string domain;  // normalized, as normalize_domain gives it
  bool subdomains = false;
  std::optional<std::uint16_t> port;
};
// Throws SandboxError(INVALID_INPUT) as check_domain_pattern does.
DomainPattern parse_domain_pattern(std::string_view pattern);

// A host name as allowlists compare it: lower case, one trailing dot
// dropped. Empty if it is no DNS name, or is an address (a numeric
// top-level domain).
std::string normalize_domain(std::string_view name);
void check_labels(const std::map<std::string, std::string>& labels);

}  // namespace mayura
