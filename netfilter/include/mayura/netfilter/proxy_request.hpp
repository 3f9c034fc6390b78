#pragma once
// The head of a request to the allowlist's HTTP proxy: CONNECT host:port (for
// TLS and anything else) or an absolute-URI request (http://host/path).
// Pure parsing, so every odd input is tested without a socket.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mayura::netfilter {

// A head longer than this is refused (431) instead of buffered.
constexpr std::size_t kMaxProxyHead = 16 * 1024;

struct ProxyRequest {
  bool tunnel = false;  // CONNECT; otherwise one plain HTTP request
  std::string host;     // lower case, without brackets or a trailing dot
  std::uint16_t port = 0;
  bool ip_literal = false;  // the host is an address, not a name
  // For a plain request: the head to send upstream, in origin form
  // ("GET /path HTTP/1.1"), hop-by-hop and proxy headers dropped and
  // "Connection: close" added, so the next request of the client comes back
  // through the proxy and its checks.
  std::string upstream_head;
};

struct ProxyParse {
  std::optional<ProxyRequest> request;
  int status = 0;   // when there is no request: the HTTP status to answer
  std::string why;  // and a line saying why
};

// The end of the head in `data` (just past the blank line), if it is there.
std::optional<std::size_t> proxy_head_end(std::string_view data);
// Parses a whole head (as far as proxy_head_end).
ProxyParse parse_proxy_request(std::string_view head);

}  // namespace mayura::netfilter
