// Three tenants of one mayurad, each a local uid of its own: two
// well-behaved ones that create a sandbox, run a command in it and release
// it, over and over, and a hostile one that floods output, storms creates
// and releases, holds every connection it may (and retries at once each
// time one more is refused) and burns its cpu share. The
// well-behaved tenants' cycle times (p50, p99), first with no hostile
// tenant and then beside it, in one run. The aim: a p99 at most twice the
// one alone.
//   bench_tenants [CYCLES] [MAYURAD]

#include <grp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/exec_load.hpp"
#include "daemon.hpp"
#include "mayura/runtime.hpp"

namespace load = mayura::testing::load;
using Clock = std::chrono::steady_clock;

namespace {

constexpr gid_t kGroup = 65534;  // nogroup: the socket's group
constexpr uid_t kGood[] = {60001, 60002};
constexpr uid_t kHostile = 60003;

bool become(uid_t uid) {
  return ::setgroups(1, &kGroup) == 0 && ::setresgid(kGroup, kGroup, kGroup) == 0 && ::setresuid(uid, uid, uid) == 0;
}

// One request; the answer's status, its body read and dropped (an output
// flood's answer is tens of MiB).
int status_of(const std::string& socket, const std::string& method, const std::string& target, const std::string& body,
              std::string* head = nullptr) {
  const int fd = load::connect_to(socket);
  if (fd < 0 || !load::send_all(fd, load::request(method, target, body))) {
    if (fd >= 0) ::close(fd);
    return 0;
  }
  std::string start;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) {
    if (start.size() < 4096) start.append(buf, static_cast<std::size_t>(std::min<ssize_t>(n, 4096)));
  }
  ::close(fd);
  if (head) *head = start;
  return start.rfind("HTTP/1.1 ", 0) == 0 ? std::atoi(start.c_str() + 9) : 0;
}

std::string id_of(const std::string& answer) {
  const auto at = answer.find("\"id\":\"");
  return at == std::string::npos ? "" : answer.substr(at + 6, answer.find('"', at + 6) - at - 6);
}

// A cycle: create, run `true`, release. Its time in ms, or -1 if a step
// failed (said once, on stderr, when `say` is set).
double cycle(const std::string& socket, bool* say = nullptr) {
  const auto started = Clock::now();
  std::string made;
  const int created = status_of(socket, "POST", "/v1/sandboxes", R"({"lifetimeMs": 60000, "memoryMiB": 128})", &made);
  const std::string sandbox = "/v1/sandboxes/" + id_of(made);
  const int ran = created == 201 ? status_of(socket, "POST", sandbox + "/exec", R"({"argv": ["true"]})") : 0;
  const int released = created == 201 ? status_of(socket, "DELETE", sandbox, "") : 0;
  if (ran == 200 && released == 204) return std::chrono::duration<double, std::milli>(Clock::now() - started).count();
  if (say && *say) {
    *say = false;
    std::fprintf(stderr, "bench_tenants: uid %u: create %d, exec %d, release %d: %s\n", ::getuid(), created, ran,
                 released, made.substr(0, 400).c_str());
  }
  return -1;
}

// A well-behaved tenant, in a child as `uid`: its cycle times, one per line,
// to `out` ("-1" for a failed cycle).
pid_t good_tenant(uid_t uid, const std::string& socket, int cycles, int out) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  if (!become(uid)) {
    std::perror("bench_tenants: becoming a tenant uid");
    ::_exit(2);
  }
  std::string lines;
  bool say = true;
  for (int i = 0; i < cycles; ++i) lines += std::to_string(cycle(socket, &say)) + "\n";
  for (std::size_t at = 0; at < lines.size();) {  // (a pipe: write, not send)
    const ssize_t n = ::write(out, lines.data() + at, lines.size() - at);
    if (n <= 0) ::_exit(3);
    at += static_cast<std::size_t>(n);
  }
  ::_exit(0);
}

// What the hostile tenant does: each alone, or all at once.
enum Abuse : unsigned { kFloods = 1, kStorms = 2, kBurner = 4, kConnections = 8, kRetries = 16, kAll = 31 };

// The hostile tenant, in a child as its uid, until killed: two output
// floods (32 MiB each, again and again), two create-and-release storms, a
// sandbox burning cpu, the connections it may hold idle, four loops that
// ask again at once whenever refused: those `abuse` names.
pid_t hostile_tenant(const std::string& socket, unsigned abuse) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::setpgid(0, 0);
  if (!become(kHostile)) ::_exit(2);
  std::vector<mayura::OwnedThread> threads;
  for (int i = 0; i < 2; ++i) {
    if (abuse & kFloods) {
      threads.emplace_back("bench-hostile", [&socket] {
        std::string made;
        status_of(socket, "POST", "/v1/sandboxes", R"({"lifetimeMs": 600000})", &made);
        const std::string exec = "/v1/sandboxes/" + id_of(made) + "/exec";
        for (;;) status_of(socket, "POST", exec, R"({"argv": ["head", "-c", "33554432", "/dev/zero"]})");
      });
    }
    if (abuse & kStorms) {
      threads.emplace_back("bench-hostile", [&socket] {
        for (;;) cycle(socket);
      });
    }
  }
  for (int i = 0; (abuse & kRetries) && i < 4; ++i) {
    threads.emplace_back("bench-hostile", [&socket] {
      for (;;) status_of(socket, "GET", "/v1/sandboxes", "");
    });
  }
  if (abuse & kBurner) {
    threads.emplace_back("bench-hostile", [&socket] {
      std::string made;
      status_of(socket, "POST", "/v1/sandboxes", R"({"lifetimeMs": 600000})", &made);
      status_of(socket, "POST", "/v1/sandboxes/" + id_of(made) + "/exec",
                R"({"argv": ["sh", "-c", "while :; do :; done & while :; do :; done"]})");
    });
  }
  // Every connection it may hold; beside its other abuses, all but the five
  // they use at once (its share is 16, a quarter of maxConnections 64), so
  // that none of them is refused for want of a connection.
  const int hold = (abuse & (kFloods | kStorms | kBurner)) ? 16 - 5 : 256;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the others' connections first
  std::vector<int> held;
  for (int i = 0; (abuse & kConnections) && i < hold; ++i) {
    const int fd = load::connect_to(socket);
    if (fd >= 0) held.push_back(fd);
  }
  for (mayura::OwnedThread& t : threads) t.join();
  for (;;) ::pause();
}

