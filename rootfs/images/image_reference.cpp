// The reference grammar, close to the distribution project's: lower-case
// path components joined by one separator ('.', '_', '__' or dashes), an
// optional registry host first, an optional tag last.

#include "mayura/rootfs/image_reference.hpp"

#include <vector>

namespace mayura::rootfs {
namespace {

constexpr std::size_t kMaxReference = 255;
constexpr std::size_t kMaxTag = 128;

bool lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool alnum(char c) { return lower_alnum(c) || (c >= 'A' && c <= 'Z'); }

// [a-z0-9]+ ( ( '.' | '_' | '__' | '-'+ ) [a-z0-9]+ )*
bool path_component(std::string_view c) {
  if (c.empty() || !lower_alnum(c.front()) || !lower_alnum(c.back())) return false;
  for (std::size_t i = 0; i < c.size();) {
    if (lower_alnum(c[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < c.size() && !lower_alnum(c[j])) ++j;
    const std::string_view sep = c.substr(i, j - i);
    const bool dashes = sep.find_first_not_of('-') == std::string_view::npos;
    if (!(sep == "." || sep == "_" || sep == "__" || dashes)) return false;
    i = j;
  }
  return true;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (;;) {
    const auto at = s.find(sep, start);
    parts.push_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

// A registry host: labels of letters, digits and dashes, an optional port.
bool host_component(std::string_view c) {
  const auto colon = c.find(':');
  const std::string_view host = c.substr(0, colon);
  if (host.empty()) return false;
  // labels: letters and digits, dashes inside
  for (std::string_view label : split(host, '.')) {
    if (label.empty() || !alnum(label.front()) || !alnum(label.back())) return false;
    for (char ch : label) {
      if (!alnum(ch) && ch != '-') return false;
    }
  }
  if (colon != std::string_view::npos) {
    const std::string_view port = c.substr(colon + 1);
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos) return false;
  }
  return true;
}

bool looks_like_host(std::string_view c) {
  return c.find('.') != std::string_view::npos || c.find(':') != std::string_view::npos || c == "localhost";
}

bool valid_tag(std::string_view t) {
  if (t.empty() || t.size() > kMaxTag) return false;
  if (!(alnum(t.front()) || t.front() == '_')) return false;
  for (char c : t) {
    if (!(alnum(c) || c == '_' || c == '.' || c == '-')) return false;
  }
  return true;
}

std::optional<ImageReference> refuse(std::string* why, const char* reason) {
  if (why) *why = reason;
  return std::nullopt;
}

}  // namespace

std::optional<ImageReference> parse_image_reference(std::string_view text, std::string* why) {
  if (text.empty()) return refuse(why, "the name is empty");
  if (text.size() > kMaxReference) return refuse(why, "the name is longer than 255 characters");
  if (text.find('@') != std::string_view::npos) return refuse(why, "digest references are not names; give NAME[:TAG]");
  ImageReference ref;
  std::string_view name = text;
  // The tag is after the last ':' that follows the last '/' (a ':' before it
  // is a registry's port).
  const auto slash = text.rfind('/');
  const auto colon = text.rfind(':');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    name = text.substr(0, colon);
    const std::string_view tag = text.substr(colon + 1);
    if (!valid_tag(tag)) return refuse(why, "the tag must be letters, digits, '_', '.' or '-' (at most 128)");
    ref.tag = std::string(tag);
  }
  auto parts = split(name, '/');
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const bool host = i == 0 && parts.size() > 1 && looks_like_host(parts[0]);
    if (host ? !host_component(parts[i]) : !path_component(parts[i])) {
      return refuse(why,
                    "the name must be lower-case path components such as team/app, optionally after a registry host");
    }
  }
  // Docker Hub's implied prefixes name the same image as the short form.
  std::string normalized(name);
  for (const char* prefix : {"docker.io/library/", "index.docker.io/library/", "docker.io/", "index.docker.io/"}) {
    const std::string_view p(prefix);
    if (normalized.size() > p.size() && normalized.compare(0, p.size(), p) == 0) {
      normalized.erase(0, p.size());
      break;
    }
  }
  if (normalized.rfind("library/", 0) == 0 && normalized.find('/', 8) == std::string::npos) normalized.erase(0, 8);
  ref.name = std::move(normalized);
  return ref;
}

}  // namespace mayura::rootfs
