// parse_sandbox_listing: the text sandbox_scripts::list prints, read back.

#include <gtest/gtest.h>

#include "mayura/sandbox_scripts.hpp"

namespace mayura {
namespace {

std::string hex(std::string_view name) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : name) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

Reason reason_of_parse(std::string_view text) {
  try {
    parse_sandbox_listing(text);
  } catch (const SandboxError& e) {
    return e.reason();
  }
  ADD_FAILURE() << "parsed: " << text;
  return Reason::INVALID_INPUT;
}

TEST(Listing, ReadsEveryKindAndAwkwardNames) {
  const std::string text =
      "6\n"
      "81a4 5 1700000000.123 " +
      hex("with space") + "\n" + "41ed 4096 1700000001 " + hex("new\nline") + "\n" + "a1ff 5 1700000002.5 " +
      hex("quote'\"") + "\n" + "11b6 0 1700000003.000000000 " + hex("\xc3\xbc\xe2\x9c\x93") + "\n" + "8fed 1 0 " +
      hex("-rf *") + "\n" + "c1a4 0 -5.250 " + hex("\x01\xff") + "\n";
  const auto entries = parse_sandbox_listing(text);
  ASSERT_EQ(entries.size(), 6u);
  EXPECT_EQ(entries[0].name, "with space");
  EXPECT_EQ(entries[0].type, FileType::file);
  EXPECT_EQ(entries[0].size, 5u);
  EXPECT_EQ(entries[0].mode, 0644u);
  EXPECT_EQ(entries[0].mtime_ms, 1'700'000'000'123);
  EXPECT_EQ(entries[1].name, "new\nline");
  EXPECT_EQ(entries[1].type, FileType::directory);
  EXPECT_EQ(entries[1].mode, 0755u);
  EXPECT_EQ(entries[1].mtime_ms, 1'700'000'001'000);
  EXPECT_EQ(entries[2].name, "quote'\"");
  EXPECT_EQ(entries[2].type, FileType::symlink);
  EXPECT_EQ(entries[2].mode, 0777u);
  EXPECT_EQ(entries[2].mtime_ms, 1'700'000'002'500);
  EXPECT_EQ(entries[3].name, "\xc3\xbc\xe2\x9c\x93");
  EXPECT_EQ(entries[3].type, FileType::other);  // a FIFO
  EXPECT_EQ(entries[3].mtime_ms, 1'700'000'003'000);
  EXPECT_EQ(entries[4].name, "-rf *");
  EXPECT_EQ(entries[4].mode, 07755u);           // setuid, setgid and sticky bits kept
  EXPECT_EQ(entries[5].type, FileType::other);  // a socket
  EXPECT_EQ(entries[5].mtime_ms, -5'250);
  EXPECT_EQ(entries[5].name, "\x01\xff");
}

TEST(Listing, EmptyDirectory) { EXPECT_TRUE(parse_sandbox_listing("0\n").empty()); }

TEST(Listing, MalformedIsInternal) {
  const std::string good = "81a4 5 1700000000 " + hex("a");
  for (const std::string& text : std::vector<std::string>{
           std::string(""),      // no count
           std::string("0"),     // cut off
           std::string("1\n"),   // fewer entries than counted
           "2\n" + good + "\n",  // fewer
           "0\n" + good + "\n",  // more
           "1\n" + good,         // last line cut off
           "x\n",                // count not a number
           "-1\n",
           "1\n81a4 5 1700000000\n",      // a field missing
           "1\n" + good + " extra\n",     // one too many
           "1\n81a4  5 1700000000 61\n",  // an empty field
           "1\nzz 5 1700000000 61\n",     // mode not hex
           "1\n81a4 -5 1700000000 61\n",  // negative size
           "1\n81a4 5x 1700000000 61\n",
           "1\n81a4 5 17000.0x 61\n",  // bad mtime
           "1\n81a4 5 1700000000. 61\n",
           "1\n81a4 5 --1 61\n",
           "1\n81a4 5 99999999999999999999 61\n",      // out of range
           "1\n81a4 5 1700000000 6\n",                 // half a byte
           "1\n81a4 5 1700000000 6g\n",                // not hex
           "1\n81a4 5 1700000000 \n",                  // empty name
           "1\n81a4 5 1700000000 " + hex(".") + "\n",  // . and ..
           "1\n81a4 5 1700000000 " + hex("..") + "\n",
           "1\n81a4 5 1700000000 " + hex("a/b") + "\n",                   // a slash
           "1\n81a4 5 1700000000 " + hex(std::string("a\0b", 3)) + "\n",  // a NUL
           "1\r\n" + good + "\r\n",                                       // not our line ends
       }) {
    EXPECT_EQ(reason_of_parse(text), Reason::INTERNAL) << text;
  }
}

}  // namespace
}  // namespace mayura
