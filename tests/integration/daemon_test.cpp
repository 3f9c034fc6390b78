// The mayurad binary, as an operator runs it against the real engine: the
// whole conformance suite through remote_sandboxes over its socket; it
// releases everything on SIGTERM and cleans up after a SIGKILL; bad
// settings are refused at start; execs and file calls hold no thread each.

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <stop_token>
#include <thread>

#include "conformance_here.hpp"
#include "harness.hpp"
#include "scratch_socket.hpp"
#include "tests/support/exec_load.hpp"
#include "http_client.hpp"
#include "mayura/remote.hpp"
#include "mayura/service/server.hpp"
#include "mayura/testing/conformance.hpp"

// Options are written as a user writes them, naming only what matters.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace mayura::testing {
namespace {

using nlohmann::json;
using service::HttpCall;
using verb = boost::beast::http::verb;

std::vector<std::string> remote_suite_names() {
  std::vector<std::string> names;
  for (const auto& t : sandbox_conformance()) names.push_back(t.name);
  return names;
}

// The mayurad binary, as systemd runs it. The test process is the
// daemon's subreaper, as systemd is a service's: what a killed daemon
// leaves is reparented here, and reaped once killed.
class DaemonTest : public ScratchSocketTest {
 protected:
  void SetUp() override {
    ScratchSocketTest::SetUp();
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  }
  void TearDown() override {
    reap_orphans();
    ScratchSocketTest::TearDown();
  }
  // Waits (a bounded while) until no orphan of ours is left unreaped.
  void reap_orphans() {
    for (int i = 0; i < 200; ++i) {
      while (::waitpid(-1, nullptr, WNOHANG) > 0) {
      }
      if (processes_in_range(options_of_test()).empty()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  pid_t start_daemon(const json& extra = json::object()) {
    std::ofstream(dir_ + "/mayurad.json") << daemon_config(options_of_test(), socket_, extra).dump();
    const pid_t pid = start_mayurad(MAYURAD_PATH, dir_ + "/mayurad.json", false);
    EXPECT_TRUE(wait_until_served(socket_)) << "mayurad did not serve " << socket_;
    return pid;
  }
  int wait_for(pid_t pid) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return status;
  }
  service::HttpAnswer daemon_call(verb method, const std::string& target, const std::string& body = {}) {
    HttpCall c{method, target, body, "", std::chrono::seconds(60), {}, {}};
    return service::http_call(service::parse_endpoint(socket_), c);
  }
};
// The conformance suite through the real daemon: mayurad started from its
// config file, as an operator starts it, with the test's own places; every
// test of the suite through remote_sandboxes over its socket.
class RemoteConformance : public DaemonTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void TearDown() override {
    if (daemon_ > 0) {
      ::kill(daemon_, SIGTERM);
      const int status = wait_for(daemon_);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "mayurad ended with " << status;
    }
    DaemonTest::TearDown();
  }
  pid_t daemon_ = -1;
};

TEST_P(RemoteConformance, Passes) {
  const auto& suite = sandbox_conformance();
  const auto it =
      std::find_if(suite.begin(), suite.end(), [](const ConformanceTest& t) { return t.name == GetParam(); });
  ASSERT_NE(it, suite.end());
  daemon_ = start_daemon(
      {{"maxSandboxes", 8}, {"maxLifetimeMs", 600'000}, {"network", {"none", "all", "allow"}}, {"socketMode", "0600"}});
  SandboxesOptions limits;
  limits.max_sandboxes = 8;
  limits.network = {NetworkKind::none, NetworkKind::all, NetworkKind::allowlist};
  Sandboxes sandboxes = create_sandboxes(remote_sandboxes({.url = "unix://" + socket_}), limits);
  const Sandbox sandbox = sandboxes.create({.lifetime_ms = 120'000});
  expect_conformance(it->name, it->run({sandbox, sandboxes}));
  sandboxes.close();
}

INSTANTIATE_TEST_SUITE_P(Remote, RemoteConformance, ::testing::ValuesIn(remote_suite_names()),
                         [](const ::testing::TestParamInfo<std::string>& param) { return param.param; });

// Background commands live in mayurad: each call below is a connection of
// its own, so a command started on one is read, written to, waited for and
// stopped on others after the first has closed. Stopping one ends every
// process it started; bad ids, offsets and bodies are refused with their
// reason.
TEST_F(DaemonTest, BackgroundCommandsLiveInTheDaemonAcrossConnections) {
  const pid_t daemon = start_daemon({{"maxLifetimeMs", 600'000}});
  const auto created = daemon_call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 120000})");
  ASSERT_EQ(created.status, 201u) << created.body;
  const std::string id = json::parse(created.body).at("id");
  const std::string base = "/v1/sandboxes/" + id + "/commands";
  const auto started = daemon_call(
      verb::post, base,
      R"({"argv": ["sh", "-c", "echo up; while read l; do echo got-$l; done; echo bye >&2; exit 3"], "keepBytes": 4096})");
  ASSERT_EQ(started.status, 201u) << started.body;
  const json command = json::parse(started.body);
  EXPECT_EQ(command.at("state"), "running");
  const std::string at = base + "/" + command.at("id").get<std::string>();

  EXPECT_EQ(daemon_call(verb::post, at + "/input", R"({"data": "one\n"})").status, 204u);
  // Its output as it comes: read from where the last read ended.
  std::string out;
  std::uint64_t next = 0;
  for (int i = 0; i < 300 && out.find("got-one\n") == std::string::npos; ++i) {
    const auto a = daemon_call(verb::get, at + "/output?stream=stdout&from=" + std::to_string(next));
    ASSERT_EQ(a.status, 200u) << a.body;
    const json slice = json::parse(a.body);
    EXPECT_EQ(slice.at("dropped"), 0);
    out += slice.at("data").get<std::string>();
    next = slice.at("next");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(out, "up\ngot-one\n");
  const auto listed = daemon_call(verb::get, base);
  ASSERT_EQ(listed.status, 200u);
  ASSERT_EQ(json::parse(listed.body).at("commands").size(), 1u);
  EXPECT_EQ(json::parse(listed.body).at("commands")[0].at("argv")[0], "sh");

  EXPECT_EQ(daemon_call(verb::post, at + "/input", R"({"data": "two\n", "close": true})").status, 204u);
  const auto waited = daemon_call(verb::get, at + "/wait?timeoutMs=30000");
  ASSERT_EQ(waited.status, 200u) << waited.body;
  const json ended = json::parse(waited.body);
  EXPECT_EQ(ended.at("state"), "exited");
  EXPECT_EQ(ended.at("exitCode"), 3);
  EXPECT_EQ(ended.at("stdoutBytes"), std::string("up\ngot-one\ngot-two\n").size());
  const auto err = daemon_call(verb::get, at + "/output?stream=stderr");
  EXPECT_EQ(json::parse(err.body).at("data"), "bye\n");

  // Stopped with all it started: a child, one in a session of its own, one
  // ignoring SIGTERM. Counted afterwards by a command of the same sandbox.
  const auto sleeper = daemon_call(
      verb::post, base,
      R"({"argv": ["sh", "-c", "sleep 1000 & setsid sleep 1000 & (trap '' TERM; sleep 1000) & echo started; wait"]})");
  ASSERT_EQ(sleeper.status, 201u) << sleeper.body;
  const std::string sleeping = base + "/" + json::parse(sleeper.body).at("id").get<std::string>();
  for (int i = 0; i < 300; ++i) {
    if (json::parse(daemon_call(verb::get, sleeping).body).at("stdoutBytes") > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const auto stopped = daemon_call(verb::post, sleeping + "/stop");
  ASSERT_EQ(stopped.status, 200u) << stopped.body;
  EXPECT_EQ(json::parse(stopped.body).at("state"), "stopped");
  const auto counter =
      daemon_call(verb::post, base,
                  R"({"argv": ["sh", "-c", "for p in /proc/[0-9]*; do cat $p/comm; done | grep -c sleep; true"]})");
  ASSERT_EQ(counter.status, 201u) << counter.body;
  const std::string counting = base + "/" + json::parse(counter.body).at("id").get<std::string>();
  EXPECT_EQ(json::parse(daemon_call(verb::get, counting + "/wait").body).at("state"), "exited");
  EXPECT_EQ(json::parse(daemon_call(verb::get, counting + "/output").body).at("data"), "0\n");

  // Refused with their reason, before anything runs.
  const auto reason = [](const service::HttpAnswer& a) { return json::parse(a.body).at("reason").get<std::string>(); };
  EXPECT_EQ(daemon_call(verb::get, base + "/c99").status, 412u);
  EXPECT_EQ(reason(daemon_call(verb::get, base + "/C!x")), "INVALID_INPUT");
  EXPECT_EQ(daemon_call(verb::get, "/v1/sandboxes/no-such-sandbox/commands").status, 404u);
  EXPECT_EQ(reason(daemon_call(verb::get, at + "/output?stream=stdin")), "INVALID_INPUT");
  EXPECT_EQ(reason(daemon_call(verb::get, at + "/output?from=-1")), "INVALID_INPUT");
  EXPECT_EQ(reason(daemon_call(verb::get, at + "/wait?timeoutMs=60001")), "INVALID_INPUT");
  EXPECT_EQ(reason(daemon_call(verb::post, at + "/input", R"({"data": "late"})")), "INVALID_INPUT");
  // A bad signal, and a resize without a terminal, to a command still running.
  const auto running = daemon_call(verb::post, base, R"({"argv": ["sleep", "1000"]})");
  ASSERT_EQ(running.status, 201u) << running.body;
  const std::string runs = base + "/" + json::parse(running.body).at("id").get<std::string>();
  for (const char* signal : {R"({"signal": 0})", R"({"signal": 65})", R"({"signal": -1})", R"({"signal": "TERM"})"}) {
    EXPECT_EQ(reason(daemon_call(verb::post, runs + "/signal", signal)), "INVALID_INPUT") << signal;
  }
  EXPECT_EQ(reason(daemon_call(verb::post, runs + "/resize", R"({"rows": 24, "columns": 80})")), "INVALID_INPUT");
  EXPECT_EQ(json::parse(daemon_call(verb::get, runs).body).at("state"), "running");
  EXPECT_EQ(json::parse(daemon_call(verb::post, runs + "/stop").body).at("state"), "stopped");
  EXPECT_EQ(reason(daemon_call(verb::post, base, R"({"argv": []})")), "INVALID_INPUT");
  EXPECT_EQ(reason(daemon_call(verb::post, base, R"({"argv": ["true"], "keepBytes": 10})")), "INVALID_INPUT");
  EXPECT_EQ(reason(daemon_call(verb::post, base, R"({"argv": ["true"], "terminal": {"rows": 0, "columns": 80}})")),
            "INVALID_INPUT");
  EXPECT_EQ(reason(daemon_call(verb::post, base, R"({"argv": ["true"], "colour": "blue"})")), "INVALID_INPUT");

  ::kill(daemon, SIGTERM);
  const int status = wait_for(daemon);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST_F(DaemonTest, SigtermReleasesEverySandboxAndLeavesNothing) {
  const pid_t pid = start_daemon();
  std::string id;
  for (int i = 0; i < 2; ++i) {
    const auto a = daemon_call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000})");
    ASSERT_EQ(a.status, 201u) << a.body;
    id = json::parse(a.body).at("id");
  }
  EXPECT_EQ(daemon_call(verb::post, "/v1/sandboxes/" + id + "/exec", R"({"argv": ["sh", "-c", "sleep 300 &"]})").status,
            200u);
  EXPECT_FALSE(processes_in_range(options_of_test()).empty());
  ::kill(pid, SIGTERM);
  const int status = wait_for(pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_FALSE(std::filesystem::exists(socket_));
  // TearDown checks that no process, cgroup, mount or record is left
}

TEST_F(DaemonTest, ADaemonStartedAfterASigkillRemovesWhatTheDeadOneLeft) {
  pid_t pid = start_daemon();
  const auto a = daemon_call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000})");
  ASSERT_EQ(a.status, 201u) << a.body;
  const std::string id = json::parse(a.body).at("id");
  EXPECT_EQ(daemon_call(verb::post, "/v1/sandboxes/" + id + "/exec", R"({"argv": ["sh", "-c", "setsid sleep 300 &"]})")
                .status,
            200u);
  ::kill(pid, SIGKILL);
  wait_for(pid);
  EXPECT_FALSE(processes_in_range(options_of_test()).empty()) << "the killed daemon's sandbox should still be there";
  pid = start_daemon();
  EXPECT_EQ(daemon_call(verb::get, "/v1/health").status, 200u);
  reap_orphans();  // the new daemon killed them; their parent is now this process
  EXPECT_TRUE(processes_in_range(options_of_test()).empty());
  EXPECT_EQ(daemon_call(verb::get, "/v1/sandboxes/" + id).status, 404u);
  ::kill(pid, SIGTERM);
  wait_for(pid);
}

TEST_F(DaemonTest, PlainTcpAndBadSettingsAreRefusedAtStart) {
  const std::string out = run_shell(std::string(MAYURAD_PATH) + " --listen 127.0.0.1:8080 2>&1; echo \"exit $?\"");
  EXPECT_NE(out.find("plain TCP is refused"), std::string::npos) << out;
  EXPECT_NE(out.find("exit 2"), std::string::npos) << out;
  std::ofstream(dir_ + "/bad.json") << R"({"maxSandboxes": 0})";
  const std::string bad = run_shell(std::string(MAYURAD_PATH) + " --config " + dir_ + "/bad.json --check-config 2>&1");
  EXPECT_NE(bad.find("maxSandboxes"), std::string::npos) << bad;
  std::ofstream(dir_ + "/unknown.json") << R"({"maxSandbox": 3})";
  const std::string unknown =
      run_shell(std::string(MAYURAD_PATH) + " --config " + dir_ + "/unknown.json --check-config 2>&1");
  EXPECT_NE(unknown.find("maxSandbox is no setting"), std::string::npos) << unknown;
}

// Threads stay bounded however many execs run: 500 `sleep 5` at once, each
// on a connection of its own, over 5 sandboxes. The daemon waits for them
// on its reactor, so it holds no thread per exec (nor per connection).
TEST_F(DaemonTest, FiveHundredExecsAtOnceHoldNoThreadEach) {
  const pid_t pid = start_daemon({{"maxSandboxes", 5}, {"maxSandboxesPerClient", 5}, {"maxConnections", 1024}});
  struct Stop {
    pid_t pid;
    ~Stop() {
      if (pid > 0) ::kill(pid, SIGTERM);  // (an assertion that returned early)
    }
  } stop{pid};
  std::vector<std::string> ids;
  ids.reserve(5);
  // A lifetime as long as ctest lets the test run: under an emulated cpu
  // beside another VM, the 500 execs took 118 s, and a 120 s lifetime ended
  // the sandboxes under the last of them.
  for (int i = 0; i < 5; ++i) ids.push_back(load::create(socket_, 600'000));
  ASSERT_EQ(std::count(ids.begin(), ids.end(), std::string()), 0);
  // The daemon's threads, warm: one exec each way through it first.
  ASSERT_EQ(load::run_execs(socket_, pid, ids, 10, R"(["true"])").succeeded, 10);
  const std::size_t idle = load::threads_of(pid);
  const auto started = load::Clock::now();
  const load::Outcome out = load::run_execs(socket_, pid, ids, 500, R"(["sleep", "5"])");
  const double took = std::chrono::duration<double>(load::Clock::now() - started).count();
  EXPECT_EQ(out.succeeded, 500) << ::testing::PrintToString(out.failures);
  EXPECT_LE(out.peak_threads, idle + 2) << "idle " << idle;
  std::printf("500 execs of sleep 5: %.1f s in all; daemon threads idle %zu, at most %zu; RSS at most %zu KiB\n", took,
              idle, out.peak_threads, out.peak_rss_kib);
  ::kill(pid, SIGTERM);
  EXPECT_EQ(wait_for(pid), 0);
  stop.pid = -1;
}

}  // namespace
}  // namespace mayura::testing

namespace mayura::testing {
namespace {

// File calls wait for the sandbox on the daemon's reactor, not on a thread:
// with more file calls stalled than the daemon has blocking threads (a
// sandbox frozen, so its file helper cannot answer), every other request is
// still answered at once, and the stalled calls all end once it thaws.
TEST_F(DaemonTest, FileCallsStalledOnAFrozenSandboxHoldNoThread) {
  const pid_t pid = start_daemon();
  struct Stop {
    pid_t pid;
    ~Stop() {
      if (pid > 0) ::kill(pid, SIGTERM);
    }
  } stop{pid};
  const std::string id = load::create(socket_, 120'000);
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(daemon_call(verb::put, "/v1/sandboxes/" + id + "/files?path=note", "kept").status, 204u);
  // The sandbox's cgroup: the only one below the engine's root.
  std::string sandbox_cgroup;
  for (const auto& e : std::filesystem::directory_iterator(options_of_test().cgroup_root)) {
    if (e.is_directory()) sandbox_cgroup = e.path();
  }
  ASSERT_FALSE(sandbox_cgroup.empty());
  ASSERT_TRUE(std::filesystem::exists(sandbox_cgroup + "/cgroup.freeze"))
      << "this kernel has no cgroup2 freezer (Linux 5.2), which the test stalls a sandbox with";
  auto freeze = [&](const char* value) { std::ofstream(sandbox_cgroup + "/cgroup.freeze") << value; };
  freeze("1");
  struct Thaw {
    std::function<void()> thaw;
    ~Thaw() { thaw(); }
  } thaw{[&] { freeze("0"); }};
  for (int i = 0; i < 200 && read_host(sandbox_cgroup + "/cgroup.events").find("frozen 1") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_NE(read_host(sandbox_cgroup + "/cgroup.events").find("frozen 1"), std::string::npos)
      << read_host(sandbox_cgroup + "/cgroup.events");

  // Twice as many reads as the daemon has blocking threads, each stalled.
  // The daemon counts a request once it has taken it up: the 16 reads are
  // all in it when its count has risen by 16 (the metrics are no request).
  const auto requests = [&] {
    const std::string text = daemon_call(verb::get, "/metrics").body;
    const auto at = text.find("\nmayura_requests_total ");
    return at == std::string::npos ? -1L : std::atol(text.c_str() + at + 23);
  };
  const long before = requests();
  ASSERT_GE(before, 0);
  std::vector<int> reads;
  for (int i = 0; i < 16; ++i) {
    const int fd = load::connect_to(socket_);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(load::send_all(fd, load::request("GET", "/v1/sandboxes/" + id + "/files?path=note", "")));
    reads.push_back(fd);
  }
  ASSERT_TRUE(eventually([&] { return requests() == before + 16; }, std::chrono::seconds(30))) << requests();
  for (const int fd : reads) {
    pollfd p{fd, POLLIN, 0};
    EXPECT_EQ(::poll(&p, 1, 0), 0) << "a read of a frozen sandbox answered";
  }
  // Meanwhile the daemon answers what goes through its blocking threads
  // (its list, a sandbox's details), while every read is still stalled: an
  // order, not a timing (the old pool answered only after the reads ended).
  EXPECT_EQ(daemon_call(verb::get, "/v1/sandboxes").status, 200u);
  EXPECT_EQ(daemon_call(verb::get, "/v1/sandboxes/" + id).status, 200u);
  for (const int fd : reads) {
    pollfd p{fd, POLLIN, 0};
    EXPECT_EQ(::poll(&p, 1, 0), 0) << "a read answered before the thaw";
  }

  freeze("0");
  for (const int fd : reads) {
    std::string answer;
    char buf[4096];
    pollfd p{fd, POLLIN, 0};
    while (::poll(&p, 1, 30'000) == 1) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) break;
      answer.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
    EXPECT_EQ(answer.substr(answer.size() - 4), "kept") << answer;
  }
  EXPECT_EQ(daemon_call(verb::delete_, "/v1/sandboxes/" + id).status, 204u);
  ::kill(pid, SIGTERM);
  EXPECT_EQ(wait_for(pid), 0);
  stop.pid = -1;
}

}  // namespace
}  // namespace mayura::testing
