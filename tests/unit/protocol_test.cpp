// The engine <-> init byte format: round trips, and no trust in lengths.

#include <gtest/gtest.h>

#include <random>

#include "protocol.hpp"
#include "wire.hpp"

namespace mayura::protocol {
namespace {

TEST(Protocol, ConfigRoundTrips) {
  Config c;
  rootfs::Op op;
  op.kind = rootfs::OpKind::tmpfs;
  op.dst = "/workspace";
  op.size = 1 << 20;
  op.uid = 1000;
  c.plan = {op};
  c.hostname = "h";
  c.workdir = "/workspace";
  Config d;
  ASSERT_TRUE(decode(encode(c), d));
  ASSERT_EQ(d.plan.size(), 1u);
  EXPECT_EQ(d.plan[0].dst, "/workspace");
  EXPECT_EQ(d.plan[0].size, 1u << 20);
  EXPECT_EQ(d.hostname, "h");
}

TEST(Protocol, ExecRoundTripsAndRefusesTruncation) {
  Exec e{{"sh", "-c", std::string("a\0b", 3)}, {"A=1"}, "/w"};
  const std::string bytes = encode(e);
  Exec d;
  ASSERT_TRUE(decode(bytes, d));
  EXPECT_EQ(d.argv, e.argv);
  for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
    Exec partial;
    EXPECT_FALSE(decode(bytes.substr(0, cut), partial)) << cut;
  }
}

TEST(Protocol, HostileLengthsAreRefused) {
  wire::Writer w;
  w.u32(static_cast<std::uint32_t>(Request::exec));
  w.u32(0xffffffffu);  // a count no message can hold
  Exec d;
  EXPECT_FALSE(decode(w.bytes(), d));
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string junk(rng() % 64, '\0');
    for (auto& ch : junk) ch = static_cast<char>(rng());
    Exec e;
    Config c;
    FileRequest f;
    std::vector<ListEntry> l;
    (void)decode(junk, e);
    (void)decode(junk, c);
    (void)decode(junk, f);
    (void)decode_listing(junk, l);
  }
}

TEST(Protocol, FileRequestsMustBeAbsolute) {
  FileRequest f{"relative", 0};
  FileRequest d;
  EXPECT_FALSE(decode(encode(Request::read, f), d));
  f.path = "/w/a";
  EXPECT_TRUE(decode(encode(Request::read, f), d));
  EXPECT_EQ(kind_of(encode(Request::remove, f)), Request::remove);
}

// A standby request is its kind and whether it is wanted now (its cgroup
// travels as an fd), and no other request decodes from it.
TEST(Protocol, AStandbyRequestIsItsKindAndWhen) {
  for (bool now : {false, true}) {
    const std::string bytes = encode_standby(now);
    EXPECT_EQ(kind_of(bytes), Request::standby);
    EXPECT_EQ(bytes.size(), 8u);
    bool got = !now;
    ASSERT_TRUE(decode_standby(bytes, got));
    EXPECT_EQ(got, now);
    Exec e;
    Config c;
    FileRequest f;
    EXPECT_FALSE(decode(bytes, e));
    EXPECT_FALSE(decode(bytes, c));
    EXPECT_FALSE(decode(bytes, f));
  }
  bool now = false;
  std::string two = encode_standby(true);
  two[4] = 2;
  EXPECT_FALSE(decode_standby(two, now));
  EXPECT_FALSE(decode_standby(encode_standby(true) + "x", now));
  EXPECT_FALSE(decode_standby(encode_standby(true).substr(0, 6), now));
  EXPECT_FALSE(decode_standby(encode(Request::remove, FileRequest{"/w", 0}), now));
}

// A keep request is its kind and the deadline (its listener travels as an
// fd); a negative deadline, a short or a long one, or another kind is none.
TEST(Protocol, AKeepRequestIsItsKindAndItsDeadline) {
  for (std::int64_t deadline : {std::int64_t{0}, std::int64_t{123456789}}) {
    const std::string bytes = encode_keep(deadline);
    EXPECT_EQ(kind_of(bytes), Request::keep);
    std::int64_t got = -1;
    ASSERT_TRUE(decode_keep(bytes, got));
    EXPECT_EQ(got, deadline);
    bool now = false;
    EXPECT_FALSE(decode_standby(bytes, now));
  }
  std::int64_t got = 0;
  EXPECT_FALSE(decode_keep(encode_keep(-5), got));
  EXPECT_FALSE(decode_keep(encode_keep(5) + "x", got));
  EXPECT_FALSE(decode_keep(encode_keep(5).substr(0, 8), got));
  EXPECT_FALSE(decode_keep(encode_standby(true), got));
}

TEST(Protocol, Listing) {
  ListEntry a{1, 0755, 4096, 12, "dir"};
  ListEntry b{0, 0644, 3, 13, "file"};
  std::vector<ListEntry> out;
  ASSERT_TRUE(decode_listing(encode(a) + encode(b), out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].name, "file");
  out.clear();
  EXPECT_FALSE(decode_listing(encode(a).substr(0, 10), out));
}

}  // namespace
}  // namespace mayura::protocol
