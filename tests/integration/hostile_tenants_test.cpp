// Tenants who try to take mayurad down, starve the others or reach what is
// not theirs, each against the real daemon (the mayurad binary, started from
// its config file with the test's own places, in a network namespace of the
// test's own), and what they are held to: the daemon answers its other
// clients meanwhile, every ceiling of the operator's holds, and nothing
// outlives the client that asked for it.

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "hostile_tenant.hpp"

namespace mayura::testing {
namespace {

// Tokenless TLS clients: each is answered 401 once its request's head is
// read, before any of its body, and its connection closed; a body a client
// sends anyway never grows the daemon; and those that hold connections open
// take the TLS listener's share, never the Unix socket's, nor more than one
// address's own share.
TEST_F(HostileTenantTest, TokenlessTlsClientsAreRefusedAtTheHeadAndLockNoLocalClientOut) {
  start({{"maxConnections", 4}, {"maxConnectionsPerClient", 2}, {"tls", tls_settings()}});
  // The head alone, announcing 60 MiB: the answer comes without the body.
  {
    TlsClient client;
    ASSERT_TRUE(client.handshaken());
    ASSERT_TRUE(
        client.send("PUT /v1/sandboxes/x/files?path=a HTTP/1.1\r\nHost: mayurad\r\n"
                    "Content-Length: 62914560\r\n\r\n"));
    bool closed = false;
    const std::string answer = client.read_all(closed);
    EXPECT_EQ(answer.rfind("HTTP/1.1 401", 0), 0u) << answer;
    EXPECT_TRUE(closed) << "the connection stayed open after the 401";
  }
  // Three clients that send their 60 MiB bodies anyway, at once.
  const std::size_t before_kib = load::rss_kib_of(daemon_);
  {
    std::vector<std::thread> senders;
    senders.reserve(3);
    for (int i = 0; i < 3; ++i) {
      senders.emplace_back([] {
        TlsClient client;
        if (!client.handshaken()) return;
        const std::string request =
            "PUT /v1/sandboxes/x/files?path=a HTTP/1.1\r\nHost: mayurad\r\nContent-Length: 62914560\r\n\r\n";
        client.send(request);
        const std::string mib(1 << 20, 'x');
        for (int m = 0; m < 60 && client.send(mib); ++m) {
        }
      });
    }
    for (auto& t : senders) t.join();
  }
  const std::size_t after_kib = load::rss_kib_of(daemon_);
  EXPECT_LT(after_kib, before_kib + 32 * 1024) << "RSS " << before_kib << " KiB -> " << after_kib << " KiB";
  // Tokenless clients that hold their connections open (a handshake, then
  // nothing): one address holds its share (2) and no more.
  std::vector<std::unique_ptr<Background>> holders;
  holders.reserve(4);
  for (int i = 0; i < 4; ++i) {
    holders.push_back(std::make_unique<Background>(
        "sleep 120 | openssl s_client -quiet -connect 127.0.0.1:" + std::to_string(kTlsPort) + " >/dev/null 2>&1"));
  }
  EXPECT_TRUE(eventually([&] { return metric("mayura_connections_open") == 2 + 1; }, std::chrono::seconds(30)))
      << metric("mayura_connections_open") << " open (2 holders and the metrics call expected)";
  EXPECT_TRUE(eventually(
      [&] {
        return std::count_if(holders.begin(), holders.end(), [](const auto& h) { return h->runs("openssl"); }) == 2;
      },
      std::chrono::seconds(30)))
      << "the holders past the address's share were not closed";
  // Meanwhile a local client is served: its listener's budget is its own.
  EXPECT_EQ(call(verb::get, "/v1/health").status, 200u);
  const auto made = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000})");
  ASSERT_EQ(made.status, 201u) << made.body;
  EXPECT_EQ(call(verb::delete_, "/v1/sandboxes/" + json::parse(made.body).at("id").get<std::string>()).status, 204u);
}

// The operator's ceilings: a create over any is refused 400 naming the
// setting, before anything is made; one at them gets exactly what it asked
// for in its cgroups; the engine's root holds the totals; and a client's
// sandboxes together stay under its memory.
TEST_F(HostileTenantTest, CreatesOverTheCeilingsAreRefusedAndTheCgroupsHoldWhatWasAccepted) {
  start({{"maxCpus", 1},
         {"maxMemoryMiB", 256},
         {"maxPids", 64},
         {"maxPorts", 1},
         {"maxMemoryMiBPerClient", 384},
         {"defaultMemoryMiB", 128},
         {"totalMemoryMiB", 1024},
         {"totalPids", 512}});
  for (const auto& [body, setting] : std::vector<std::pair<std::string, std::string>>{
           {R"({"lifetimeMs": 60000, "cpus": 2})", "maxCpus"},
           {R"({"lifetimeMs": 60000, "memoryMiB": 1048576})", "maxMemoryMiB"},
           {R"({"lifetimeMs": 60000, "memoryMiB": 257})", "maxMemoryMiB"},
           {R"({"lifetimeMs": 60000, "pids": 4194304})", "maxPids"},
           {R"({"lifetimeMs": 60000, "ports": [3000, 3001]})", "maxPorts"}}) {
    const auto a = call(verb::post, "/v1/sandboxes", body);
    EXPECT_EQ(a.status, 400u) << body << ": " << a.body;
    EXPECT_NE(a.body.find(setting), std::string::npos) << body << ": " << a.body;
    EXPECT_NE(a.body.find("INVALID_INPUT"), std::string::npos) << a.body;
  }
  EXPECT_EQ(metric("mayura_creates_total"), 0);
  EXPECT_EQ(only_sandbox_cgroup(), "");

  // At the ceilings: the cgroups say so.
  const auto a = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000, "cpus": 1, "memoryMiB": 256, "pids": 64})");
  ASSERT_EQ(a.status, 201u) << a.body;
  const std::string name = only_sandbox_cgroup();
  ASSERT_FALSE(name.empty());
  const cgroups::Host host = cgroups::detect_host();
  const std::string root_name = std::filesystem::path(options().cgroup_root).filename();
  const auto on = [&](const cgroups::Controller& c) {
    return c.v2 ? options().cgroup_root : c.v1 + "/" + root_name;  // the engine's root there
  };
  ASSERT_TRUE(host.memory.available() && host.pids.available()) << host.describe();
  const std::string memory_file = host.memory.v2 ? "memory.max" : "memory.limit_in_bytes";
  EXPECT_EQ(read_host(on(host.memory) + "/" + name + "/" + memory_file), std::to_string(256 << 20) + "\n");
  EXPECT_EQ(read_host(on(host.pids) + "/" + name + "/commands/pids.max"), "64\n");
  // The engine's root: the totals.
  EXPECT_EQ(read_host(on(host.memory) + "/" + memory_file), std::to_string(std::uint64_t{1024} << 20) + "\n");
  EXPECT_EQ(read_host(on(host.pids) + "/pids.max"), "512\n");

  // The client's memory: 256 held, 128 (the default, which every create
  // gets) more fits, then nothing more.
  const auto b = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000})");
  ASSERT_EQ(b.status, 201u) << b.body;
  const auto c = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000, "memoryMiB": 16})");
  EXPECT_EQ(c.status, 400u) << c.body;
  EXPECT_NE(c.body.find("maxMemoryMiBPerClient"), std::string::npos) << c.body;
  EXPECT_EQ(metric("mayura_creates_total"), 2);
  // A release gives its share back.
  EXPECT_EQ(call(verb::delete_, "/v1/sandboxes/" + json::parse(b.body).at("id").get<std::string>()).status, 204u);
  EXPECT_EQ(call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000, "memoryMiB": 128})").status, 201u);
}

