#include "mayura/netfilter/dns_message.hpp"

namespace mayura::netfilter::dns {
namespace {

constexpr std::size_t kHeader = 12;

std::uint16_t u16(std::string_view p, std::size_t at) {
  return static_cast<std::uint16_t>(static_cast<unsigned char>(p[at]) << 8 | static_cast<unsigned char>(p[at + 1]));
}

void put16(std::string& out, std::uint16_t v) {
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v & 0xff));
}

void put32(std::string& out, std::uint32_t v) {
  put16(out, static_cast<std::uint16_t>(v >> 16));
  put16(out, static_cast<std::uint16_t>(v & 0xffff));
}

// Header flags: QR (a response), the query's opcode 0, AA (the allowlist
// is the authority here), RD copied, RA clear (nothing recursive happens).
void header(std::string& out, std::uint16_t id, bool rd, Rcode rcode, std::uint16_t qd, std::uint16_t an) {
  put16(out, id);
  const std::uint16_t flags =
      static_cast<std::uint16_t>(0x8000 | 0x0400 | (rd ? 0x0100 : 0) | static_cast<std::uint8_t>(rcode));
  put16(out, flags);
  put16(out, qd);
  put16(out, an);
  put16(out, 0);  // authority
  put16(out, 0);  // additional
}

}  // namespace

std::optional<Query> parse_query(std::string_view p) {
  if (p.size() < kHeader || p.size() > 4096) return std::nullopt;
  Query q;
  q.id = u16(p, 0);
  const std::uint16_t flags = u16(p, 2);
  if (flags & 0x8000) return std::nullopt;              // a response, not a query
  if (((flags >> 11) & 0xf) != 0) return std::nullopt;  // opcode: only standard queries
  q.recursion_desired = flags & 0x0100;
  if (u16(p, 4) != 1 || u16(p, 6) != 0 || u16(p, 8) != 0) return std::nullopt;  // one question, no answers
  std::size_t at = kHeader;
  std::size_t name_bytes = 0;
  for (;;) {
    if (at >= p.size()) return std::nullopt;
    const auto len = static_cast<unsigned char>(p[at]);
    ++at;
    if (len == 0) break;
    if (len > 63) return std::nullopt;  // a compression pointer or a reserved label type
    if (at + len > p.size()) return std::nullopt;
    // A dot inside a label cannot be told from a label's end once the name
    // is text: refused, so the name checked is the name asked.
    if (p.substr(at, len).find('.') != std::string_view::npos) return std::nullopt;
    name_bytes += len + 1;
    if (name_bytes > 254) return std::nullopt;
    if (!q.name.empty()) q.name.push_back('.');
    q.name.append(p.substr(at, len));
    at += len;
  }
  if (at + 4 > p.size()) return std::nullopt;
  q.type = u16(p, at);
  q.klass = u16(p, at + 2);
  q.question_end = at + 4;
  return q;
}

std::string answer(std::string_view p, const Query& q, std::optional<std::uint32_t> address, std::uint32_t ttl) {
  std::string out;
  out.reserve(q.question_end + 16);
  header(out, q.id, q.recursion_desired, Rcode::no_error, 1, address ? 1 : 0);
  out.append(p.substr(kHeader, q.question_end - kHeader));
  if (address) {
    put16(out, 0xc000 | kHeader);  // the name: a pointer to the question's
    put16(out, kTypeA);
    put16(out, kClassIN);
    put32(out, ttl);
    put16(out, 4);
    put32(out, *address);
  }
  return out;
}

std::string error(std::string_view p, const std::optional<Query>& q, Rcode rcode) {
  std::string out;
  if (q) {
    header(out, q->id, q->recursion_desired, rcode, 1, 0);
    out.append(p.substr(kHeader, q->question_end - kHeader));
  } else {
    header(out, p.size() >= 2 ? u16(p, 0) : 0, false, rcode, 0, 0);
  }
  return out;
}

}  // namespace mayura::netfilter::dns
