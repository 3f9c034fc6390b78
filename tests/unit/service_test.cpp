// The service's pure parts: the wire's JSON shapes (bytes, bodies, every
// request and answer, and what each refuses), the HTTP status of each
// failure reason, and mayurad's settings file and tokens file.
//
// The service's and tools' headers are included by their path: engine/ (on
// this target's include path) has a wire.hpp of its own.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "../../service/memory_budget.hpp"
#include "../../service/output_pace.hpp"
#include "../../service/per_client.hpp"
#include "../../service/status.hpp"
#include "../../service/wire.hpp"
#include "../../tools/daemon_config.hpp"
#include "../support/reason_of.hpp"

namespace mayura {
namespace {

using nlohmann::json;
using testing::reason_of;

constexpr std::array<Reason, 9> kReasons = {Reason::INVALID_INPUT, Reason::INVALID_CONFIG, Reason::PERMISSION_DENIED,
                                            Reason::GONE,          Reason::CANCELLED,      Reason::LIMIT_REACHED,
                                            Reason::NOT_FOUND,     Reason::UNSUPPORTED,    Reason::INTERNAL};

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out.push_back(static_cast<char>(v));
  return out;
}

// The call fails with `reason`, and its message holds every one of `words`.
template <class Fn>
void expect_refused(Fn&& fn, Reason reason, std::initializer_list<std::string> words) {
  std::string message;
  const Reason got = reason_of(std::forward<Fn>(fn), &message);
  EXPECT_EQ(got, reason) << "reason " << reason_name(got) << ", message: " << message;
  for (const auto& w : words) EXPECT_NE(message.find(w), std::string::npos) << "'" << w << "' not in: " << message;
}

// What crosses the wire is text: the value, dumped and parsed back as a body.
json over_the_wire(const json& value) { return service::parse_body(service::dump(value), "the body"); }

// ---------------------------------------------------------------------------
// valid_utf8

// The well-formed byte sequences of Unicode's Table 3-7, as a reference.
bool reference_utf8(const std::string& s) {
  std::size_t i = 0;
  const auto at = [&](std::size_t k) { return static_cast<unsigned>(static_cast<unsigned char>(s[k])); };
  const auto in = [](unsigned b, unsigned lo, unsigned hi) { return b >= lo && b <= hi; };
  while (i < s.size()) {
    const unsigned c = at(i);
    std::size_t n = 0;
    unsigned lo = 0x80, hi = 0xbf;  // the second byte's range
    if (c <= 0x7f) {
      ++i;
      continue;
    }
    if (in(c, 0xc2, 0xdf)) n = 1;
    else if (c == 0xe0) n = 2, lo = 0xa0;
    else if (in(c, 0xe1, 0xec) || in(c, 0xee, 0xef)) n = 2;
    else if (c == 0xed) n = 2, hi = 0x9f;
    else if (c == 0xf0) n = 3, lo = 0x90;
    else if (in(c, 0xf1, 0xf3)) n = 3;
    else if (c == 0xf4) n = 3, hi = 0x8f;
    else return false;
    if (i + n >= s.size()) return false;
    if (!in(at(i + 1), lo, hi)) return false;
    for (std::size_t k = 2; k <= n; ++k) {
      if (!in(at(i + k), 0x80, 0xbf)) return false;
    }
    i += n + 1;
  }
  return true;
}

std::string encode_utf8(std::uint32_t cp) {  // no checks: surrogates and more are encoded too
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
  return out;
}

TEST(ServiceUtf8, AcceptsWellFormedText) {
  using service::valid_utf8;
  EXPECT_TRUE(valid_utf8(""));
  EXPECT_TRUE(valid_utf8("plain ascii, with\ttabs\nand newlines"));
  EXPECT_TRUE(valid_utf8(std::string("a\0b", 3)));  // NUL is ASCII
  EXPECT_TRUE(valid_utf8(bytes({0x7f})));
  EXPECT_TRUE(valid_utf8(bytes({0xc2, 0x80})));              // U+0080, the smallest 2-byte form
  EXPECT_TRUE(valid_utf8(bytes({0xc3, 0xa9})));              // é
  EXPECT_TRUE(valid_utf8(bytes({0xdf, 0xbf})));              // U+07FF
  EXPECT_TRUE(valid_utf8(bytes({0xe0, 0xa0, 0x80})));        // U+0800
  EXPECT_TRUE(valid_utf8(bytes({0xe2, 0x82, 0xac})));        // €
  EXPECT_TRUE(valid_utf8(bytes({0xed, 0x9f, 0xbf})));        // U+D7FF, just below the surrogates
  EXPECT_TRUE(valid_utf8(bytes({0xee, 0x80, 0x80})));        // U+E000, just above
  EXPECT_TRUE(valid_utf8(bytes({0xef, 0xbf, 0xbf})));        // U+FFFF
  EXPECT_TRUE(valid_utf8(bytes({0xf0, 0x90, 0x80, 0x80})));  // U+10000
  EXPECT_TRUE(valid_utf8(bytes({0xf0, 0x9f, 0x98, 0x80})));  // 😀
  EXPECT_TRUE(valid_utf8(bytes({0xf4, 0x8f, 0xbf, 0xbf})));  // U+10FFFF, the last code point
  EXPECT_TRUE(valid_utf8("mixed: caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 end"));
}

TEST(ServiceUtf8, RefusesOverlongForms) {
  using service::valid_utf8;
  EXPECT_FALSE(valid_utf8(bytes({0xc0, 0x80})));              // NUL, overlong
  EXPECT_FALSE(valid_utf8(bytes({0xc0, 0xaf})));              // '/', overlong
  EXPECT_FALSE(valid_utf8(bytes({0xc1, 0xbf})));              // U+007F in two bytes
  EXPECT_FALSE(valid_utf8(bytes({0xe0, 0x80, 0x80})));        // NUL in three
  EXPECT_FALSE(valid_utf8(bytes({0xe0, 0x80, 0xaf})));        // '/' in three
  EXPECT_FALSE(valid_utf8(bytes({0xe0, 0x9f, 0xbf})));        // U+07FF in three
  EXPECT_FALSE(valid_utf8(bytes({0xf0, 0x80, 0x80, 0x80})));  // NUL in four
  EXPECT_FALSE(valid_utf8(bytes({0xf0, 0x8f, 0xbf, 0xbf})));  // U+FFFF in four
  EXPECT_FALSE(valid_utf8("ok" + bytes({0xc0, 0x80}) + "ok"));
}

TEST(ServiceUtf8, RefusesSurrogates) {
  for (std::uint32_t cp = 0xd800; cp <= 0xdfff; ++cp) {
    EXPECT_FALSE(service::valid_utf8(encode_utf8(cp))) << std::hex << cp;
  }
  // a surrogate pair, CESU-8 style, is no UTF-8 either
  EXPECT_FALSE(service::valid_utf8(bytes({0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80})));
}

TEST(ServiceUtf8, RefusesWhatLiesPastUnicode) {
  using service::valid_utf8;
  EXPECT_FALSE(valid_utf8(bytes({0xf4, 0x90, 0x80, 0x80})));  // U+110000
  EXPECT_FALSE(valid_utf8(bytes({0xf5, 0x80, 0x80, 0x80})));
  EXPECT_FALSE(valid_utf8(bytes({0xf7, 0xbf, 0xbf, 0xbf})));        // U+1FFFFF
  EXPECT_FALSE(valid_utf8(bytes({0xf8, 0x88, 0x80, 0x80, 0x80})));  // the old 5-byte form
  EXPECT_FALSE(valid_utf8(bytes({0xfc, 0x84, 0x80, 0x80, 0x80, 0x80})));
  EXPECT_FALSE(valid_utf8(bytes({0xfe})));
  EXPECT_FALSE(valid_utf8(bytes({0xff})));
}

TEST(ServiceUtf8, RefusesTruncatedAndBrokenSequences) {
  using service::valid_utf8;
  EXPECT_FALSE(valid_utf8(bytes({0xc3})));
  EXPECT_FALSE(valid_utf8("abc" + bytes({0xc3})));
  EXPECT_FALSE(valid_utf8(bytes({0xe2, 0x82})));
  EXPECT_FALSE(valid_utf8(bytes({0xe2})));
  EXPECT_FALSE(valid_utf8(bytes({0xf0, 0x9f, 0x98})));
  EXPECT_FALSE(valid_utf8(bytes({0xf0, 0x9f})));
  EXPECT_FALSE(valid_utf8(bytes({0xf0})));
  EXPECT_FALSE(valid_utf8(bytes({0x80})));  // a lone continuation byte
  EXPECT_FALSE(valid_utf8(bytes({0xbf})));
  EXPECT_FALSE(valid_utf8(bytes({0xc3, 0x41})));  // a continuation replaced by ASCII
  EXPECT_FALSE(valid_utf8(bytes({0xe2, 0x28, 0xa1})));
  EXPECT_FALSE(valid_utf8(bytes({0xf0, 0x9f, 0x98, 0x41})));
  EXPECT_FALSE(valid_utf8(bytes({0xc3, 0xa9, 0xa9})));  // one continuation too many
  EXPECT_FALSE(valid_utf8(bytes({0xe2, 0x82, 0xac}).substr(0, 2) + "x"));
}

TEST(ServiceUtf8, AgreesWithUnicodesTableOnEveryCodePoint) {
  for (std::uint32_t cp = 0; cp <= 0x10ffff; ++cp) {
    const bool surrogate = cp >= 0xd800 && cp <= 0xdfff;
    ASSERT_EQ(service::valid_utf8(encode_utf8(cp)), !surrogate) << std::hex << cp;
  }
  for (std::uint32_t cp = 0x110000; cp < 0x200000; cp += 0x1111) {
    ASSERT_FALSE(service::valid_utf8(encode_utf8(cp))) << std::hex << cp;
  }
}

TEST(ServiceUtf8, AgreesWithUnicodesTableOnEveryShortString) {
  // every string of one and two bytes
  for (int a = 0; a < 256; ++a) {
    const std::string one = bytes({a});
    ASSERT_EQ(service::valid_utf8(one), reference_utf8(one)) << a;
    for (int b = 0; b < 256; ++b) {
      const std::string two = bytes({a, b});
      ASSERT_EQ(service::valid_utf8(two), reference_utf8(two)) << a << " " << b;
    }
  }
  // three and four bytes from the values at the table's edges
  const std::vector<int> edges = {0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0,
                                  0xe1, 0xec, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xf7, 0xf8, 0xff};
  int valid = 0;
  for (int a : edges) {
    for (int b : edges) {
      for (int c : edges) {
        const std::string three = bytes({a, b, c});
        ASSERT_EQ(service::valid_utf8(three), reference_utf8(three)) << a << " " << b << " " << c;
        for (int d : edges) {
          const std::string four = bytes({a, b, c, d});
          const bool ok = reference_utf8(four);
          valid += ok ? 1 : 0;
          ASSERT_EQ(service::valid_utf8(four), ok) << a << " " << b << " " << c << " " << d;
        }
      }
    }
  }
  EXPECT_GT(valid, 0);  // the sample holds both kinds
}

// ---------------------------------------------------------------------------
// bytes_json / bytes_from

TEST(ServiceBytes, TextStaysAStringAndTheRestIsBase64) {
  EXPECT_EQ(service::bytes_json("hello"), json("hello"));
  EXPECT_EQ(service::bytes_json(""), json(""));
  EXPECT_EQ(service::bytes_json("caf\xc3\xa9"), json("caf\xc3\xa9"));
  const json latin1 = service::bytes_json("caf\xe9");
  ASSERT_TRUE(latin1.is_object());
  ASSERT_EQ(latin1.size(), 1u);
  ASSERT_TRUE(latin1.contains("base64"));
  EXPECT_EQ(latin1["base64"], json("Y2Fm6Q=="));
  EXPECT_TRUE(service::bytes_json(bytes({0xc0, 0x80})).is_object());        // overlong
  EXPECT_TRUE(service::bytes_json(bytes({0xed, 0xa0, 0x80})).is_object());  // a surrogate
  EXPECT_TRUE(service::bytes_json(bytes({0xf4, 0x90, 0x80, 0x80})).is_object());
  EXPECT_TRUE(service::bytes_json(bytes({0xe2, 0x82})).is_object());
}

// Output that JSON would escape to more than twice its size goes as base64:
// a stream of zeros (six bytes each as \u0000) does; lines of text, tabs
// and quotes do not.
TEST(ServiceBytes, MostlyControlBytesGoAsBase64) {
  EXPECT_TRUE(service::bytes_json(std::string(65536, '\0')).is_object());
  EXPECT_TRUE(service::bytes_json("a\x01\x02").is_object());
  EXPECT_TRUE(service::bytes_json("line one\nline two\n\n\n").is_string());
  EXPECT_TRUE(service::bytes_json("\t\"quoted\"\t\r\n").is_string());
  EXPECT_TRUE(service::bytes_json("text with one \x1b[0m escape").is_string());
}

TEST(ServiceBytes, EveryByteValueRoundTrips) {
  for (int b = 0; b < 256; ++b) {
    const std::string one = bytes({b});
    const json j = service::bytes_json(one);
    // (a lone control byte escapes as six: base64 is shorter)
    EXPECT_EQ(j.is_string(), b < 0x80 && (b >= 0x20 || b == '\n' || b == '\t' || b == '\r')) << b;
    EXPECT_EQ(service::bytes_from(j, "x"), one) << b;
    // and through the JSON text
    const json body = over_the_wire(json{{"x", j}});
    EXPECT_EQ(service::bytes_from(body["x"], "x"), one) << b;
  }
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  const json j = service::bytes_json(all);
  EXPECT_TRUE(j.is_object());
  EXPECT_EQ(service::bytes_from(over_the_wire(json{{"x", j}})["x"], "x"), all);
  // every byte but as the tail of valid text
  for (int b = 0; b < 256; ++b) {
    const std::string s = "caf\xc3\xa9 " + bytes({b}) + std::string("\0z", 2);
    EXPECT_EQ(service::bytes_from(over_the_wire(json{{"x", service::bytes_json(s)}})["x"], "x"), s) << b;
  }
}

TEST(ServiceBytes, BothFormsAreAccepted) {
  EXPECT_EQ(service::bytes_from(json("plain"), "k"), "plain");
  EXPECT_EQ(service::bytes_from(json{{"base64", "cGxhaW4="}}, "k"), "plain");
  EXPECT_EQ(service::bytes_from(json{{"base64", ""}}, "k"), "");
}

TEST(ServiceBytes, RefusesWhatIsNeitherForm) {
  for (const json& v : {json(1), json(true), json::array({"a"}), json::object(), json{{"base64", 1}},
                        json{{"base64", "YQ=="}, {"extra", 1}}, json{{"b64", "YQ=="}}, json{{"base64", "!!!!"}},
                        json{{"base64", "YQ="}}}) {
    expect_refused([&] { service::bytes_from(v, "theKey"); }, Reason::INVALID_INPUT, {"theKey"});
  }
}

// ---------------------------------------------------------------------------
// parse_body

std::string nested_objects(int levels) {
  std::string s;
  for (int i = 0; i < levels; ++i) s += "{\"a\":";
  s += "1";
  for (int i = 0; i < levels; ++i) s += "}";
  return s;
}

std::string nested_arrays_in_object(int levels) {  // the object is one of the levels
  std::string s = "{\"a\":";
  for (int i = 1; i < levels; ++i) s += "[";
  s += "1";
  for (int i = 1; i < levels; ++i) s += "]";
  return s + "}";
}

TEST(ServiceBody, ParsesAnObject) {
  const json j = service::parse_body(R"({"a": [1, {"b": "c"}], "d": null})", "the body");
  EXPECT_EQ(j["a"][1]["b"], "c");
  EXPECT_TRUE(service::parse_body("{}", "the body").empty());
  EXPECT_EQ(service::parse_body("  {\"x\":\"caf\xc3\xa9\"}\n", "the body")["x"], "caf\xc3\xa9");
}

TEST(ServiceBody, RefusesMalformedJson) {
  for (const std::string body : {"", " ", "{", "}", "{\"a\":}", "{\"a\":1,}", "{'a':1}", "{\"a\":1} x", "{\"a\":1}{}",
                                 "{\"a\":tru}", "{\"a\":\"\xff\"}", "{\"a\":\"\xc0\x80\"}", "nul"}) {
    expect_refused([&] { service::parse_body(body, "the create request"); }, Reason::INVALID_INPUT,
                   {"the create request"});
  }
}

TEST(ServiceBody, RefusesWhatIsNoObject) {
  for (const std::string body : {"[]", "[1,2]", "1", "-3.5", "\"text\"", "null", "true"}) {
    expect_refused([&] { service::parse_body(body, "the exec request"); }, Reason::INVALID_INPUT,
                   {"the exec request", "object"});
  }
}

TEST(ServiceBody, AllowsThirtyTwoLevelsAndNoMore) {
  EXPECT_NO_THROW(service::parse_body(nested_objects(32), "b"));
  EXPECT_NO_THROW(service::parse_body(nested_arrays_in_object(32), "b"));
  expect_refused([] { service::parse_body(nested_objects(33), "the body"); }, Reason::INVALID_INPUT,
                 {"the body", "32"});
  expect_refused([] { service::parse_body(nested_arrays_in_object(33), "the body"); }, Reason::INVALID_INPUT,
                 {"the body", "32"});
  // far deeper, and unclosed: refused, and without running out of stack
  expect_refused([] { service::parse_body(nested_objects(100'000), "b"); }, Reason::INVALID_INPUT, {"b"});
  expect_refused([] { service::parse_body("{\"a\":" + std::string(100'000, '['), "b"); }, Reason::INVALID_INPUT, {"b"});
  // a deep value after a shallow one
  expect_refused([] { service::parse_body("{\"x\":1,\"y\":" + nested_objects(40) + "}", "b"); }, Reason::INVALID_INPUT,
                 {"b"});
}

// Invalid UTF-8 straight in (a name a sandbox made, say) is no failure of
// the answer: each bad sequence becomes U+FFFD (EF BF BD), and what follows
// it stays, so a caller sees where the bytes were and what was around them.
// Each client holds at most its cap; a lease gives its one back however it
// goes (destroyed, or moved from and then destroyed), and other clients'
// shares are their own.
TEST(PerClient, EachClientHoldsItsCapAndLeasesGiveTheirsBack) {
  service::PerClient held;
  std::optional<service::PerClient::Lease> a1 = held.take("uid:1000", 2);
  std::optional<service::PerClient::Lease> a2 = held.take("uid:1000", 2);
  ASSERT_TRUE(a1 && a2);
  EXPECT_FALSE(held.take("uid:1000", 2));
  EXPECT_EQ(held.held_by("uid:1000"), 2u);
  const auto b = held.take("uid:1001", 2);
  EXPECT_TRUE(b);
  a1.reset();
  EXPECT_EQ(held.held_by("uid:1000"), 1u);
  service::PerClient::Lease moved = std::move(*a2);
  a2.reset();  // moved from: gives nothing back
  EXPECT_EQ(held.held_by("uid:1000"), 1u);
  EXPECT_TRUE(held.take("uid:1000", 2));  // (taken and given back at once)
  EXPECT_FALSE(held.take("uid:1000", 0));
  EXPECT_EQ(held.held_by("uid:1000"), 1u);
}

// A waiter past its cap is woken when one of its own client's leases goes
// (every such waiter, once each), never by another client's; one that
// stopped waiting is not woken at all.
TEST(PerClient, WaitersAreWokenByTheirOwnClientsLeasesOnly) {
  service::PerClient held;
  auto a = held.take("uid:1000", 1);
  ASSERT_TRUE(a);
  int woken_first = 0, woken_second = 0, woken_gone = 0;
  auto first = held.take_or_wait("uid:1000", 1, [&] { ++woken_first; });
  auto second = held.take_or_wait("uid:1000", 1, [&] { ++woken_second; });
  auto gone = held.take_or_wait("uid:1000", 1, [&] { ++woken_gone; });
  ASSERT_EQ(first.index(), 1u);
  ASSERT_EQ(second.index(), 1u);
  ASSERT_EQ(gone.index(), 1u);
  held.stop_waiting("uid:1000", std::get<1>(gone));
  { auto other = held.take("uid:1001", 1); }  // another client's lease, given back
  EXPECT_EQ(woken_first + woken_second, 0);
  a.reset();
  EXPECT_EQ(woken_first, 1);
  EXPECT_EQ(woken_second, 1);
  EXPECT_EQ(woken_gone, 0);
  auto again = held.take_or_wait("uid:1000", 1, [] {});
  EXPECT_EQ(again.index(), 0u);  // the woken ask again, and one gets it
  { auto more = held.take("uid:1000", 1); }
  EXPECT_EQ(woken_first, 1);  // woken once: they asked again, or are gone
}

// A client's output is paced to its rate after a second's burst: the wait
// grows with what it sent past that; its execs share one clock; another
// client's clock is its own; a client idle for a second owes nothing; no
// rate, no wait.
TEST(OutputPace, AClientsStreamsWaitPastItsBurstAndOthersDoNot) {
  using namespace std::chrono_literals;
  service::OutputPace pace(1000);  // bytes per second
  const auto t0 = service::OutputPace::Clock::now();
  EXPECT_EQ(pace.sent("uid:1000", 1000, t0), 0s);  // the burst
  EXPECT_EQ(pace.sent("uid:1000", 500, t0), 500ms);
  EXPECT_EQ(pace.sent("uid:1000", 500, t0), 1000ms);  // a second exec of the same client
  EXPECT_EQ(pace.sent("uid:1001", 1000, t0), 0s);
  EXPECT_EQ(pace.sent("uid:1000", 1000, t0 + 3s), 0s);  // idle: owes nothing
  service::OutputPace unpaced(0);
  EXPECT_EQ(unpaced.sent("uid:1000", std::size_t{1} << 40, t0), 0s);
}

// The daemon's budget of buffered bytes: a client (not root) holds its share
// and no more; the whole budget bounds everyone, root too; holds give their
// bytes back when they go, moved or not.
TEST(MemoryBudget, ClientsHoldTheirShareAndTheDaemonItsTotal) {
  service::MemoryBudget budget(1000, 250);
  std::optional<service::MemoryBudget::Hold> a = budget.take("uid:1000", 200, false);
  ASSERT_TRUE(a);
  EXPECT_FALSE(budget.take("uid:1000", 51, false)) << "past the client's share";
  EXPECT_TRUE(budget.take("uid:1000", 50, false));  // (given back at once)
  const auto b = budget.take("uid:1001", 250, false);
  ASSERT_TRUE(b);
  const auto root = budget.take("uid:0", 500, true);
  ASSERT_TRUE(root);
  EXPECT_EQ(budget.held(), 950u);
  EXPECT_FALSE(budget.take("uid:0", 51, true)) << "past the daemon's total, root too";
  EXPECT_FALSE(budget.take("uid:1002", 51, false));
  {
    const service::MemoryBudget::Hold moved = std::move(*a);
    a.reset();  // moved from: gives nothing back
    EXPECT_EQ(budget.held(), 950u);
  }
  EXPECT_EQ(budget.held(), 750u);
  EXPECT_TRUE(budget.take("uid:1000", 250, false));
}

TEST(ServiceBody, DumpNeverThrows) {
  EXPECT_EQ(service::dump(json{{"a", std::string("caf\xe9")}}), "{\"a\":\"caf\xef\xbf\xbd\"}");
  EXPECT_EQ(service::dump(json{{"a", std::string("caf\xe9 au lait")}}), "{\"a\":\"caf\xef\xbf\xbd au lait\"}");
  EXPECT_EQ(service::dump(json{{"a", std::string("\xff\xfe")}}), "{\"a\":\"\xef\xbf\xbd\xef\xbf\xbd\"}");
  EXPECT_EQ(service::dump(json{{"a", 1}}), R"({"a":1})");
}

// ---------------------------------------------------------------------------
// network, features

TEST(ServiceNetwork, RoundTripsEveryKind) {
  for (const Network& n :
       {Network::none(), Network::all(), Network::allow_only({"example.com", "*.pypi.org"}), Network::allow_only({})}) {
    const Network back = service::network_from(over_the_wire(json{{"n", service::network_json(n)}})["n"]);
    EXPECT_EQ(back.kind, n.kind);
    EXPECT_EQ(back.allow, n.allow);
  }
  EXPECT_EQ(service::network_json(Network::none()), json("none"));
  EXPECT_EQ(service::network_json(Network::all()), json("all"));
  EXPECT_EQ(service::network_json(Network::allow_only({"a.org"})), (json{{"allow", {"a.org"}}}));
}

TEST(ServiceNetwork, RefusesWhatIsNoNetwork) {
  for (const json& v : {json("allow"), json("bogus"), json(""), json(1), json::array({"none"}), json::object(),
                        json{{"allow", "a.org"}}, json{{"allow", {1}}}, json{{"allow", nullptr}}}) {
    expect_refused([&] { service::network_from(v); }, Reason::INVALID_INPUT, {"network"});
  }
  expect_refused(
      [] {
        service::network_from(json{{"allow", json::array()}, {"deny", json::array()}});
      },
      Reason::INVALID_INPUT, {"deny"});
}

TEST(ServiceFeatures, RoundTripEveryField) {
  Features f;
  f.stdin = f.ports = f.desktop = f.cpus = f.memory = f.pids = f.seccomp = true;
  f.network = {NetworkKind::all, NetworkKind::allowlist, NetworkKind::none};
  const Features back = service::features_from(over_the_wire(service::features_json(f)));
  EXPECT_TRUE(back.stdin && back.ports && back.desktop && back.cpus && back.memory && back.pids && back.seccomp);
  EXPECT_EQ(back.network, f.network);

  // each flag alone, so that no two are swapped
  const std::array<bool Features::*, 7> flags = {&Features::stdin,  &Features::ports,  &Features::desktop,
                                                 &Features::cpus,   &Features::memory, &Features::pids,
                                                 &Features::seccomp};
  for (auto flag : flags) {
    Features one;
    one.*flag = true;
    const Features got = service::features_from(service::features_json(one));
    for (auto other : flags) EXPECT_EQ(got.*other, other == flag);
    EXPECT_TRUE(got.network.empty());
  }
}

TEST(ServiceFeatures, ANewerDaemonsWordsAreNotRefused) {
  const Features f = service::features_from(json{{"stdin", true}, {"gpu", true}, {"network", {"none", "vpn", "all"}}});
  EXPECT_TRUE(f.stdin);
  EXPECT_EQ(f.network, (std::vector<NetworkKind>{NetworkKind::none, NetworkKind::all}));
}

TEST(ServiceFeatures, RefusesWrongTypes) {
  expect_refused([] { service::features_from(json{{"stdin", 1}}); }, Reason::INVALID_INPUT, {"stdin"});
  expect_refused([] { service::features_from(json{{"seccomp", "yes"}}); }, Reason::INVALID_INPUT, {"seccomp"});
  expect_refused([] { service::features_from(json{{"network", "all"}}); }, Reason::INVALID_INPUT, {"network"});
  expect_refused([] { service::features_from(json{{"network", {1}}}); }, Reason::INVALID_INPUT, {"network"});
  expect_refused([] { service::features_from(json::array()); }, Reason::INVALID_INPUT, {"features"});
}

// ---------------------------------------------------------------------------
// create

CreateOptions every_create_field() {
  CreateOptions o;
  o.lifetime_ms = 123'456'789'012;
  o.network = Network::allow_only({"example.com", "*.pypi.org"});
  o.env = {{"PLAIN", "value"}, {"LATIN1", "caf\xe9"}, {"EMPTY", ""}, {"NUL", std::string("a\0b", 3)}};
  o.ports = {1, 8080, 65535};
  o.cpus = 1.5;
  o.memory_mib = 2048;
  o.pids = 77;
  o.seccomp_profile = std::string("{\"defaultAction\":\"SCMP_ACT_ERRNO\"}\xff\0", 36);
  o.image = "python:3.12";
  o.labels = {{"team", "infra"}, {"run", "42"}};
  o.user = "1000:1000";
  o.workdir = "/work";
  return o;
}

TEST(ServiceCreate, RoundTripsEveryField) {
  const CreateOptions o = every_create_field();
  const json j = service::create_json(o);
  EXPECT_TRUE(j["env"]["LATIN1"].is_object());  // not UTF-8: base64
  EXPECT_TRUE(j["env"]["PLAIN"].is_string());
  const CreateOptions back = service::create_from(over_the_wire(j));
  EXPECT_EQ(back.lifetime_ms, o.lifetime_ms);
  EXPECT_EQ(back.network.kind, o.network.kind);
  EXPECT_EQ(back.network.allow, o.network.allow);
  EXPECT_EQ(back.env, o.env);
  EXPECT_EQ(back.ports, o.ports);
  EXPECT_EQ(back.cpus, o.cpus);
  EXPECT_EQ(back.memory_mib, o.memory_mib);
  EXPECT_EQ(back.pids, o.pids);
  EXPECT_EQ(back.seccomp_profile, o.seccomp_profile);
  EXPECT_EQ(back.image, o.image);
  EXPECT_EQ(back.labels, o.labels);
  EXPECT_EQ(back.user, o.user);
  EXPECT_EQ(back.workdir, o.workdir);
}

TEST(ServiceCreate, RoundTripsTheDefaults) {
  CreateOptions o;
  o.lifetime_ms = 1;
  const json j = service::create_json(o);
  EXPECT_EQ(j, (json{{"lifetimeMs", 1}, {"network", "none"}}));  // nothing unset is sent
  const CreateOptions back = service::create_from(over_the_wire(j));
  EXPECT_EQ(back.lifetime_ms, 1);
  EXPECT_EQ(back.network.kind, NetworkKind::none);
  EXPECT_TRUE(back.env.empty() && back.ports.empty() && back.labels.empty());
  EXPECT_FALSE(back.cpus || back.memory_mib || back.pids || back.seccomp_profile);
  EXPECT_TRUE(back.image.empty() && back.user.empty() && back.workdir.empty());
  // and a network all
  o.network = Network::all();
  EXPECT_EQ(service::create_from(service::create_json(o)).network.kind, NetworkKind::all);
}

TEST(ServiceCreate, NullIsTakenAsAbsent) {
  const CreateOptions o = service::create_from(json{{"lifetimeMs", 5}, {"cpus", nullptr}, {"image", nullptr}});
  EXPECT_FALSE(o.cpus);
  EXPECT_TRUE(o.image.empty());
}

TEST(ServiceCreate, RefusesAnUnknownKeyByName) {
  expect_refused(
      [] {
        service::create_from(json{{"lifetimeMs", 1}, {"bogus", 1}});
      },
      Reason::INVALID_INPUT, {"'bogus'"});
  expect_refused(
      [] {
        service::create_from(json{{"lifetimeMs", 1}, {"lifetime_ms", 1}});
      },
      Reason::INVALID_INPUT, {"lifetime_ms"});
  // a long key is named, but cut short
  const std::string long_key(1000, 'k');
  std::string message;
  EXPECT_EQ(reason_of(
                [&] {
                  service::create_from(json{{"lifetimeMs", 1}, {long_key, 1}});
                },
                &message),
            Reason::INVALID_INPUT);
  EXPECT_NE(message.find(std::string(64, 'k')), std::string::npos);
  EXPECT_LT(message.size(), 500u);
}

TEST(ServiceCreate, RefusesAMissingLifetime) {
  expect_refused([] { service::create_from(json::object()); }, Reason::INVALID_INPUT, {"lifetimeMs"});
  expect_refused([] { service::create_from(json{{"network", "all"}}); }, Reason::INVALID_INPUT, {"lifetimeMs"});
  expect_refused([] { service::create_from(json{{"lifetimeMs", nullptr}}); }, Reason::INVALID_INPUT, {"lifetimeMs"});
}

TEST(ServiceCreate, RefusesWrongTypesAndRanges) {
  struct Case {
    json body;
    std::string key;
  };
  const std::vector<Case> cases = {
      {{{"lifetimeMs", "1000"}}, "lifetimeMs"},
      {{{"lifetimeMs", 0}}, "lifetimeMs"},
      {{{"lifetimeMs", -5}}, "lifetimeMs"},
      {{{"lifetimeMs", 1.5}}, "lifetimeMs"},
      {{{"lifetimeMs", true}}, "lifetimeMs"},
      {{{"lifetimeMs", std::numeric_limits<std::uint64_t>::max()}}, "lifetimeMs"},
      {{{"lifetimeMs", 1}, {"ports", "80"}}, "ports"},
      {{{"lifetimeMs", 1}, {"ports", {0}}}, "ports"},
      {{{"lifetimeMs", 1}, {"ports", {65536}}}, "ports"},
      {{{"lifetimeMs", 1}, {"ports", {-1}}}, "ports"},
      {{{"lifetimeMs", 1}, {"ports", {80, "81"}}}, "ports"},
      {{{"lifetimeMs", 1}, {"ports", {80.5}}}, "ports"},
      {{{"lifetimeMs", 1}, {"cpus", "2"}}, "cpus"},
      {{{"lifetimeMs", 1}, {"memoryMiB", 0}}, "memoryMiB"},
      {{{"lifetimeMs", 1}, {"memoryMiB", "1"}}, "memoryMiB"},
      {{{"lifetimeMs", 1}, {"memoryMiB", (std::int64_t{1} << 40) + 1}}, "memoryMiB"},
      {{{"lifetimeMs", 1}, {"pids", 0}}, "pids"},
      {{{"lifetimeMs", 1}, {"env", {"A=1"}}}, "env"},
      {{{"lifetimeMs", 1}, {"env", {{"A", 1}}}}, "env"},
      {{{"lifetimeMs", 1}, {"seccompProfile", 7}}, "seccompProfile"},
      {{{"lifetimeMs", 1}, {"image", 7}}, "image"},
      {{{"lifetimeMs", 1}, {"labels", {{"a", 1}}}}, "labels"},
      {{{"lifetimeMs", 1}, {"labels", "a"}}, "labels"},
      {{{"lifetimeMs", 1}, {"user", 1000}}, "user"},
      {{{"lifetimeMs", 1}, {"workdir", false}}, "workdir"},
      {{{"lifetimeMs", 1}, {"network", "allow"}}, "network"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.body.dump());
    expect_refused([&] { service::create_from(c.body); }, Reason::INVALID_INPUT, {c.key});
  }
  expect_refused([] { service::create_from(json::array()); }, Reason::INVALID_INPUT, {"create"});
  expect_refused([] { service::create_from(json("x")); }, Reason::INVALID_INPUT, {"create"});
}

TEST(ServiceCreate, TakesTheBoundsOfEachRange) {
  const CreateOptions o = service::create_from(json{{"lifetimeMs", std::numeric_limits<std::int64_t>::max()},
                                                    {"ports", {1, 65535}},
                                                    {"memoryMiB", std::int64_t{1} << 40},
                                                    {"pids", std::int64_t{1} << 30},
                                                    {"cpus", 0}});
  EXPECT_EQ(o.lifetime_ms, std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(o.ports, (std::vector<int>{1, 65535}));
  EXPECT_EQ(o.memory_mib, std::int64_t{1} << 40);
  EXPECT_EQ(o.pids, std::int64_t{1} << 30);
  EXPECT_EQ(o.cpus, 0.0);
}

// ---------------------------------------------------------------------------
// exec request

TEST(ServiceExecRequest, RoundTripsEveryField) {
  const std::vector<std::string> argv = {
      "python3", "-c", "print('caf\xc3\xa9')", "caf\xe9", std::string("a\0b", 3), bytes({0x80, 0xff}), ""};
  ExecOptions o;
  o.cwd = "sub/dir\xff";
  o.env = {{"A", "1"}, {"B", bytes({0xc0, 0x80})}, {"C", ""}};
  o.timeout_ms = 1500;
  o.stdin = bytes({0x00, 0x01, 0xfe, 0xff, 'x'});
  o.max_output_bytes = 4096;
  const json j = service::exec_request_json(argv, o);
  EXPECT_TRUE(j["argv"][0].is_string());
  EXPECT_TRUE(j["argv"][3].is_object());
  const service::ExecRequest back = service::exec_request_from(over_the_wire(j));
  EXPECT_EQ(back.argv, argv);
  EXPECT_EQ(back.options.cwd, o.cwd);
  EXPECT_EQ(back.options.env, o.env);
  EXPECT_EQ(back.options.timeout_ms, o.timeout_ms);
  EXPECT_EQ(back.options.stdin, o.stdin);
  EXPECT_EQ(back.options.max_output_bytes, o.max_output_bytes);
}

TEST(ServiceExecRequest, RoundTripsTheDefaults) {
  const json j = service::exec_request_json({"true"}, {});
  EXPECT_EQ(j, (json{{"argv", {"true"}}}));
  const service::ExecRequest back = service::exec_request_from(over_the_wire(j));
  EXPECT_EQ(back.argv, std::vector<std::string>{"true"});
  EXPECT_TRUE(back.options.cwd.empty() && back.options.env.empty());
  EXPECT_FALSE(back.options.timeout_ms || back.options.stdin || back.options.max_output_bytes);
  // an empty stdin is not no stdin
  ExecOptions o;
  o.stdin = "";
  EXPECT_EQ(service::exec_request_from(service::exec_request_json({"cat"}, o)).options.stdin, std::string());
  // zero bytes of output is a limit too
  o.max_output_bytes = 0;
  EXPECT_EQ(service::exec_request_from(service::exec_request_json({"cat"}, o)).options.max_output_bytes, 0u);
}

TEST(ServiceExecRequest, LeavesTimeoutsToTheLimitsLayer) {
  // only the type is checked here
  EXPECT_EQ(service::exec_request_from(json{{"argv", {"x"}}, {"timeoutMs", -1}}).options.timeout_ms, -1);
  EXPECT_EQ(service::exec_request_from(json{{"argv", {"x"}}, {"timeoutMs", 0}}).options.timeout_ms, 0);
  expect_refused(
      [] {
        service::exec_request_from(json{{"argv", {"x"}}, {"timeoutMs", "5"}});
      },
      Reason::INVALID_INPUT, {"timeoutMs"});
  expect_refused(
      [] {
        service::exec_request_from(json{{"argv", {"x"}}, {"timeoutMs", 1.5}});
      },
      Reason::INVALID_INPUT, {"timeoutMs"});
}

TEST(ServiceExecRequest, RefusesWhatIsWrong) {
  expect_refused([] { service::exec_request_from(json::object()); }, Reason::INVALID_INPUT, {"argv"});
  expect_refused([] { service::exec_request_from(json{{"argv", nullptr}}); }, Reason::INVALID_INPUT, {"argv"});
  expect_refused([] { service::exec_request_from(json{{"cwd", "/"}}); }, Reason::INVALID_INPUT, {"argv"});
  expect_refused([] { service::exec_request_from(json{{"argv", "ls -l"}}); }, Reason::INVALID_INPUT, {"argv"});
  expect_refused([] { service::exec_request_from(json{{"argv", {"ls", 1}}}); }, Reason::INVALID_INPUT, {"argv"});
  expect_refused(
      [] {
        service::exec_request_from(json{{"argv", {{{"base64", "%%"}}}}});
      },
      Reason::INVALID_INPUT, {"argv"});
  expect_refused(
      [] {
        service::exec_request_from(json{{"argv", {"ls"}}, {"bogus", 1}});
      },
      Reason::INVALID_INPUT, {"'bogus'"});
  expect_refused(
      [] {
        service::exec_request_from(json{{"argv", {"ls"}}, {"cwd", 1}});
      },
      Reason::INVALID_INPUT, {"cwd"});
  expect_refused(
      [] {
        service::exec_request_from(json{{"argv", {"ls"}}, {"env", {{"A", 1}}}});
      },
      Reason::INVALID_INPUT, {"env"});
  expect_refused(
      [] {
        service::exec_request_from(json{{"argv", {"ls"}}, {"env", {"A"}}});
      },
      Reason::INVALID_INPUT, {"env"});
  expect_refused(
      [] {
        service::exec_request_from(json{{"argv", {"ls"}}, {"stdin", 1}});
      },
      Reason::INVALID_INPUT, {"stdin"});
  expect_refused(
      [] {
        service::exec_request_from(json{{"argv", {"ls"}}, {"maxOutputBytes", -1}});
      },
      Reason::INVALID_INPUT, {"maxOutputBytes"});
  expect_refused(
      [] {
        service::exec_request_from(json{{"argv", {"ls"}}, {"maxOutputBytes", "1"}});
      },
      Reason::INVALID_INPUT, {"maxOutputBytes"});
  expect_refused([] { service::exec_request_from(json::array({"ls"})); }, Reason::INVALID_INPUT, {"exec"});
}

// ---------------------------------------------------------------------------
// exec result

TEST(ServiceExecResult, RoundTripsEveryField) {
  ExecResult r;
  r.exit_code = 3;
  r.stdout = std::string("out\0\xff\xfe", 6);
  r.stderr = "caf\xc3\xa9";
  r.truncated = true;
  r.duration_ms = 4242;
  r.timed_out = false;
  r.oom_killed = true;
  const json j = service::exec_result_json(r);
  EXPECT_TRUE(j["stdout"].is_object());
  EXPECT_TRUE(j["stderr"].is_string());
  const ExecResult back = service::exec_result_from(over_the_wire(j));
  EXPECT_EQ(back.exit_code, r.exit_code);
  EXPECT_EQ(back.stdout, r.stdout);
  EXPECT_EQ(back.stderr, r.stderr);
  EXPECT_EQ(back.truncated, r.truncated);
  EXPECT_EQ(back.duration_ms, r.duration_ms);
  EXPECT_EQ(back.timed_out, r.timed_out);
  EXPECT_EQ(back.oom_killed, r.oom_killed);
}

TEST(ServiceExecResult, RoundTripsATimeout) {
  ExecResult r;
  r.timed_out = true;
  r.stdout = bytes({0xff});
  r.stderr = bytes({0xc3});
  r.duration_ms = 1;
  const json j = service::exec_result_json(r);
  EXPECT_TRUE(j["exitCode"].is_null());
  const ExecResult back = service::exec_result_from(over_the_wire(j));
  EXPECT_FALSE(back.exit_code);
  EXPECT_TRUE(back.timed_out);
  EXPECT_EQ(back.stdout, r.stdout);
  EXPECT_EQ(back.stderr, r.stderr);
  EXPECT_FALSE(back.truncated);
  EXPECT_FALSE(back.oom_killed);
}

TEST(ServiceExecResult, RoundTripsExitCodesAtTheEdges) {
  for (int code : {-1, 0, 1, 127, 137, 255, 256, 1 << 16}) {
    ExecResult r;
    r.exit_code = code;
    EXPECT_EQ(service::exec_result_from(service::exec_result_json(r)).exit_code, code);
  }
  expect_refused([] { service::exec_result_from(json{{"exitCode", -2}}); }, Reason::INVALID_INPUT, {"exitCode"});
  expect_refused(
      [] {
        service::exec_result_from(json{{"exitCode", (1 << 16) + 1}});
      },
      Reason::INVALID_INPUT, {"exitCode"});
}

TEST(ServiceExecResult, RefusesAResultWithNeitherExitCodeNorTimeout) {
  expect_refused([] { service::exec_result_from(json::object()); }, Reason::INVALID_INPUT, {"exitCode"});
  expect_refused(
      [] {
        service::exec_result_from(json{{"stdout", "x"}, {"durationMs", 3}});
      },
      Reason::INVALID_INPUT, {"exitCode"});
  expect_refused(
      [] {
        service::exec_result_from(json{{"exitCode", nullptr}, {"timedOut", false}});
      },
      Reason::INVALID_INPUT, {"exitCode"});
  // either one is enough
  EXPECT_NO_THROW(service::exec_result_from(json{{"timedOut", true}}));
  EXPECT_NO_THROW(service::exec_result_from(json{{"exitCode", 0}}));
}

TEST(ServiceExecResult, RefusesWrongTypes) {
  expect_refused([] { service::exec_result_from(json{{"exitCode", "0"}}); }, Reason::INVALID_INPUT, {"exitCode"});
  expect_refused(
      [] {
        service::exec_result_from(json{{"exitCode", 0}, {"stdout", 1}});
      },
      Reason::INVALID_INPUT, {"stdout"});
  expect_refused(
      [] {
        service::exec_result_from(json{{"exitCode", 0}, {"stderr", {1}}});
      },
      Reason::INVALID_INPUT, {"stderr"});
  expect_refused(
      [] {
        service::exec_result_from(json{{"exitCode", 0}, {"truncated", 1}});
      },
      Reason::INVALID_INPUT, {"truncated"});
  expect_refused(
      [] {
        service::exec_result_from(json{{"exitCode", 0}, {"durationMs", -1}});
      },
      Reason::INVALID_INPUT, {"durationMs"});
  expect_refused([] { service::exec_result_from(json{{"timedOut", "yes"}}); }, Reason::INVALID_INPUT, {"timedOut"});
  expect_refused(
      [] {
        service::exec_result_from(json{{"exitCode", 0}, {"oomKilled", 0}});
      },
      Reason::INVALID_INPUT, {"oomKilled"});
  expect_refused(
      [] {
        service::exec_result_from(json{{"exitCode", 0}, {"signal", 9}});
      },
      Reason::INVALID_INPUT, {"'signal'"});
}

// ---------------------------------------------------------------------------
// file entries

TEST(ServiceFileEntry, RoundTripsEveryFieldAndType) {
  for (FileType type : {FileType::file, FileType::directory, FileType::symlink, FileType::other}) {
    FileEntry e;
    e.name = "caf\xe9.txt";  // Latin-1: not UTF-8
    e.type = type;
    e.size = std::uint64_t{1} << 40;
    e.mode = 04755;
    e.mtime_ms = 1'700'000'000'123;
    const json j = service::file_entry_json(e);
    EXPECT_TRUE(j["name"].is_object());
    const FileEntry back = service::file_entry_from(over_the_wire(j));
    EXPECT_EQ(back.name, e.name);
    EXPECT_EQ(back.type, e.type);
    EXPECT_EQ(back.size, e.size);
    EXPECT_EQ(back.mode, e.mode);
    EXPECT_EQ(back.mtime_ms, e.mtime_ms);
  }
  FileEntry e;
  e.name = "ok \xf0\x9f\x98\x80";
  e.mtime_ms = -1;  // before 1970
  const FileEntry back = service::file_entry_from(over_the_wire(service::file_entry_json(e)));
  EXPECT_EQ(back.name, e.name);
  EXPECT_EQ(back.mtime_ms, -1);
  EXPECT_EQ(back.type, FileType::other);
}

TEST(ServiceFileEntry, RefusesWhatIsWrong) {
  expect_refused(
      [] {
        service::file_entry_from(json{{"name", "a"}, {"mode", 010000}});
      },
      Reason::INVALID_INPUT, {"mode"});
  expect_refused([] { service::file_entry_from(json{{"name", "a"}, {"mode", -1}}); }, Reason::INVALID_INPUT, {"mode"});
  expect_refused([] { service::file_entry_from(json{{"name", 1}}); }, Reason::INVALID_INPUT, {"name"});
  expect_refused([] { service::file_entry_from(json{{"name", "a"}, {"type", 1}}); }, Reason::INVALID_INPUT, {"type"});
  expect_refused([] { service::file_entry_from(json{{"name", "a"}, {"size", -1}}); }, Reason::INVALID_INPUT, {"size"});
  expect_refused(
      [] {
        service::file_entry_from(json{{"name", "a"}, {"mtimeMs", "0"}});
      },
      Reason::INVALID_INPUT, {"mtimeMs"});
  expect_refused(
      [] {
        service::file_entry_from(json{{"name", "a"}, {"owner", "root"}});
      },
      Reason::INVALID_INPUT, {"'owner'"});
  expect_refused([] { service::file_entry_from(json("a")); }, Reason::INVALID_INPUT, {"entry"});
}

// ---------------------------------------------------------------------------
// errors and statuses

TEST(ServiceErrors, ReasonNamesRoundTrip) {
  for (Reason r : kReasons) {
    EXPECT_EQ(service::reason_from_name(reason_name(r)), r);
    const json e = service::error_json(r, "what happened");
    EXPECT_EQ(e["reason"], std::string(reason_name(r)));
    EXPECT_EQ(e["message"], "what happened");
  }
  EXPECT_FALSE(service::reason_from_name("bogus"));
  EXPECT_FALSE(service::reason_from_name(""));
  EXPECT_FALSE(service::reason_from_name("invalid_input"));
}

TEST(ServiceStatus, EveryReasonComesBackFromItsStatus) {
  for (Reason r : kReasons) {
    const int status = service::status_for(r);
    EXPECT_GE(status, 400) << reason_name(r);
    EXPECT_LE(status, 599) << reason_name(r);
    EXPECT_EQ(sandbox_http_failure(status).reason(), r) << reason_name(r) << " -> " << status;
  }
}

TEST(ServiceStatus, EveryReasonHasItsOwnStatus) {
  for (std::size_t i = 0; i < kReasons.size(); ++i) {
    for (std::size_t k = i + 1; k < kReasons.size(); ++k) {
      EXPECT_NE(service::status_for(kReasons[i]), service::status_for(kReasons[k]))
          << reason_name(kReasons[i]) << " and " << reason_name(kReasons[k]);
    }
  }
}

TEST(ServiceStatus, TheSeedsStatusesMapAsDocumented) {
  const std::vector<std::pair<int, Reason>> table = {{400, Reason::INVALID_INPUT},
                                                     {409, Reason::INVALID_INPUT},
                                                     {422, Reason::INVALID_INPUT},
                                                     {401, Reason::PERMISSION_DENIED},
                                                     {403, Reason::PERMISSION_DENIED},
                                                     {404, Reason::GONE},
                                                     {410, Reason::GONE},
                                                     {408, Reason::INTERNAL},
                                                     {504, Reason::INTERNAL},
                                                     {413, Reason::LIMIT_REACHED},
                                                     {429, Reason::LIMIT_REACHED},
                                                     {501, Reason::UNSUPPORTED},
                                                     {412, Reason::NOT_FOUND},
                                                     {424, Reason::INVALID_CONFIG},
                                                     {499, Reason::CANCELLED},
                                                     {500, Reason::INTERNAL},
                                                     {502, Reason::INTERNAL},
                                                     {503, Reason::INTERNAL},
                                                     {418, Reason::INTERNAL},
                                                     {200, Reason::INTERNAL},
                                                     {0, Reason::INTERNAL},
                                                     {-1, Reason::INTERNAL}};
  for (const auto& [status, reason] : table) {
    const SandboxError e = sandbox_http_failure(status);
    EXPECT_EQ(e.reason(), reason) << status;
    EXPECT_NE(std::string(e.what()).find(std::to_string(status)), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------------
// mayurad's settings

using tools::parse_daemon_config;
using tools::read_tokens;

constexpr const char* kSource = "/etc/mayura/test.json";

void expect_config_refused(const std::string& text, std::initializer_list<std::string> words) {
  SCOPED_TRACE(text);
  std::vector<std::string> all(words);
  all.emplace_back(kSource);
  std::string message;
  const Reason got = reason_of([&] { parse_daemon_config(text, kSource); }, &message);
  EXPECT_EQ(got, Reason::INVALID_CONFIG) << "reason " << reason_name(got) << ", message: " << message;
  for (const auto& w : all) EXPECT_NE(message.find(w), std::string::npos) << "'" << w << "' not in: " << message;
}

TEST(DaemonConfigParse, AnEmptyObjectGivesTheDefaults) {
  const tools::DaemonConfig c = parse_daemon_config("{}", kSource);
  EXPECT_EQ(c.socket, "/run/mayura/mayurad.sock");
  EXPECT_EQ(c.socket_mode, mode_t{0660});
  EXPECT_EQ(c.socket_group, "mayura");
  EXPECT_FALSE(c.socket_group_given);
  EXPECT_FALSE(c.tls);
  EXPECT_EQ(c.limits.max_sandboxes, 64u);
  EXPECT_EQ(c.limits.max_lifetime_ms, 24LL * 3600 * 1000);
  const SandboxesOptions limits;
  EXPECT_EQ(c.limits.network, limits.network);
  EXPECT_EQ(c.limits.max_output_bytes, limits.max_output_bytes);
  EXPECT_EQ(c.limits.max_read_bytes, limits.max_read_bytes);
  EXPECT_EQ(c.limits.max_write_bytes, limits.max_write_bytes);
  const NativeOptions native;
  EXPECT_EQ(c.native.state_dir, native.state_dir);
  EXPECT_EQ(c.native.image_store, native.image_store);
  EXPECT_EQ(c.native.image_dir, native.image_dir);
  EXPECT_EQ(c.native.cgroup_root, native.cgroup_root);
  EXPECT_EQ(c.native.default_cpus, native.default_cpus);
  EXPECT_EQ(c.native.default_memory_mib, native.default_memory_mib);
  EXPECT_EQ(c.native.default_pids, native.default_pids);
  EXPECT_EQ(c.native.prepared, native.prepared);
  EXPECT_EQ(c.native.netns_pool, native.netns_pool);
  EXPECT_EQ(c.native.allow_private_addresses, native.allow_private_addresses);
  EXPECT_TRUE(c.native.dns_servers.empty());
  EXPECT_TRUE(c.native.public_ranges.empty());
  const service::ServerOptions server;
  EXPECT_EQ(c.server.max_sandboxes_per_client, server.max_sandboxes_per_client);
  EXPECT_EQ(c.server.max_connections, server.max_connections);
  EXPECT_EQ(c.server.header_timeout, server.header_timeout);
  EXPECT_EQ(c.server.body_timeout, server.body_timeout);
  // whitespace around it is no matter
  EXPECT_EQ(parse_daemon_config(" \n{ }\n", kSource).socket, "/run/mayura/mayurad.sock");
}

// What the ceilings are when the operator names none: a safe share of the
// host, with the defaults a create gets under them.
TEST(DaemonConfigParse, CeilingsDefaultToASafeShareOfTheHost) {
  const tools::HostShape host{8192, 32768, 4};
  const tools::DaemonConfig c = parse_daemon_config("{}", kSource, host);
  EXPECT_EQ(c.native.total_memory_mib, 6144);
  EXPECT_EQ(c.native.total_pids, 16384);
  EXPECT_EQ(c.limits.max_memory_mib, 6144);
  EXPECT_EQ(c.limits.max_pids, 16384);
  EXPECT_EQ(c.limits.max_cpus, 4);
  EXPECT_EQ(c.limits.max_ports, 16u);
  EXPECT_EQ(c.server.max_memory_mib_per_client, 16 * 4096);  // its 16 sandboxes of the default size
  EXPECT_EQ(c.native.default_memory_mib, 4096);
  EXPECT_EQ(c.server.default_memory_mib, 4096);  // every create is bounded
  EXPECT_EQ(c.native.default_pids, 4096);
  EXPECT_EQ(c.native.default_cpus, 0);  // every cpu, which is the ceiling
  // A small host: the built-in defaults are lowered to its ceilings.
  const tools::DaemonConfig small = parse_daemon_config("{}", kSource, {1024, 4096, 1});
  EXPECT_EQ(small.native.total_memory_mib, 768);
  EXPECT_EQ(small.native.default_memory_mib, 768);
  EXPECT_EQ(small.server.default_memory_mib, 768);
  EXPECT_EQ(small.native.default_pids, 2048);
  // A cpu ceiling under the host's cpus bounds the default too.
  EXPECT_EQ(parse_daemon_config(R"({"maxCpus": 1.5})", kSource, host).native.default_cpus, 1.5);
}

TEST(DaemonConfigParse, ReadsTheCeilingsAndRefusesDefaultsOverThem) {
  const tools::HostShape host{8192, 32768, 4};
  const tools::DaemonConfig c = parse_daemon_config(
      R"({"maxCpus": 2, "maxMemoryMiB": 2048, "maxPids": 500, "maxPorts": 3, "maxMemoryMiBPerClient": 3000,
          "totalMemoryMiB": 5000, "totalPids": 9000, "maxConnectionsPerClient": 7, "defaultMemoryMiB": 1024,
          "defaultPids": 400, "defaultCpus": 1})",
      kSource, host);
  EXPECT_EQ(c.limits.max_cpus, 2);
  EXPECT_EQ(c.limits.max_memory_mib, 2048);
  EXPECT_EQ(c.limits.max_pids, 500);
  EXPECT_EQ(c.limits.max_ports, 3u);
  EXPECT_EQ(c.server.max_memory_mib_per_client, 3000);
  EXPECT_EQ(c.native.total_memory_mib, 5000);
  EXPECT_EQ(c.native.total_pids, 9000);
  EXPECT_EQ(c.server.max_connections_per_client, 7u);
  EXPECT_EQ(c.server.default_memory_mib, 1024);
  EXPECT_EQ(c.server.max_buffered_bytes, std::size_t{1024} << 20) << "an eighth of the host's memory";
  EXPECT_EQ(parse_daemon_config(R"({"maxBufferedMiB": 64})", kSource, host).server.max_buffered_bytes,
            std::size_t{64} << 20);
  EXPECT_EQ(parse_daemon_config("{}", kSource, tools::HostShape{1024, 32768, 1}).server.max_buffered_bytes,
            std::size_t{256} << 20)
      << "at least 256 MiB";
  EXPECT_EQ(c.server.client_output_bytes_per_second, std::size_t{32} << 20);
  EXPECT_EQ(
      parse_daemon_config(R"({"clientOutputMiBPerSecond": 0})", kSource, host).server.client_output_bytes_per_second,
      0u);
  for (const auto& [text, key] : std::vector<std::pair<std::string, std::string>>{
           {R"({"maxMemoryMiB": 1024, "defaultMemoryMiB": 2048})", "defaultMemoryMiB"},
           {R"({"maxPids": 100, "defaultPids": 200})", "defaultPids"},
           {R"({"maxCpus": 1, "defaultCpus": 2})", "defaultCpus"},
           {R"({"maxMemoryMiBPerClient": 100})", "maxMemoryMiBPerClient"},
           {R"({"maxCpus": 0})", "maxCpus"},
           {R"({"maxPorts": 0})", "maxPorts"},
           {R"({"totalPids": 10})", "totalPids"},
           {R"({"maxBufferedMiB": 8})", "maxBufferedMiB"},
           {R"({"clientOutputMiBPerSecond": -1})", "clientOutputMiBPerSecond"}}) {
    std::string message;
    const std::string& config = text;  // (a lambda may not capture a structured binding)
    EXPECT_EQ(reason_of([&] { parse_daemon_config(config, kSource, host); }, &message), Reason::INVALID_CONFIG)
        << config;
    EXPECT_NE(message.find(key), std::string::npos) << config << ": " << message;
  }
}

TEST(DaemonConfigParse, ReadsEveryKey) {
  const std::string text = R"({
    "socket": "/run/other/d.sock",
    "socketMode": "0600",
    "socketGroup": "agents",
    "maxSandboxes": 7,
    "maxSandboxesPerClient": 3,
    "maxLifetimeMs": 60000,
    "network": ["none", "allow", "all"],
    "maxOutputBytes": 1000,
    "maxReadBytes": 2000,
    "maxWriteBytes": 3000,
    "defaultCpus": 1.5,
    "defaultMemoryMiB": 512,
    "defaultPids": 99,
    "publicRanges": ["10.99.0.0/16", "192.168.7.0/24"],
    "dnsServers": ["1.1.1.1", "9.9.9.9"],
    "allowPrivateAddresses": true,
    "prepared": 0,
    "netnsPool": 5,
    "commandsAhead": false,
    "stateDir": "/run/m2",
    "imageStore": "/srv/store",
    "imageDir": "/srv/images",
    "cgroupRoot": "/sys/fs/cgroup/m2",
    "maxConnections": 12,
    "headerTimeoutMs": 1500,
    "bodyTimeoutMs": 2500,
    "tls": {"listen": "0.0.0.0:8443", "certificate": "/etc/mayura/cert.pem", "key": "/etc/mayura/key.pem",
            "tokens": "/etc/mayura/tokens"}
  })";
  const tools::DaemonConfig c = parse_daemon_config(text, kSource);
  EXPECT_EQ(c.socket, "/run/other/d.sock");
  EXPECT_EQ(c.socket_mode, mode_t{0600});
  EXPECT_EQ(c.socket_group, "agents");
  EXPECT_TRUE(c.socket_group_given);
  EXPECT_EQ(c.limits.max_sandboxes, 7u);
  EXPECT_EQ(c.server.max_sandboxes_per_client, 3u);
  EXPECT_EQ(c.limits.max_lifetime_ms, 60000);
  EXPECT_EQ(c.limits.network, (std::vector<NetworkKind>{NetworkKind::none, NetworkKind::allowlist, NetworkKind::all}));
  EXPECT_EQ(c.limits.max_output_bytes, 1000u);
  EXPECT_EQ(c.limits.max_read_bytes, 2000u);
  EXPECT_EQ(c.limits.max_write_bytes, 3000u);
  EXPECT_EQ(c.native.default_cpus, 1.5);
  EXPECT_EQ(c.native.default_memory_mib, 512);
  EXPECT_EQ(c.native.default_pids, 99);
  EXPECT_EQ(c.native.public_ranges, (std::vector<std::string>{"10.99.0.0/16", "192.168.7.0/24"}));
  EXPECT_EQ(c.native.dns_servers, (std::vector<std::string>{"1.1.1.1", "9.9.9.9"}));
  EXPECT_TRUE(c.native.allow_private_addresses);
  EXPECT_EQ(c.native.prepared, 0u);
  EXPECT_EQ(c.native.netns_pool, 5u);
  EXPECT_FALSE(c.native.commands_ahead);
  EXPECT_EQ(c.native.state_dir, "/run/m2");
  EXPECT_EQ(c.native.image_store, "/srv/store");
  EXPECT_EQ(c.native.image_dir, "/srv/images");
  EXPECT_EQ(c.native.cgroup_root, "/sys/fs/cgroup/m2");
  EXPECT_EQ(c.server.max_connections, 12u);
  EXPECT_EQ(c.server.header_timeout, std::chrono::milliseconds(1500));
  EXPECT_EQ(c.server.body_timeout, std::chrono::milliseconds(2500));
  ASSERT_TRUE(c.tls);
  EXPECT_EQ(c.tls->address, "0.0.0.0");
  EXPECT_EQ(c.tls->port, 8443);
  EXPECT_EQ(c.tls->certificate, "/etc/mayura/cert.pem");
  EXPECT_EQ(c.tls->key, "/etc/mayura/key.pem");
  EXPECT_EQ(c.tls->tokens_file, "/etc/mayura/tokens");
}

TEST(DaemonConfigParse, TakesTheBoundsOfEachRange) {
  const tools::DaemonConfig low = parse_daemon_config(
      R"({"maxSandboxes":1,"maxSandboxesPerClient":1,"maxLifetimeMs":1000,"maxOutputBytes":1,"maxReadBytes":1,
          "maxWriteBytes":1,"defaultCpus":0,"defaultMemoryMiB":16,"defaultPids":1,"prepared":0,"netnsPool":0,
          "maxConnections":1,"headerTimeoutMs":100,"bodyTimeoutMs":100,"network":[]})",
      kSource);
  EXPECT_EQ(low.limits.max_sandboxes, 1u);
  EXPECT_EQ(low.limits.max_lifetime_ms, 1000);
  EXPECT_EQ(low.server.header_timeout, std::chrono::milliseconds(100));
  EXPECT_TRUE(low.limits.network.empty());
  const tools::DaemonConfig high = parse_daemon_config(
      R"({"maxSandboxes":1000000,"maxSandboxesPerClient":1000000,"maxLifetimeMs":1099511627776,
          "maxOutputBytes":1099511627776,"maxReadBytes":1099511627776,"maxWriteBytes":1099511627776,
          "defaultMemoryMiB":1073741824,"defaultPids":4194304,"prepared":64,"netnsPool":64,
          "maxConnections":1000000,"headerTimeoutMs":3600000,"bodyTimeoutMs":3600000,"defaultCpus":128,
          "maxMemoryMiB":1073741824,"maxPids":4194304,"maxCpus":1024,"maxMemoryMiBPerClient":1073741824,
          "totalMemoryMiB":1073741824,"totalPids":4194304})",
      kSource);
  EXPECT_EQ(high.limits.max_sandboxes, 1'000'000u);
  EXPECT_EQ(high.limits.max_lifetime_ms, std::int64_t{1} << 40);
  EXPECT_EQ(high.limits.max_write_bytes, std::size_t{1} << 40);
  EXPECT_EQ(high.native.default_pids, 1 << 22);
  EXPECT_EQ(high.native.default_memory_mib, 1 << 30);
  EXPECT_EQ(high.native.prepared, 64u);
  EXPECT_EQ(high.server.body_timeout, std::chrono::milliseconds(3'600'000));
  EXPECT_EQ(high.native.default_cpus, 128.0);
}

TEST(DaemonConfigParse, SocketModes) {
  for (const auto& [text, mode] : std::vector<std::pair<std::string, mode_t>>{
           {"0660", 0660}, {"0600", 0600}, {"0770", 0770}, {"660", 0660}, {"0", 0}, {"0000", 0}}) {
    EXPECT_EQ(parse_daemon_config(R"({"socketMode":")" + text + "\"}", kSource).socket_mode, mode) << text;
  }
  // others may not reach it
  for (const std::string mode : {"0666", "0661", "0662", "0664", "0604", "0607", "0777", "7", "0001"}) {
    expect_config_refused(R"({"socketMode":")" + mode + "\"}", {"socketMode", "others"});
  }
  // nor is anything but a short octal number a mode
  for (const std::string mode : {"", "0o660", "rw-rw----", "0680", "06600", "-660", " 660", "0x1b0"}) {
    expect_config_refused(R"({"socketMode":")" + mode + "\"}", {"socketMode"});
  }
  expect_config_refused(R"({"socketMode":432})", {"socketMode"});  // 0660 as a number
}

TEST(DaemonConfigParse, TheSocketIsAnAbsolutePath) {
  expect_config_refused(R"({"socket":"run/mayurad.sock"})", {"socket"});
  expect_config_refused(R"({"socket":""})", {"socket"});
  expect_config_refused(R"({"socket":5})", {"socket"});
}

TEST(DaemonConfigParse, RefusesAnUnknownKeyByName) {
  expect_config_refused(R"({"bogus":1})", {"bogus"});
  expect_config_refused(R"({"maxSandboxes":2,"max_sandboxes":2})", {"max_sandboxes"});
  expect_config_refused(R"({"Socket":"/x"})", {"Socket"});
}

TEST(DaemonConfigParse, RefusesWhatIsNoJsonObject) {
  for (const std::string text : {"", "{", "{\"socket\":}", "{} {}", "[]", "\"socket\"", "1", "null"}) {
    expect_config_refused(text, {});
  }
}

TEST(DaemonConfigParse, RefusesWrongTypesAndRangesByName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"socketGroup":5})", "socketGroup"},
      {R"({"maxSandboxes":"4"})", "maxSandboxes"},
      {R"({"maxSandboxes":0})", "maxSandboxes"},
      {R"({"maxSandboxes":1000001})", "maxSandboxes"},
      {R"({"maxSandboxes":2.5})", "maxSandboxes"},
      {R"({"maxSandboxes":-1})", "maxSandboxes"},
      {R"({"maxSandboxes":18446744073709551615})", "maxSandboxes"},
      {R"({"maxSandboxesPerClient":0})", "maxSandboxesPerClient"},
      {R"({"maxLifetimeMs":999})", "maxLifetimeMs"},
      {R"({"maxLifetimeMs":1099511627777})", "maxLifetimeMs"},
      {R"({"network":"all"})", "network"},
      {R"({"network":[1]})", "network"},
      {R"({"maxOutputBytes":0})", "maxOutputBytes"},
      {R"({"maxReadBytes":1099511627777})", "maxReadBytes"},
      {R"({"maxWriteBytes":"1"})", "maxWriteBytes"},
      {R"({"defaultCpus":-1})", "defaultCpus"},
      {R"({"defaultCpus":"2"})", "defaultCpus"},
      {R"({"defaultMemoryMiB":0})", "defaultMemoryMiB"},
      {R"({"defaultPids":0})", "defaultPids"},
      {R"({"defaultPids":1073741825})", "defaultPids"},
      {R"({"publicRanges":"10.0.0.0/8"})", "publicRanges"},
      {R"({"publicRanges":[10]})", "publicRanges"},
      {R"({"dnsServers":[null]})", "dnsServers"},
      {R"({"allowPrivateAddresses":1})", "allowPrivateAddresses"},
      {R"({"allowPrivateAddresses":"true"})", "allowPrivateAddresses"},
      {R"({"prepared":65})", "prepared"},
      {R"({"prepared":-1})", "prepared"},
      {R"({"netnsPool":65})", "netnsPool"},
      {R"({"stateDir":1})", "stateDir"},
      {R"({"imageStore":[]})", "imageStore"},
      {R"({"imageDir":{}})", "imageDir"},
      {R"({"cgroupRoot":true})", "cgroupRoot"},
      {R"({"maxConnections":0})", "maxConnections"},
      {R"({"headerTimeoutMs":99})", "headerTimeoutMs"},
      {R"({"headerTimeoutMs":3600001})", "headerTimeoutMs"},
      {R"({"bodyTimeoutMs":99})", "bodyTimeoutMs"},
      {R"({"bodyTimeoutMs":null})", "bodyTimeoutMs"},
  };
  for (const auto& [text, key] : cases) expect_config_refused(text, {key});
}