// A client past its share that asks again at once, over and over, is
// answered 503 (with Retry-After) only after a pause each time: it costs
// the daemon a connection a second, not thousands. Past as many paused
// refusals as its share, its connections are closed at once, unanswered.
TEST_F(HostileTenantTest, AClientRetryingPastItsShareIsAnsweredOnlyAfterAPause) {
  const group* nogroup = ::getgrgid(65534);
  ASSERT_NE(nogroup, nullptr) << "this host has no group 65534, which the test gives the socket";
  start({{"maxConnectionsPerClient", 2}, {"socketGroup", nogroup->gr_name}});
  const std::optional<std::string> seen = output_as(65534, [this](int out) {
    const auto answer = [](int fd) {
      std::string text;
      char buf[4096];
      for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
      return text;
    };
    // its share, held (each answered once, so the daemon has counted both)
    std::vector<int> held;
    for (int i = 0; i < 2; ++i) {
      held.push_back(load::connect_to(socket_));
      load::send_all(held.back(), "GET /v1/health HTTP/1.1\r\nHost: mayurad\r\n\r\n");
      char buf[12];
      if (::read(held.back(), buf, sizeof buf) != 12) write_to(out, "unanswered ");
    }
    int refused = 0, other = 0;
    for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
         std::chrono::steady_clock::now() < until;) {
      const int fd = load::connect_to(socket_);
      load::send_all(fd, load::request("GET", "/v1/health", ""));
      const std::string text = answer(fd);
      ::close(fd);
      ++(text.rfind("HTTP/1.1 503", 0) == 0 && text.find("Retry-After: 1\r\n") != std::string::npos ? refused : other);
    }
    write_to(out, "loop " + std::to_string(refused) + " " + std::to_string(other) + " ");
    std::vector<int> burst;
    for (int i = 0; i < 6; ++i) {
      burst.push_back(load::connect_to(socket_));
      load::send_all(burst.back(), load::request("GET", "/v1/health", ""));
    }
    int answered = 0, closed = 0;
    for (const int fd : burst) {
      ++(answer(fd).rfind("HTTP/1.1 503", 0) == 0 ? answered : closed);
      ::close(fd);
    }
    write_to(out, "burst " + std::to_string(answered) + " " + std::to_string(closed));
    for (const int fd : held) ::close(fd);
  });
  ASSERT_TRUE(seen) << "the client as 65534 failed";
  int refused = -1, other = -1, answered = -1, closed = -1;
  ASSERT_EQ(std::sscanf(seen->c_str(), "loop %d %d burst %d %d", &refused, &other, &answered, &closed), 4) << *seen;
  // a second's pause each: three seconds of asking get three answers at most
  EXPECT_GE(refused, 1);
  EXPECT_LE(refused, 4);
  EXPECT_EQ(other, 0);
  EXPECT_EQ(answered, 2);
  EXPECT_EQ(closed, 4);
  EXPECT_EQ(metric("mayura_share_refusals_total"), refused + 6);
  EXPECT_EQ(call(verb::get, "/v1/health").status, 200u);
}

// Disks are reserved on the host whole: one create's is bounded by
// maxDiskMiB, a client's together by maxDiskMiBPerClient, each refusal
// naming its setting before anything is made.
TEST_F(HostileTenantTest, DisksOverTheCeilingsAreRefusedNamingThem) {
  start({{"maxDiskMiB", 64}, {"maxDiskMiBPerClient", 96}});
  const auto big = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000, "diskMiB": 128})");
  EXPECT_EQ(big.status, 400u);
  EXPECT_NE(big.body.find("maxDiskMiB"), std::string::npos) << big.body;
  const auto first = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000, "diskMiB": 64})");
  ASSERT_EQ(first.status, 201u) << first.body;
  const auto second = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000, "diskMiB": 64})");
  EXPECT_EQ(second.status, 400u);
  EXPECT_NE(second.body.find("maxDiskMiBPerClient"), std::string::npos) << second.body;
  EXPECT_EQ(call(verb::delete_, "/v1/sandboxes/" + json::parse(first.body).at("id").get<std::string>()).status, 204u);
  const auto third = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000, "diskMiB": 64})");
  EXPECT_EQ(third.status, 201u) << third.body;
}

