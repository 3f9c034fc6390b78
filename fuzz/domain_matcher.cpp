// Allowlist patterns and the matcher the DNS server and the proxy ask,
// against a plain reference: a name is allowed by `example.com` when it is
// that name, by `*.example.com` when it ends in `.example.com` with
// something before, compared after lower-casing and dropping one trailing
// dot; the port, when the pattern has one, must be it, and without one it
// must be the web's (80 or 443).
// Input: PATTERN '\n' NAME ['\n' PORT-BYTE PORT-BYTE].

#include <cctype>
#include <optional>

#include "fuzz.hpp"
#include "mayura/errors.hpp"
#include "mayura/netfilter/allowlist.hpp"
#include "mayura/validate.hpp"

namespace {

std::string reference_normal(std::string_view name) {
  std::string n(name);
  for (auto& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!n.empty() && n.back() == '.') n.pop_back();
  return n;
}

bool reference_allows(const mayura::DomainPattern& p, std::string_view name, std::optional<std::uint16_t> port) {
  const std::string n = reference_normal(name);
  if (port && (p.port ? *p.port != *port : *port != 80 && *port != 443)) return false;
  if (!p.subdomains) return n == p.domain;
  const std::string suffix = "." + p.domain;
  return n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input = mayura::fuzz::bytes(data, size);
  const auto nl = input.find('\n');
  const std::string_view pattern_text = input.substr(0, nl);
  std::string_view name = nl == std::string_view::npos ? std::string_view() : input.substr(nl + 1);
  std::uint16_t port = 443;
  if (const auto nl2 = name.find('\n'); nl2 != std::string_view::npos) {
    const std::string_view p = name.substr(nl2 + 1);
    if (p.size() >= 2)
      port = static_cast<std::uint16_t>(static_cast<unsigned char>(p[0]) << 8 | static_cast<unsigned char>(p[1]));
    name = name.substr(0, nl2);
  }

  mayura::DomainPattern pattern;
  try {
    pattern = mayura::parse_domain_pattern(pattern_text);
  } catch (const mayura::SandboxError& e) {
    FUZZ_CHECK(e.reason() == mayura::Reason::INVALID_INPUT);
    return 0;
  }
  // A parsed pattern is normal, and written out again it parses the same.
  FUZZ_CHECK(!pattern.domain.empty() && mayura::normalize_domain(pattern.domain) == pattern.domain);
  std::string written = (pattern.subdomains ? "*." : "") + pattern.domain;
  if (pattern.port) written += ":" + std::to_string(*pattern.port);
  const auto again = mayura::parse_domain_pattern(written);
  FUZZ_CHECK(again.domain == pattern.domain && again.subdomains == pattern.subdomains && again.port == pattern.port);

  std::optional<mayura::netfilter::Allowlist> allowlist;
  try {
    allowlist.emplace(std::vector<std::string>{std::string(pattern_text)});
  } catch (const mayura::SandboxError& e) {
    // Only a pattern too wide for an allowlist (a whole top-level domain).
    FUZZ_CHECK(e.reason() == mayura::Reason::INVALID_INPUT && pattern.subdomains);
    return 0;
  }
  // Accepted: a pattern an allowlist takes (the name may still be refused).
  mayura::fuzz::accept();
  // The engine refuses names that are no DNS name (and addresses) outright;
  // for the others it must agree with the reference.
  const bool a_name = !mayura::normalize_domain(name).empty();
  FUZZ_CHECK(allowlist->allows_name(name) == (a_name && reference_allows(pattern, name, std::nullopt)));
  FUZZ_CHECK(allowlist->allows(name, port) == (a_name && reference_allows(pattern, name, port)));
  if (a_name) FUZZ_CHECK(mayura::normalize_domain(name) == reference_normal(name));
  return 0;
}
