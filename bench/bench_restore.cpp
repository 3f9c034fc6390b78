// Live restore: how long mayurad takes from its start to serving with N idle
// sandboxes taken back, beside its start with none; then the first exec in a
// sandbox taken back, and `mayurad --release-all` of them all. Each start is
// a fresh process on the same state, as after a SIGKILL or an upgrade.
// Then CYCLES SIGKILLs and restarts under the steady load of three clients
// (creates, execs, file writes, releases), and what survived them: every
// sandbox a create answered and no release ended, every file a write
// answered, and nothing left once all is released.
//   bench_restore [N] [MAYURAD] [CYCLES]

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "mayura/runtime.hpp"
#include "run_quietly.hpp"
#include "tests/support/exec_load.hpp"

namespace {

namespace load = mayura::testing::load;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

class Daemons {
 public:
  Daemons(std::string program, std::size_t sandboxes, std::string cgroup_root)
      : program_(std::move(program)), cgroup_root_(std::move(cgroup_root)) {
    char dir[] = "/tmp/mayura-bench-restore-XXXXXX";
    if (!::mkdtemp(dir)) std::exit(1);
    dir_ = dir;
    socket_ = dir_ + "/mayurad.sock";
    const std::string n = std::to_string(sandboxes + 8);
    std::ofstream(config()) << R"({"socket": ")" << socket_ << R"(", "cgroupRoot": ")" << cgroup_root_
                            << R"(", "stateDir": ")" << dir_
                            << R"(/state", "liveRestore": true, "maxLifetimeMs": 3600000, "maxSandboxes": )" << n
                            << R"(, "maxSandboxesPerClient": )" << n
                            << R"(, "defaultMemoryMiB": 64, "maxMemoryMiBPerClient": )"
                            << std::to_string(64 * (sandboxes + 8)) << "}";
  }
  ~Daemons() { mayura::bench::run_quietly({"rm", "-rf", dir_}); }
  std::string config() const { return dir_ + "/mayurad.json"; }
  std::string state() const { return dir_ + "/state"; }
  const std::string& socket() const { return socket_; }

  // Spawns mayurad; the seconds until it answers /v1/health (-1: never).
  double start() {
    const auto began = Clock::now();
    const std::string path = config();
    std::vector<char*> args = {program_.data(), const_cast<char*>("--config"), const_cast<char*>(path.c_str()),
                               nullptr};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    if (posix_spawn(&pid_, program_.c_str(), &actions, nullptr, args.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    for (int i = 0; pid_ > 0 && i < 20000; ++i) {
      if (load::call(socket_, "GET", "/v1/health").rfind("HTTP/1.1 200", 0) == 0) return seconds_since(began);
      ::usleep(500);
    }
    return -1;
  }
  void stop(int signal) {
    if (pid_ <= 0) return;
    ::kill(pid_, signal);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  std::size_t listed() const {
    const std::string answer = load::call(socket_, "GET", "/v1/sandboxes");
    const auto body = answer.find("\r\n\r\n");
    if (body == std::string::npos) return 0;
    return nlohmann::json::parse(answer.substr(body + 4)).at("sandboxes").size();
  }

 private:
  std::string program_;
  std::string cgroup_root_;
  std::string dir_, socket_;
  pid_t pid_ = -1;
};

// The cgroup2 mount, where the benchmark's own cgroup root goes.
std::string cgroup2_mount() {
  std::ifstream mounts("/proc/self/mounts");
  for (std::string device, point, type, rest; mounts >> device >> point >> type && std::getline(mounts, rest);) {
    if (type == "cgroup2") return point;
  }
  return "/sys/fs/cgroup";
}

std::string body_of(const std::string& answer) {
  const auto at = answer.find("\r\n\r\n");
  return at == std::string::npos ? std::string() : answer.substr(at + 4);
}
bool status_is(const std::string& answer, const char* status) {
  return answer.rfind(std::string("HTTP/1.1 ") + status, 0) == 0;
}

// One client's steady load, and what the daemon answered it: the sandboxes
// it holds and the files it wrote (each write answered 204).
struct Client {
  std::vector<std::string> sandboxes;
  std::map<std::pair<std::string, std::string>, std::string> files;  // {id, path} -> content
  int answered = 0, refused = 0;

  void run(const std::string& socket, int who, const std::atomic<bool>& stop) {
    std::mt19937 random(static_cast<unsigned>(who) * 7919u + 1);
    for (int k = 0; !stop.load(); ++k) {
      const auto pick = [&] { return sandboxes[random() % sandboxes.size()]; };
      std::string answer;
      if (sandboxes.size() < 3) {
        answer = load::call(socket, "POST", "/v1/sandboxes", R"({"lifetimeMs": 3000000})");
        if (status_is(answer, "201")) sandboxes.push_back(nlohmann::json::parse(body_of(answer)).at("id"));
      } else if (k % 17 == 0) {
        const std::string id = pick();
        answer = load::call(socket, "DELETE", "/v1/sandboxes/" + id);
        // Answered, or cut off by the daemon's end (it may have been
        // released): no longer one this client can hold the daemon to.
        if (status_is(answer, "204") || answer.empty()) {
          std::erase(sandboxes, id);
          std::erase_if(files, [&](const auto& f) { return f.first.first == id; });
        }
      } else if (k % 2 == 0) {
        answer = load::call(socket, "POST", "/v1/sandboxes/" + pick() + "/exec", R"({"argv": ["true"]})");
      } else {
        const std::string id = pick();
        // Each write a file of its own: a write cut off by the daemon's end
        // may still have been done, and must not stand for a lost one.
        const std::string path = "f" + std::to_string(k);
        const std::string content = "client " + std::to_string(who) + " write " + std::to_string(k);
        answer = load::call(socket, "PUT", "/v1/sandboxes/" + id + "/files?path=" + path, content);
        if (status_is(answer, "204")) files[{id, path}] = content;
      }
      if (answer.empty()) {
        ++refused;  // the daemon is down: a moment, then on
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      } else {
        ++answered;
      }
    }
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1000;
  const std::string program = argc > 2 ? argv[2] : "build/tools/mayurad";
  const int cycles = argc > 3 ? std::atoi(argv[3]) : 100;
  if (::geteuid() != 0) return std::fputs("bench_restore: needs root (mayurad)\n", stderr), 1;
  const std::string cgroup_root = cgroup2_mount() + "/mayura-bench-restore";
  Daemons daemons(program, n, cgroup_root);

  std::vector<double> empty;
  for (int i = 0; i < 3; ++i) {
    empty.push_back(daemons.start());
    daemons.stop(SIGTERM);
  }
  std::printf("mayurad's start with no sandbox: %.3f s (median of 3)\n", median(empty));

  if (daemons.start() < 0) return std::fputs("bench_restore: mayurad did not start\n", stderr), 1;
  const auto making = Clock::now();
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < n; ++i) {
    ids.push_back(load::create(daemons.socket(), 3'000'000));
    if (ids.back().empty()) return std::fprintf(stderr, "bench_restore: create %zu failed\n", i), 1;
  }
  std::printf("%zu sandboxes made in %.1f s\n", n, seconds_since(making));

  std::vector<double> restored;
  for (int i = 0; i < 3; ++i) {
    daemons.stop(SIGKILL);
    restored.push_back(daemons.start());
    const std::size_t back = daemons.listed();
    if (back != n) return std::fprintf(stderr, "bench_restore: %zu of %zu sandboxes taken back\n", back, n), 1;
  }
  std::printf("mayurad's start with %zu idle sandboxes taken back: %.3f s (median of 3 SIGKILLs; %.3f %.3f %.3f)\n", n,
              median(restored), restored[0], restored[1], restored[2]);
  const auto exec = Clock::now();
  const std::string answer =
      load::call(daemons.socket(), "POST", "/v1/sandboxes/" + ids[n / 2] + "/exec", R"({"argv": ["true"]})");
  std::printf("the first exec in a sandbox taken back: %.1f ms (%s)\n", seconds_since(exec) * 1000,
              answer.find("\"exitCode\":0") != std::string::npos ? "exit 0" : "failed");

  daemons.stop(SIGTERM);
  const auto releasing = Clock::now();
  mayura::bench::run_quietly({program, "--config", daemons.config(), "--release-all"});
  std::printf("mayurad --release-all of %zu sandboxes: %.1f s\n", n, seconds_since(releasing));

  // SIGKILL and restart, CYCLES times, under three clients' load.
  if (daemons.start() < 0) return std::fputs("bench_restore: mayurad did not start\n", stderr), 1;
  std::vector<Client> clients(3);
  std::atomic<bool> stop{false};
  std::vector<mayura::OwnedThread> threads;
  threads.reserve(clients.size());
  for (int i = 0; i < 3; ++i) threads.emplace_back("client", [&, i] { clients[i].run(daemons.socket(), i, stop); });
  std::mt19937 random(42);
  std::vector<double> gaps;
  const auto cycling = Clock::now();
  for (int c = 0; c < cycles; ++c) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + random() % 200));
    daemons.stop(SIGKILL);
    gaps.push_back(daemons.start());
    if (gaps.back() < 0) return std::fputs("bench_restore: mayurad did not start again\n", stderr), 1;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  stop = true;
  for (auto& t : threads) t.join();
  int held = 0, lost = 0, files = 0, files_lost = 0, answered = 0, refused = 0;
  for (const Client& client : clients) {
    answered += client.answered;
    refused += client.refused;
    for (const std::string& id : client.sandboxes) {
      ++held;
      if (!status_is(load::call(daemons.socket(), "GET", "/v1/sandboxes/" + id), "200")) ++lost;
    }
    for (const auto& [where, content] : client.files) {
      ++files;
      const std::string read =
          load::call(daemons.socket(), "GET", "/v1/sandboxes/" + where.first + "/files?path=" + where.second);
      if (!status_is(read, "200") || body_of(read).find(content) == std::string::npos) ++files_lost;
    }
  }
  std::printf(
      "%d SIGKILLs and restarts in %.0f s under 3 clients (%d calls answered, %d refused while down); "
      "restart to serving %.3f s (median)\n",
      cycles, seconds_since(cycling), answered, refused, median(gaps));
  std::printf("after them: %d of %d sandboxes held lost, %d of %d files written lost\n", lost, held, files_lost, files);
  daemons.stop(SIGTERM);
  mayura::bench::run_quietly({program, "--config", daemons.config(), "--release-all"});
  bool left = false;
  for (int i = 0; i < 100 && (left = std::filesystem::exists(cgroup_root) || std::filesystem::exists(daemons.state()));
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (left) {
    std::printf("after --release-all: LEFT:\n");
    std::fflush(stdout);
    std::system(("find " + cgroup_root + " " + daemons.state() +
                 " -maxdepth 3 2>&1 | grep -v '/cgroup\\.\\|/cpu\\.\\|/memory\\.\\|/io\\.\\|/pids\\.' | head -20")
                    .c_str());
  } else {
    std::printf("after --release-all: nothing left\n");
  }
  return lost || files_lost || left ? 1 : 0;
}