// A client asking in a loop is served at its rate of requests, after a
// second's burst: a loop of cheap requests (each costs the daemon a fifth of
// a millisecond of cpu, and a client may loop on many connections) takes
// no more of the daemon than the rate allows. Root is not paced.
TEST_F(HostileTenantTest, AClientAskingInALoopIsServedAtItsRate) {
  const group* nogroup = ::getgrgid(65534);
  ASSERT_NE(nogroup, nullptr) << "this host has no group 65534, which the test gives the socket";
  // A rate any machine asks faster than (a request takes well under a
  // quarter of a second even in a slow VM), so that the pacing is the cause.
  start({{"clientRequestsPerSecond", 4}, {"socketGroup", nogroup->gr_name}});
  const std::optional<std::string> seen = output_as(65534, [this](int out) {
    int ok = 0;
    const auto started = std::chrono::steady_clock::now();
    for (int i = 0; i < 16; ++i) ok += load::call(socket_, "GET", "/v1/health").rfind("HTTP/1.1 200", 0) == 0;
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
    write_to(out, std::to_string(ok) + " " + std::to_string(took.count()));
  });
  ASSERT_TRUE(seen) << "the client as 65534 failed";
  int ok = -1;
  long took_ms = -1;
  ASSERT_EQ(std::sscanf(seen->c_str(), "%d %ld", &ok, &took_ms), 2) << *seen;
  EXPECT_EQ(ok, 16);
  // 4 in the burst, the other 12 at 4 a second: three seconds at least.
  EXPECT_GE(took_ms, 2700);
  const long paced = metric("mayura_paced_requests_total");
  EXPECT_GE(paced, 8);
  for (int i = 0; i < 16; ++i) ASSERT_EQ(call(verb::get, "/v1/health").status, 200u);
  EXPECT_EQ(metric("mayura_paced_requests_total"), paced);
}

// Each client is a tenant of the engine's: its sandboxes split one cpu
// weight, so a client with three sandboxes weighs no more on a contended
// cpu than one with a single sandbox.
TEST_F(HostileTenantTest, EachClientsSandboxesSplitOneCpuWeight) {
  start({{"tls", tls_settings()}});
  const cgroups::Host host = cgroups::detect_host();
  ASSERT_TRUE(host.cpu.available()) << host.describe();
  const std::string base = host.cpu.v2
                               ? options().cgroup_root
                               : host.cpu.v1 + "/" + std::filesystem::path(options().cgroup_root).filename().string();
  const auto weights = [&] {
    std::multiset<std::string> found;
    for (const auto& e : std::filesystem::directory_iterator(base)) {
      if (e.is_directory()) found.insert(read_host(e.path().string() + (host.cpu.v2 ? "/cpu.weight" : "/cpu.shares")));
    }
    return found;
  };
  std::vector<std::string> roots;
  for (int i = 0; i < 3; ++i) {
    const auto made = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000})");
    ASSERT_EQ(made.status, 201u) << made.body;
    roots.push_back(json::parse(made.body).at("id"));
  }
  const auto hers = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000})", kToken);
  ASSERT_EQ(hers.status, 201u) << hers.body;
  EXPECT_EQ(weights(), (std::multiset<std::string>{"256\n", "256\n", "256\n", "1024\n"}));
  EXPECT_EQ(call(verb::delete_, "/v1/sandboxes/" + roots[0]).status, 204u);
  std::multiset<std::string> now = weights();
  for (int i = 0; i < 1000 && now != std::multiset<std::string>{"512\n", "512\n", "1024\n"}; ++i, ::usleep(10000))
    now = weights();
  EXPECT_EQ(now, (std::multiset<std::string>{"512\n", "512\n", "1024\n"}));
}

// One local client (an ordinary uid) holds its share of the connections and
// no more: one past it is answered 503, and others are served meanwhile.
TEST_F(HostileTenantTest, OneLocalClientHoldsItsShareOfConnectionsAndNoMore) {
  const group* nogroup = ::getgrgid(65534);
  ASSERT_NE(nogroup, nullptr) << "this host has no group 65534, which the test gives the socket";
  start({{"maxConnectionsPerClient", 2}, {"socketGroup", nogroup->gr_name}});
  // As uid and gid 65534: two connections kept open, each answered once (so
  // the daemon has counted both), then a third while they are held.
  const std::optional<std::string> statuses = output_as(65534, [this](int out) {
    const auto health = [&out](int fd, bool keep) {
      if (fd < 0) return write_to(out, "none ");
      // (a connection past the share is answered and closed at once: the
      // send may then fail, and the answer is still there to read)
      load::send_all(
          fd, keep ? "GET /v1/health HTTP/1.1\r\nHost: mayurad\r\n\r\n" : load::request("GET", "/v1/health", ""));
      char buf[64] = {};
      const ssize_t n = ::read(fd, buf, 12);
      write_to(out, n == 12 ? std::string_view(buf + 9, 3) : "none");
      write_to(out, " ");
    };
    const int first = load::connect_to(socket_);
    const int second = load::connect_to(socket_);
    health(first, true);
    health(second, true);
    const int third = load::connect_to(socket_);
    health(third, false);
  });
  ASSERT_TRUE(statuses) << "the client as 65534 failed";
  EXPECT_EQ(*statuses, "200 200 503 ");
  EXPECT_EQ(call(verb::get, "/v1/health").status, 200u);
}

