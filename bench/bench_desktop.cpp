// The desktop, side by side with the tools people drive an X display with,
// in one run:
//   (a) create a sandbox with a 1280x800 desktop, to its first screenshot
//       (release is not counted), against (a') starting Xvfb on the host to
//       its first `import -window root` (ImageMagick, PNG)
//   (b) a 1280x800 screenshot (PNG) of a live sandbox's desktop, against
//       (b') `import -window root png:-` and (b'') `xwd -root` (no PNG) on a
//       host Xvfb
//   (c) a click, against (c') `xdotool mousemove X Y click 1`
//   (d) typing "hello", against (d') `xdotool type hello`
//   (e) the cursor's position, against (e') `xdotool getmouselocation`
// The screens are empty: a busy screen costs the PNG encoder more, both ways.
// Prints median and p95 of each, with its failed calls, and the aims
// beside them; an aim is not met by a row with failed calls.
//
// usage: bench_desktop [ITERATIONS]

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "measure.hpp"
#include "mayura/native.hpp"
#include "mayura/sandbox.hpp"
#include "run_quietly.hpp"

namespace {

using mayura::bench::measure;
using mayura::bench::Stats;

bool run(const std::vector<std::string>& argv) { return mayura::bench::run_quietly(argv); }

bool have(const char* program) { return run({"sh", "-c", std::string("command -v ") + program + " >/dev/null"}); }

void row(const char* name, const Stats& s) { mayura::bench::print_row(62, name, s); }

// Xvfb on the host, on a display it picks (-displayfd), ready when this
// returns; stopped when it goes.
class HostXvfb {
 public:
  HostXvfb() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    // the write end, at fd 3 in Xvfb only
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 3);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    // -noreset, as the engine starts it: no reset between clients
    std::vector<std::string> argv = {"Xvfb",     "-screen",    "0", "1280x800x24", "-nolisten", "tcp",
                                     "-noreset", "-displayfd", "3"};
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    const int rc = posix_spawnp(&pid_, "Xvfb", &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (rc != 0) {
      pid_ = -1;
      ::close(fds[0]);
      return;
    }
    std::string number;
    char c = 0;
    while (::read(fds[0], &c, 1) == 1 && c != '\n') number += c;
    ::close(fds[0]);
    if (!number.empty()) display_ = ":" + number;
  }
  ~HostXvfb() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  HostXvfb(const HostXvfb&) = delete;
  HostXvfb& operator=(const HostXvfb&) = delete;
  const std::string& display() const { return display_; }

 private:
  pid_t pid_ = -1;
  std::string display_;
};

// Median and p95 of `iterations` runs of `timed`, each after `untimed`.
Stats measure_each(int iterations, const std::function<bool()>& timed, const std::function<void()>& untimed) {
  std::vector<double> ms;
  ms.reserve(static_cast<std::size_t>(iterations));
  int failed = 0;
  for (int i = 0; i <= iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const bool ok = mayura::bench::succeeds(timed);
    const double took = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    untimed();
    if (!ok) {
      ++failed;
    } else if (i > 0) {
      ms.push_back(took);  // the first warms up
    }
  }
  return mayura::bench::summarise(std::move(ms), failed);
}

// A screenshot: PNG bytes, from their signature on.
bool png(const std::string& bytes) { return bytes.starts_with("\x89PNG\r\n\x1a\n"); }

// "met" or "not met" for a median under `under` ms; none over failed calls.
std::string aim(const Stats& s, double under) {
  if (s.failed > 0) return "n/a (" + std::to_string(s.failed) + " failed runs)";
  return s.median_ms < under ? "met" : "not met";
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::max(5, std::atoi(argv[1])) : 100;
  // A create starts an X server each time: fewer of those.
  const int creates = std::max(5, std::min(n, 50));
  for (const char* tool : {"Xvfb", "import", "xwd", "xdotool"}) {
    if (!have(tool)) {
      std::fprintf(stderr, "bench_desktop: %s is not installed (scripts/deps.sh bench installs it)\n", tool);
      return 1;
    }
  }
  mayura::SandboxesOptions limits;
  limits.max_sandboxes = 2;
  auto sandboxes = mayura::create_sandboxes(mayura::native_sandboxes(), limits);
  mayura::CreateOptions create;
  create.lifetime_ms = 600000;
  create.desktop = mayura::DesktopSize{1280, 800};

  std::printf("%d iterations each (%d for a create); times in ms\n%-62s %9s %9s %7s\n", n, creates, "", "median", "p95",
              "failed");

  std::optional<mayura::Sandbox> fresh;
  const Stats a = measure_each(
      creates,
      [&] {
        fresh = sandboxes.create(create);
        return png(fresh->screenshot());
      },
      // a failed create leaves the last sandbox, released already, or none
      [&] {
        if (fresh) fresh->release();
      });
  row("(a) create with a 1280x800 desktop, to its first screenshot", a);
  std::optional<HostXvfb> host;
  const Stats a1 = measure_each(
      creates,
      [&] {
        host.emplace();
        return !host->display().empty() &&
               run({"import", "-display", host->display(), "-window", "root", "png:/dev/null"});
      },
      [&] { host.reset(); });
  row("(a') host Xvfb started, to its first import -window root", a1);

  const mayura::Sandbox sandbox = sandboxes.create(create);
  const HostXvfb xvfb;
  const std::string& d = xvfb.display();
  const Stats b = measure(n, [&] { return png(sandbox.screenshot()); });
  row("(b) screenshot, 1280x800 PNG", b);
  const Stats b1 = measure(n, [&] { return run({"import", "-display", d, "-window", "root", "png:/dev/null"}); });
  row("(b') import -window root png:- (ImageMagick)", b1);
  const Stats b2 = measure(n, [&] { return run({"xwd", "-display", d, "-root", "-silent", "-out", "/dev/null"}); });
  row("(b'') xwd -root (XWD, no PNG)", b2);
  // A desktop action that did not happen throws, which counts as a failed call.
  const Stats c = measure(n, [&] {
    sandbox.click({100, 100});
    return true;
  });
  row("(c) click", c);
  // xdotool finds the display in DISPLAY
  ::setenv("DISPLAY", d.c_str(), 1);
  const Stats c2 = measure(n, [&] { return run({"xdotool", "mousemove", "100", "100", "click", "1"}); });
  row("(c') xdotool mousemove 100 100 click 1", c2);
  const Stats t = measure(n, [&] {
    sandbox.type("hello");
    return true;
  });
  row("(d) type hello", t);
  const Stats t1 = measure(n, [&] { return run({"xdotool", "type", "hello"}); });
  row("(d') xdotool type hello", t1);
  const Stats e = measure(n, [&] {
    sandbox.cursor_position();
    return true;
  });
  row("(e) cursor position", e);
  const Stats e1 = measure(n, [&] { return run({"xdotool", "getmouselocation"}); });
  row("(e') xdotool getmouselocation", e1);
  sandbox.release();
  sandboxes.close();

  std::printf(
      "\naims: ready (a) %.1f ms, under 150: %s; screenshot (b) %.1f ms, under 30: %s; click (c) %.2f ms, "
      "under 2: %s\n",
      a.median_ms, aim(a, 150).c_str(), b.median_ms, aim(b, 30).c_str(), c.median_ms, aim(c, 2).c_str());
  return 0;
}
