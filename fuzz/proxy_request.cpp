// The allowlist proxy's request-head parser, fed what a sandbox may send.
// Properties: a head is refused with a 4xx/5xx and a reason, or gives a
// request whose host is normalised; the head sent upstream is well formed,
// line by line (no bare CR, LF or NUL that a lenient server could read as
// another line), and carries exactly one Host header, the checked one.

#include <algorithm>
#include <cctype>

#include "fuzz.hpp"
#include "mayura/netfilter/proxy_request.hpp"

namespace {

bool is_tchar(unsigned char c) {
  return std::isalnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

void check_upstream_head(std::string_view head) {
  constexpr std::string_view end = "Connection: close\r\n\r\n";
  FUZZ_CHECK(head.size() >= end.size() && head.substr(head.size() - end.size()) == end);
  head.remove_suffix(2);  // the blank line
  std::size_t hosts = 0;
  bool first = true;
  while (!head.empty()) {
    const auto crlf = head.find("\r\n");
    FUZZ_CHECK(crlf != std::string_view::npos);
    const std::string_view line = head.substr(0, crlf);
    head.remove_prefix(crlf + 2);
    for (unsigned char c : line) FUZZ_CHECK(c != '\r' && c != '\n' && c != '\0');
    if (first) {
      first = false;
      const auto sp = line.find(' ');
      FUZZ_CHECK(sp != std::string_view::npos && sp > 0);
      for (unsigned char c : line.substr(0, sp)) FUZZ_CHECK(is_tchar(c));
      FUZZ_CHECK(line.substr(sp + 1, 1) == "/");
      continue;
    }
    const auto colon = line.find(':');
    FUZZ_CHECK(colon != std::string_view::npos && colon > 0);
    for (unsigned char c : line.substr(0, colon)) FUZZ_CHECK(is_tchar(c));
    const std::string name = lower(line.substr(0, colon));
    if (name == "host") ++hosts;
    FUZZ_CHECK(name != "proxy-authorization" && name != "proxy-connection" && name != "upgrade");
  }
  FUZZ_CHECK(hosts == 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = mayura::fuzz::bytes(data, size);
  const auto head_end = mayura::netfilter::proxy_head_end(input);
  if (head_end) FUZZ_CHECK(*head_end <= input.size());
  const auto parse = mayura::netfilter::parse_proxy_request(input.substr(0, head_end.value_or(input.size())));
  if (!parse.request) {
    FUZZ_CHECK(parse.status >= 400 && parse.status <= 599 && !parse.why.empty());
    return 0;
  }
  mayura::fuzz::accept();
  const auto& r = *parse.request;
  FUZZ_CHECK(!r.host.empty() && r.host.size() <= 255);
  FUZZ_CHECK(r.host == lower(r.host) && r.host.back() != '.');
  for (unsigned char c : r.host) FUZZ_CHECK(c > ' ' && c < 0x7f && c != '/' && c != '@');
  FUZZ_CHECK(r.port != 0);
  if (r.tunnel) {
    FUZZ_CHECK(r.upstream_head.empty());
  } else {
    check_upstream_head(r.upstream_head);
  }
  return 0;
}