// A tenant whose calls block holds its share of the blocking threads and
// no more. Its desktop's X server is grabbed by a program of its own, so
// each of its desktop actions waits out the desktop's timeout on a blocking
// thread; it asks for as many as the pool has threads. Two of them run, the
// rest wait for its own turns, and another client's create, exec and
// release are all answered before the first of those actions is.
TEST_F(HostileTenantTest, ATenantsStalledDesktopCallsHoldOnlyItsShareOfTheBlockingThreads) {
  start({{"maxConnectionsPerClient", 16}, {"tls", tls_settings()}});
  const auto made = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 300000, "desktop": true})", kToken);
  ASSERT_EQ(made.status, 201u) << made.body;
  const std::string sandbox = "/v1/sandboxes/" + json::parse(made.body).at("id").get<std::string>();
  ASSERT_EQ(call(verb::put, sandbox + "/files?path=/workspace/x_client", read_host(X_CLIENT_PATH), kToken).status,
            204u);
  const auto exec = [&](const std::string& script) {
    const json argv = {{"argv", {"sh", "-c", script}}};
    return call(verb::post, sandbox + "/exec", argv.dump(), kToken).body;
  };
  exec("chmod 755 /workspace/x_client && (/workspace/x_client /workspace/log grab >/dev/null 2>&1 &)");
  ASSERT_TRUE(eventually([&] { return exec("cat /workspace/log").find("grabbed") != std::string::npos; },
                         std::chrono::seconds(60)))
      << "the X client did not grab the server";

  constexpr int kActions = 8;  // the daemon's blocking threads
  std::atomic<int> answered{0};
  std::vector<unsigned> statuses(kActions);
  std::vector<std::thread> actions;
  actions.reserve(kActions);
  for (int i = 0; i < kActions; ++i) {
    actions.emplace_back([&, i] {
      statuses[static_cast<std::size_t>(i)] = call(verb::get, sandbox + "/desktop/screenshot", {}, kToken).status;
      ++answered;
    });
  }
  // All of them taken in: on a blocking thread, or waiting for a turn.
  ASSERT_TRUE(eventually(
      [&] { return metric("mayura_blocking_calls_running") + metric("mayura_blocking_calls_waiting") >= kActions; }));
  EXPECT_LE(metric("mayura_blocking_calls_running"), 2);
  // Another client, meanwhile: its whole cycle answered before any action.
  well_behaved_cycle();
  EXPECT_EQ(answered.load(), 0) << "the other client waited for a stalled action";
  // Let go: the X client killed, the actions still waiting are answered.
  exec("for p in /proc/[0-9]*; do [ \"$(cat $p/comm)\" = x_client ] && kill ${p#/proc/}; done; true");
  for (std::thread& t : actions) t.join();
  for (const unsigned status : statuses) EXPECT_TRUE(status == 200 || status == 500) << status;
  EXPECT_EQ(metric("mayura_blocking_calls_running"), 0);
  EXPECT_EQ(metric("mayura_blocking_calls_waiting"), 0);
}

// A tenant's waits for its background commands hold no thread of the
// daemon's, however many: its own blocking calls, and everyone else's, are
// answered while they wait, and each wait answers at the command's end.
TEST_F(HostileTenantTest, ATenantsCommandWaitsHoldNoThread) {
  start({{"maxConnectionsPerClient", 32}});
  const auto made = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 120000})");
  ASSERT_EQ(made.status, 201u) << made.body;
  const std::string commands = "/v1/sandboxes/" + json::parse(made.body).at("id").get<std::string>() + "/commands";
  ASSERT_EQ(call(verb::post, commands, R"({"argv": ["sleep", "300"]})").status, 201u);
  constexpr int kWaits = 24;  // three times the daemon's blocking threads
  std::atomic<int> answered{0};
  std::vector<std::string> states(kWaits);
  std::vector<std::thread> waits;
  waits.reserve(kWaits);
  for (int i = 0; i < kWaits; ++i) {
    waits.emplace_back([&, i] {
      const auto r = call(verb::get, commands + "/c1/wait?timeoutMs=60000");
      states[static_cast<std::size_t>(i)] = r.status == 200 ? json::parse(r.body).value("state", "") : r.body;
      ++answered;
    });
  }
  // (and the metrics call itself)
  ASSERT_TRUE(eventually([&] { return metric("mayura_connections_open") >= kWaits + 1; }))
      << metric("mayura_connections_open");
  EXPECT_EQ(metric("mayura_blocking_calls_running"), 0);
  // The same tenant's blocking calls, and another's whole cycle, meanwhile.
  EXPECT_EQ(call(verb::get, commands).status, 200u);
  well_behaved_cycle();
  EXPECT_EQ(answered.load(), 0);
  const auto stopped = call(verb::post, commands + "/c1/stop", "");
  EXPECT_EQ(json::parse(stopped.body).at("state"), "stopped");
  for (std::thread& t : waits) t.join();
  for (const std::string& state : states) EXPECT_EQ(state, "stopped");
}

// An exec ends with its client, however its stream ends: here a client that
// sent one byte more (a pipelined request's start) and then went away.
TEST_F(HostileTenantTest, AnExecEndsWithItsClientEvenAfterAPipelinedByte) {
  start(json::object());
  const auto made = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 120000})");
  ASSERT_EQ(made.status, 201u) << made.body;
  const std::string id = json::parse(made.body).at("id");
  const auto sleeps = [&] {
    int n = 0;
    for (const pid_t pid : processes_in_range(options())) {
      n += read_host("/proc/" + std::to_string(pid) + "/cmdline") == std::string(
                                                                         "sleep\0"
                                                                         "300\0",
                                                                         10);
    }
    return n;
  };
  const int fd = load::connect_to(socket_);
  ASSERT_GE(fd, 0);
  const std::string body = R"({"argv": ["sleep", "300"]})";
  ASSERT_TRUE(load::send_all(fd, "POST /v1/sandboxes/" + id +
                                     "/exec HTTP/1.1\r\nHost: mayurad\r\nContent-Type: application/json\r\n"
                                     "Content-Length: " +
                                     std::to_string(body.size()) + "\r\n\r\n" + body));
  ASSERT_TRUE(eventually([&] { return sleeps() == 1; }, std::chrono::seconds(30))) << "the command never ran";
  // Once the request was read: a byte of the next one, which stays unread.
  ASSERT_TRUE(load::send_all(fd, "G"));
  ::close(fd);
  EXPECT_TRUE(eventually([&] { return sleeps() == 0; }, std::chrono::seconds(30))) << "the command outlived its client";
}

