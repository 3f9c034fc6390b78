// The allowlist DNS server's query decoder, fed what a sandbox may send.
// Properties: never reads past the packet; a query that decodes re-encodes
// (its name split back into labels) to the same question bytes; the
// answers built from it echo that question and nothing else of the packet.

#include "fuzz.hpp"
#include "mayura/netfilter/dns_message.hpp"

namespace dns = mayura::netfilter::dns;

namespace {

std::string encode_query(const dns::Query& q) {
  std::string out;
  auto put16 = [&](std::uint16_t v) {
    out.push_back(static_cast<char>(v >> 8));
    out.push_back(static_cast<char>(v & 0xff));
  };
  put16(q.id);
  put16(q.recursion_desired ? 0x0100 : 0);
  put16(1);
  put16(0);
  put16(0);
  put16(0);
  std::string_view name = q.name;
  while (!name.empty()) {
    const auto dot = name.find('.');
    const std::string_view label = name.substr(0, dot);
    out.push_back(static_cast<char>(label.size()));
    out.append(label);
    name.remove_prefix(dot == std::string_view::npos ? name.size() : dot + 1);
  }
  out.push_back('\0');
  put16(q.type);
  put16(q.klass);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view packet = mayura::fuzz::bytes(data, size);
  const auto q = dns::parse_query(packet);
  if (!q) {
    const std::string e = dns::error(packet, q, dns::Rcode::format_error);
    FUZZ_CHECK(e.size() == 12);
    return 0;
  }
  mayura::fuzz::accept();
  FUZZ_CHECK(q->question_end > 12 && q->question_end <= packet.size());
  FUZZ_CHECK(q->name.size() <= 253);
  const std::string_view question = packet.substr(12, q->question_end - 12);

  const std::string again = encode_query(*q);
  const auto q2 = dns::parse_query(again);
  FUZZ_CHECK(q2.has_value());
  FUZZ_CHECK(q2->name == q->name && q2->type == q->type && q2->klass == q->klass && q2->id == q->id &&
             q2->recursion_desired == q->recursion_desired);
  FUZZ_CHECK(again.substr(12) == question);

  const std::string a = dns::answer(packet, *q, 0x0a000001, 60);
  FUZZ_CHECK(a.size() == q->question_end + 16);
  FUZZ_CHECK(std::string_view(a).substr(12, question.size()) == question);
  const std::string none = dns::answer(packet, *q, std::nullopt, 60);
  FUZZ_CHECK(none.size() == q->question_end);
  const std::string e = dns::error(packet, q, dns::Rcode::refused);
  FUZZ_CHECK(e.size() == q->question_end && std::string_view(e).substr(12) == question);
  return 0;
}
