#pragma once
// Many execs at once against a mayurad's Unix socket, each on a connection
// of its own, as many clients would send them; and what the daemon holds
// meanwhile (threads, memory). Header-only: the service's tests and
// bench_service use it.

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mayura::testing::load {

using Clock = std::chrono::steady_clock;

inline int connect_to(const std::string& socket) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket.c_str());
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
  if (fd >= 0) ::close(fd);
  return -1;
}

inline bool send_all(int fd, const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

inline std::string request(const std::string& method, const std::string& target, const std::string& body) {
  return method + " " + target +
         " HTTP/1.1\r\nHost: mayurad\r\nConnection: close\r\nContent-Type: application/json\r\n" +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// One request on a connection of its own; the whole answer (head and body).
inline std::string call(const std::string& socket, const std::string& method, const std::string& target,
                        const std::string& body = "") {
  const int fd = connect_to(socket);
  if (fd < 0 || !send_all(fd, request(method, target, body))) {
    if (fd >= 0) ::close(fd);
    return {};
  }
  std::string answer;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) answer.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return answer;
}

// A sandbox's id from a create's answer ("" if it failed).
inline std::string create(const std::string& socket, long lifetime_ms) {
  const std::string answer =
      call(socket, "POST", "/v1/sandboxes", "{\"lifetimeMs\": " + std::to_string(lifetime_ms) + "}");
  const auto body = answer.find("\r\n\r\n");
  if (answer.rfind("HTTP/1.1 201", 0) != 0 || body == std::string::npos) return {};
  return nlohmann::json::parse(answer.substr(body + 4)).at("id").get<std::string>();
}

struct Outcome {
  int succeeded = 0;             // ended with "exitCode":0
  std::vector<double> seconds;   // each exec's, from its send to its last byte
  std::size_t peak_threads = 0;  // the daemon's, sampled while they ran
  std::size_t peak_rss_kib = 0;
  std::vector<std::string> failures;  // the first few answers that were not a success, cut short
};

inline std::size_t threads_of(pid_t pid) {
  std::size_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

// A field of /proc/PID/status in kB (VmRSS, VmHWM...); 0 if none.
inline std::size_t status_kib_of(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stoul(line.substr(field.size() + 1));
  }
  return 0;
}

inline std::size_t rss_kib_of(pid_t pid) { return status_kib_of(pid, "VmRSS"); }

// Sends `count` execs of `argv_json` (a JSON array) at once, spread over
// the sandboxes `ids`, each on a connection of its own, and reads every
// answer to its end, sampling the daemon `pid` meanwhile.
inline Outcome run_execs(const std::string& socket, pid_t pid, const std::vector<std::string>& ids, int count,
                         const std::string& argv_json) {
  Outcome out;
  struct Pending {
    int fd;
    Clock::time_point sent;
    std::string answer;
  };
  std::vector<Pending> pending;
  pending.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    const int fd = connect_to(socket);
    const std::string& id = ids[static_cast<std::size_t>(i) % ids.size()];
    if (fd < 0) continue;
    const auto sent = Clock::now();
    if (!send_all(fd, request("POST", "/v1/sandboxes/" + id + "/exec", "{\"argv\": " + argv_json + "}"))) {
      ::close(fd);
      continue;
    }
    pending.push_back({fd, sent, {}});
  }
  std::vector<pollfd> fds;
  std::size_t open = pending.size();
  auto last_sample = Clock::time_point{};
  while (open > 0) {
    fds.clear();
    for (const auto& p : pending) fds.push_back({p.fd, static_cast<short>(p.fd >= 0 ? POLLIN : 0), 0});
    ::poll(fds.data(), fds.size(), 100);
    if (Clock::now() - last_sample > std::chrono::milliseconds(100)) {
      out.peak_threads = std::max(out.peak_threads, threads_of(pid));
      out.peak_rss_kib = std::max(out.peak_rss_kib, rss_kib_of(pid));
      last_sample = Clock::now();
    }
    for (std::size_t i = 0; i < pending.size(); ++i) {
      Pending& p = pending[i];
      if (p.fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      const ssize_t n = ::read(p.fd, buf, sizeof buf);
      if (n > 0) {
        p.answer.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      ::close(p.fd);
      p.fd = -1;
      --open;
      out.seconds.push_back(std::chrono::duration<double>(Clock::now() - p.sent).count());
      if (p.answer.rfind("HTTP/1.1 200", 0) == 0 && p.answer.find("\"exitCode\":0") != std::string::npos)
        ++out.succeeded;
      else if (out.failures.size() < 5)
        out.failures.push_back(p.answer.empty() ? "(no answer)" : p.answer.substr(0, 400));
    }
  }
  return out;
}

}  // namespace mayura::testing::load