// Who may write what the daemon trusts: its config, tokens file and TLS key
// must be root's and not writable (the key not readable) by others; any
// other is refused at start, naming the file.
TEST_F(HostileTenantTest, FilesAnotherUserCouldWriteAreRefusedAtStart) {
  const json tls = tls_settings();
  const std::string config = dir_ + "/mayurad.json";
  std::ofstream(config) << daemon_config(options(), socket_, {{"tls", tls}}).dump();
  const auto check = [&] {
    return run_shell(std::string(MAYURAD_PATH) + " --config " + config + " --check-config 2>&1; echo \"exit $?\"");
  };
  EXPECT_NE(check().find("the settings are good"), std::string::npos) << check();
  const auto refused = [&](const std::string& path, const std::string& says) {
    const std::string out = check();
    EXPECT_NE(out.find(path), std::string::npos) << out;
    EXPECT_NE(out.find(says), std::string::npos) << out;
    EXPECT_NE(out.find("exit 2"), std::string::npos) << out;
  };
  ASSERT_EQ(::chown(config.c_str(), 65534, 65534), 0);
  refused(config, "must be owned by root");
  ASSERT_EQ(::chown(config.c_str(), 0, 0), 0);
  ::chmod(config.c_str(), 0664);
  refused(config, "must not be writable by group or others");
  ::chmod(config.c_str(), 0644);
  const std::string tokens = tls.at("tokens");
  ASSERT_EQ(::chown(tokens.c_str(), 65534, 65534), 0);
  refused(tokens, "must be owned by root");
  ASSERT_EQ(::chown(tokens.c_str(), 0, 0), 0);
  const std::string key = tls.at("key");
  ::chmod(key.c_str(), 0644);
  refused(key, "the TLS key");
  ::chmod(key.c_str(), 0600);
  EXPECT_NE(check().find("the settings are good"), std::string::npos) << check();
}

// A sandbox is paused and resumed by its owner only: another client gets
// 404, as for every call on a sandbox not its own, and the sandbox runs on.
TEST_F(HostileTenantTest, AnotherClientsSandboxIsNeitherPausedNorResumed) {
  start({{"tls", tls_settings()}});
  const auto made = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000})");
  ASSERT_EQ(made.status, 201u) << made.body;
  const std::string sandbox = "/v1/sandboxes/" + json::parse(made.body).at("id").get<std::string>();
  EXPECT_FALSE(json::parse(made.body).at("paused").get<bool>());
  EXPECT_EQ(call(verb::post, sandbox + "/pause", "", kToken).status, 404u);
  EXPECT_FALSE(json::parse(call(verb::get, sandbox).body).at("paused").get<bool>());
  EXPECT_EQ(call(verb::post, sandbox + "/pause").status, 204u);
  EXPECT_TRUE(json::parse(call(verb::get, sandbox).body).at("paused").get<bool>());
  EXPECT_EQ(call(verb::post, sandbox + "/resume", "", kToken).status, 404u);
  EXPECT_TRUE(json::parse(call(verb::get, sandbox).body).at("paused").get<bool>());
  // The owner's exec resumes it.
  EXPECT_EQ(call(verb::post, sandbox + "/exec", R"({"argv": ["true"]})").status, 200u);
  EXPECT_FALSE(json::parse(call(verb::get, sandbox).body).at("paused").get<bool>());
  EXPECT_EQ(call(verb::post, sandbox + "/pause").status, 204u);
  EXPECT_EQ(call(verb::post, sandbox + "/resume").status, 204u);
  EXPECT_FALSE(json::parse(call(verb::get, sandbox).body).at("paused").get<bool>());
  EXPECT_EQ(call(verb::post, sandbox + "/pause").status, 204u);
  EXPECT_EQ(call(verb::delete_, sandbox).status, 204u);
}

