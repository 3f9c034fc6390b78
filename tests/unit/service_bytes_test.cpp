// The wire's bytes and bodies: which bytes go as a string and which as
// base64 (and that every value comes back), valid_utf8 against Unicode's
// own table, and what a request body must be (an object, at most 32 levels
// deep) and how an answer is dumped whatever it holds.

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>

#include "service/wire.hpp"
#include "service_test_support.hpp"

namespace mayura {
namespace {

using testing::bytes;
using testing::expect_refused;
using testing::json;
using testing::over_the_wire;

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
TEST(ServiceBody, DumpNeverThrows) {
  EXPECT_EQ(service::dump(json{{"a", std::string("caf\xe9")}}), "{\"a\":\"caf\xef\xbf\xbd\"}");
  EXPECT_EQ(service::dump(json{{"a", std::string("caf\xe9 au lait")}}), "{\"a\":\"caf\xef\xbf\xbd au lait\"}");
  EXPECT_EQ(service::dump(json{{"a", std::string("\xff\xfe")}}), "{\"a\":\"\xef\xbf\xbd\xef\xbf\xbd\"}");
  EXPECT_EQ(service::dump(json{{"a", 1}}), R"({"a":1})");
}

}  // namespace
}  // namespace mayura
