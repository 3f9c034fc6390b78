#pragma once
// The little of DNS the engine's allowlist server speaks: one question per
// query, answered from the allowlist alone (an A record with a synthetic
// address, or an error at once), never by asking anyone upstream.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mayura::netfilter::dns {

constexpr std::uint16_t kTypeA = 1;
constexpr std::uint16_t kTypeAAAA = 28;
constexpr std::uint16_t kClassIN = 1;

enum class Rcode : std::uint8_t {
  no_error = 0,
  format_error = 1,
  server_failure = 2,
  name_error = 3,
  not_implemented = 4,
  refused = 5
};

struct Query {
  std::uint16_t id = 0;
  bool recursion_desired = false;
  std::string name;  // as asked: labels joined by dots, no trailing dot
  std::uint16_t type = 0;
  std::uint16_t klass = 0;
  std::size_t question_end = 0;  // offset just past the question
};

// The query in `packet`; none if it is not one this server answers (not a
// standard query, not exactly one question, a compressed or malformed name,
// truncated). Never reads past the packet.
std::optional<Query> parse_query(std::string_view packet);

// The answer to `query` held in `packet`: the question echoed, then one A
// record with `address` (host byte order) and `ttl`, or no record at all.
std::string answer(std::string_view packet, const Query& query, std::optional<std::uint32_t> address,
                   std::uint32_t ttl);

// An error answer (NXDOMAIN for a refused name, REFUSED, FORMERR, ...). With
// a query, the question is echoed; without one (unparsable), only the header
// with `id`.
std::string error(std::string_view packet, const std::optional<Query>& query, Rcode rcode);

}  // namespace mayura::netfilter::dns