// Snapshots are each client's own: another client neither takes one of a
// sandbox it does not own, nor forks it, nor sees, starts from or deletes
// the owner's; its own of the same name is another snapshot.
TEST_F(HostileTenantTest, AnotherClientsSnapshotsAndForksAreNotFound) {
  start({{"tls", tls_settings()}, {"maxSnapshotMiBPerClient", 36}});
  const auto made = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000, "diskMiB": 16})");
  ASSERT_EQ(made.status, 201u) << made.body;
  const std::string sandbox = "/v1/sandboxes/" + json::parse(made.body).at("id").get<std::string>();
  ASSERT_EQ(call(verb::put, sandbox + "/files?path=f", "root's").status, 204u);
  // 12 MiB that a snapshot stores whatever the host's file system.
  ASSERT_EQ(call(verb::post, sandbox + "/exec", R"({"argv": ["sh", "-c", "head -c 12M /dev/urandom > big"]})").status,
            200u);
  EXPECT_EQ(call(verb::post, sandbox + "/snapshot", R"({"name": "work"})", kToken).status, 404u);
  EXPECT_EQ(call(verb::post, sandbox + "/fork", R"({"count": 1})", kToken).status, 404u);
  const auto taken = call(verb::post, sandbox + "/snapshot", R"({"name": "work"})");
  ASSERT_EQ(taken.status, 201u) << taken.body;
  EXPECT_EQ(json::parse(taken.body).at("diskMiB"), 16);
  // The other client sees none, cannot start from it or delete it.
  EXPECT_TRUE(json::parse(call(verb::get, "/v1/snapshots", {}, kToken).body).at("snapshots").empty());
  EXPECT_EQ(call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000, "snapshot": "work"})", kToken).status,
            412u);  // NOT_FOUND, as for a file
  EXPECT_EQ(call(verb::delete_, "/v1/snapshots/work", {}, kToken).status, 404u);
  // The owner starts from it, and forks.
  const auto restored = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000, "snapshot": "work"})");
  ASSERT_EQ(restored.status, 201u) << restored.body;
  const std::string copy = "/v1/sandboxes/" + json::parse(restored.body).at("id").get<std::string>();
  EXPECT_EQ(call(verb::get, copy + "/files?path=f").body, "root's");
  const auto forked = call(verb::post, sandbox + "/fork", R"({"count": 2, "lifetimeMs": 30000})");
  ASSERT_EQ(forked.status, 201u) << forked.body;
  const json forks = json::parse(forked.body).at("sandboxes");
  ASSERT_EQ(forks.size(), 2u);
  for (const json& f : forks) {
    const std::string path = "/v1/sandboxes/" + f.at("id").get<std::string>();
    EXPECT_EQ(call(verb::get, path + "/files?path=f").body, "root's");
    EXPECT_EQ(call(verb::get, path, {}, kToken).status, 404u);
    EXPECT_EQ(call(verb::delete_, path).status, 204u);
  }
  // Past the client's snapshot ceiling (36 MiB: 11 to 16 held, a whole
  // disk's 16 more could come, then no more), refused before it is taken,
  // naming the setting.
  ASSERT_EQ(call(verb::post, sandbox + "/snapshot", R"({"name": "second"})").status, 201u);
  const auto third = call(verb::post, sandbox + "/snapshot", R"({"name": "third"})");
  EXPECT_EQ(third.status, 429u) << third.body;
  EXPECT_NE(third.body.find("maxSnapshotMiBPerClient"), std::string::npos) << third.body;
  const auto listed = json::parse(call(verb::get, "/v1/snapshots").body).at("snapshots");
  ASSERT_EQ(listed.size(), 2u) << listed.dump();
  EXPECT_EQ(listed[0].at("name"), "second");
  EXPECT_EQ(call(verb::delete_, "/v1/snapshots/work").status, 204u);
  EXPECT_EQ(call(verb::delete_, "/v1/snapshots/second").status, 204u);
  EXPECT_EQ(call(verb::delete_, "/v1/snapshots/second").status, 404u);
  EXPECT_EQ(call(verb::delete_, copy).status, 204u);
  EXPECT_EQ(call(verb::delete_, sandbox).status, 204u);
}

// Volumes are each client's own: another client neither sees, deletes nor
// mounts the owner's; its own of the same name is another volume; a
// client's volumes together stay under its ceiling; and the owner's volume
// keeps what one sandbox wrote for the next, which mounts it read-only.
TEST_F(HostileTenantTest, AnotherClientsVolumesAreNotFound) {
  start({{"tls", tls_settings()}, {"maxVolumeMiBPerClient", 48}});
  const auto made = call(verb::post, "/v1/volumes", R"({"name": "data", "sizeMiB": 32})");
  ASSERT_EQ(made.status, 201u) << made.body;
  const json volume = json::parse(made.body);
  EXPECT_EQ(volume.at("name"), "data");
  EXPECT_EQ(volume.at("sizeMiB"), 32);
  EXPECT_EQ(volume.at("inUse"), false);
  EXPECT_GT(volume.at("createdAt").get<std::int64_t>(), 0);
  const std::string mount_data = R"({"lifetimeMs": 60000, "volumes": [{"name": "data", "path": "/data"}]})";
  // The other client sees none, cannot delete it or mount it.
  EXPECT_TRUE(json::parse(call(verb::get, "/v1/volumes", {}, kToken).body).at("volumes").empty());
  EXPECT_EQ(call(verb::delete_, "/v1/volumes/data", {}, kToken).status, 404u);
  EXPECT_EQ(call(verb::post, "/v1/sandboxes", mount_data, kToken).status, 412u);  // NOT_FOUND, as for a snapshot
  // Its own of the same name is another volume, mounted at the same time.
  ASSERT_EQ(call(verb::post, "/v1/volumes", R"({"name": "data", "sizeMiB": 16})", kToken).status, 201u);
  const auto theirs = call(verb::post, "/v1/sandboxes", mount_data, kToken);
  ASSERT_EQ(theirs.status, 201u) << theirs.body;
  const std::string their_sandbox = "/v1/sandboxes/" + json::parse(theirs.body).at("id").get<std::string>();
  EXPECT_EQ(call(verb::put, their_sandbox + "/files?path=/data/f", "alice's", kToken).status, 204u);
  const auto mine = call(verb::post, "/v1/sandboxes", mount_data);
  ASSERT_EQ(mine.status, 201u) << mine.body;
  const std::string sandbox = "/v1/sandboxes/" + json::parse(mine.body).at("id").get<std::string>();
  EXPECT_EQ(call(verb::get, sandbox + "/files?path=/data/f").status, 412u) << "the other client's file is here";
  EXPECT_EQ(call(verb::put, sandbox + "/files?path=/data/f", "root's").status, 204u);
  EXPECT_EQ(call(verb::get, their_sandbox + "/files?path=/data/f", {}, kToken).body, "alice's");
  // In use: listed so, and not deleted.
  EXPECT_EQ(json::parse(call(verb::get, "/v1/volumes").body).at("volumes").at(0).at("inUse"), true);
  EXPECT_EQ(call(verb::delete_, "/v1/volumes/data").status, 400u);
  // Past the client's ceiling (48 MiB: 32 held, 16 more fit, then no more;
  // the other client's 16 are its own), refused naming the setting before
  // the volume is made.
  ASSERT_EQ(call(verb::post, "/v1/volumes", R"({"name": "more", "sizeMiB": 16})").status, 201u);
  const auto past = call(verb::post, "/v1/volumes", R"({"name": "past", "sizeMiB": 16})");
  EXPECT_EQ(past.status, 429u) << past.body;
  EXPECT_NE(past.body.find("maxVolumeMiBPerClient"), std::string::npos) << past.body;
  const json listed = json::parse(call(verb::get, "/v1/volumes").body).at("volumes");
  ASSERT_EQ(listed.size(), 2u) << listed.dump();
  EXPECT_EQ(listed[0].at("name"), "data");
  EXPECT_EQ(listed[1].at("name"), "more");
  // Released, the owner's volume is mounted again, read-only: what the
  // first sandbox wrote is there, and nothing more is written.
  EXPECT_EQ(call(verb::delete_, sandbox).status, 204u);
  const auto again = call(verb::post, "/v1/sandboxes",
                          R"({"lifetimeMs": 60000, "volumes": [{"name": "data", "path": "/data", "readOnly": true}]})");
  ASSERT_EQ(again.status, 201u) << again.body;
  const std::string reader = "/v1/sandboxes/" + json::parse(again.body).at("id").get<std::string>();
  EXPECT_EQ(call(verb::get, reader + "/files?path=/data/f").body, "root's");
  EXPECT_EQ(call(verb::put, reader + "/files?path=/data/g", "no").status, 403u);  // PERMISSION_DENIED (EROFS)
  EXPECT_EQ(call(verb::delete_, reader).status, 204u);
  EXPECT_EQ(call(verb::delete_, their_sandbox, {}, kToken).status, 204u);
  // Each deleted, once its last sandbox has let go of it.
  const auto deleted = [&](const std::string& name, const std::string& token) {
    return eventually([&] { return call(verb::delete_, "/v1/volumes/" + name, {}, token).status == 204u; });
  };
  EXPECT_TRUE(deleted("data", ""));
  EXPECT_TRUE(deleted("more", ""));
  EXPECT_TRUE(deleted("data", kToken));
  EXPECT_EQ(call(verb::delete_, "/v1/volumes/data").status, 404u);
  EXPECT_TRUE(json::parse(call(verb::get, "/v1/volumes").body).at("volumes").empty());
}