TEST(DaemonConfigParse, RefusesANetworkKindThatDoesNotExist) {
  expect_config_refused(R"({"network":["none","bogus"]})", {"network", "bogus"});
  expect_config_refused(R"({"network":["allowlist"]})", {"network", "allowlist"});
  expect_config_refused(R"({"network":[""]})", {"network"});
}

TEST(DaemonConfigTls, ListenAddresses) {
  const auto tls = [](const std::string& listen) {
    return parse_daemon_config(R"({"tls":{"listen":")" + listen + R"(","certificate":"/c","key":"/k","tokens":"/t"}})",
                               kSource)
        .tls.value();
  };
  EXPECT_EQ(tls("127.0.0.1:443").address, "127.0.0.1");
  EXPECT_EQ(tls("127.0.0.1:443").port, 443);
  EXPECT_EQ(tls("[::1]:8443").address, "::1");
  EXPECT_EQ(tls("[::1]:8443").port, 8443);
  EXPECT_EQ(tls("[::]:1").address, "::");
  EXPECT_EQ(tls("example.org:65535").port, 65535);
  EXPECT_EQ(tls("example.org:0").port, 0);  // any free port
  const tools::TlsListener l = tls("10.0.0.1:8443");
  EXPECT_EQ(l.certificate, "/c");
  EXPECT_EQ(l.key, "/k");
  EXPECT_EQ(l.tokens_file, "/t");
}

