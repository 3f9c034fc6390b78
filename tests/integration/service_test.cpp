// mayurad's service (service::Server) against the real engine, in this
// process: the API's fixed shapes and statuses; one client never sees
// another's sandboxes; bad input gets a 4xx and changes nothing; a client
// that goes away stops its command; TLS with bearer tokens. The mayurad
// binary itself is daemon_test.cpp's.

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

#include "harness.hpp"
#include "scratch_socket.hpp"
#include "tests/support/exec_load.hpp"
#include "http_client.hpp"
#include "ws_call.hpp"
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

// Unit tests of the HTTP service (service::Server): a server over the test's
// own native provider, in this process, serving on a thread until the test
// ends. What the mayurad binary adds (its config, socket mode, signals, its
// own process) is DaemonTest's and RemoteConformance's.
class InProcessServerTest : public ScratchSocketTest {
 protected:
  void TearDown() override {
    stop_server();
    ScratchSocketTest::TearDown();
  }

  void start_server(const service::ServerOptions& options = {}, mode_t mode = 0660) {
    SandboxesOptions limits;
    limits.max_sandboxes = 8;
    limits.max_lifetime_ms = 600'000;
    limits.network = {NetworkKind::none, NetworkKind::all, NetworkKind::allowlist};
    server_ = std::make_unique<service::Server>(native_sandboxes(options_of_test()), limits, options);
    server_->listen_unix(socket_, mode);
    thread_ = std::thread([this] { server_->run(); });
  }

  void stop_server() {
    if (!server_) return;
    server_->stop();
    thread_.join();
    server_.reset();
  }

  Sandboxes remote(SandboxesOptions limits = {}) {
    if (!server_) start_server();
    limits.max_sandboxes = 8;
    limits.network = {NetworkKind::none, NetworkKind::all, NetworkKind::allowlist};
    return create_sandboxes(remote_sandboxes({.url = "unix://" + socket_}), limits);
  }

  service::HttpAnswer call(verb method, const std::string& target, const std::string& body = {}) {
    if (!server_) start_server();
    HttpCall c;
    c.method = method;
    c.target = target;
    c.body = body;
    c.timeout = std::chrono::seconds(60);
    return service::http_call(service::parse_endpoint(socket_), c);
  }

  // A request made as another user (nobody), by curl: its status and body.
  std::pair<int, std::string> as_nobody(const std::string& method, const std::string& target,
                                        const std::string& body = "") {
    const std::string out =
        run_shell("setpriv --reuid=65534 --regid=65534 --clear-groups curl -s -X " + method +
                  (body.empty() ? "" : " --data-binary '" + body + "'") + " -w '\\n%{http_code}' --unix-socket " +
                  socket_ + " 'http://mayurad" + target + "'");
    const auto nl = out.rfind('\n');
    if (nl == std::string::npos) return {0, out};
    return {std::atoi(out.c_str() + nl + 1), out.substr(0, nl)};
  }

  std::unique_ptr<service::Server> server_;
  std::thread thread_;
};