// A token's client is "token:NAME", never a local peer: a token named
// "uid:0" is not root, and sees none of root's sandboxes.
TEST_F(HostileTenantTest, ATokenNamedLikeALocalPeerIsNotThatPeer) {
  start({{"tls", tls_settings()}});
  const auto roots = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000})");
  ASSERT_EQ(roots.status, 201u) << roots.body;
  const std::string id = json::parse(roots.body).at("id");
  const std::string token = "uid0-0123456789abcdef";
  const auto listed = call(verb::get, "/v1/sandboxes", {}, token);
  ASSERT_EQ(listed.status, 200u) << listed.body;
  EXPECT_TRUE(json::parse(listed.body).at("sandboxes").empty()) << listed.body;
  EXPECT_EQ(call(verb::get, "/v1/sandboxes/" + id, {}, token).status, 404u);
  const auto own = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000})", token);
  ASSERT_EQ(own.status, 201u) << own.body;
  EXPECT_EQ(json::parse(call(verb::get, "/v1/sandboxes/" + json::parse(own.body).at("id").get<std::string>()).body)
                .at("owner"),
            "token:uid:0");
}

// A failure's message names no host path: the image store, the image
// directory and the state directory are said by name.
TEST_F(HostileTenantTest, FailuresNameNoHostPath) {
  start(json::object());
  const auto a = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000, "image": "nosuch:1"})");
  EXPECT_EQ(a.status, 424u) << a.body;  // INVALID_CONFIG: an image that is not there
  EXPECT_NE(a.body.find("[image store]"), std::string::npos) << a.body;
  for (const std::string& path : {options().image_store, options().image_dir, options().state_dir})
    EXPECT_EQ(a.body.find(path), std::string::npos) << a.body;
}

// A published port belongs to the client that created the sandbox: uid
// 65534 creates one through the daemon and reaches its server; root does
// too; another local user (65533) is refused by the kernel's rule.
TEST_F(HostileTenantTest, APublishedPortAnswersOnlyItsOwnerAndRoot) {
  const group* nogroup = ::getgrgid(65534);
  ASSERT_NE(nogroup, nullptr) << "this host has no group 65534, which the test gives the socket";
  start({{"socketGroup", nogroup->gr_name}});
  // As 65534: a sandbox with port 8000 and a server on it; the port's url.
  const std::optional<std::string> said = output_as(65534, [this](int out) {
    const std::string made = load::call(socket_, "POST", "/v1/sandboxes", R"({"lifetimeMs": 120000, "ports": [8000]})");
    const auto id_at = made.find("\"id\":\"");
    if (id_at == std::string::npos) ::_exit(4);
    const std::string id = made.substr(id_at + 6, made.find('"', id_at + 6) - id_at - 6);
    load::call(socket_, "POST", "/v1/sandboxes/" + id + "/exec",
               R"({"argv": ["sh", "-c", "echo hello from inside > index.html; )"
               R"(setsid python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 </dev/null &"]})");
    const std::string url = load::call(socket_, "GET", "/v1/sandboxes/" + id + "/url?port=8000");
    const auto port_at = url.find("http://127.0.0.1:");
    if (port_at == std::string::npos) ::_exit(5);
    write_to(out, id + " " + std::to_string(std::atoi(url.c_str() + port_at + 17)));
  });
  ASSERT_TRUE(said) << "the client as 65534 failed";
  std::istringstream words(*said);
  std::string id;
  int port = 0;
  words >> id >> port;
  ASSERT_GT(port, 0) << *said;
  // The server may take a moment to listen inside.
  std::string owner_read;
  EXPECT_TRUE(eventually(
      [&] {
        owner_read = fetch_as(65534, port);
        return owner_read.find("hello from inside") != std::string::npos;
      },
      std::chrono::seconds(20)))
      << owner_read;
  EXPECT_NE(fetch_as(0, port).find("hello from inside"), std::string::npos);
  EXPECT_EQ(fetch_as(65533, port), "refused");
  EXPECT_EQ(call(verb::delete_, "/v1/sandboxes/" + id).status, 204u);
}

