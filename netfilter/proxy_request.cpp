#include "mayura/netfilter/proxy_request.hpp"

#include <boost/asio/ip/address.hpp>
#include <algorithm>
#include <cctype>
#include <vector>

namespace mayura::netfilter {
namespace {

ProxyParse refuse(int status, std::string why) { return {std::nullopt, status, std::move(why)}; }

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// The head's lines, without their line ends.
std::vector<std::string_view> lines_of(std::string_view head) {
  std::vector<std::string_view> lines;
  while (!head.empty()) {
    const auto nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (nl == std::string_view::npos) break;
    head.remove_prefix(nl + 1);
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

// Whether `host` is an address as inet_aton reads one: up to four parts,
// each decimal, octal (0...) or hex (0x...).
bool inet_aton_form(std::string_view host) {
  int parts = 0;
  while (true) {
    const auto dot = host.find('.');
    std::string_view part = host.substr(0, dot);
    if (part.empty() || ++parts > 4) return false;
    if (part.size() > 2 && part[0] == '0' && (part[1] == 'x' || part[1] == 'X')) {
      if (part.substr(2).find_first_not_of("0123456789abcdefABCDEF") != std::string_view::npos) return false;
    } else if (part.find_first_not_of("0123456789") != std::string_view::npos) {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    host.remove_prefix(dot + 1);
  }
}

// "host", "host:port", "[v6]" or "[v6]:port" into a request's host and port.
bool split_authority(std::string_view authority, std::uint16_t default_port, ProxyRequest& r) {
  std::string_view host = authority;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return false;
    host = authority.substr(1, close - 1);
    const std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return false;
      port = rest.substr(1);
    }
  } else if (const auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty() || host.size() > 255) return false;
  if (authority.front() != '[' && host.find(':') != std::string_view::npos) return false;
  for (unsigned char c : host) {
    if (c <= ' ' || c >= 0x7f || c == '/' || c == '@' || c == '\\') return false;
  }
  r.port = default_port;
  if (!port.empty() || (authority.front() != '[' && authority.find(':') != std::string_view::npos)) {
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos) return false;
    const unsigned long p = std::stoul(std::string(port));
    if (p == 0 || p > 65535) return false;
    r.port = static_cast<std::uint16_t>(p);
  }
  r.host = lower(host);
  if (!r.host.empty() && r.host.back() == '.') r.host.pop_back();
  // One trailing dot is a name's root; more (or a host of dots) is no host.
  if (r.host.empty() || r.host.back() == '.') return false;
  boost::system::error_code ec;
  boost::asio::ip::make_address(r.host, ec);
  // Brackets hold an IPv6 address and nothing else.
  if (authority.front() == '[' && (ec || !boost::asio::ip::make_address(r.host).is_v6())) return false;
  // inet_aton's forms too (a bare number, octal), which some resolvers take
  // as an address rather than a name.
  r.ip_literal = !ec || inet_aton_form(r.host);
  return !r.host.empty();
}

// RFC 9110's token: what a method and a header name are made of. Anything
// else (a space before the colon, a bracket) is a name that servers read in
// different ways, which is how requests are smuggled past a check.
bool is_token(std::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
  });
}

// A control byte (a bare CR, a NUL) in a line: some servers end a line at a
// bare CR, and would read a header the proxy never saw. A tab is text.
bool has_control(std::string_view line) {
  return std::any_of(line.begin(), line.end(), [](unsigned char c) { return (c < ' ' && c != '\t') || c == 0x7f; });
}

bool hop_by_hop(std::string_view name) {
  const std::string n = lower(name);
  return n == "connection" || n == "proxy-connection" || n == "keep-alive" || n == "proxy-authorization" ||
         n == "proxy-authenticate" || n == "te" || n == "trailer" || n == "upgrade";
}

}  // namespace

std::optional<std::size_t> proxy_head_end(std::string_view data) {
  const auto crlf = data.find("\r\n\r\n");
  const auto lf = data.find("\n\n");
  if (crlf == std::string_view::npos && lf == std::string_view::npos) return std::nullopt;
  if (lf == std::string_view::npos || (crlf != std::string_view::npos && crlf + 2 < lf)) return crlf + 4;
  return lf + 2;
}

ProxyParse parse_proxy_request(std::string_view head) {
  if (head.size() > kMaxProxyHead) return refuse(431, "the request head is too large");
  const auto lines = lines_of(head);
  if (lines.empty()) return refuse(400, "an empty request");
  const std::string_view request_line = lines.front();
  const auto sp1 = request_line.find(' ');
  const auto sp2 = request_line.rfind(' ');
  if (sp1 == std::string_view::npos || sp2 == sp1) return refuse(400, "a malformed request line");
  const std::string_view method = request_line.substr(0, sp1);
  const std::string_view target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = request_line.substr(sp2 + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return refuse(505, "only HTTP/1.0 and HTTP/1.1 are spoken");
  if (!is_token(method)) return refuse(400, "a malformed request method");
  if (target.empty() || target.find(' ') != std::string_view::npos || has_control(target)) {
    return refuse(400, "a malformed request target");
  }
  for (std::size_t i = 1; i < lines.size(); ++i) {
    // Folded lines are refused too (their name is no token): they hide headers.
    const auto colon = lines[i].find(':');
    if (colon == std::string_view::npos || !is_token(lines[i].substr(0, colon)) || has_control(lines[i])) {
      return refuse(400, "a malformed header line");
    }
  }

  ProxyRequest r;
  if (method == "CONNECT") {
    r.tunnel = true;
    if (!split_authority(target, 0, r) || r.port == 0) return refuse(400, "CONNECT needs host:port");
    return {r, 0, ""};
  }
  constexpr std::string_view scheme = "http://";
  if (lower(target.substr(0, scheme.size())) != scheme) {
    return refuse(400, "this proxy takes CONNECT or an absolute http:// URI (use CONNECT for https)");
  }
  std::string_view rest = target.substr(scheme.size());
  const auto path_at = rest.find_first_of("/?#");
  const std::string_view authority = rest.substr(0, path_at);
  std::string_view path = path_at == std::string_view::npos ? std::string_view("/") : rest.substr(path_at);
  path = path.substr(0, path.find('#'));
  const std::string_view slash = path.empty() || path.front() != '/' ? "/" : "";
  if (authority.find('@') != std::string_view::npos) return refuse(400, "credentials in the URI are not taken");
  if (!split_authority(authority, 80, r)) return refuse(400, "a malformed host in the URI");

  std::string out;
  out.append(method).append(" ").append(slash).append(path).append(" ").append(version).append("\r\n");
  // The Host header is the URI's: the one that was checked, so a client
  // cannot ask an allowed server's front end for a site behind it.
  out.append("Host: ").append(authority).append("\r\n");
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::string_view name = lines[i].substr(0, lines[i].find(':'));
    if (hop_by_hop(name) || lower(name) == "host") continue;
    out.append(lines[i]).append("\r\n");
  }
  out.append("Connection: close\r\n\r\n");
  r.upstream_head = std::move(out);
  return {r, 0, ""};
}

}  // namespace mayura::netfilter