// The resources outside checks rely on, with their fixed shapes.
TEST_F(InProcessServerTest, TheFixedResourcesAnswerAsDocumented) {
  EXPECT_EQ(call(verb::get, "/v1/health").status, 200u);
  const auto created = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000, "labels": {"run": "r1"}})");
  ASSERT_EQ(created.status, 201u) << created.body;
  const json sandbox = json::parse(created.body);
  const std::string id = sandbox.at("id");
  EXPECT_EQ(sandbox.at("labels"), json({{"run", "r1"}}));
  EXPECT_EQ(sandbox.at("workdir"), "/workspace");
  EXPECT_GT(sandbox.at("expiresAt").get<std::int64_t>(), sandbox.at("createdAt").get<std::int64_t>());
  // the engine's desktop is served (DesktopTest drives it through here)
  EXPECT_EQ(sandbox.at("features").at("desktop"), true);
  EXPECT_FALSE(sandbox.contains("desktop"));
  EXPECT_EQ(json::parse(call(verb::get, "/v1/features").body).at("features").at("desktop"), true);
  EXPECT_EQ(call(verb::get, "/v1/sandboxes/" + id + "/desktop/cursor").status, 400u);

  const json listed = json::parse(call(verb::get, "/v1/sandboxes").body);
  ASSERT_EQ(listed.at("sandboxes").size(), 1u);
  EXPECT_EQ(listed["sandboxes"][0]["id"], id);
  EXPECT_EQ(json::parse(call(verb::get, "/v1/sandboxes/" + id).body).at("id"), id);

  // exec: the answer streams output lines, then ends with the result
  const auto exec = call(verb::post, "/v1/sandboxes/" + id + "/exec",
                         R"({"argv": ["sh", "-c", "cat; echo err >&2; exit 3"], "stdin": "in", "timeoutMs": 30000})");
  ASSERT_EQ(exec.status, 200u) << exec.body;
  std::vector<json> lines;
  std::size_t start = 0;
  for (auto nl = exec.body.find('\n'); nl != std::string::npos; nl = exec.body.find('\n', start)) {
    lines.push_back(json::parse(exec.body.substr(start, nl - start)));
    start = nl + 1;
  }
  ASSERT_FALSE(lines.empty());
  const json& result = lines.back();
  EXPECT_EQ(result.at("exitCode"), 3);
  EXPECT_EQ(result.at("timedOut"), false);
  EXPECT_TRUE(result.at("durationMs").is_number_integer());
  // The output is in the lines before, and the result does not repeat it.
  EXPECT_FALSE(result.contains("stdout")) << result.dump();
  EXPECT_FALSE(result.contains("stderr")) << result.dump();
  std::string streamed, streamed_err;
  for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
    if (lines[i].at("stream") == "stdout") streamed += lines[i].at("data").get<std::string>();
    if (lines[i].at("stream") == "stderr") streamed_err += lines[i].at("data").get<std::string>();
  }
  EXPECT_EQ(streamed, "in");
  EXPECT_EQ(streamed_err, "err\n");

  // files as raw bytes, both ways
  const std::string bytes("\x00\x01\xff\n binary", 10);
  EXPECT_EQ(call(verb::put, "/v1/sandboxes/" + id + "/files?path=dir%2Fb.bin", bytes).status, 204u);
  const auto read = call(verb::get, "/v1/sandboxes/" + id + "/files?path=dir/b.bin");
  EXPECT_EQ(read.status, 200u);
  EXPECT_EQ(read.body, bytes);
  EXPECT_EQ(call(verb::delete_, "/v1/sandboxes/" + id + "/files?path=dir/b.bin").status, 204u);
  const auto missing = call(verb::get, "/v1/sandboxes/" + id + "/files?path=dir/b.bin");
  EXPECT_EQ(missing.status, 412u);
  EXPECT_EQ(json::parse(missing.body).at("reason"), "NOT_FOUND");

  EXPECT_EQ(call(verb::delete_, "/v1/sandboxes/" + id).status, 204u);
  const auto released = call(verb::get, "/v1/sandboxes/" + id);
  EXPECT_TRUE(released.status == 404u || released.status == 410u) << released.status;
  EXPECT_EQ(call(verb::get, "/v1/sandboxes/0123456789abcdef").status, 404u);
  EXPECT_EQ(call(verb::post, "/v1/sandboxes/0123456789abcdef/exec", R"({"argv": ["true"]})").status, 404u);
  EXPECT_TRUE(json::parse(call(verb::get, "/v1/sandboxes").body).at("sandboxes").empty());
  const std::string metrics = call(verb::get, "/metrics").body;
  EXPECT_NE(metrics.find("mayura_creates_total 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("mayura_execs_total 1\n"), std::string::npos);
  EXPECT_NE(metrics.find("mayura_failures_total{reason=\"NOT_FOUND\"} 1\n"), std::string::npos);
  EXPECT_NE(metrics.find("mayura_exec_seconds_count 1\n"), std::string::npos);
}

// Every reason the engine gives comes back the same through the service.
// A create through remote_sandboxes cancelled while the daemon makes the
// sandbox fails CANCELLED and leaves nothing in the daemon: the provider
// takes the answer and releases what it names. Cancellations land at
// staggered moments, before, during and after the daemon's part.
TEST_F(InProcessServerTest, ARemoteCreateCancelledMidwayLeavesNoSandboxInTheDaemon) {
  Sandboxes sandboxes = remote();
  CreateOptions o;
  o.lifetime_ms = 60'000;
  int cancelled = 0;
  for (int i = 0; i < 24; ++i) {
    std::stop_source stop;
    std::thread canceller([&stop, i] {
      std::this_thread::sleep_for(std::chrono::microseconds(250 * i));
      stop.request_stop();
    });
    try {
      sandboxes.create(o, stop.get_token()).release();
    } catch (const SandboxError& e) {
      EXPECT_EQ(e.reason(), Reason::CANCELLED) << e.what();
      ++cancelled;
    }
    canceller.join();
    const auto a = call(verb::get, "/v1/sandboxes");
    ASSERT_EQ(a.status, 200u) << a.body;
    EXPECT_EQ(json::parse(a.body).at("sandboxes").size(), 0u) << "after a cancellation " << 0.25 * i << " ms in";
  }
  EXPECT_GT(cancelled, 0);
  // Every create the client saw succeed was made in the daemon; those made
  // there beyond them were cancelled after the daemon had made them, and
  // released (the listing above was empty each time).
  const std::string metrics = call(verb::get, "/metrics").body;
  const std::string sample = "\nmayura_creates_total ";
  const auto at = metrics.find(sample);
  ASSERT_NE(at, std::string::npos) << metrics;
  const int made = std::atoi(metrics.c_str() + at + sample.size());
  EXPECT_GE(made, 24 - cancelled) << made << " made in the daemon, " << 24 - cancelled << " seen made by the client";
  EXPECT_LE(made, 24);
}

TEST_F(InProcessServerTest, ReasonsRoundTripThroughTheService) {
  Sandboxes sandboxes = remote();
  auto reason = [](auto&& fn) -> std::optional<Reason> {
    try {
      fn();
    } catch (const SandboxError& e) {
      return e.reason();
    }
    return std::nullopt;
  };
  const Sandbox s = sandboxes.create({.lifetime_ms = 60'000});
  EXPECT_EQ(reason([&] { s.read_file("nothing-here"); }), Reason::NOT_FOUND);
  EXPECT_EQ(reason([&] { s.read_file("/etc/passwd", {.max_bytes = 1}); }), Reason::LIMIT_REACHED);
  EXPECT_EQ(reason([&] { s.write_file("/usr/x", "x"); }), Reason::PERMISSION_DENIED);
  EXPECT_EQ(reason([&] { sandboxes.create({.lifetime_ms = 60'000, .image = "no-such-image"}); }),
            Reason::INVALID_CONFIG);
  std::stop_source stop;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop.request_stop();
  });
  ExecOptions o;
  o.cancellation = stop.get_token();
  EXPECT_EQ(reason([&] { s.exec({"sleep", "30"}, o); }), Reason::CANCELLED);
  canceller.join();
  s.release();
  EXPECT_EQ(reason([&] { s.exec({"true"}); }), Reason::GONE);
  // the daemon's own refusals: a directory image by host path, a kind of
  // network the operator did not list
  const auto by_path = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 1000, "image": "/"})");
  EXPECT_EQ(by_path.status, 403u) << by_path.body;
  EXPECT_TRUE(json::parse(call(verb::get, "/v1/sandboxes").body).at("sandboxes").empty());
  sandboxes.close();
}

// A client sees and touches only its own sandboxes; root sees them all.
TEST_F(InProcessServerTest, AnotherClientsSandboxesAreUnknownToIt) {
  start_server({}, 0666);
  const auto created = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000})");
  ASSERT_EQ(created.status, 201u);
  const std::string id = json::parse(created.body).at("id");
  const std::string secret = "root's file";
  ASSERT_EQ(call(verb::put, "/v1/sandboxes/" + id + "/files?path=secret", secret).status, 204u);

  EXPECT_EQ(as_nobody("GET", "/v1/sandboxes/" + id).first, 404);
  EXPECT_EQ(as_nobody("GET", "/v1/sandboxes/" + id + "/files?path=secret").first, 404);
  EXPECT_EQ(as_nobody("PUT", "/v1/sandboxes/" + id + "/files?path=secret", "overwritten").first, 404);
  EXPECT_EQ(as_nobody("POST", "/v1/sandboxes/" + id + "/exec", R"({"argv": ["true"]})").first, 404);
  for (const char* desktop : {"screenshot", "cursor"}) {
    EXPECT_EQ(as_nobody("GET", "/v1/sandboxes/" + id + "/desktop/" + desktop).first, 404) << desktop;
  }
  EXPECT_EQ(as_nobody("POST", "/v1/sandboxes/" + id + "/desktop/input", R"({"action": "type", "text": "x"})").first,
            404);
  EXPECT_EQ(as_nobody("DELETE", "/v1/sandboxes/" + id).first, 404);
  const auto [status, listed] = as_nobody("GET", "/v1/sandboxes");
  EXPECT_EQ(status, 200);
  EXPECT_TRUE(json::parse(listed).at("sandboxes").empty()) << listed;
  EXPECT_EQ(call(verb::get, "/v1/sandboxes/" + id + "/files?path=secret").body, secret);

  // nobody's own sandbox: root (an admin) sees both, nobody only its own
  const auto [made, body] = as_nobody("POST", "/v1/sandboxes", R"({"lifetimeMs": 60000})");
  ASSERT_EQ(made, 201) << body;
  const std::string theirs = json::parse(body).at("id");
  EXPECT_EQ(json::parse(body).at("owner"), "uid:65534");
  EXPECT_EQ(json::parse(call(verb::get, "/v1/sandboxes").body).at("sandboxes").size(), 2u);
  const auto [status2, own] = as_nobody("GET", "/v1/sandboxes");
  ASSERT_EQ(json::parse(own).at("sandboxes").size(), 1u);
  EXPECT_EQ(json::parse(own)["sandboxes"][0]["id"], theirs);
  EXPECT_EQ(as_nobody("DELETE", "/v1/sandboxes/" + theirs).first, 204);
}

// Per-client quotas come from the server's options.
TEST_F(InProcessServerTest, AClientsQuotaHolds) {
  start_server({.max_sandboxes_per_client = 2});
  for (int i = 0; i < 2; ++i) EXPECT_EQ(call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000})").status, 201u);
  const auto third = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000})");
  EXPECT_EQ(third.status, 429u);
  EXPECT_EQ(json::parse(third.body).at("reason"), "LIMIT_REACHED");
  EXPECT_EQ(json::parse(call(verb::get, "/v1/sandboxes").body).at("sandboxes").size(), 2u);
}