// Every sandbox released (root's call sees them all): what a hostile
// tenant left does not weigh on the next row.
void release_all(const std::string& socket) {
  const std::string answer = load::call(socket, "GET", "/v1/sandboxes");
  const auto body = answer.find("\r\n\r\n");
  if (body == std::string::npos) return;
  for (const auto& s :
       nlohmann::json::parse(answer.substr(body + 4), nullptr, false).value("sandboxes", nlohmann::json::array())) {
    status_of(socket, "DELETE", "/v1/sandboxes/" + s.value("id", std::string()), "");
  }
}

struct Times {
  std::vector<double> ms;
  int failed = 0;
  double at(double q) const {
    return ms.empty() ? 0.0 : ms[std::min(ms.size() - 1, static_cast<std::size_t>(q * static_cast<double>(ms.size())))];
  }
};

// Both well-behaved tenants, each `cycles` cycles at once; their times.
Times good_tenants(const std::string& socket, int cycles) {
  Times t;
  std::vector<std::pair<pid_t, int>> children;
  for (const uid_t uid : kGood) {
    int fds[2];
    if (::pipe(fds) != 0) std::abort();
    children.emplace_back(good_tenant(uid, socket, cycles, fds[1]), fds[0]);
    ::close(fds[1]);
  }
  for (auto [pid, fd] : children) {
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    ::waitpid(pid, nullptr, 0);
    for (std::size_t at = 0, end; (end = text.find('\n', at)) != std::string::npos; at = end + 1) {
      const double ms = std::atof(text.substr(at, end - at).c_str());
      if (ms < 0) {
        ++t.failed;
      } else {
        t.ms.push_back(ms);
      }
    }
  }
  std::sort(t.ms.begin(), t.ms.end());
  return t;
}

void row(const char* name, const Times& t, int cycles) {
  std::printf("%-26s %9.1f %9.1f %9.1f %6zu/%d\n", name, t.at(0.5), t.at(0.99), t.ms.empty() ? 0.0 : t.ms.back(),
              t.ms.size(), 2 * cycles);
}

}  // namespace

int main(int argc, char** argv) {
  const int cycles = argc > 1 ? std::max(10, std::atoi(argv[1])) : 100;
  const std::string program = argc > 2 ? argv[2] : "mayurad";
  const group* nogroup = ::getgrgid(kGroup);
  if (!nogroup) {
    std::fprintf(stderr, "bench_tenants: this host has no group %u for the socket\n", kGroup);
    return 1;
  }
  mayura::bench::Daemon daemon(
      program, std::string(R"("socketGroup": ")") + nogroup->gr_name + R"(", "maxCpus": 0.5, "maxConnections": 64)");
  if (!daemon.up()) {
    std::fprintf(stderr, "bench_tenants: %s did not start\n", program.c_str());
    return 1;
  }
  std::printf(
      "%u cores; two well-behaved tenants, each %d cycles (create, exec true, release) at once;\n"
      "the hostile one: 2 output floods of 32 MiB, 2 create-and-release storms, a sandbox burning\n"
      "its cpu, and every connection it may hold. Each tenant a uid of its own.\n",
      std::thread::hardware_concurrency(), cycles);
  std::printf("%-26s %9s %9s %9s %9s\n", "well-behaved cycles", "p50 ms", "p99 ms", "max ms", "ok");
  good_tenants(daemon.socket(), 5);  // warm
  const Times alone = good_tenants(daemon.socket(), cycles);
  row("alone", alone, cycles);
  int failed = alone.failed;
  double worst = 0;
  for (const auto& [abuse, name] : {std::pair<unsigned, const char*>{kFloods, "beside output floods"},
                                    {kStorms, "beside create storms"},
                                    {kBurner, "beside a cpu burner"},
                                    {kConnections, "beside held connections"},
                                    {kConnections | kRetries, "...and retries at once"},
                                    {kAll, "beside all of them"}}) {
    const pid_t hostile = hostile_tenant(daemon.socket(), abuse);
    std::this_thread::sleep_for(std::chrono::seconds(2));  // its floods and storms under way
    const Times beside = good_tenants(daemon.socket(), cycles);
    ::kill(-hostile, SIGKILL);
    ::kill(hostile, SIGKILL);
    ::waitpid(hostile, nullptr, 0);
    release_all(daemon.socket());
    row(name, beside, cycles);
    failed += beside.failed;
    if (alone.at(0.99) > 0) worst = std::max(worst, beside.at(0.99) / alone.at(0.99));
  }
  std::printf("worst p99 beside a hostile tenant / alone: %.2f (aim: at most 2)\n", worst);
  return failed > 0 ? 1 : 0;
}
