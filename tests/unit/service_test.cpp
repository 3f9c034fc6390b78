// The service's pure parts: the wire's JSON shapes of every request and
// answer, and what each refuses, and the HTTP status of each failure
// reason. (Bytes and bodies: service_bytes_test.cpp; the shares of
// clients: service_shares_test.cpp; mayurad's settings and tokens files:
// daemon_config_test.cpp.)
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

#include "service/memory_budget.hpp"
#include "service/client_pace.hpp"
#include "service/per_client.hpp"
#include "service/status.hpp"
#include "service/wire.hpp"
#include "tools/daemon_config.hpp"
#include "tests/support/reason_of.hpp"
#include "mayura/resource_limits.hpp"
#include "service_test_support.hpp"

namespace mayura {
namespace {

using nlohmann::json;
using testing::bytes;
using testing::expect_refused;
using testing::over_the_wire;
using testing::reason_of;

constexpr std::array<Reason, 9> kReasons = {Reason::INVALID_INPUT, Reason::INVALID_CONFIG, Reason::PERMISSION_DENIED,
                                            Reason::GONE,          Reason::CANCELLED,      Reason::LIMIT_REACHED,
                                            Reason::NOT_FOUND,     Reason::UNSUPPORTED,    Reason::INTERNAL};

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
  const std::array<bool Features::*, 12> flags = {&Features::stdin,    &Features::ports,   &Features::desktop,
                                                  &Features::cpus,     &Features::memory,  &Features::pids,
                                                  &Features::seccomp,  &Features::pause,   &Features::disk,
                                                  &Features::snapshot, &Features::volumes, &Features::disk_io};
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
      {{{"lifetimeMs", 1}, {"memoryMiB", kMinMemoryMib - 1}}, "memoryMiB"},
      {{{"lifetimeMs", 1}, {"memoryMiB", kMaxMemoryMib + 1}}, "memoryMiB"},
      {{{"lifetimeMs", 1}, {"pids", 0}}, "pids"},
      {{{"lifetimeMs", 1}, {"pids", kMaxPids + 1}}, "pids"},
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

// The wire's ranges are the contract's own (mayura/resource_limits.hpp), so a
// value the HTTP API takes is one the limits layer takes.
TEST(ServiceCreate, TakesTheBoundsOfEachRange) {
  const CreateOptions o = service::create_from(json{{"lifetimeMs", std::numeric_limits<std::int64_t>::max()},
                                                    {"ports", {1, 65535}},
                                                    {"memoryMiB", kMaxMemoryMib},
                                                    {"pids", kMaxPids},
                                                    {"cpus", 0}});
  EXPECT_EQ(o.lifetime_ms, std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(o.ports, (std::vector<int>{1, 65535}));
  EXPECT_EQ(o.memory_mib, kMaxMemoryMib);
  EXPECT_EQ(o.pids, kMaxPids);
  EXPECT_EQ(service::create_from(json{{"lifetimeMs", 1}, {"memoryMiB", kMinMemoryMib}}).memory_mib, kMinMemoryMib);
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

}  // namespace
}  // namespace mayura