// Bad input: a clear 4xx naming what is wrong, and nothing made.
TEST_F(InProcessServerTest, BadInputIsRefusedAndChangesNothing) {
  start_server({.max_json_bytes = 4096, .max_file_bytes = 1024});
  auto refused = [&](verb method, const std::string& target, const std::string& body, unsigned status,
                     const std::string& says) {
    const auto a = call(method, target, body);
    EXPECT_EQ(a.status, status) << target << " " << body.substr(0, 80) << ": " << a.body;
    EXPECT_NE(a.body.find(says), std::string::npos) << a.body;
  };
  refused(verb::post, "/v1/sandboxes", "{not json", 400, "not well-formed JSON");
  refused(verb::post, "/v1/sandboxes", "[1]", 400, "JSON object");
  refused(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 1000, "bogus": 1})", 400, "bogus");
  refused(verb::post, "/v1/sandboxes", R"({"lifetimeMs": "soon"})", 400, "lifetimeMs");
  refused(verb::post, "/v1/sandboxes", R"({})", 400, "lifetimeMs");
  refused(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 1000, "labels": {"k": )" + std::string(5000, '1') + "}}", 413,
          "larger");
  refused(verb::post, "/v1/sandboxes", std::string(40, '[') + std::string(40, ']'), 400, "nested");
  refused(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 999999999999})", 400, "lifetime");
  refused(verb::get, "/v2/sandboxes", "", 404, "no such resource");
  refused(verb::patch, "/v1/sandboxes", "", 405, "method");
  EXPECT_TRUE(json::parse(call(verb::get, "/v1/sandboxes").body).at("sandboxes").empty());

  const std::string id = json::parse(call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000})").body).at("id");
  refused(verb::put, "/v1/sandboxes/" + id + "/files?path=big", std::string(2048, 'x'), 413, "larger");
  refused(verb::put, "/v1/sandboxes/" + id + "/files", "x", 400, "path=");
  refused(verb::post, "/v1/sandboxes/" + id + "/exec", R"({"argv": "true"})", 400, "argv");
  refused(verb::post, "/v1/sandboxes/" + id + "/exec", R"({"argv": []})", 400, "");
  refused(verb::get, "/v1/sandboxes/" + id + "/url?port=x", "", 400, "port");
  EXPECT_EQ(call(verb::get, "/v1/sandboxes/" + id + "/files?path=big").status, 412u);
}

