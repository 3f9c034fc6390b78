// Sessions: a keystroke's echo through mayura-run -it, beside the same
// keystroke through `script` (a relay through a second pty on the host, the
// shape mayura-run has) and through a bare pty (the kernel's echo alone);
// and an attach to a background command that receives its last 1 MiB. Each
// with the engine in the process, then through a mayurad (the keystroke
// and the output over its WebSocket). The aims: the echo at most twice
// script's, the attach at most 5 ms.
//   bench_sessions [ITERATIONS] MAYURA_RUN MAYURAD

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon.hpp"
#include "measure.hpp"
#include "tests/support/pty_child.hpp"
#include "mayura/native.hpp"
#include "mayura/remote.hpp"
#include "mayura/sandboxes.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// A program on a pty of its own, as a terminal emulator runs a shell: this
// process holds the master.
class OnPty {
 public:
  explicit OnPty(std::vector<std::string> argv) {
    const mayura::testing::PtyChild child = mayura::testing::start_on_pty(std::move(argv), 24, 80);
    master_ = child.master;
    child_ = child.pid;
  }
  OnPty(const OnPty&) = delete;
  OnPty& operator=(const OnPty&) = delete;
  ~OnPty() {
    if (child_ > 0) {
      ::kill(child_, SIGTERM);
      ::waitpid(child_, nullptr, 0);
    }
    if (master_ >= 0) ::close(master_);
  }

  // Until the program has made its terminal raw (a relay's first step), or
  // `within` has passed.
  bool wait_raw(std::chrono::milliseconds within) const {
    const auto deadline = Clock::now() + within;
    while (Clock::now() < deadline) {
      termios t{};
      if (::tcgetattr(master_, &t) == 0 && (t.c_lflag & ECHO) == 0) return true;
      ::usleep(10'000);
    }
    return false;
  }

  // Types one key and waits for it on the screen: its echo.
  bool echo(char key) const {
    if (::write(master_, &key, 1) != 1) return false;
    return read_until(key, std::chrono::seconds(10));
  }

  // Ends the line (the relay's line buffer stays small), read through.
  bool new_line() const { return ::write(master_, "\r", 1) == 1 && read_until('\n', std::chrono::seconds(10)); }

 private:
  bool read_until(char wanted, std::chrono::milliseconds within) const {
    const auto deadline = Clock::now() + within;
    char buffer[256];
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return false;
      pollfd p{master_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      const ssize_t n = ::read(master_, buffer, sizeof buffer);
      if (n <= 0) return false;
      for (ssize_t i = 0; i < n; ++i) {
        if (buffer[i] == wanted) return true;
      }
    }
  }

  int master_ = -1;
  pid_t child_ = -1;
};

mayura::bench::Stats keystrokes(int iterations, std::vector<std::string> argv, bool relay) {
  OnPty pty(std::move(argv));
  if (relay && !pty.wait_raw(std::chrono::seconds(30))) return mayura::bench::summarise({}, 1);
  int typed = 0;
  return mayura::bench::measure(iterations, [&pty, &typed] {
    // Untimed: a line's end now and then, so the command's line stays short.
    if (++typed % 50 == 0 && !pty.new_line()) return false;
    return pty.echo('x');
  });
}

void row(const std::string& name, const mayura::bench::Stats& s) {
  std::printf("%-64s %8.3f %8.3f %5d/%d\n", name.c_str(), s.median_ms, s.p95_ms, s.succeeded, s.succeeded + s.failed);
}

// A background command that printed 1 MiB (and ended): an attach from its
// oldest byte held receives all of it.
void attach_rows(int iterations, const mayura::Sandboxes& sandboxes, const std::string& how) {
  mayura::CreateOptions create;
  create.lifetime_ms = 600'000;
  const mayura::Sandbox sandbox = sandboxes.create(create);
  const mayura::CommandInfo printed = sandbox.start({"sh", "-c", "head -c 1048576 /dev/zero | tr '\\0' x; sleep 1000"});
  while (sandbox.command(printed.id).stdout_bytes < (std::size_t{1} << 20)) ::usleep(10'000);
  const auto attach = mayura::bench::measure(iterations, [&] {
    std::size_t received = 0;
    mayura::AttachOptions o;
    o.follow = false;
    o.on_stdout = [&received](std::string_view chunk) { received += chunk.size(); };
    sandbox.attach(printed.id, o);
    return received == (std::size_t{1} << 20);
  });
  row("attach: a background command's last 1 MiB" + how + " (the aim: 5)", attach);
  sandbox.stop(printed.id);
  sandbox.release();
  sandboxes.close();
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::max(10, std::atoi(argv[1])) : 200;
  const std::string mayura_run = argc > 2 ? argv[2] : "mayura-run";
  std::printf("sessions, %d iterations each, ms (median, p95, ok)\n", iterations);

  const auto bare = keystrokes(iterations, {"cat"}, false);
  row("a keystroke's echo: a bare pty (the kernel's echo)", bare);
  const auto script = keystrokes(iterations, {"script", "-q", "-c", "cat", "/dev/null"}, true);
  row("a keystroke's echo: script -c cat (a second pty)", script);
  const auto run = keystrokes(iterations, {mayura_run, "--local", "-it", "--", "cat"}, true);
  row("a keystroke's echo: mayura-run --local -it -- cat", run);
  std::printf("mayura-run -it / script: %s (the aim: at most 2)\n", mayura::bench::ratio(run, script).c_str());

  const mayura::bench::Daemon daemon(argc > 3 ? argv[3] : "mayurad");
  if (!daemon.up()) {
    std::fprintf(stderr, "bench_sessions: mayurad did not start\n");
    return 1;
  }
  const auto remote =
      keystrokes(iterations, {"env", "MAYURA_HOST=" + daemon.url(), mayura_run, "-it", "--", "cat"}, true);
  row("a keystroke's echo: mayura-run -it -- cat, through mayurad", remote);
  std::printf("through mayurad / script: %s (the aim: at most 2)\n", mayura::bench::ratio(remote, script).c_str());

  mayura::SandboxesOptions limits;
  attach_rows(iterations, mayura::create_sandboxes(mayura::native_sandboxes(), limits), "");
  mayura::RemoteOptions remote_options;
  remote_options.url = daemon.url();
  attach_rows(iterations, mayura::create_sandboxes(mayura::remote_sandboxes(remote_options), limits),
              ", through mayurad's WebSocket");
  return 0;
}
