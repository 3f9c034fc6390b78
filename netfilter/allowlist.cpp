#include "mayura/netfilter/allowlist.hpp"

#include <algorithm>
#include <cctype>

#include "mayura/errors.hpp"
#include "mayura/validate.hpp"

namespace mayura::netfilter {
namespace {

bool is_label_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }

}  // namespace

std::string normalize_name(std::string_view name) {
  std::string n(name);
  if (!n.empty() && n.back() == '.') n.pop_back();
  if (n.empty() || n.size() > 253) return {};
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::size_t start = 0;
  std::string_view last;
  while (start <= n.size()) {
    std::size_t end = n.find('.', start);
    if (end == std::string::npos) end = n.size();
    const std::string_view label(n.data() + start, end - start);
    if (label.empty() || label.size() > 63 || !std::all_of(label.begin(), label.end(), is_label_char)) return {};
    last = label;
    start = end + 1;
  }
  // No top-level domain is numeric: a name like 10.0.0.1 (or 2130706433)
  // is an address, which no rule names.
  if (std::all_of(last.begin(), last.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) return {};
  return n;
}

Allowlist::Allowlist(const std::vector<std::string>& patterns) {
  for (const std::string& pattern : patterns) {
    check_domain_pattern(pattern);  // the limits layer's words for a bad one
    Rule rule;
    std::string_view p = pattern;
    if (const auto colon = p.rfind(':'); colon != std::string_view::npos) {
      rule.port = static_cast<std::uint16_t>(std::stoi(std::string(p.substr(colon + 1))));
      p = p.substr(0, colon);
    }
    if (p.substr(0, 2) == "*.") {
      rule.subdomains = true;
      p = p.substr(2);
    }
    rule.domain = normalize_name(p);
    if (rule.domain.empty()) throw SandboxError(Reason::INVALID_INPUT, "allowed domain '" + pattern + "' is not a domain name");
    rules_.push_back(std::move(rule));
  }
}

bool Allowlist::matches(const Rule& rule, std::string_view name) const {
  if (!rule.subdomains) return name == rule.domain;
  // a subdomain: something, a dot, then the domain
  return name.size() > rule.domain.size() + 1 && name.substr(name.size() - rule.domain.size()) == rule.domain &&
         name[name.size() - rule.domain.size() - 1] == '.';
}

bool Allowlist::allows_name(std::string_view name) const {
  const std::string n = normalize_name(name);
  if (n.empty()) return false;
  return std::any_of(rules_.begin(), rules_.end(), [&](const Rule& r) { return matches(r, n); });
}

bool Allowlist::allows(std::string_view name, std::uint16_t port) const {
  const std::string n = normalize_name(name);
  if (n.empty()) return false;
  return std::any_of(rules_.begin(), rules_.end(),
                     [&](const Rule& r) { return (!r.port || *r.port == port) && matches(r, n); });
}

}  // namespace mayura::netfilter
