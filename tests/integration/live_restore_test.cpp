// Live restore, with the real mayurad: sandboxes outlive the daemon's
// SIGKILL and SIGTERM, and the next daemon on the same state takes them
// back: a counter counts on in the same process, files stay, a published
// port answers on the same URL, an allowlist reaches its allowed host again
// and nothing else. A lifetime that ends while no daemon runs ends the
// sandbox; an exec under way when the daemon dies fails clearly for its
// client while its command runs on; `mayurad --release-all` and a daemon
// with liveRestore off leave nothing.

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "http_client.hpp"
#include "mayura/remote.hpp"
#include "scratch_socket.hpp"
#include "tests/world/world.hpp"

// Options are written as a user writes them, naming only what matters.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace mayura::testing {
namespace {

using nlohmann::json;
using service::HttpCall;
using verb = boost::beast::http::verb;
using namespace std::chrono_literals;

class LiveRestoreTest : public ScratchSocketTest {
 protected:
  void SetUp() override {
    ScratchSocketTest::SetUp();
    // As systemd is a service's: what a dead daemon leaves is reparented
    // here, and reaped once it ends.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  }
  void TearDown() override {
    if (daemon_ > 0) {
      ::kill(daemon_, SIGTERM);
      ::waitpid(daemon_, nullptr, 0);
    }
    // Whatever a test left running goes the operator's way.
    release_all();
    ScratchSocketTest::TearDown();
  }

  void write_config(const json& extra = json::object()) {
    json settings = {{"liveRestore", true}};
    settings.update(extra);
    std::ofstream(config_path()) << daemon_config(options_of_test(), socket_, settings).dump();
  }
  std::string config_path() const { return dir_ + "/mayurad.json"; }

  // Starts mayurad (its config written first if none is); its stderr kept.
  void start() {
    if (!std::filesystem::exists(config_path())) write_config();
    daemon_ = start_mayurad(MAYURAD_PATH, config_path(), false);
    ASSERT_TRUE(wait_until_served(socket_)) << "mayurad did not serve " << socket_;
  }
  // The daemon dies as the OOM killer or a bug would end it.
  void kill_daemon(int signal = SIGKILL) {
    ::kill(daemon_, signal);
    int status = 0;
    ::waitpid(daemon_, &status, 0);
    if (signal == SIGTERM) {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    }
    daemon_ = -1;
  }
  std::string release_all() {
    std::string out = run_shell(std::string(MAYURAD_PATH) + " --config " + config_path() + " --release-all 2>&1");
    reap_orphans();
    return out;
  }
  void reap_orphans() {
    for (int i = 0; i < 500; ++i) {
      while (::waitpid(-1, nullptr, WNOHANG) > 0) {
      }
      if (processes_in_range(options_of_test()).empty()) return;
      std::this_thread::sleep_for(10ms);
    }
  }

  service::HttpAnswer call(verb method, const std::string& target, const std::string& body = {}) {
    HttpCall c{method, target, body, "", std::chrono::seconds(60), {}, {}};
    return service::http_call(service::parse_endpoint(socket_), c);
  }
  std::string create(const json& options) {
    const auto a = call(verb::post, "/v1/sandboxes", options.dump());
    EXPECT_EQ(a.status, 201u) << a.body;
    return a.status == 201 ? json::parse(a.body).at("id").get<std::string>() : std::string();
  }
  // A command's stdout, from the daemon's NDJSON stream; "" if it failed.
  std::string sh(const std::string& id, const std::string& script) {
    const auto a = call(verb::post, "/v1/sandboxes/" + id + "/exec", json{{"argv", {"sh", "-c", script}}}.dump());
    if (a.status != 200) return "status " + std::to_string(a.status) + ": " + a.body;
    std::string out;
    std::istringstream lines(a.body);
    for (std::string line; std::getline(lines, line);) {
      const json j = json::parse(line);
      if (j.contains("stream") && j.at("stream") == "stdout") out += j.at("data").get<std::string>();
    }
    return out;
  }

  pid_t daemon_ = -1;
};

// A counter started before a SIGKILL counts on in the same process after
// the next daemon takes its sandbox back, under the same id and labels; a
// file written before is read after; a published port answers on its URL.
TEST_F(LiveRestoreTest, ASandboxOutlivesASigkilledDaemonAndTheNextTakesItBack) {
  start();
  const std::string id = create({{"lifetimeMs", 120'000}, {"ports", {8080}}, {"labels", {{"job", "restore"}}}});
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(sh(id,
               "(i=0; while :; do i=$((i+1)); echo $i > /tmp/count; sleep 0.05; done) >/dev/null 2>&1 & "
               "echo $! > /tmp/counter.pid"),
            "");
  ASSERT_EQ(call(verb::put, "/v1/sandboxes/" + id + "/files?path=kept.txt", "written before").status, 204u);
  EXPECT_EQ(sh(id, "echo served > index.html; python3 -m http.server 8080 >/dev/null 2>&1 &"), "");
  const auto url = call(verb::get, "/v1/sandboxes/" + id + "/url?port=8080");
  ASSERT_EQ(url.status, 200u) << url.body;
  const std::string before = json::parse(url.body).at("url");
  const int host_port = std::stoi(before.substr(before.rfind(':') + 1));
  // (Python's start takes seconds under an emulated cpu.)
  ASSERT_TRUE(eventually([&] { return fetch_as(0, host_port).find("served") != std::string::npos; }, 60s));
  const std::string counter = sh(id, "cat /tmp/counter.pid");
  const int counted = std::stoi(sh(id, "cat /tmp/count"));

  kill_daemon();
  EXPECT_FALSE(processes_in_range(options_of_test()).empty()) << "the sandbox ended with its daemon";
  std::this_thread::sleep_for(300ms);
  start();

  EXPECT_EQ(sh(id, "cat /tmp/counter.pid"), counter);
  EXPECT_EQ(sh(id, "kill -0 $(cat /tmp/counter.pid) && echo alive"), "alive\n");
  EXPECT_GT(std::stoi(sh(id, "cat /tmp/count")), counted);
  const auto file = call(verb::get, "/v1/sandboxes/" + id + "/files?path=kept.txt");
  EXPECT_EQ(file.body, "written before");
  const auto details = call(verb::get, "/v1/sandboxes/" + id);
  ASSERT_EQ(details.status, 200u) << details.body;
  EXPECT_EQ(json::parse(details.body).at("labels").at("job"), "restore") << details.body;
  const auto again = call(verb::get, "/v1/sandboxes/" + id + "/url?port=8080");
  ASSERT_EQ(again.status, 200u) << again.body;
  EXPECT_EQ(json::parse(again.body).at("url"), before);
  const std::string fetched = fetch_as(0, host_port);
  EXPECT_NE(fetched.find("served"), std::string::npos) << fetched;
  // It ends as any sandbox does.
  EXPECT_EQ(call(verb::delete_, "/v1/sandboxes/" + id).status, 204u);
  reap_orphans();
  EXPECT_TRUE(processes_in_range(options_of_test()).empty());
}

// A sandbox with a disk and a volume, paused as the daemon dies, is taken
// back paused, with both: its files on them are there once it resumes, a
// snapshot of its disk works, and its volume is free once it is released.
TEST_F(LiveRestoreTest, ADiskAVolumeAndAPauseOutliveTheDaemon) {
  start();
  ASSERT_EQ(call(verb::post, "/v1/volumes", R"({"name": "data", "sizeMiB": 32})").status, 201u);
  const std::string id =
      create({{"lifetimeMs", 120'000}, {"diskMiB", 64}, {"volumes", {{{"name", "data"}, {"path", "/data"}}}}});
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(sh(id, "echo on-disk > kept.txt && echo on-volume > /data/kept.txt && sync"), "");
  ASSERT_EQ(call(verb::post, "/v1/sandboxes/" + id + "/pause").status, 204u);
  kill_daemon();
  start();
  const auto details = call(verb::get, "/v1/sandboxes/" + id);
  ASSERT_EQ(details.status, 200u) << details.body;
  EXPECT_TRUE(json::parse(details.body).at("paused").get<bool>()) << details.body;
  ASSERT_EQ(call(verb::post, "/v1/sandboxes/" + id + "/resume").status, 204u);
  EXPECT_EQ(sh(id, "cat kept.txt /data/kept.txt"), "on-disk\non-volume\n");
  const auto snapshot = call(verb::post, "/v1/sandboxes/" + id + "/snapshot", R"({"name": "after"})");
  EXPECT_EQ(snapshot.status, 201u) << snapshot.body;
  EXPECT_EQ(call(verb::delete_, "/v1/volumes/data").status, 400u) << "a volume in use was removed";
  EXPECT_EQ(call(verb::delete_, "/v1/sandboxes/" + id).status, 204u);
  EXPECT_TRUE(eventually([&] { return call(verb::delete_, "/v1/volumes/data").status == 204u; }, 20s));
  EXPECT_EQ(call(verb::delete_, "/v1/snapshots/after").status, 204u);
  reap_orphans();
}

// A daemon whose start fails after it took the sandboxes back (here: its
// socket's path is taken by a file) leaves them running for the next start.
TEST_F(LiveRestoreTest, AStartThatFailsLeavesTheSandboxesForTheNext) {
  start();
  const std::string id = create({{"lifetimeMs", 120'000}});
  EXPECT_EQ(sh(id, "setsid sleep 300 >/dev/null 2>&1 &"), "");
  kill_daemon();
  const std::string taken = dir_ + "/taken";
  std::ofstream(taken) << "no socket";
  write_config({{"socket", taken}});
  const pid_t failing = start_mayurad(MAYURAD_PATH, config_path(), false);
  int status = 0;
  ::waitpid(failing, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status;
  EXPECT_FALSE(processes_in_range(options_of_test()).empty()) << "a failed start ended the sandboxes";
  write_config();
  start();
  EXPECT_EQ(sh(id, "pgrep -x sleep >/dev/null && echo running"), "running\n");
}

// SIGTERM (systemctl stop, restart, an upgrade) leaves every sandbox
// running, as SIGKILL does; `mayurad --release-all` then ends them all and
// leaves nothing (the leak check of TearDown).
TEST_F(LiveRestoreTest, SigtermLeavesEverySandboxAndReleaseAllLeavesNothing) {
  start();
  for (int i = 0; i < 2; ++i) {
    const std::string id = create({{"lifetimeMs", 120'000}});
    EXPECT_EQ(sh(id, "setsid sleep 300 >/dev/null 2>&1 &"), "");
  }
  kill_daemon(SIGTERM);
  EXPECT_FALSE(processes_in_range(options_of_test()).empty());
  const std::string out = release_all();
  EXPECT_NE(out.find("released 2 sandboxes"), std::string::npos) << out;
  EXPECT_TRUE(processes_in_range(options_of_test()).empty());
  EXPECT_EQ(release_all().find("released 0 sandboxes") != std::string::npos, true);
}

// With no daemon there, the init ends its sandbox at its deadline; the
// next daemon finds nothing to take back, and removes what is left of it.
TEST_F(LiveRestoreTest, ALifetimeThatEndsWhileNoDaemonRunsEndsTheSandbox) {
  start();
  const std::string id = create({{"lifetimeMs", 2'000}});
  EXPECT_EQ(sh(id, "setsid sleep 300 >/dev/null 2>&1 &"), "");
  kill_daemon();
  EXPECT_TRUE(eventually(
      [&] {
        while (::waitpid(-1, nullptr, WNOHANG) > 0) {
        }
        return processes_in_range(options_of_test()).empty();
      },
      20s))
      << "the sandbox outlived its lifetime";
  start();
  EXPECT_EQ(call(verb::get, "/v1/sandboxes/" + id).status, 404u);
}

// An exec under way as the daemon dies ends for its client with an error
// that says so; its command runs on to its end in the sandbox, which the
// next daemon serves.
TEST_F(LiveRestoreTest, AnExecUnderWayWhenTheDaemonDiesFailsClearlyAndItsCommandRunsOn) {
  start();
  SandboxesOptions limits;
  Sandboxes remote = create_sandboxes(remote_sandboxes({.url = "unix://" + socket_}), limits);
  const Sandbox sandbox = remote.create({.lifetime_ms = 120'000});
  auto running = std::async(std::launch::async, [&] {
    return sandbox.exec({"sh", "-c", "sleep 1.5; echo finished > /workspace/after"});
  });
  std::this_thread::sleep_for(500ms);
  kill_daemon();
  try {
    running.get();
    ADD_FAILURE() << "the exec returned as if the daemon had answered";
  } catch (const SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("mayurad stopped or restarted"), std::string::npos) << e.what();
  }
  start();
  // The daemon's id for it (the client's limits layer has its own).
  const auto listed = call(verb::get, "/v1/sandboxes");
  ASSERT_EQ(listed.status, 200u) << listed.body;
  const std::string id = json::parse(listed.body).at("sandboxes").at(0).at("id");
  EXPECT_TRUE(eventually([&] { return sh(id, "cat /workspace/after 2>/dev/null") == "finished\n"; }, 10s));
  remote.close();
}

// A daemon with liveRestore off releases, as it starts, what one with it on
// left; and on SIGTERM it releases its own.
TEST_F(LiveRestoreTest, ADaemonWithLiveRestoreOffReleasesWhatAnEarlierOneKept) {
  start();
  const std::string id = create({{"lifetimeMs", 120'000}});
  EXPECT_EQ(sh(id, "setsid sleep 300 >/dev/null 2>&1 &"), "");
  kill_daemon();
  write_config({{"liveRestore", false}});
  start();
  reap_orphans();
  EXPECT_TRUE(processes_in_range(options_of_test()).empty());
  EXPECT_EQ(call(verb::get, "/v1/sandboxes/" + id).status, 404u);
  stop_mayurad(daemon_, options_of_test());
  daemon_ = -1;
}

// An allowlist sandbox reaches its allowed host again once the next daemon
// runs its DNS server and proxy, and still nothing else; network all's
// link is made again. The world is the test's own (tests/world).
class LiveRestoreNetworkTest : public LiveRestoreTest {
 protected:
  void SetUp() override {
    enter_own_network_namespace();
    world_.emplace();
    LiveRestoreTest::SetUp();
    write_config({{"network", {"none", "allow", "all"}},
                  {"dnsServers", {World::kDnsAddress}},
                  {"publicRanges", {"203.0.113.0/24"}}});
  }
  void TearDown() override {
    LiveRestoreTest::TearDown();
    world_.reset();
  }
  std::optional<World> world_;
};

TEST_F(LiveRestoreNetworkTest, AllowlistAndAllReachTheWorldAgainAfterARestart) {
  start();
  const std::string allow = create({{"lifetimeMs", 120'000}, {"network", {{"allow", {"allowed.test"}}}}});
  const std::string all = create({{"lifetimeMs", 120'000}, {"network", "all"}});
  ASSERT_FALSE(allow.empty());
  ASSERT_FALSE(all.empty());
  const std::string get = "curl -sS --max-time 20 --noproxy '*' ";
  EXPECT_NE(sh(allow, get + "http://allowed.test/").find("hello from 203.0.113.10"), std::string::npos);
  kill_daemon();
  start();
  EXPECT_NE(sh(allow, get + "http://allowed.test/").find("hello from 203.0.113.10"), std::string::npos);
  EXPECT_EQ(sh(allow, get + "http://other.test/ >/dev/null 2>&1 || echo refused"), "refused\n");
  EXPECT_NE(sh(all, get + "http://203.0.113.10/").find("hello from 203.0.113.10"), std::string::npos);
  EXPECT_NE(sh(all, "getent ahostsv4 allowed.test").find("203.0.113.10"), std::string::npos);
  // Its network changes as any sandbox's, and the next daemon makes the new one.
  ASSERT_EQ(call(verb::put, "/v1/sandboxes/" + allow + "/network", R"({"network": {"allow": ["other.test"]}})").status,
            204u);
  kill_daemon();
  start();
  EXPECT_NE(sh(allow, get + "http://other.test/").find("hello from 203.0.113.11"), std::string::npos);
  EXPECT_EQ(sh(allow, get + "http://allowed.test/ >/dev/null 2>&1 || echo refused"), "refused\n");
}

}  // namespace
}  // namespace mayura::testing
