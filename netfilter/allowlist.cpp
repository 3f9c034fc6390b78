#include "mayura/netfilter/allowlist.hpp"

#include <algorithm>

namespace mayura::netfilter {

Allowlist::Allowlist(const std::vector<std::string>& patterns) {
  for (const std::string& pattern : patterns) {
    rules_.push_back(parse_domain_pattern(pattern));  // the limits layer's words for a bad one
  }
}

bool Allowlist::matches(const DomainPattern& rule, std::string_view name) {
  if (!rule.subdomains) return name == rule.domain;
  // a subdomain: something, a dot, then the domain
  return name.size() > rule.domain.size() + 1 && name.substr(name.size() - rule.domain.size()) == rule.domain &&
         name[name.size() - rule.domain.size() - 1] == '.';
}

bool Allowlist::allows_name(std::string_view name) const {
  const std::string n = normalize_domain(name);
  if (n.empty()) return false;
  return std::any_of(rules_.begin(), rules_.end(), [&](const DomainPattern& r) { return matches(r, n); });
}

bool Allowlist::allows(std::string_view name, std::uint16_t port) const {
  const std::string n = normalize_domain(name);
  if (n.empty()) return false;
  // An entry without a port is the web's, 80 and 443: any other (mail,
  // SSH, a database) is named, so that allowing a name never opens SMTP.
  return std::any_of(rules_.begin(), rules_.end(), [&](const DomainPattern& r) {
    return (r.port ? *r.port == port : port == kHttpPort || port == kHttpsPort) && matches(r, n);
  });
}

}  // namespace mayura::netfilter