TEST(DaemonConfigTls, RefusesAListenWithoutAPort) {
  for (const std::string listen : {"0.0.0.0", "0.0.0.0:", ":8443", "", "host:65536", "host:99999", "host:123456",
                                   "host:http", "host:-1", "host:+80", "host: 80", "[::1]"}) {
    SCOPED_TRACE(listen);
    expect_config_refused(R"({"tls":{"listen":")" + listen + R"(","certificate":"/c","key":"/k","tokens":"/t"}})",
                          {"tls.listen"});
  }
  expect_config_refused(R"({"tls":{"listen":8443,"certificate":"/c","key":"/k","tokens":"/t"}})", {"tls.listen"});
}

TEST(DaemonConfigTls, RefusesATlsMissingAField) {
  const std::vector<std::string> fields = {R"("listen":"0.0.0.0:8443")", R"("certificate":"/c")", R"("key":"/k")",
                                           R"("tokens":"/t")"};
  for (std::size_t skip = 0; skip < fields.size(); ++skip) {
    std::string body;
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (i == skip) continue;
      body += (body.empty() ? "" : ",") + fields[i];
    }
    expect_config_refused(R"({"tls":{)" + body + "}}", {"tls"});
  }
  expect_config_refused(R"({"tls":{}})", {"tls"});
  expect_config_refused(R"({"tls":"0.0.0.0:8443"})", {"tls"});
  expect_config_refused(R"({"tls":{"listen":"a:1","certificate":"/c","key":"/k","tokens":"/t","ca":"/x"}})",
                        {"tls.ca"});
  expect_config_refused(R"({"tls":{"listen":"a:1","certificate":1,"key":"/k","tokens":"/t"}})", {"tls.certificate"});
  expect_config_refused(R"({"tls":{"listen":"a:1","certificate":"/c","key":[],"tokens":"/t"}})", {"tls.key"});
  expect_config_refused(R"({"tls":{"listen":"a:1","certificate":"/c","key":"/k","tokens":false}})", {"tls.tokens"});
}

