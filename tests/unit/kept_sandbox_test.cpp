// What a sandbox keeps in its record for a later engine (live restore): it
// reads back as it was written, any bytes in its environment, workdir,
// tenant and caller's record included, on one line; and anything else (a
// line of another version, a field missing, a malformed name) is no record.

#include <gtest/gtest.h>

#include "kept_sandbox.hpp"

namespace mayura::native {
namespace {

KeptSandbox example() {
  KeptSandbox k;
  k.name = "0123456789abcdef";
  k.pid = 4242;
  k.start_time = 987654321;
  k.uid_base = 0x60010000;
  k.hostname = "mayura-01234567";
  k.workdir = "/work space\n";
  k.image = "debian:12";
  k.commands_ahead = false;
  k.desktop = true;
  k.paused = true;
  k.disk = "/var/lib/mayura/disks/0123456789abcdef.ext4";
  k.volumes = {"/var/lib/mayura/volumes/uid:1000/data"};
  k.io = {1, 2, 3, 4};
  k.env = {{"PATH", "/bin"}, {"SECRET", std::string("a\0b\xff\n", 5)}};
  k.network = Network::allow_only({"example.com", "*.example.org:443"});
  k.ports = {8080, 3000};
  k.host_ports = {41000, 41001};
  k.ports_owner = 1000;
  k.tenant = "uid:1000";
  k.deadline_ms = 123456789;
  k.caller = "{\"id\": \"x\"}\n\x01";
  return k;
}

TEST(KeptSandbox, ReadsBackAsItWasWrittenOnOneLine) {
  const KeptSandbox k = example();
  const std::string line = encode_kept(k);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const auto back = decode_kept(line);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->name, k.name);
  EXPECT_EQ(back->pid, k.pid);
  EXPECT_EQ(back->start_time, k.start_time);
  EXPECT_EQ(back->uid_base, k.uid_base);
  EXPECT_EQ(back->hostname, k.hostname);
  EXPECT_EQ(back->workdir, k.workdir);
  EXPECT_EQ(back->image, k.image);
  EXPECT_EQ(back->commands_ahead, k.commands_ahead);
  EXPECT_EQ(back->desktop, k.desktop);
  EXPECT_EQ(back->paused, k.paused);
  EXPECT_EQ(back->disk, k.disk);
  EXPECT_EQ(back->volumes, k.volumes);
  EXPECT_EQ(back->io, k.io);
  EXPECT_EQ(back->env, k.env);
  EXPECT_EQ(back->network.kind, NetworkKind::allowlist);
  EXPECT_EQ(back->network.allow, k.network.allow);
  EXPECT_EQ(back->ports, k.ports);
  EXPECT_EQ(back->host_ports, k.host_ports);
  EXPECT_EQ(back->ports_owner, k.ports_owner);
  EXPECT_EQ(back->tenant, k.tenant);
  EXPECT_EQ(back->deadline_ms, k.deadline_ms);
  EXPECT_EQ(back->caller, k.caller);
  EXPECT_EQ(back->init_protocol, protocol::kInitProtocol);
}

// An older engine's record has no initProtocol: its init is of protocol 1,
// which runs no command on a terminal (exec refuses those there).
TEST(KeptSandbox, AnOlderEnginesRecordSaysItsInitIsOld) {
  std::string line = encode_kept(example());
  const std::string field = ",\"initProtocol\":" + std::to_string(protocol::kInitProtocol);
  ASSERT_NE(line.find(field), std::string::npos) << line;
  line.erase(line.find(field), field.size());
  const auto back = decode_kept(line);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->init_protocol, 1);
}

TEST(KeptSandbox, EveryNetworkKindReadsBack) {
  for (const Network& network : {Network::none(), Network::all()}) {
    KeptSandbox k = example();
    k.network = network;
    const auto back = decode_kept(encode_kept(k));
    ASSERT_TRUE(back);
    EXPECT_EQ(back->network.kind, network.kind);
  }
}

TEST(KeptSandbox, AnythingElseIsNoRecord) {
  const std::string good = encode_kept(example());
  EXPECT_FALSE(decode_kept(""));
  EXPECT_FALSE(decode_kept("not json"));
  EXPECT_FALSE(decode_kept(good.substr(0, good.size() / 2)));
  std::string other = good;
  other.replace(other.find("\"version\":1"), 11, "\"version\":2");
  EXPECT_FALSE(decode_kept(other));
  KeptSandbox bad_name = example();
  bad_name.name = "../../etc";
  EXPECT_FALSE(decode_kept(encode_kept(bad_name)));
  KeptSandbox no_pid = example();
  no_pid.pid = 0;
  EXPECT_FALSE(decode_kept(encode_kept(no_pid)));
  KeptSandbox ports = example();
  ports.host_ports.pop_back();
  EXPECT_FALSE(decode_kept(encode_kept(ports)));
  KeptSandbox io = example();
  io.io.pop_back();
  EXPECT_FALSE(decode_kept(encode_kept(io)));
}

}  // namespace
}  // namespace mayura::native