// A run (POST /v1/run) is a create, an exec and a release in one request.
// Thirty in a row by a client whose quota is one sandbox: each finds the last
// one's sandbox counted no more, though its release ends after the answer.
TEST_F(InProcessServerTest, ARunIsOneCommandInASandboxReleasedWhenItEnds) {
  start_server({.max_sandboxes_per_client = 1});
  const RemoteOptions daemon{.url = "unix://" + socket_};
  for (int i = 0; i < 30; ++i) {
    std::string streamed;
    ExecOptions exec;
    exec.stdin = "in";
    exec.on_stdout = [&](std::string_view c) { streamed.append(c); };
    const ExecResult r = remote_run(daemon, {}, {"sh", "-c", "cat; echo err >&2; exit 3"}, exec);
    EXPECT_EQ(r.exit_code, 3) << "run " << i;
    EXPECT_EQ(r.stdout, "in");
    EXPECT_EQ(r.stderr, "err\n");
    EXPECT_EQ(streamed, "in");
  }
  auto metric = [&](const std::string& name) {
    const std::string text = call(verb::get, "/metrics").body;
    const auto at = text.find("\n" + name + " ");
    return at == std::string::npos ? -1 : std::atoi(text.c_str() + at + name.size() + 2);
  };
  for (int i = 0; i < 100 && metric("mayura_sandboxes_alive") != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(metric("mayura_sandboxes_alive"), 0);
  EXPECT_TRUE(json::parse(call(verb::get, "/v1/sandboxes").body).at("sandboxes").empty());
  EXPECT_EQ(metric("mayura_creates_total"), 30);

  // Bad input is refused before anything is made.
  auto refused = [&](verb method, const std::string& body, unsigned status, const std::string& says) {
    const auto a = call(method, "/v1/run", body);
    EXPECT_EQ(a.status, status) << body << ": " << a.body;
    EXPECT_NE(a.body.find(says), std::string::npos) << a.body;
  };
  refused(verb::post, R"({"sandbox": {}, "exec": {"argv": []}})", 400, "command is empty");
  refused(verb::post, R"({"sandbox": {}, "exec": {"argv": ["true"], "env": {"1x": "y"}}})", 400, "not a valid name");
  refused(verb::post, R"({"sandbox": {"lifetimeMs": 999999999999}, "exec": {"argv": ["true"]}})", 400, "lifetime");
  refused(verb::post, R"({"sandbox": {"image": "/etc"}, "exec": {"argv": ["true"]}})", 403, "by name");
  refused(verb::post, R"({"exec": {"argv": ["true"]}})", 400, "must be");
  refused(verb::post, R"({"sandbox": {}, "exec": {"argv": ["true"]}, "more": 1})", 400, "must be");
  refused(verb::get, "", 405, "method");
  EXPECT_EQ(metric("mayura_creates_total"), 30);
}

// A run cancelled by its caller stops the command and everything it
// started, fails CANCELLED, and its sandbox is released.
TEST_F(InProcessServerTest, ARunCancelledStopsItsCommandAndReleasesItsSandbox) {
  start_server();
  std::stop_source stop;
  std::atomic<bool> started{false};
  std::optional<Reason> failed;
  std::thread caller([&] {
    ExecOptions exec;
    exec.cancellation = stop.get_token();
    exec.on_stdout = [&](std::string_view c) {
      if (c.find("started") != std::string_view::npos) started = true;
    };
    try {
      remote_run({.url = "unix://" + socket_}, {}, {"sh", "-c", "sleep 300 & sleep 301 & echo started; wait"}, exec);
    } catch (const SandboxError& e) {
      failed = e.reason();
    }
  });
  for (int i = 0; i < 1000 && !started; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(started);
  // The two sleeps, seen on the host among the sandboxes' processes.
  const auto sleeps = [&] {
    int n = 0;
    for (const pid_t pid : processes_in_range(options_of_test())) {
      const std::string argv = read_host("/proc/" + std::to_string(pid) + "/cmdline");
      if (argv == std::string("sleep\0"
                              "300\0",
                              10) ||
          argv == std::string("sleep\0"
                              "301\0",
                              10))
        ++n;
    }
    return n;
  };
  EXPECT_TRUE(eventually([&] { return sleeps() == 2; })) << sleeps();
  stop.request_stop();
  caller.join();
  EXPECT_EQ(failed, Reason::CANCELLED);
  EXPECT_TRUE(eventually([&] { return sleeps() == 0; })) << sleeps() << " sleeps left";
  std::string listed;
  for (int i = 0; i < 200; ++i) {
    listed = call(verb::get, "/v1/sandboxes").body;
    if (json::parse(listed).at("sandboxes").empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_TRUE(json::parse(listed).at("sandboxes").empty()) << listed;
}

int connect_unix(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Reads until `text` has come or the peer closed; what came.
std::string read_until(int fd, const std::string& text) {
  std::string got;
  char buf[4096];
  while (got.find(text) == std::string::npos) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got;
}

// A client too slow with its request's head is disconnected; connections
// past the bound are answered 503.
TEST_F(InProcessServerTest, SlowAndSurplusClientsAreCutOff) {
  start_server({.max_connections = 2, .header_timeout = std::chrono::milliseconds(300)});
  const int slow = connect_unix(socket_);
  ASSERT_GE(slow, 0);
  ASSERT_EQ(::send(slow, "GET /v1/hea", 11, MSG_NOSIGNAL), 11);
  EXPECT_EQ(read_until(slow, "\r\n\r\n"), "");  // closed without an answer
  ::close(slow);

  // Two connections that the server has surely counted: each is answered
  // once and stays open. (The slow one is uncounted a moment after its
  // socket is closed, so until then a new one may still be refused, and
  // closed under a write: MSG_NOSIGNAL, or SIGPIPE would kill the test
  // before its teardown and leave its cgroup root behind.)
  const auto served_and_kept = [&] {
    for (int attempt = 0; attempt < 100; ++attempt) {
      const int fd = connect_unix(socket_);
      if (fd < 0) return -1;
      const std::string ask = "GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n";
      if (::send(fd, ask.data(), ask.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(ask.size()) &&
          read_until(fd, "\r\n\r\n").starts_with("HTTP/1.1 200"))
        return fd;
      ::close(fd);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  };
  const int a = served_and_kept(), b = served_and_kept();
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  const auto surplus = call(verb::get, "/v1/health");
  EXPECT_EQ(surplus.status, 503u);
  ::close(a);
  ::close(b);
}

// A client that goes away while its command runs stops the command and
// everything it started.
TEST_F(InProcessServerTest, AClientThatGoesAwayStopsItsCommand) {
  Sandboxes sandboxes = remote();
  const Sandbox s = sandboxes.create({.lifetime_ms = 120'000});
  const int fd = connect_unix(socket_);
  ASSERT_GE(fd, 0);
  const std::string body = R"({"argv": ["sh", "-c", "sleep 300 & sleep 301 & echo started; wait"]})";
  // the daemon's id of it (the client's limits layer gives its own)
  const std::string id = json::parse(call(verb::get, "/v1/sandboxes").body).at("sandboxes").at(0).at("id");
  const std::string request = "POST /v1/sandboxes/" + id +
                              "/exec HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
                              "\r\n\r\n" + body;
  // the sandbox belongs to this process's uid (root), as the remote's does
  ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  ASSERT_NE(read_until(fd, "started").find("started"), std::string::npos);
  const std::string count =
      "n=0; for c in /proc/[0-9]*/comm; do [ \"$(cat $c 2>/dev/null)\" = sleep ] && n=$((n+1)); done; echo $n";
  // (the second sleep may not have exec'd yet when "started" comes)
  std::string running;
  EXPECT_TRUE(eventually(
      [&] {
        running = s.exec({"sh", "-c", count}).stdout;
        return running == "2\n";
      },
      std::chrono::seconds(10)))
      << running;
  ::close(fd);
  // the service kills the command's cgroup once it sees the close
  std::string left;
  for (int i = 0; i < 100; ++i) {
    left = s.exec({"sh", "-c", count}).stdout;
    if (left == "0\n") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(left, "0\n");
  sandboxes.close();
}

// A remote client's background commands are the daemon's: another
// connection reads and steers them, and every call of the contract reaches
// them there (the remote provider is a CommandHost).
TEST_F(InProcessServerTest, ARemoteClientsCommandsLiveInTheDaemon) {
  Sandboxes sandboxes = remote();
  const Sandbox s = sandboxes.create({.lifetime_ms = 120'000});
  const CommandInfo repl =
      s.start({"sh", "-c", "echo started; while read l; do echo \"got $l\"; done; echo bye >&2; exit 4"});
  EXPECT_EQ(repl.id, "c1");
  const std::string id = json::parse(call(verb::get, "/v1/sandboxes").body).at("sandboxes").at(0).at("id");
  const std::string base = "/v1/sandboxes/" + id + "/commands/c1";
  // Another connection sees it, and types into it.
  EXPECT_EQ(json::parse(call(verb::get, base).body).at("state"), "running");
  ASSERT_EQ(call(verb::post, base + "/input", R"({"data": "one\n"})").status, 204u);
  s.write_input("c1", "two\n");
  std::string out, err;
  AttachOptions attach;
  attach.on_stdout = [&](std::string_view c) {
    out += c;
    if (out.find("got two\n") != std::string::npos && out.find("got one\n") != std::string::npos) s.close_input("c1");
  };
  attach.on_stderr = [&](std::string_view c) { err += c; };
  attach.timeout_ms = 30'000;
  const CommandInfo ended = s.attach("c1", attach);
  EXPECT_EQ(ended.state, CommandState::exited);
  EXPECT_EQ(ended.exit_code, 4);
  EXPECT_EQ(out, "started\ngot one\ngot two\n");
  EXPECT_EQ(err, "bye\n");
  EXPECT_EQ(s.output("c1", OutputStream::out, 8).data, "got one\ngot two\n");
  EXPECT_EQ(json::parse(call(verb::get, base + "/output?stream=stderr").body).at("data"), "bye\n");

  // Stopped with all it started, through the remote; a wait that runs out
  // says it still runs.
  const CommandInfo tree = s.start({"sh", "-c", "setsid sleep 300 & sleep 301"});
  EXPECT_EQ(s.wait(tree.id, 200).state, CommandState::running);
  EXPECT_EQ(s.stop(tree.id).state, CommandState::stopped);
  EXPECT_EQ(s.exec({"sh", "-c", "cat /proc/[0-9]*/comm | grep -c sleep || true"}).stdout, "0\n");
  // A terminal's size, and a signal.
  const CommandInfo tty =
      s.start({"sh", "-c", "trap 'stty size; exit 7' USR1; echo ready; while :; do sleep 0.1; done"},
              {.terminal = TerminalSize{30, 100}});
  EXPECT_TRUE(tty.terminal);
  ASSERT_TRUE(eventually([&] { return s.output(tty.id, OutputStream::out).data.find("ready") != std::string::npos; }));
  s.resize(tty.id, {40, 120});
  s.signal(tty.id, SIGUSR1);
  const CommandInfo trapped = s.wait(tty.id, 10'000);
  EXPECT_EQ(trapped.exit_code, 7);
  EXPECT_NE(s.output(tty.id, OutputStream::out).data.find("40 120"), std::string::npos);
  const std::vector<CommandInfo> all = s.commands();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[2].id, tty.id);

  // The daemon's refusals, with their reasons.
  EXPECT_EQ(reason_of([&] { s.command("c99"); }), Reason::NOT_FOUND);
  EXPECT_EQ(reason_of([&] { s.resize("c1", {10, 10}); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { s.write_input("c1", "late"); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { s.command("C1!"); }), Reason::INVALID_INPUT);
  sandboxes.close();
}

// An attachment is a WebSocket: what is held from an offset, then the output
// as it comes; input and controls the other way, a refused one answered
// without ending it; a request that is no upgrade, or names what is not
// there, refused with its reason. Terminals and streamed input through the
// remote provider are commands attached to.
TEST_F(InProcessServerTest, AnAttachmentIsAWebSocket) {
  Sandboxes sandboxes = remote();
  EXPECT_TRUE(sandboxes.features().terminal);
  EXPECT_TRUE(sandboxes.features().interactive);
  const Sandbox s = sandboxes.create({.lifetime_ms = 120'000});
  const std::string id = json::parse(call(verb::get, "/v1/sandboxes").body).at("sandboxes").at(0).at("id");
  const CommandInfo cat = s.start({"sh", "-c", "printf abcdef; exec cat"});
  ASSERT_TRUE(eventually([&] { return s.command(cat.id).stdout_bytes == 6; }));
  const std::string base = "/v1/sandboxes/" + id + "/commands/" + cat.id;

  // Without follow, from an offset: what is held from there, and the
  // command as it is.
  std::string out;
  AttachOptions now;
  now.follow = false;
  now.stdout_from = 2;
  now.on_stdout = [&](std::string_view c) { out += c; };
  EXPECT_EQ(s.attach(cat.id, now).state, CommandState::running);
  EXPECT_EQ(out, "cdef");

  // Raw: a malformed control is answered and the session goes on; input
  // typed over it comes back as output, then the end.
  auto sender = std::make_shared<service::WsSender>();
  std::vector<std::pair<std::string, bool>> got;
  service::WsCall ws;
  ws.target = base + "/attach?stdoutFrom=6";
  ws.sender = sender;
  ws.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  ws.on_message = [&](std::string_view data, bool binary) {
    got.emplace_back(std::string(data), binary);
    if (got.size() == 1) sender->send("typed\n", true);
    if (got.size() == 2) sender->send(R"({"closeInput": true})", false);
  };
  sender->send(R"({"signal": 99})", false);
  const service::WsOutcome outcome = service::ws_call(service::parse_endpoint(socket_), ws);
  EXPECT_TRUE(outcome.closed);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_FALSE(got[0].second);
  EXPECT_EQ(json::parse(got[0].first).at("reason"), "INVALID_INPUT") << got[0].first;
  EXPECT_TRUE(got[1].second);
  EXPECT_EQ(got[1].first, std::string("\x01typed\n"));
  EXPECT_EQ(json::parse(got[2].first).at("command").at("state"), "exited") << got[2].first;

  // A stop over the attachment: the command and what it started end, and
  // the last message says so.
  const CommandInfo tree = s.start({"sh", "-c", "sleep 300 & echo up; wait"});
  ASSERT_TRUE(eventually([&] { return s.command(tree.id).stdout_bytes == 3; }));
  auto stopper = std::make_shared<service::WsSender>();
  std::vector<std::string> heard;
  service::WsCall stop_call;
  stop_call.target = "/v1/sandboxes/" + id + "/commands/" + tree.id + "/attach";
  stop_call.sender = stopper;
  stop_call.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  stop_call.on_message = [&](std::string_view data, bool) {
    heard.emplace_back(data);
    if (heard.size() == 1) stopper->send(R"({"stop": true})", false);
  };
  EXPECT_TRUE(service::ws_call(service::parse_endpoint(socket_), stop_call).closed);
  ASSERT_EQ(heard.size(), 2u);
  EXPECT_EQ(heard[0], std::string("\x01up\n"));
  EXPECT_EQ(json::parse(heard[1]).at("command").at("state"), "stopped") << heard[1];
  EXPECT_EQ(s.command(tree.id).state, CommandState::stopped);
  EXPECT_EQ(s.exec({"sh", "-c", "for c in /proc/[0-9]*/comm; do cat $c; done | grep -c sleep; true"}).stdout, "0\n");

  // Refusals, each with its reason, before any upgrade.
  EXPECT_EQ(call(verb::get, base + "/attach").status, 426u);
  EXPECT_EQ(call(verb::get, base + "/attach?stdoutFrom=-1").status, 400u);
  EXPECT_EQ(call(verb::get, base + "/attach?follow=maybe").status, 400u);
  EXPECT_EQ(call(verb::get, "/v1/sandboxes/" + id + "/commands/c99/attach").status, 412u);
  EXPECT_EQ(reason_of([&] { s.attach("c99", {}); }), Reason::NOT_FOUND);

  // A terminal and streamed input through the remote provider.
  ExecOptions tty;
  tty.terminal = TerminalSize{30, 100};
  EXPECT_EQ(s.exec({"sh", "-c", "stty size; exit 5"}, tty).exit_code, 5);
  EXPECT_EQ(s.exec({"stty", "size"}, tty).stdout, "30 100\r\n");
  ExecOptions typed;
  typed.on_start = [](const std::shared_ptr<CommandControl>& control) {
    control->write("one\n");
    control->close_input();
  };
  const ExecResult echoed = s.exec({"cat"}, typed);
  EXPECT_EQ(echoed.exit_code, 0);
  EXPECT_EQ(echoed.stdout, "one\n");
  // Cancelled: the command is stopped, and the exec fails CANCELLED.
  std::stop_source stop;
  ExecOptions cancelled;
  cancelled.terminal = TerminalSize{};
  cancelled.cancellation = stop.get_token();
  cancelled.on_stdout = [&stop](std::string_view) { stop.request_stop(); };
  EXPECT_EQ(reason_of([&] { s.exec({"sh", "-c", "echo up; sleep 300"}, cancelled); }), Reason::CANCELLED);
  for (const CommandInfo& c : s.commands()) EXPECT_NE(c.state, CommandState::running) << c.id;
  // Released, its commands went with it (the daemon held them).
  s.release();
  EXPECT_EQ(reason_of([&] { s.command(cat.id); }), Reason::GONE);
  EXPECT_EQ(reason_of([&] { s.attach(cat.id, {}); }), Reason::GONE);
  sandboxes.close();
}

// Over TLS, a bearer token names the client: the contract works through
// remote_sandboxes with the token and the server's CA; a wrong token, or
// none, is refused PERMISSION_DENIED (401) before anything is made; a client
// that does not trust the server's certificate never gets a request through.
TEST_F(InProcessServerTest, TlsWithBearerTokens) {
  make_certificate(dir_, "server");
  make_certificate(dir_, "stranger");  // a CA that signed nothing of the server's
  SandboxesOptions limits;
  limits.max_sandboxes = 8;
  limits.max_lifetime_ms = 600'000;
  const std::string token = "alice-0123456789abcdef";
  server_ = std::make_unique<service::Server>(native_sandboxes(options_of_test()), limits, service::ServerOptions{});
  server_->listen_tls("127.0.0.1", 0, {read_host(dir_ + "/server.pem"), read_host(dir_ + "/server.key")},
                      {{token, "alice"}});
  ASSERT_NE(server_->tls_port(), 0);
  thread_ = std::thread([this] { server_->run(); });
  const std::string url = "https://127.0.0.1:" + std::to_string(server_->tls_port());
  const std::string ca = dir_ + "/server.pem";

  // A raw request with a token (or none): its answer.
  auto raw = [&](const std::string& with_token, verb method, const std::string& target, const std::string& body = {}) {
    service::Endpoint e = service::parse_endpoint(url);
    e.token = with_token;
    e.ca_file = ca;
    HttpCall c;
    c.method = method;
    c.target = target;
    c.body = body;
    c.timeout = std::chrono::seconds(60);
    return service::http_call(e, c);
  };

  {
    Sandboxes sandboxes =
        create_sandboxes(remote_sandboxes({.url = url, .token = token, .ca_file = ca}), {.max_sandboxes = 4});
    const Sandbox s = sandboxes.create({.lifetime_ms = 60'000});
    const ExecResult r = s.exec({"echo", "hi"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.stdout, "hi\n");
    s.write_file("over-tls", "bytes");
    EXPECT_EQ(s.read_file("over-tls"), "bytes");
    // A terminal over TLS: a command attached to through a WebSocket there.
    ExecOptions tty;
    tty.terminal = TerminalSize{12, 34};
    EXPECT_EQ(s.exec({"stty", "size"}, tty).stdout, "12 34\r\n");
    // the daemon knows the sandbox as the token's client's
    const auto listed = raw(token, verb::get, "/v1/sandboxes");
    ASSERT_EQ(listed.status, 200u) << listed.body;
    const json all = json::parse(listed.body).at("sandboxes");
    ASSERT_EQ(all.size(), 1u) << listed.body;
    EXPECT_EQ(all[0].at("owner"), "token:alice");  // never a Unix peer's name
    s.release();
    sandboxes.close();
  }

  for (const std::string& bad : {std::string("alice-0123456789abcdeX"), std::string()}) {
    SCOPED_TRACE(bad.empty() ? "no token" : "a wrong token");
    EXPECT_EQ(reason_of([&] { remote_sandboxes({.url = url, .token = bad, .ca_file = ca}); }),
              Reason::PERMISSION_DENIED);
    const auto refused = raw(bad, verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000})");
    EXPECT_EQ(refused.status, 401u) << refused.body;
    EXPECT_EQ(json::parse(refused.body).at("reason"), "PERMISSION_DENIED") << refused.body;
  }
  const auto after = raw(token, verb::get, "/v1/sandboxes");
  EXPECT_TRUE(json::parse(after.body).at("sandboxes").empty()) << after.body;

  // Neither the system's CAs nor another CA vouch for the server.
  for (const std::string& untrusting : {std::string(), dir_ + "/stranger.pem"}) {
    std::string message;
    EXPECT_EQ(reason_of([&] { remote_sandboxes({.url = url, .token = token, .ca_file = untrusting}); }, &message),
              Reason::INTERNAL)
        << message;
    EXPECT_NE(message.find("certificate verify failed"), std::string::npos) << message;
  }
  // Plain HTTP to the TLS port gets no answer.
  const std::string plain =
      run_shell("curl -s -m 10 -o /dev/null -w '%{http_code}' http://127.0.0.1:" + std::to_string(server_->tls_port()) +
                "/v1/health");
  EXPECT_EQ(plain, "000");
}

}  // namespace
}  // namespace mayura::testing
