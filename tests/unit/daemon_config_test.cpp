// mayurad's settings file (every key, its default, its bounds, and what
// is refused, by name) and its tokens file (its form and who may write it).

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "tools/daemon_config.hpp"
#include "tests/support/reason_of.hpp"

namespace mayura {
namespace {

using testing::reason_of;

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
  EXPECT_EQ(c.native.disk_dir, native.disk_dir);
  EXPECT_EQ(c.native.snapshot_dir, native.snapshot_dir);
  EXPECT_EQ(c.native.volume_dir, native.volume_dir);
  EXPECT_EQ(c.native.default_cpus, native.default_cpus);
  EXPECT_EQ(c.native.default_memory_mib, native.default_memory_mib);
  EXPECT_EQ(c.native.default_pids, native.default_pids);
  EXPECT_EQ(c.native.prepared, native.prepared);
  EXPECT_EQ(c.native.prepared_disks, native.prepared_disks);
  // The daemon keeps sandboxes across its restarts unless told otherwise
  // (the library's engine does not: its sandboxes are its caller's).
  EXPECT_TRUE(c.native.live_restore);
  EXPECT_TRUE(c.server.live_restore);
  EXPECT_FALSE(native.live_restore);
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
  // Disks, snapshots and volumes take the host's disk: bounded by default.
  EXPECT_EQ(c.limits.max_disk_mib, 4096);
  EXPECT_EQ(c.server.max_disk_mib_per_client, 16384);
  EXPECT_EQ(c.server.max_snapshot_mib_per_client, 16384);
  EXPECT_EQ(c.server.max_volume_mib_per_client, 16384);
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
  EXPECT_EQ(c.server.client_requests_per_second, 1000u);
  EXPECT_EQ(c.native.dns_wait_s, 2);
  EXPECT_EQ(parse_daemon_config(R"({"dnsWaitSeconds": 5})", kSource, host).native.dns_wait_s, 5);
  EXPECT_EQ(parse_daemon_config(R"({"clientRequestsPerSecond": 50})", kSource, host).server.client_requests_per_second,
            50u);
  for (const auto& [text, key] : std::vector<std::pair<std::string, std::string>>{
           {R"({"maxMemoryMiB": 1024, "defaultMemoryMiB": 2048})", "defaultMemoryMiB"},
           {R"({"maxPids": 100, "defaultPids": 200})", "defaultPids"},
           {R"({"maxCpus": 1, "defaultCpus": 2})", "defaultCpus"},
           {R"({"maxMemoryMiBPerClient": 100})", "maxMemoryMiBPerClient"},
           {R"({"maxCpus": 0})", "maxCpus"},
           {R"({"maxPorts": 0})", "maxPorts"},
           {R"({"totalPids": 10})", "totalPids"},
           {R"({"maxBufferedMiB": 8})", "maxBufferedMiB"},
           {R"({"clientOutputMiBPerSecond": -1})", "clientOutputMiBPerSecond"},
           {R"({"clientRequestsPerSecond": -1})", "clientRequestsPerSecond"},
           {R"({"dnsWaitSeconds": 0})", "dnsWaitSeconds"},
           {R"({"dnsWaitSeconds": 31})", "dnsWaitSeconds"}}) {
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
    "preparedDisks": 3,
    "netnsPool": 5,
    "commandsAhead": false,
    "liveRestore": false,
    "stateDir": "/run/m2",
    "imageStore": "/srv/store",
    "imageDir": "/srv/images",
    "cgroupRoot": "/sys/fs/cgroup/m2",
    "diskDir": "/srv/disks",
    "snapshotDir": "/srv/snapshots",
    "volumeDir": "/srv/volumes",
    "maxDiskMiB": 2048,
    "maxDiskMiBPerClient": 8192,
    "maxSnapshotMiBPerClient": 4096,
    "maxVolumeMiBPerClient": 1024,
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
  EXPECT_EQ(c.native.prepared_disks, 3u);
  EXPECT_EQ(c.native.netns_pool, 5u);
  EXPECT_FALSE(c.native.commands_ahead);
  EXPECT_FALSE(c.native.live_restore);
  EXPECT_FALSE(c.server.live_restore);
  EXPECT_EQ(c.native.state_dir, "/run/m2");
  EXPECT_EQ(c.native.image_store, "/srv/store");
  EXPECT_EQ(c.native.image_dir, "/srv/images");
  EXPECT_EQ(c.native.cgroup_root, "/sys/fs/cgroup/m2");
  EXPECT_EQ(c.native.disk_dir, "/srv/disks");
  EXPECT_EQ(c.native.snapshot_dir, "/srv/snapshots");
  EXPECT_EQ(c.native.volume_dir, "/srv/volumes");
  EXPECT_EQ(c.limits.max_disk_mib, 2048);
  EXPECT_EQ(c.server.max_disk_mib_per_client, 8192);
  EXPECT_EQ(c.server.max_snapshot_mib_per_client, 4096);
  EXPECT_EQ(c.server.max_volume_mib_per_client, 1024);
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
      {R"({"preparedDisks":65})", "preparedDisks"},
      {R"({"netnsPool":65})", "netnsPool"},
      {R"({"liveRestore":1})", "liveRestore"},
      {R"({"stateDir":1})", "stateDir"},
      {R"({"imageStore":[]})", "imageStore"},
      {R"({"imageDir":{}})", "imageDir"},
      {R"({"cgroupRoot":true})", "cgroupRoot"},
      {R"({"volumeDir":1})", "volumeDir"},
      {R"({"maxVolumeMiBPerClient":15})", "maxVolumeMiBPerClient"},
      {R"({"maxVolumeMiBPerClient":1073741825})", "maxVolumeMiBPerClient"},
      {R"({"maxSnapshotMiBPerClient":"16"})", "maxSnapshotMiBPerClient"},
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