// A directory of its own for the tokens files, removed at the end.
class DaemonConfigTokens : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (std::filesystem::temp_directory_path() / "mayura-tokens-XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string write(const std::string& name, const std::string& text, mode_t mode = 0600) {
    std::string path = dir_ + "/" + name;
    {
      std::ofstream out(path, std::ios::binary);
      out << text;
    }
    EXPECT_EQ(::chmod(path.c_str(), mode), 0);
    return path;
  }
  void expect_refused_file(const std::string& path, std::initializer_list<std::string> words) {
    std::string message;
    const Reason got = reason_of([&] { read_tokens(path); }, &message);
    EXPECT_EQ(got, Reason::INVALID_CONFIG) << message;
    EXPECT_NE(message.find(path), std::string::npos) << message;
    for (const auto& w : words) EXPECT_NE(message.find(w), std::string::npos) << "'" << w << "' not in: " << message;
  }
  std::string dir_;
};

TEST_F(DaemonConfigTokens, ReadsNamesAndTokens) {
  const std::string path = write("tokens",
                                 "# who may call mayurad over TLS\n"
                                 "\n"
                                 "alice 0123456789abcdef\n"
                                 "# bob's, rotated\n"
                                 "bob\tsecret-secret-secret-1\n"
                                 "\n"
                                 "ci    0123456789abcdefXYZ   \n"
                                 "alice another-token-of-alice\n");
  const service::Tokens tokens = read_tokens(path);
  const service::Tokens expected = {{"0123456789abcdef", "alice"},
                                    {"secret-secret-secret-1", "bob"},
                                    {"0123456789abcdefXYZ", "ci"},
                                    {"another-token-of-alice", "alice"}};
  EXPECT_EQ(tokens, expected);
  // no newline at the end
  EXPECT_EQ(read_tokens(write("last", "dave 0123456789abcdef")), (service::Tokens{{"0123456789abcdef", "dave"}}));
}