// Bodies held at once: the daemon's budget (64 MiB here) bounds what all its
// clients' requests may hold, root's too. Two writes of 30 MiB whose bodies
// come slowly hold 60 of it; a third is refused at its head (503), before
// its body is read; once the two are gone, a write of the same size passes.
TEST_F(HostileTenantTest, BodiesPastTheDaemonsBudgetAreRefusedAtTheHead) {
  start({{"maxBufferedMiB", 64}});
  const auto made = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 120000})");
  ASSERT_EQ(made.status, 201u) << made.body;
  const std::string id = json::parse(made.body).at("id");
  const std::size_t size = std::size_t{30} << 20;
  const std::string head = "PUT /v1/sandboxes/" + id +
                           "/files?path=big HTTP/1.1\r\nHost: mayurad\r\nConnection: close\r\n"
                           "Content-Type: application/octet-stream\r\nContent-Length: " +
                           std::to_string(size) + "\r\n\r\n";
  std::vector<int> slow;
  slow.reserve(2);
  for (int i = 0; i < 2; ++i) {
    slow.push_back(load::connect_to(socket_));
    ASSERT_TRUE(load::send_all(slow.back(), head + std::string(4096, 'x')));
  }
  // Both heads read: their bodies' sizes held.
  ASSERT_TRUE(eventually([&] { return metric("mayura_buffered_bytes") >= static_cast<long>(2 * size); }));
  const int third = load::connect_to(socket_);
  ASSERT_TRUE(load::send_all(third, head));
  std::string answer;
  char buf[4096];
  for (ssize_t n; (n = ::read(third, buf, sizeof buf)) > 0;) answer.append(buf, static_cast<std::size_t>(n));
  ::close(third);
  EXPECT_EQ(answer.rfind("HTTP/1.1 503", 0), 0u) << answer;
  EXPECT_NE(answer.find("LIMIT_REACHED"), std::string::npos) << answer;
  EXPECT_GE(metric("mayura_budget_refusals_total"), 1);
  for (const int fd : slow) ::close(fd);
  const std::string body(size, 'y');
  service::HttpAnswer put;
  ASSERT_TRUE(eventually(
      [&] {
        put = call(verb::put, "/v1/sandboxes/" + id + "/files?path=big", body);
        return put.status != 503;
      },
      std::chrono::seconds(20)));
  EXPECT_EQ(put.status, 204u) << put.body;
}

// Output floods: three execs each print 16 MiB, streamed to clients that
// read it all. The daemon passes each chunk on and keeps none of it (no copy
// for the result, no last line repeating it): its peak memory grows by far
// less than one exec's output. Meanwhile another client's create + exec +
// release still succeeds: each flood's reader holds off its second half
// until that cycle has ended, so the cycle runs while all three are under
// way, whatever the machine's speed.
TEST_F(HostileTenantTest, OutputFloodsAreStreamedThroughAndNeverHeld) {
  start(json::object());
  const auto made = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 300000})");
  ASSERT_EQ(made.status, 201u) << made.body;
  const std::string id = json::parse(made.body).at("id");
  const std::string status = "/proc/" + std::to_string(daemon_) + "/clear_refs";
  std::ofstream(status) << "5";  // the peak (VmHWM) from here
  const std::size_t before = load::status_kib_of(daemon_, "VmHWM");
  const std::string body =
      R"({"argv": ["sh", "-c", "yes abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz | head -c 16777216"]})";
  std::vector<std::string> tails(3);
  std::vector<std::size_t> sizes(3);
  std::vector<std::thread> floods;
  floods.reserve(3);
  std::atomic<bool> cycled{false};
  for (int i = 0; i < 3; ++i) {
    floods.emplace_back([&, i] {
      const int fd = load::connect_to(socket_);
      if (fd < 0 || !load::send_all(fd, load::request("POST", "/v1/sandboxes/" + id + "/exec", body))) return;
      std::string tail;
      char buf[65536];
      for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) {
        if (sizes[i] < (std::size_t{8} << 20) && sizes[i] + static_cast<std::size_t>(n) >= (std::size_t{8} << 20)) {
          cycled.wait(false);
        }
        sizes[i] += static_cast<std::size_t>(n);
        tail.append(buf, static_cast<std::size_t>(n));
        if (tail.size() > 8192) tail.erase(0, tail.size() - 4096);
      }
      ::close(fd);
      tails[i] = tail;
    });
  }
  // Another tenant, meanwhile.
  well_behaved_cycle();
  cycled = true;
  cycled.notify_all();
  for (std::thread& t : floods) t.join();
  const std::size_t peak = load::status_kib_of(daemon_, "VmHWM");
  for (int i = 0; i < 3; ++i) {
    EXPECT_GT(sizes[i], std::size_t{16} << 20) << "exec " << i << " did not stream its output";
    // The last line: the result, without the output the stream carried.
    EXPECT_NE(tails[i].find("\"exitCode\":0"), std::string::npos) << tails[i].substr(tails[i].size() - 300);
    const std::string last = tails[i].substr(tails[i].rfind("{\""));
    EXPECT_EQ(last.find("stdout"), std::string::npos) << last;
  }
  EXPECT_LT(peak - before, std::size_t{32} << 10) << "the daemon's peak grew by " << (peak - before) << " KiB";
}

}  // namespace
}  // namespace mayura::testing