TEST_F(DaemonConfigTokens, RefusesAFileOthersCanRead) {
  for (mode_t mode : {0644, 0640, 0604, 0660, 0606, 0610, 0601}) {
    SCOPED_TRACE(mode);
    expect_refused_file(write("open", "alice 0123456789abcdef\n", mode), {"600"});
  }
  EXPECT_EQ(read_tokens(write("owner-only", "alice 0123456789abcdef\n", 0400)).size(), 1u);
}

TEST_F(DaemonConfigTokens, RefusesAShortToken) {
  expect_refused_file(write("short", "# fine\nalice 0123456789abcdef\nbob 0123456789abcde\n"), {":3:"});
  expect_refused_file(write("none", "alice\n"), {":1:"});
  expect_refused_file(write("three", "alice 0123456789abcdef extra\n"), {":1:"});
  // a name is a tenant's (token:NAME), which the engine bounds
  expect_refused_file(write("long", std::string(257, 'a') + " 0123456789abcdef\n"), {":1:", "256"});
}

TEST_F(DaemonConfigTokens, RefusesATokenGivenTwice) {
  expect_refused_file(write("twice", "alice 0123456789abcdef\nbob 0123456789abcdef\n"), {":2:", "twice"});
}

TEST_F(DaemonConfigTokens, RefusesAMissingFile) { expect_refused_file(dir_ + "/not-there", {"cannot be opened"}); }

TEST_F(DaemonConfigTokens, RefusesAFileWithNoToken) {
  expect_refused_file(write("empty", ""), {"no token"});
  expect_refused_file(write("comments", "# nobody yet\n\n# still nobody\n"), {"no token"});
}

TEST_F(DaemonConfigTokens, RefusesWhatIsNoRegularFile) {
  const std::string target = write("target", "alice 0123456789abcdef\n");
  const std::string link = dir_ + "/link";
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  expect_refused_file(link, {});  // not followed
  const std::string sub = dir_ + "/sub";
  ASSERT_EQ(::mkdir(sub.c_str(), 0700), 0);
  expect_refused_file(sub, {"regular"});
}

}  // namespace
}  // namespace mayura
